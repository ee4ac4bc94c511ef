"""Synthesis end to end on a real catalog, wiki service and worker job path: runs in
extractive mode (the rule reader) and with a model (the scripted OpenAI-compatible
server), the PHI gate and DLP on what leaves, pausing and resuming, cancelling, a run a
killed process left behind, approval with its provenance, conflicts and idempotency.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from tests.dlp_corpus import POSITIVES
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Error, Hang, Text
from tests.workspaces import new_workspace

from autorag.audit import AuditQuery, list_events
from autorag.chat import store as chat_store
from autorag.context import AppContext, open_context
from autorag.errors import Conflict, Forbidden, InvalidInput, NotFound
from autorag.ingest.minsync import refresh
from autorag.jobs.worker import WorkerPool
from autorag.store.catalog import outbox, queue
from autorag.store.catalog.models import DocumentRow, JobRow
from autorag.synth.models import Selection, SynthItem, SynthRun
from autorag.synth.service import SYNTH_JOB, SynthService
from autorag.synth.store import SynthDoneRow, SynthSourceRow
from autorag.wiki.models import Archive, ArchiveConfig
from autorag.wiki.service import WikiService
from autorag.workspace import find_workspace

EMAIL = POSITIVES["email"][0]
IBAN = POSITIVES["iban"][0]
DOCS = {
    "apollo.md": "# Apollo\n\nApollo is the launch project run by Jane Roe. Apollo ships in "
    "March.\n\nJane Roe leads the Apollo team from Lisbon.\n",
    "vendors.md": "# Vendors\n\nAcme Corp supplies the Apollo rockets. Acme Corp is based in "
    "Berlin.\n",
    "billing.md": f"# Billing\n\nAcme Corp is paid to the account {IBAN}. Questions go to "
    f"{EMAIL}, who answers for Acme Corp.\n",
}
_names = itertools.count()


@dataclass(frozen=True)
class World:
    root: Path  # the workspace
    docs: Path
    ids: dict[str, int]  # document id by file name


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as scripted:
        yield scripted


def _provider(
    server: ScriptedOpenAI, name: str, *, local: bool, timeout_s: float = 10
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "openai",
        "base_url": server.base_url,
        "default_model": "gpt-test",
        "local": local,
        "timeout_s": timeout_s,
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, server: ScriptedOpenAI) -> World:
    """Three documents indexed; ``scripted`` (local), ``hosted`` (not local) and
    ``impatient`` (local, gives up on an answer after a second) are the same
    scripted server. No default model: the built-in extractive one."""
    root = tmp_path_factory.mktemp("synth")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    llm = {"providers": [_provider(server, "scripted", local=True),
                         _provider(server, "hosted", local=False),
                         _provider(server, "impatient", local=True, timeout_s=1)]}  # fmt: skip
    workspace = new_workspace(root / "kb", search_paths=[str(docs)], llm=llm)
    context = open_context(workspace)
    try:
        refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[])
        with context.catalog.engine.connect() as conn:
            rows = conn.execute(select(DocumentRow.id, DocumentRow.source_id)).all()
    finally:
        context.close()
    ids = {source_id.rsplit("/", 1)[-1]: doc_id for doc_id, source_id in rows}
    assert set(ids) == set(DOCS)
    return World(root / "kb", docs, ids)


@pytest.fixture(scope="module")
def app(world: World) -> Iterator[AppContext]:
    context = open_context(find_workspace(world.root))
    yield context
    context.close()


@pytest.fixture(scope="module")
def wiki(app: AppContext) -> WikiService:
    return WikiService(app)


@pytest.fixture(scope="module")
def service(app: AppContext, wiki: WikiService) -> SynthService:
    return SynthService(app, wiki=wiki)


@pytest.fixture
def archive(wiki: WikiService, server: ScriptedOpenAI) -> Archive:
    server.reset()
    return wiki.create_archive(f"book-{next(_names)}", title="Handbook", by="ann")


def docs(world: World, *names: str) -> Selection:
    return Selection(document_ids=tuple(world.ids[n] for n in names))


def run_jobs(app: AppContext) -> None:
    """What the server's worker does: run the queued synthesis jobs (the real handler)."""
    WorkerPool(app, workers=1).run_queued(
        kinds=[SYNTH_JOB], workspace_id=app.info.id, tick=lambda: None
    )


def events(app: AppContext, name: str) -> list[dict[str, Any]]:
    found = list_events(app.catalog, AuditQuery(events=(name,), workspace_id=app.info.id))
    return [dict(e.details) for e in found]


def prompt_tokens_counted(app: AppContext) -> int:
    """The workspace's prompt tokens in chat's usage table (every day: a test may span
    midnight)."""
    days = chat_store.usage_by_day(app.catalog.engine, app.info.id, days=3650)
    return sum(int(day["promptTokens"]) for day in days)


def by_path(items: list[SynthItem]) -> dict[str, SynthItem]:
    return {item.path: item for item in items}


# -- extractive mode ---------------------------------------------------------------------
def test_an_extractive_run_from_start_to_approval(
    app: AppContext, world: World, wiki: WikiService, service: SynthService, archive: Archive
) -> None:
    run = service.start(archive.name, docs(world, "apollo.md", "vendors.md"), model=None,
                        by="ann")  # fmt: skip
    assert (run.status, run.mode, run.model, run.sources) == (
        "queued", "extractive", "extractive/extractive", 2,
    )  # fmt: skip
    run_jobs(app)
    run = service.run(run.id)
    assert run.status == "ready" and run.current_pass is None and run.model_calls == 0
    assert [(p.name, p.state, p.done == p.total) for p in run.passes] == [
        (name, "done", True) for name in (
            "entity_extraction", "summary_generation", "candidate_search", "llm_decision",
            "write_overview",
        )
    ]  # fmt: skip
    items = by_path(service.items(run.id))
    assert {"apollo", "jane-roe", "acme-corp", "overview"} <= set(items)
    apollo = items["apollo"]
    assert apollo.action == "create" and apollo.status == "pending" and not apollo.stale
    assert {p.source_id for p in apollo.sources} == {"/docs/apollo.md"}
    assert apollo.diff.startswith("--- (new page)\n+++ apollo (new)\n")
    assert "+synthesis: extractive" in apollo.diff
    assert items["overview"].action == "overview" and "[[apollo|Apollo]]" in items["overview"].body
    assert {"runId": run.id, "archive": archive.name, "items": run.items} in events(
        app, "synthesis.preview_ready"
    )
    ready = outbox.list_events(app.catalog.engine, names=["synthesis.preview_ready"])
    assert {"runId": run.id, "archive": archive.name, "items": run.items} in [e.data for e in ready]

    decision = service.approve(run.id, by="bob")
    assert decision.run.status == "applied" and decision.run.pending == 0
    assert set(decision.pages) == {i.path for i in items.values() if i.action != "skip"}
    history = wiki.history(archive, "apollo")
    assert [(v.version, v.saved_by, v.note) for v in history] == [
        (1, "bob", f"synthesis run {run.id} from /docs/apollo.md")
    ]
    assert (
        f"synthesis run {run.id} from /docs/apollo.md, /docs/vendors.md"
        == wiki.history(archive, "overview")[0].note
    )
    saved = [e for e in events(app, "archive.page_saved") if e["archive"] == archive.name]
    assert sorted(e["path"] for e in saved) == sorted(decision.pages)
    assert all(e["runId"] == run.id and e["version"] == 1 for e in saved)
    in_log = outbox.list_events(app.catalog.engine, names=["archive.page_saved"], limit=1000)
    assert sorted(saved, key=str) == sorted(
        (e.data for e in in_log if e.data["archive"] == archive.name), key=str
    )  # the audit joins the event log
    assert "jane-roe" in [h.path for h in wiki.search(archive, "Lisbon", mode="fts")]
    with app.catalog.engine.connect() as conn:
        done = conn.execute(
            select(SynthDoneRow.document_id, SynthDoneRow.run_id).where(
                SynthDoneRow.archive_id == archive.id
            )
        ).all()
    assert sorted(done) == sorted((world.ids[n], run.id) for n in ("apollo.md", "vendors.md"))
    with pytest.raises(Conflict) as decided:
        service.approve(run.id, by="bob")
    assert decided.value.code == "run_not_ready"

    # The same documents, unchanged: skipped, unless forced.
    with pytest.raises(InvalidInput) as nothing:
        service.start(archive.name, docs(world, "apollo.md", "vendors.md"), model=None, by="ann")
    assert nothing.value.code == "nothing_to_synthesise"
    assert f"unchanged since run {run.id}" in nothing.value.message
    forced = service.start(archive.name, Selection(document_ids=(world.ids["apollo.md"],),
                                                    force=True), model=None, by="ann")  # fmt: skip
    assert forced.sources == 1 and forced.skipped == ()
    # While that run waits for review, another one does not read its document either.
    with pytest.raises(InvalidInput) as waiting:
        service.start(archive.name, docs(world, "apollo.md"), model=None, by="ann")
    assert f"in run {forced.id}, waiting for review" in waiting.value.message
    forced = service.execute(forced.id)
    # The pages say it all already: nothing to add, the overview unchanged.
    again = by_path(service.items(forced.id))
    assert again["apollo"].action == "skip" and "already says all of it" in again["apollo"].reason
    assert "overview" not in again
    service.reject(forced.id, by="bob")

    # A new version of a document is read again.
    with app.catalog.engine.begin() as conn:
        conn.execute(
            update(DocumentRow)
            .where(DocumentRow.id == world.ids["vendors.md"])
            .values(content_hash="0" * 64)
        )
    changed = service.start(archive.name, docs(world, "apollo.md", "vendors.md"), model=None,
                            by="ann")  # fmt: skip
    assert changed.sources == 1
    assert [(s.source_id, s.reason) for s in changed.skipped] == [
        ("/docs/apollo.md", f"unchanged since run {run.id}")
    ]
    service.cancel(changed.id, by="ann")


def test_approving_some_items_then_rejecting_the_rest(
    app: AppContext, world: World, wiki: WikiService, service: SynthService, archive: Archive
) -> None:
    run = service.execute(
        service.start(archive.name, docs(world, "apollo.md"), model=None, by="ann").id
    )
    items = by_path(service.items(run.id))
    chosen = items["apollo"].id
    decision = service.approve(run.id, only=[chosen], by="bob")
    assert decision.applied == (chosen,) and decision.pages == ("apollo",)
    assert decision.run.status == "partially_applied"
    assert decision.run.pending == len([i for i in items.values() if i.action != "skip"]) - 1
    with pytest.raises(NotFound) as unknown:
        service.approve(run.id, only=[10**9], by="bob")
    assert unknown.value.code == "item_not_found"

    rejected = service.reject(run.id, by="bob")
    assert chosen not in rejected.rejected and rejected.rejected
    assert rejected.run.status == "partially_applied" and rejected.run.pending == 0
    assert [p.path for p in wiki.pages(archive)] == ["apollo"]


def test_rejecting_a_run_writes_nothing(
    world: World, wiki: WikiService, service: SynthService, archive: Archive
) -> None:
    run = service.execute(
        service.start(archive.name, docs(world, "vendors.md"), model=None, by="ann").id
    )
    decision = service.reject(run.id, by="bob")
    assert decision.run.status == "rejected" and decision.run.decided_by == "bob"
    assert {i.status for i in service.items(run.id)} == {"rejected"}
    assert wiki.pages(archive) == []
    # A rejected run's documents are read again by the next run.
    assert service.start(archive.name, docs(world, "vendors.md"), model=None, by="ann").sources == 1


def test_a_person_editing_a_page_after_the_run_read_it_is_a_conflict(
    world: World, wiki: WikiService, service: SynthService, archive: Archive
) -> None:
    wiki.save_page(archive, "apollo", title="Apollo", body="# Apollo\n\nA project.\n",
                   base_version=None, by="ann")  # fmt: skip
    run = service.execute(
        service.start(archive.name, docs(world, "apollo.md"), model=None, by="ann").id
    )
    update_item = by_path(service.items(run.id))["apollo"]
    assert (update_item.action, update_item.base_version) == ("update", 1)
    mine = "# Apollo\n\nA project, edited by a person.\n"
    wiki.save_page(archive, "apollo", body=mine, base_version=1, by="carol")
    assert by_path(service.items(run.id))["apollo"].stale

    decision = service.approve(run.id, by="bob")
    assert decision.conflicts == (update_item.id,) and decision.run.status == "partially_applied"
    assert wiki.page(archive, "apollo").body == mine
    assert by_path(service.items(run.id))["apollo"].status == "conflict"

    forced = service.approve(run.id, only=[update_item.id], by="bob", overwrite=True)
    assert forced.applied == (update_item.id,) and forced.run.status == "applied"
    page = wiki.page(archive, "apollo")
    assert page.version == 3 and "Jane Roe leads the Apollo team" in page.body


def test_cancelling_between_steps_and_while_queued(
    app: AppContext, world: World, service: SynthService, archive: Archive
) -> None:
    run = service.start(archive.name, docs(world, "apollo.md", "vendors.md"), model=None,
                        by="ann")  # fmt: skip
    seen: list[SynthRun] = []

    def cancel_after_first_extraction(now: SynthRun) -> None:
        seen.append(now)
        if now.passes[0].done == 1 and not now.cancel_requested:
            asked = service.cancel(now.id, by="ann")
            assert (asked.status, asked.cancel_requested) == ("running", True)

    ended = service.execute(run.id, progress=cancel_after_first_extraction)
    assert ended.status == "cancelled" and ended.finished_at is not None
    assert [s.passes[0].done for s in seen] == [0, 1]  # no step after the cancel
    assert ended.passes[0].done == 1 and ended.items == 0
    assert service.execute(run.id).status == "cancelled"  # its job finds nothing to do
    with pytest.raises(Conflict) as finished:
        service.cancel(run.id, by="ann")
    assert finished.value.code == "run_not_cancellable"

    queued = service.start(archive.name, docs(world, "apollo.md"), model=None, by="ann")
    assert service.cancel(queued.id, by="ann").status == "cancelled"
    run_jobs(app)  # the job is claimed and ends at once
    left = service.run(queued.id)
    assert left.status == "cancelled" and left.passes[0].done == 0


class _Killed(BaseException):
    """The process dies in the middle of a step (nothing after it runs)."""


def test_a_run_left_running_by_a_killed_process_is_requeued_and_resumes(
    app: AppContext, world: World, service: SynthService, archive: Archive
) -> None:
    run_jobs(app)  # what other tests left queued
    run = service.start(archive.name, docs(world, "apollo.md", "vendors.md"), model=None,
                        by="ann")  # fmt: skip
    engine = app.catalog.engine
    # A process that has died on this host claimed the job...
    dead = f"{socket.gethostname()}:{2**31 - 7}:0#0"
    job = queue.claim(engine, dead, kinds=[SYNTH_JOB], workspace_id=app.info.id)
    assert job is not None and job.payload == {"runId": run.id}
    steps: list[str] = []

    def die_in_the_summaries(now: SynthRun) -> None:
        steps.append(str(now.current_pass))
        if now.passes[1].done == 1:
            raise _Killed

    # ... and was running the passes when it died.
    with pytest.raises(_Killed):
        service.execute(run.id, progress=die_in_the_summaries)
    half = service.run(run.id)
    assert half.status == "running" and [p.done for p in half.passes[:2]] == [2, 1]

    run_jobs(app)  # the worker re-queues the dead process's job, then runs it
    with engine.connect() as conn:
        status, attempts = conn.execute(
            select(JobRow.status, JobRow.attempts).where(JobRow.id == job.id)
        ).one()
    assert (status, attempts) == ("done", 2)
    done = service.run(run.id)
    assert done.status == "ready" and done.passes[1].done == 2 and done.items > 0
    with engine.connect() as conn:
        summaries = (
            conn.execute(select(SynthSourceRow.summary).where(SynthSourceRow.run_id == run.id))
            .scalars()
            .all()
        )
    assert all(summaries)


def test_a_run_of_another_workspace_is_not_found(
    app: AppContext, world: World, service: SynthService, archive: Archive
) -> None:
    run = service.start(archive.name, docs(world, "apollo.md"), model=None, by="ann")
    other = SynthService(app.for_workspace(app.catalog.ensure_workspace("synth-other")))
    for call in (
        lambda: other.run(run.id),
        lambda: other.items(run.id),
        lambda: other.execute(run.id),
        lambda: other.approve(run.id, by="eve"),
        lambda: other.reject(run.id, by="eve"),
        lambda: other.cancel(run.id, by="eve"),
        lambda: other.resume(run.id, by="eve"),
    ):
        with pytest.raises(NotFound) as missing:
            call()
        assert missing.value.code == "run_not_found"
    assert other.runs() == []
    assert service.run(run.id).status == "queued"
    service.cancel(run.id, by="ann")


# -- with a model ------------------------------------------------------------------------
def _entity(name: str, kind: str, claim: str) -> dict[str, Any]:
    return {"name": name, "kind": kind, "description": f"{name}, as the document says.",
            "claims": [{"text": claim, "passages": [1]}]}  # fmt: skip


# Each document's entities, found by a phrase of its text (what the model "reads").
EXTRACTED = {
    "Jane Roe leads": [
        _entity("Apollo", "project", "Apollo ships in March."),
        _entity("Jane Roe", "person", "Jane Roe leads the Apollo team from Lisbon."),
    ],
    "based in Berlin": [_entity("Acme Corp", "organisation", "Acme Corp is based in Berlin.")],
    "paid to the account": [_entity("Acme Corp", "organisation", "Acme Corp is paid by transfer.")],
}
PAGES = {"apollo": ("Apollo", "Apollo is a launch project."),
         "acme-corp": ("Acme Corp", "Acme Corp is based in Paris.")}  # fmt: skip
_ENTITY = re.compile(r"^Entity: (.+?) \(kind", re.MULTILINE)


def _passage_saying(user: str, words: str) -> int:
    """The number of the passage (``[n] …``) in a decision request holding ``words``."""
    for line in user.splitlines():
        found = re.match(r"\[(\d+)\] ", line)
        if found and words in line:
            return int(found[1])
    raise AssertionError(f"no passage says {words!r}")


def _decision(user: str) -> dict[str, Any]:
    name = _ENTITY.search(user)
    assert name is not None
    empty = {"reason": "", "path": "", "title": "", "body": "", "passages": [],
             "pageQuote": None, "sourcePassage": None}  # fmt: skip
    if name[1] == "Jane Roe":
        return {**empty, "verdict": "create", "reason": "No page covers her.",
                "path": "people/jane-roe", "title": "Jane Roe",
                "body": "Jane Roe leads the Apollo team [1].", "passages": [1]}  # fmt: skip
    if name[1] == "Apollo":
        return {**empty, "verdict": "update", "reason": "The page lacks the date.",
                "path": "apollo", "title": "Apollo",
                "body": "Apollo is a launch project. It ships in March [1].",
                "passages": [1]}  # fmt: skip
    berlin = _passage_saying(user, "based in Berlin")
    return {**empty, "verdict": "contradiction", "reason": "Paris or Berlin?",
            "path": "acme-corp", "pageQuote": "Acme Corp is based in Paris.",
            "sourcePassage": berlin, "passages": [berlin]}  # fmt: skip


def model(request: dict[str, Any]) -> Text:
    """The scripted model: answers by the schema asked for, or the prompt."""
    messages = request["messages"]
    system = str(messages[0]["content"])
    user = next(str(m["content"]) for m in messages if m["role"] == "user")
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
    if schema == "entities":
        found = [e for marker, entities in EXTRACTED.items() if marker in user for e in entities]
        return Text(json.dumps({"entities": found}))
    if schema == "decision":
        return Text(json.dumps(_decision(user)))
    if "overview" in system.lower():
        return Text("The handbook's pages: [[apollo|Apollo]] and [[people/jane-roe|Jane Roe]].")
    return Text("A short summary of the document.")


@pytest.fixture
def paged(wiki: WikiService, archive: Archive) -> Archive:
    for path, (title, body) in PAGES.items():
        wiki.save_page(archive, path, title=title, body=body, base_version=None, by="ann")
    return archive


def test_a_model_run_proposes_creates_updates_and_contradictions(
    app: AppContext,
    world: World,
    server: ScriptedOpenAI,
    service: SynthService,
    paged: Archive,
    wiki: WikiService,
) -> None:
    server.reset(model)
    before = prompt_tokens_counted(app)
    run = service.start(paged.name, docs(world, *DOCS), model="scripted/gpt-test", by="ann")
    assert (run.mode, run.model) == ("llm", "scripted/gpt-test")
    assert server.requests == []  # starting sends nothing
    run_jobs(app)
    run = service.run(run.id)
    assert run.status == "ready", run.error
    # 3 extractions, 3 summaries, 3 decisions (Acme Corp once, from both documents), 1 overview.
    assert len(server.requests) == run.model_calls == 10
    assert run.prompt_tokens > 0 and run.completion_tokens > 0
    assert prompt_tokens_counted(app) - before == run.prompt_tokens
    extract = server.requests[0]
    assert extract["response_format"]["type"] == "json_schema"
    # DLP: the account number and the address never left.
    sent = json.dumps(server.requests)
    assert "paid to the account" in sent and IBAN not in sent and EMAIL not in sent

    items = by_path(service.items(run.id))
    jane = items["people/jane-roe"]
    assert (jane.action, jane.base_version, jane.stale) == ("create", None, False)
    assert [p.source_id for p in jane.sources] == ["/docs/apollo.md"]
    assert "[^1]" in jane.body and "## Sources" in jane.body and "/docs/apollo.md" in jane.body
    assert "+Jane Roe leads the Apollo team [^1]" in jane.diff
    apollo = items["apollo"]
    assert (apollo.action, apollo.base_version) == ("update", 1)
    assert "-Apollo is a launch project.\n" in apollo.diff and "ships in March" in apollo.diff
    acme = items["acme-corp"]
    assert (acme.action, acme.body, acme.base_version) == ("contradiction", "", 1)
    page_side, source_side = acme.contradiction
    assert (page_side.page_path, page_side.text) == ("acme-corp", "Acme Corp is based in Paris.")
    assert source_side.source_id == "/docs/vendors.md" and "Berlin" in source_side.text
    assert items["overview"].action == "overview"

    decision = service.approve(run.id, by="bob")
    assert acme.id in decision.untouched and set(decision.pages) == {
        "people/jane-roe", "apollo", "overview",
    }  # fmt: skip
    # The contradiction still waits for a person (to fix the page, then dismiss it).
    assert decision.run.status == "partially_applied"
    dismissed = service.reject(run.id, only=[acme.id], by="bob")
    assert dismissed.rejected == (acme.id,) and dismissed.run.status == "applied"
    assert wiki.page(paged, "acme-corp").version == 1  # dismissing writes nothing


def test_a_model_that_fails_mid_run_pauses_it_and_resume_repeats_nothing(
    app: AppContext, world: World, server: ScriptedOpenAI, service: SynthService, paged: Archive
) -> None:
    archive = paged
    calls = itertools.count(1)
    failing = {3: Hang(seconds=30), 6: Error(status=503)}  # a summary hangs; a decision fails

    def flaky(request: dict[str, Any]) -> Text | Hang | Error:
        return failing.pop(next(calls), None) or model(request)

    server.reset(flaky)
    selection = docs(world, "apollo.md", "vendors.md")
    run = service.start(archive.name, selection, model="impatient/gpt-test", by="ann")
    run_jobs(app)
    paused = service.run(run.id)
    assert (paused.status, paused.error_code, paused.current_pass) == (
        "paused", "model_unavailable", "summary_generation",
    )  # fmt: skip
    assert "within 1s" in (paused.error or "") and len(server.requests) == 3
    assert service.run(run.id).passes[0].done == 2  # both extractions kept

    assert service.resume(run.id, by="ann").status == "queued"
    run_jobs(app)
    again = service.run(run.id)
    assert (again.status, again.current_pass, len(server.requests)) == (
        "paused", "llm_decision", 6,
    )  # fmt: skip
    with pytest.raises(Conflict) as not_paused:
        service.resume(service.start(archive.name, docs(world, "billing.md"), model=None,
                                     by="ann").id, by="ann")  # fmt: skip
    assert not_paused.value.code == "run_not_resumable"

    service.resume(run.id, by="ann")
    run_jobs(app)
    done = service.run(run.id)
    # 2 extractions, 2 summaries, 3 decisions, 1 overview, and the 2 calls that failed.
    assert done.status == "ready" and len(server.requests) == 10
    assert {i.action for i in service.items(run.id)} >= {"create", "overview"}


def test_the_phi_gate_sends_nothing_to_a_model_that_is_not_local(
    app: AppContext, world: World, server: ScriptedOpenAI, wiki: WikiService,
    service: SynthService, archive: Archive,
) -> None:  # fmt: skip
    private = wiki.update_archive(archive, config=ArchiveConfig(local_llm_only=True))
    with pytest.raises(Forbidden) as refused:
        service.start(private.name, docs(world, "apollo.md"), model="hosted/gpt-test", by="ann")
    assert refused.value.code == "local_llm_only"
    assert private.name in refused.value.message and "hosted/gpt-test" in refused.value.message
    assert service.runs(private.name) == []
    with pytest.raises(InvalidInput):
        service.start(private.name, docs(world, "apollo.md"), model="nowhere/x", by="ann")
    # A local model may read it.
    local = service.start(private.name, docs(world, "apollo.md"), model="scripted", by="ann")
    assert local.model == "scripted/gpt-test"
    service.cancel(local.id, by="ann")

    # A run stored before the archive became local-only is stopped when it executes.
    wiki.update_archive(archive, config=ArchiveConfig())
    run = service.start(archive.name, docs(world, "vendors.md"), model="hosted/gpt-test", by="ann")
    wiki.update_archive(archive, config=ArchiveConfig(local_llm_only=True))
    run_jobs(app)
    failed = service.run(run.id)
    assert (failed.status, failed.error_code) == ("failed", "local_llm_only")
    assert server.requests == []


def test_the_selection_names_the_documents_a_run_reads(
    world: World, service: SynthService, archive: Archive
) -> None:
    yesterday = datetime.now(UTC) - timedelta(days=1)
    run = service.start(archive.name, Selection(since=yesterday, doc_type=".MD"), model=None,
                        by="ann")  # fmt: skip
    assert run.sources == len(DOCS) and run.selection.doc_type == "md"
    service.cancel(run.id, by="ann")
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    for selection in (Selection(since=tomorrow), Selection(doc_type="pdf")):
        with pytest.raises(InvalidInput) as nothing:
            service.start(archive.name, selection, model=None, by="ann")
        assert nothing.value.code == "nothing_to_synthesise"
    with pytest.raises(NotFound) as unknown:
        service.start(archive.name, Selection(document_ids=(10**6,)), model=None, by="ann")
    assert unknown.value.code == "document_not_found"
    with pytest.raises(NotFound) as no_archive:
        service.start("no-such-archive", Selection(), model=None, by="ann")
    assert no_archive.value.code == "archive_not_found"


@pytest.mark.postgres
def test_a_run_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """The store's SQL on the other catalog: start, the passes, approval, the record of
    what was read (an upsert) and the next run skipping it."""
    docs_dir = tmp_path / "docs"
    docs_dir.mkdir()
    (docs_dir / "apollo.md").write_text(DOCS["apollo.md"], encoding="utf-8")
    workspace = new_workspace(tmp_path / "kb", postgres_url, search_paths=[str(docs_dir)])
    context = open_context(workspace)
    try:
        refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[])
        wiki = WikiService(context)
        archive = wiki.create_archive("pg-book", by="ann")
        service = SynthService(context, wiki=wiki)
        run = service.start(archive.name, Selection(), model=None, by="ann")
        run_jobs(context)
        assert service.run(run.id).status == "ready"
        assert service.approve(run.id, by="bob").run.status == "applied"
        note = wiki.history(archive, "apollo")[0].note
        assert note == f"synthesis run {run.id} from /docs/apollo.md"
        again = service.start(archive.name, Selection(force=True), model=None, by="ann")
        service.execute(again.id)
        service.approve(again.id, by="bob")  # the record of what was read is replaced
        with pytest.raises(InvalidInput) as nothing:
            service.start(archive.name, Selection(), model=None, by="ann")
        assert f"unchanged since run {again.id}" in nothing.value.message
        assert [r.id for r in service.runs(archive.name)] == [again.id, run.id]
    finally:
        context.close()
