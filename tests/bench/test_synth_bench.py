"""Benchmark: a synthesis run over 100 generated documents with the scripted model
(issue 19's goal: orchestration overhead per source ≤ 20 ms beyond model time; the
number of model calls per source reported).

Run with ``pytest -m bench -s tests/bench/test_synth_bench.py`` (never in the normal
suite). The documents are indexed by the real pipeline; the run goes through
``SynthService.start`` and ``execute`` as the worker's job does, with the real model
reader talking to the scripted OpenAI-compatible server over loopback HTTP. *Model time*
is what the provider's ``stream_chat`` took, from the call until its stream ended (the
request, the server's reply, the stream's parsing: what a real model server would add
to, not what synthesis does); the rest of the run's wall time is the orchestration's:
building the sources' texts, the prompts, DLP on every message, parsing and checking
the replies, the candidate searches over the archive (which holds a page for each of the ten people
the reports name), writing each step to the catalog.
The same documents are then read in extractive mode (the rule reader: no model at all),
whose whole time is orchestration plus the rules.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from autorag.chat.service import build_router
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from autorag.llm.base import LLMDelta, LLMProvider
from autorag.synth.models import Selection
from autorag.synth.service import SynthService
from autorag.wiki.service import WikiService
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text
from tests.workspaces import new_workspace

pytestmark = pytest.mark.bench

DOCUMENTS = 100
GOAL_MS = 20.0
PEOPLE = [f"{first} {last}" for first, last in zip(
    ("Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas"),
    ("Lind", "Moreau", "Rossi", "Volkov", "Garcia", "Haddad", "Berg", "Laurent", "Silva", "Weber"),
    strict=True,
)]  # fmt: skip
PROJECTS = [f"Project {name}" for name in (
    "Kestrel", "Heron", "Osprey", "Falcon", "Plover", "Curlew", "Dunlin", "Godwit", "Merlin",
    "Petrel", "Shrike", "Tern", "Wren", "Avocet", "Bittern", "Crane", "Egret", "Gannet",
    "Ibis", "Jacana",
)]  # fmt: skip
NAMES = PEOPLE + PROJECTS
_ENTITY = re.compile(r"^Entity: (.+?) \(kind", re.MULTILINE)


def _document(i: int) -> str:
    person, project = PEOPLE[i % len(PEOPLE)], PROJECTS[(i * 7 + 3) % len(PROJECTS)]
    return (
        f"# Status report {i}\n\n{person} leads {project} this quarter. {project} moved its "
        f"review to week {i % 52 + 1} after the supplier's delay.\n\n{person} asked for two "
        f"more engineers; the steering group agreed on {i % 28 + 1} March.\n\n"
        f"The budget of {project} stays at {100 + i} thousand euros; {person} reports "
        "monthly.\n"
    )


def _model(request: dict[str, Any]) -> Text:
    """A model that reads the names it knows in the text and decides to create."""
    messages = request["messages"]
    user = next(str(m["content"]) for m in messages if m["role"] == "user")
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
    if schema == "entities":
        found = [
            {"name": name, "kind": "person" if name in PEOPLE else "project",
             "description": f"{name}, as the report says.",
             "claims": [{"text": f"{name} is named in the report.", "passages": [1]}]}
            for name in NAMES if name in user
        ]  # fmt: skip
        return Text(json.dumps({"entities": found}))
    if schema == "decision":
        named = _ENTITY.search(user)
        name = named[1] if named else "Unknown"
        return Text(json.dumps({
            "verdict": "create", "reason": "No page covers it yet.", "path": "", "title": name,
            "body": f"{name} appears in the status reports [1].", "passages": [1],
            "pageQuote": None, "sourcePassage": None,
        }))  # fmt: skip
    if "overview" in str(messages[0]["content"]).lower():
        return Text("The pages of this handbook, by subject.")
    return Text("A status report on a project, its lead and its budget.")


class TimedProvider:
    """The real provider, its ``stream_chat`` timed until its stream is drained."""

    def __init__(self, inner: LLMProvider) -> None:
        self.inner = inner
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def stream_chat(self, messages: Sequence[Any], **kwargs: Any) -> Iterator[LLMDelta]:
        began = time.perf_counter()
        try:
            yield from self.inner.stream_chat(messages, **kwargs)
        finally:
            self.seconds += time.perf_counter() - began


def test_synthesis_orchestration_overhead_per_source(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(DOCUMENTS):
        (docs / f"report-{i:03d}.md").write_text(_document(i), encoding="utf-8")
    with ScriptedOpenAI(_model) as server:
        llm = {"providers": [{"name": "scripted", "kind": "openai", "base_url": server.base_url,
                              "default_model": "gpt-test", "local": True}]}  # fmt: skip
        workspace = new_workspace(tmp_path / "kb", search_paths=[str(docs)], llm=llm)
        app = open_context(workspace)
        try:
            refresh(app.catalog, app.info, app.indexer, app.roots, ignore=[])
            wiki = WikiService(app)
            router = build_router(app)
            router.sync()
            timed = TimedProvider(router.providers["scripted"])
            router.providers["scripted"] = timed  # type: ignore[assignment]
            service = SynthService(app, router=router, wiki=wiki)
            for name in ("reports", "rules"):
                wiki.create_archive(name, title="Reports", by="bench")
                for person in PEOPLE:  # pages the candidate searches find
                    wiki.save_page(name, person.lower().replace(" ", "-"), title=person,
                                   body=f"{person} works in the projects office.",
                                   base_version=None, by="bench")  # fmt: skip

            run = service.start("reports", Selection(), model="scripted/gpt-test", by="bench")
            began = time.perf_counter()
            run = service.execute(run.id)
            wall = time.perf_counter() - began

            extractive = service.start("rules", Selection(), model="extractive", by="bench")
            began = time.perf_counter()
            extractive = service.execute(extractive.id)
            rules_wall = time.perf_counter() - began
        finally:
            app.close()
    assert run.status == "ready" and run.sources == DOCUMENTS, run
    assert extractive.status == "ready", extractive
    overhead_ms = (wall - timed.seconds) / DOCUMENTS * 1000
    print(
        f"\nsynthesis over {DOCUMENTS} documents with the scripted model: {wall:.2f} s, of "
        f"which model time {timed.seconds:.2f} s; {run.model_calls} model calls "
        f"({run.model_calls / DOCUMENTS:.2f} a source), {run.items} items; orchestration "
        f"overhead {overhead_ms:.1f} ms a source (goal ≤ {GOAL_MS:.0f} ms)\n"
        f"extractive mode over the same documents: {rules_wall:.2f} s, "
        f"{rules_wall / DOCUMENTS * 1000:.1f} ms a source, {extractive.items} items"
    )
    assert overhead_ms <= GOAL_MS
