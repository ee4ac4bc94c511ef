"""Commands that answer: ``ask`` (one question), ``chat`` (a conversation), ``models``.

They go through the same chat service and orchestrator as the HTTP API: tokens stream
as the model writes them, sources follow, Ctrl+C stops an answer.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Annotated, Any

import typer
from rich.table import Table

from autorag.agent.events import AgentEvent, Emit, PlanEvent, StatusEvent, TokenEvent
from autorag.chat.service import LOCAL_USER, ChatOutcome, ChatService, ChatTurn
from autorag.cli._common import console, err_console, open_app, print_json, split_types
from autorag.cli.search import FromOption, JsonFlag, ToOption, TypeOption
from autorag.context import AppContext
from autorag.models import Citation
from autorag.retrieval.filters import build_filters
from autorag.system_config import GLOBAL_DEFAULT_MODEL, get_value, set_value

ModelOption = Annotated[
    str | None, typer.Option("--model", "-m", help="provider/model to answer with.")
]
models_app = typer.Typer(help="List the models on offer; set the global default model.")
EXIT_WORDS = {"/quit", "/exit", ":q"}


def register(app: typer.Typer) -> None:
    app.command()(ask)
    app.command()(chat)
    app.add_typer(models_app, name="models")


def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="Your question.")],
    k: Annotated[int | None, typer.Option("-k", min=1, max=50, help="Sources per search.")] = None,
    model: ModelOption = None,
    plan: Annotated[bool, typer.Option("--plan", help="Plan first, then answer.")] = False,
    doc_type: TypeOption = None,
    date_from: FromOption = None,
    date_to: ToOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Answer a question from the documents, with numbered \\[n] citations."""
    filters = build_filters(split_types(doc_type), date_from, date_to)
    app = open_app(ctx)
    if k is not None:
        app.settings.agent.search_k = k
    turn = ChatTurn(question, model=model, filters=filters, plan_mode=plan or None, store=False)
    outcome = _answer(ChatService.for_context(app), app, turn, live=not as_json)
    if as_json:
        print_json(_outcome_json(outcome))


def chat(
    ctx: typer.Context,
    model: ModelOption = None,
    resume: Annotated[int | None, typer.Option("--chat", help="Continue chat ID.")] = None,
) -> None:
    """A conversation in the terminal. /model NAME switches model, /new starts over,
    /quit leaves; Ctrl+C stops an answer."""
    app = open_app(ctx)
    service = ChatService.for_context(app)
    chat_id = resume
    console.print("[dim]Ask a question; /model NAME, /new, /quit.[/dim]")
    while True:
        try:
            line = console.input("[bold cyan]you>[/bold cyan] ").strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        if not line:
            continue
        if line in EXIT_WORDS:
            return
        if line == "/new":
            chat_id = None
            continue
        if line.startswith("/model"):
            model = _switch_model(service, app, line) or model
            continue
        outcome = _answer(service, app, ChatTurn(line, chat_id, model), live=True)
        chat_id = outcome.chat_id


def _switch_model(service: ChatService, app: AppContext, line: str) -> str | None:
    choice = line.removeprefix("/model").strip()
    if not choice:
        console.print(_models_table(service))
        return None
    service.check_model(app, choice)
    console.print(f"[dim]answering with {choice}[/dim]")
    return choice


def _answer(service: ChatService, app: AppContext, turn: ChatTurn, *, live: bool) -> ChatOutcome:
    """Run the answer in a thread so Ctrl+C can stop it cleanly."""
    prepared = service.prepare(app, turn, user=LOCAL_USER)
    cancel = threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["outcome"] = prepared.run(_printer(live), cancel)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=work, name="answer", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
    except KeyboardInterrupt:
        cancel.set()
        thread.join()
    if "error" in box:
        raise box["error"]
    outcome: ChatOutcome = box["outcome"]
    if live:
        _print_sources(outcome.result.citations)
        if outcome.result.requested_model:
            err_console.print(f"[dim]answered by {outcome.result.model_used}[/dim]")
    return outcome


def _printer(live: bool) -> Emit:
    def show(event: AgentEvent) -> None:
        if not live:
            return
        if isinstance(event, TokenEvent):
            console.print(event.text, end="", highlight=False, markup=False)
        elif isinstance(event, StatusEvent):
            err_console.print(event.message, style="dim", markup=False, highlight=False)
        elif isinstance(event, PlanEvent):
            err_console.print(f"Plan:\n{event.plan}", style="dim", markup=False, highlight=False)

    return show


def _print_sources(citations: list[Citation]) -> None:
    console.print()
    if not citations:
        return
    console.print("\n[bold]Sources[/bold]")
    for c in citations:
        where = f", page {c.page}" if c.page else f", ¶{c.paragraph + 1}"
        console.print(f"  [{c.number}] {c.source}{where}", highlight=False, markup=False)


def _outcome_json(outcome: ChatOutcome) -> dict[str, Any]:
    result = outcome.result
    return {
        "text": result.text,
        "citations": [dataclasses.asdict(c) for c in result.citations],
        "plan": result.plan,
        "modelUsed": result.model_used,
        "providerUsed": result.provider_used,
        "requestedModel": result.requested_model,
        "fallbackReason": result.fallback_reason,
        "abortReason": result.abort_reason,
        "usage": dataclasses.asdict(result.usage),
        "diagnostics": [dataclasses.asdict(d) for d in result.diagnostics],
    }


# -- models ------------------------------------------------------------------------------------
@models_app.command("list")
def list_models(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """The configured providers' models, whether they are up, and their labels."""
    service = ChatService.for_context(open_app(ctx))
    service.router.refresh()
    if as_json:
        print_json([dataclasses.asdict(m) for m in service.router.models()])
        return
    console.print(_models_table(service))


@models_app.command("default")
def default_model(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Argument(help="provider/model; omit to show.")] = None,
    unset: Annotated[bool, typer.Option("--unset", help="Remove the global default.")] = False,
) -> None:
    """Show or set the global default model (under each chat's and workspace's choice)."""
    app = open_app(ctx)
    engine = app.catalog.engine
    if model is not None or unset:
        if model is not None:
            ChatService.for_context(app).router.check_choice(model, local_only=False)
        set_value(engine, GLOBAL_DEFAULT_MODEL, None if unset else model)
    current = get_value(engine, GLOBAL_DEFAULT_MODEL)
    console.print(f"global default: {current or '(none)'}; environment: {app.settings.llm.default}")


def _models_table(service: ChatService) -> Table:
    table = Table("model", "local", "available", "labels")
    for m in service.router.models():
        up = {True: "yes", False: "no", None: "?"}[m.available]
        table.add_row(m.id, "yes" if m.local else "no", up, ", ".join(m.capabilities))
    return table
