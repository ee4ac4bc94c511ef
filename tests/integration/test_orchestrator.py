"""The ReAct orchestrator driving a scripted OpenAI-compatible server on loopback.

The server speaks the real streaming and tool-call wire format; the workspace, search,
catalog and embedding model are real.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool
from tests.samples import write_corpus
from tests.workspaces import new_workspace

from autorag.agent.events import AgentEvent, CitationsEvent, PlanEvent, StatusEvent, TokenEvent
from autorag.agent.skills.base import SkillContext, SkillResult
from autorag.chat import store
from autorag.chat.service import ChatOutcome, ChatService, ChatTurn, build_router
from autorag.chat.skills import builtin_skills
from autorag.context import AppContext, open_context
from autorag.errors import Forbidden, Unavailable
from autorag.ingest.minsync import refresh
from autorag.llm.base import ToolSpec, Usage
from autorag.workspace_settings import update_settings

SCRIPTED = "scripted/gpt-test"
QUESTION = "How long is the refund window?"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, module_catalog_url: str | None) -> Path:
    root = tmp_path_factory.mktemp("orchestrator")
    write_corpus(root / "docs")
    workspace = new_workspace(root / "kb", module_catalog_url, search_paths=[str(root / "docs")])
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    context.close()
    return root / "kb"


@dataclass
class SlowSkill:
    """A skill that runs until the test releases it: longer than any timeout, without a
    clock in the test (it cannot finish early, whatever the machine's speed)."""

    release: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    spec: ToolSpec = field(
        default_factory=lambda: ToolSpec("slow_lookup", "takes long", {"type": "object"})
    )

    def available(self, context: SkillContext) -> bool:
        return True

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        self.release.wait(300)
        self.finished.set()
        return SkillResult("too late")


@dataclass
class Run:
    outcome: ChatOutcome
    events: list[AgentEvent]

    @property
    def tokens(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TokenEvent))

    @property
    def result(self) -> Any:
        return self.outcome.result


def open_app(
    indexed: Path, server: ScriptedOpenAI, *, local: bool = True, **agent: Any
) -> AppContext:
    from autorag.workspace import find_workspace

    provider = {
        "name": "scripted",
        "kind": "openai",
        "base_url": server.base_url,
        "default_model": "gpt-test",
        "local": local,
        "timeout_s": 10,
    }
    return open_context(
        find_workspace(indexed),
        llm={"providers": [provider], "default": "scripted"},
        agent={"skill_timeout_s": 1.0, **agent},
    )


def ask(
    app: AppContext,
    turn: ChatTurn | None = None,
    *,
    cancel: threading.Event | None = None,
    extra_skills: Mapping[str, Any] | None = None,
) -> Run:
    skills = {**builtin_skills(), **(extra_skills or {})}
    service = ChatService(app.settings, build_router(app), skills)
    events: list[AgentEvent] = []
    outcome = service.answer(app, turn or ChatTurn(QUESTION), emit=events.append, cancel=cancel)
    return Run(outcome, events)


@pytest.fixture
def app(indexed: Path, server: ScriptedOpenAI) -> Iterator[AppContext]:
    server.reset()
    context = open_app(indexed, server)
    update_settings(context.catalog, context.info, {"agent": {}})
    yield context
    context.close()


def test_tool_call_then_answer(app: AppContext, server: ScriptedOpenAI) -> None:
    server.reset([Tool("rag_search", {"query": "refund window"}), Text("Thirty days [1].")])
    run = ask(app)
    assert run.result.abort_reason == "done"
    assert run.tokens.startswith("Thirty days [1].")
    assert run.result.model_used == SCRIPTED and run.result.provider_used == "scripted"
    first, second = server.requests
    assert {t["function"]["name"] for t in first["tools"]} >= {"rag_search", "workspace_memory"}
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "[Source: " in tool_message["content"] and "(match: " in tool_message["content"]
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "rag_search"
    (citations,) = [e for e in run.events if isinstance(e, CitationsEvent)]
    assert citations.citations[0].number == 1
    assert any(isinstance(e, StatusEvent) and e.skill == "rag_search" for e in run.events)


def test_tool_iteration_tokens_are_discarded(app: AppContext, server: ScriptedOpenAI) -> None:
    server.reset(
        [
            Tool("rag_search", {"query": "refunds"}, text="Let me look that up for you first."),
            Text("Thirty days [1]."),
        ]
    )
    run = ask(app)
    assert "look that up" not in run.tokens
    assert run.tokens.startswith("Thirty days")


def test_implicit_xml_tool_call_is_recovered(app: AppContext, server: ScriptedOpenAI) -> None:
    server.reset(
        [
            Text('<tool_call>{"name": "rag_search", "arguments": {"query": "refund"}}</tool_call>'),
            Text("Thirty days [1]."),
        ]
    )
    run = ask(app)
    assert "tool_call" not in run.tokens
    assert server.requests[1]["messages"][-1]["role"] == "tool"
    assert run.result.abort_reason == "done"


def test_unknown_tool_three_times_trips_the_breaker(
    app: AppContext, server: ScriptedOpenAI
) -> None:
    server.reset([Tool("web_browse", {"url": f"http://x/{i}"}) for i in range(3)])
    run = ask(app)
    assert run.result.abort_reason == "unknown_tool_breaker"
    assert len(server.requests) == 3
    assert "no tool named 'web_browse'" in server.requests[1]["messages"][-1]["content"]
    assert "Stopped" in run.result.text


def test_same_search_repeated_is_a_loop(app: AppContext, server: ScriptedOpenAI) -> None:
    server.reset([Tool("rag_search", {"query": "refunds"}) for _ in range(3)] + [Text("Done [1].")])
    run = ask(app)
    assert run.result.abort_reason == "loop_detected"
    final = server.requests[-1]
    assert "tools" not in final  # the closing call asks for an answer, tools off
    assert run.result.text.startswith("Done [1].")


def test_slow_skill_times_out_and_the_model_is_told(
    app: AppContext, server: ScriptedOpenAI
) -> None:
    update_settings(
        app.catalog, app.info, {"agent": {"enabled_skills": ["rag_search", "slow_lookup"]}}
    )
    server.reset([Tool("slow_lookup", {}), Text("It took too long.")])
    slow = SlowSkill()
    try:
        run = ask(app, extra_skills={"slow_lookup": slow})
        assert not slow.finished.is_set()  # the answer did not wait for the skill
    finally:
        slow.release.set()
    assert "did not finish within" in server.requests[1]["messages"][-1]["content"]
    assert any(d.code == "skill_timeout" for d in run.result.diagnostics)


def test_token_budget_stops_the_run(indexed: Path, server: ScriptedOpenAI) -> None:
    app = open_app(indexed, server, token_budget=1000)
    big = Usage(prompt_tokens=900, completion_tokens=200)
    server.reset([Tool("rag_search", {"query": "refunds"}, usage=big), Text("never sent")])
    run = ask(app)
    assert run.result.abort_reason == "token_budget"
    assert len(server.requests) == 1 and "never sent" not in run.tokens
    assert run.result.usage.total == 1100


def test_wallclock_budget_stops_a_slow_model(indexed: Path, server: ScriptedOpenAI) -> None:
    app = open_app(indexed, server, wallclock_s=1.0)
    # 200 words, one per 50 ms: at least 10 s of streaming, ten times the budget.
    server.reset([Text("word " * 200, delay_s=0.05)])
    run = ask(app)
    assert run.result.abort_reason == "wallclock"
    assert run.result.text.endswith("(Stopped: the time budget ran out.)")
    assert run.result.text.count("word") < 200  # cut off, not waited out


def test_plan_mode_plans_then_follows_the_plan(app: AppContext, server: ScriptedOpenAI) -> None:
    plan = "1. Search the refund policy.\n2. Answer with the window."
    server.reset([Text(plan), Tool("rag_search", {"query": "refund"}), Text("Thirty days [1].")])
    run = ask(app, ChatTurn(QUESTION, plan_mode=True))
    planning, execution = server.requests[0], server.requests[1]
    assert "tools" not in planning
    assert "Follow this plan" in execution["messages"][0]["content"]
    assert plan in execution["messages"][0]["content"]
    assert [e.plan for e in run.events if isinstance(e, PlanEvent)] == [plan]
    assert plan not in run.tokens and run.result.plan == plan


def test_client_abort_stops_the_stream(app: AppContext, server: ScriptedOpenAI) -> None:
    server.reset([Text("word " * 400, delay_s=0.02)])
    cancel = threading.Event()
    threading.Timer(1.5, cancel.set).start()
    run = ask(app, cancel=cancel)
    assert run.result.abort_reason == "aborted"
    assert "word" in run.tokens and len(run.tokens) < len("word " * 400)


def test_unreachable_model_falls_back_to_extractive(indexed: Path, server: ScriptedOpenAI) -> None:
    app = open_app(indexed, server)
    down = app.settings.llm.providers[0].model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
    app.settings.llm.providers[0] = down
    run = ask(app)
    assert run.result.provider_used == "extractive"
    assert run.result.requested_model == SCRIPTED
    assert "unavailable" in (run.result.fallback_reason or "")
    assert "thirty days" in run.result.text


def test_local_only_workspace_refuses_a_hosted_model(indexed: Path, server: ScriptedOpenAI) -> None:
    server.reset()
    app = open_app(indexed, server, local=False)
    update_settings(app.catalog, app.info, {"agent": {"local_llm_only": True}})
    try:
        with pytest.raises(Forbidden, match="localLLMOnly"):
            ask(app, ChatTurn(QUESTION, model=SCRIPTED))
        # As a default it is skipped, not refused: a local model answers.
        run = ask(app)
        assert run.result.provider_used == "extractive" and not server.requests
    finally:
        update_settings(app.catalog, app.info, {"agent": {}})


def test_usage_is_recorded_when_the_model_fails(indexed: Path, server: ScriptedOpenAI) -> None:
    app = open_app(indexed, server)
    app.settings.llm.fallback = False
    down = app.settings.llm.providers[0].model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
    app.settings.llm.providers[0] = down
    before = store.usage_by_day(app.catalog.engine, app.info.id)
    with pytest.raises(Unavailable):
        ask(app)
    after = store.usage_by_day(app.catalog.engine, app.info.id)
    errors_before = before[0]["errors"] if before else 0
    assert after[0]["errors"] == errors_before + 1


def test_history_is_cut_to_the_context_budget(app: AppContext, server: ScriptedOpenAI) -> None:
    app.settings.agent.context_bytes = 6000
    server.reset([Text("Fine.")])
    old = [("user" if i % 2 == 0 else "assistant", f"turn {i} " + "x" * 900) for i in range(12)]
    from autorag.llm.base import ChatMessage

    history = [ChatMessage(role, text) for role, text in old]  # type: ignore[arg-type]
    run = ask(app, ChatTurn(QUESTION, store=False, history=history))
    sent = server.requests[0]["messages"]
    assert sent[0]["role"] == "system" and sent[-1]["content"] == QUESTION
    assert len(sent) < len(history) + 2
    assert sum(len(m["content"] or "") for m in sent) <= 6000
    assert run.result.abort_reason == "done"


def test_citations_are_grounded_and_cited_numbers_resolve(
    app: AppContext, server: ScriptedOpenAI
) -> None:
    server.reset(
        [Tool("rag_search", {"query": "refund window"}), Text("Refunds: thirty days [1].")]
    )
    run = ask(app)
    sent = {c.number for c in run.result.citations}
    assert 1 in sent
    per_document: dict[int, int] = {}
    for citation in run.result.citations:
        per_document[citation.document_id] = per_document.get(citation.document_id, 0) + 1
    assert max(per_document.values()) <= 2


def test_ollama_native_provider_drives_the_same_loop(indexed: Path) -> None:
    from tests.doubles.ollama_server import ScriptedOllama

    from autorag.workspace import find_workspace

    script = [Tool("rag_search", {"query": "refund window"}), Text("Thirty days [1].")]
    with ScriptedOllama(script, models=["llama3.2:3b"]) as ollama:
        provider = {"name": "ollama", "kind": "ollama", "base_url": ollama.base_url}
        app = open_context(
            find_workspace(indexed), llm={"providers": [provider], "default": "ollama"}
        )
        run = ask(app)
        assert run.result.model_used == "ollama/llama3.2:3b"
        assert run.tokens.startswith("Thirty days [1].")
        assert ollama.requests[1]["messages"][-1]["role"] == "tool"
        assert run.result.usage.total > 0
        app.close()


def test_disconnecting_the_sse_client_aborts_the_run_and_the_model_stream(
    indexed: Path, server: ScriptedOpenAI, serve_asgi: Any
) -> None:
    import httpx
    from httpx_sse import connect_sse

    from autorag.api.app import create_app
    from autorag.auth.service import create_api_key, create_user
    from autorag.workspace import find_workspace

    workspace = find_workspace(indexed)
    context = open_app(indexed, server)
    create_user(context.catalog, "streamer", "a long enough password", "admin")
    _, key = create_api_key(context.catalog, "streamer", "t", [])
    context.close()
    provider = {"name": "scripted", "kind": "openai", "base_url": server.base_url,
                "default_model": "gpt-test", "local": True}  # fmt: skip
    url = serve_asgi(create_app(workspace, llm={"providers": [provider], "default": "scripted"}))
    server.reset([Text("word " * 2000, delay_s=0.01)])
    headers = {"Authorization": f"Bearer {key}"}
    with (
        httpx.Client(timeout=30) as client,
        connect_sse(
            client, "POST", f"{url}/api/workspaces/default/chat/stream",
            json={"message": QUESTION}, headers=headers,
        ) as source,
    ):  # fmt: skip
        tokens = 0
        for event in source.iter_sse():
            tokens += event.event == "token"
            if tokens >= 3:
                break
    deadline = time.monotonic() + 120  # a wait for the server, not a measure of it
    chats: list[Any] = []
    while time.monotonic() < deadline:
        chats = httpx.get(f"{url}/api/workspaces/default/chats", headers=headers).json()
        detail = httpx.get(f"{url}/api/workspaces/default/chats/{chats[0]['id']}", headers=headers)
        messages = detail.json()["messageList"]
        if len(messages) == 2:
            break
        time.sleep(0.1)
    assert messages[-1]["abortReason"] == "aborted"
    assert server.disconnects >= 1  # the model's stream was closed too
