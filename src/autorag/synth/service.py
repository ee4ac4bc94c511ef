"""``SynthService``: synthesis as every face uses it (routes, commands, the worker).

``start`` checks the request (the archive, the model, the PHI gate, the documents left
to read), stores the run with the documents' text as it is now and queues its job;
the worker's job calls ``execute``, which runs the passes from where the run stands.
Nothing reaches the archive until ``approve`` saves the items a person chose, each as a
page version whose history names the run and its sources.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC
from typing import Any

from autorag import audit
from autorag.chat import store as chat_store
from autorag.chat.service import build_router
from autorag.context import AppContext
from autorag.dlp.service import DlpContext, DlpService
from autorag.errors import AutoragError, Conflict, Forbidden, InvalidInput, NotFound, Unavailable
from autorag.llm.base import LLMProvider, Usage
from autorag.llm.router import EXTRACTIVE, ModelRef, ModelRouter
from autorag.store.catalog import queue
from autorag.store.catalog.models import utcnow
from autorag.synth import store
from autorag.synth.base import Reader
from autorag.synth.candidates import find_candidates
from autorag.synth.llm import ModelReader
from autorag.synth.models import (
    ACTIVE_STATUSES,
    Decision,
    Mode,
    Selection,
    SkippedSource,
    SynthItem,
    SynthRun,
)
from autorag.synth.rules import RuleReader
from autorag.synth.runner import Runner
from autorag.synth.sources import plan_sources
from autorag.synth.store import APPLICABLE, SYNTH_JOB, UNDECIDED, StoredRun
from autorag.system_config import GLOBAL_DEFAULT_MODEL, get_value
from autorag.wiki.models import Archive
from autorag.wiki.service import ArchiveRef, WikiService
from autorag.workspace_settings import read_settings

__all__ = ["SYNTH_JOB", "SynthService"]

log = logging.getLogger(__name__)

MAX_LIST = 500
PREVIEW_READY, PAGE_SAVED = "synthesis.preview_ready", "archive.page_saved"
_SOURCE = "synthesis"  # the audit events' source
_DECIDABLE = ("ready", "partially_applied")
_RESUMABLE = ("paused", "failed")
_NOTE_SOURCES = 10  # source ids a page version's note names before "and N more"


@dataclass(frozen=True)
class _Model:
    """The model a run reads with: its provider, the model's name there, and its ref."""

    provider: LLMProvider
    name: str

    @property
    def ref(self) -> str:
        return f"{self.provider.name}/{self.name}"

    @property
    def mode(self) -> Mode:
        return "extractive" if self.provider.name == EXTRACTIVE else "llm"


class SynthService:
    """Synthesis runs of the context's workspace (see the module docstring)."""

    def __init__(
        self,
        app: AppContext,
        *,
        router: ModelRouter | None = None,
        wiki: WikiService | None = None,
    ) -> None:
        self.app = app
        self.engine = app.catalog.engine
        self.workspace_id = app.info.id
        self._router = router
        self.wiki = wiki or WikiService(app)

    @classmethod
    def for_context(cls, app: AppContext) -> SynthService:
        return cls(app, router=build_router(app))

    @property
    def router(self) -> ModelRouter:
        if self._router is None:
            self._router = build_router(self.app)
        return self._router

    # -- starting and running ------------------------------------------------------------
    def start(
        self, archive: ArchiveRef, selection: Selection, *, model: str | None, by: str
    ) -> SynthRun:
        """Check, store and queue a run over ``selection``'s documents (see the module
        docstring). Refused before anything is stored or sent: an unknown archive or
        model, a model that is not local where only local ones may read (``Forbidden``,
        ``local_llm_only``), nothing left to read (``nothing_to_synthesise``)."""
        target = self.wiki.archive(archive)
        selection = _checked(selection)
        chosen = self._choose(model)
        self._gate(target, chosen)
        redact = self._redactor() if chosen.mode == "llm" else None
        plan = plan_sources(self.engine, self.workspace_id, target.id, selection, redact=redact)
        progress = {"entity_extraction": {"done": 0, "total": len(plan.sources)}}
        values = {
            "workspace_id": self.workspace_id,
            "archive_id": target.id,
            "mode": chosen.mode,
            "model": chosen.ref,
            "selection": store.to_json(Selection, selection),
            "progress": store.dumps(progress),
            "skipped": store.to_json(tuple[SkippedSource, ...], tuple(plan.skipped)),
            "created_by": by,
        }
        run_id = store.create_run(self.engine, values, plan.sources)
        log.info(
            "synthesis run %d queued: %d document(s) into archive %s with %s (%d skipped)",
            run_id, len(plan.sources), target.name, chosen.ref, len(plan.skipped),
        )  # fmt: skip
        return self.run(run_id)

    def execute(
        self, run_id: int, *, progress: Callable[[SynthRun], None] | None = None
    ) -> SynthRun:
        """Run the passes from where the run stands: what the worker's job does. A queued
        run starts, a running one (its process was killed) goes on; any other is left as
        it is. The run ends ``ready``, ``paused`` (the model is unavailable: ``resume``),
        ``cancelled`` or ``failed``."""
        stored = self._stored(run_id)
        run = stored.run
        if run.status not in ACTIVE_STATUSES:
            return run
        if not store.update_run(
            self.engine, run_id, {"status": "running"}, from_statuses=ACTIVE_STATUSES
        ):
            return self.run(run_id)
        if stored.cancel_requested:
            return self._finish(run_id, "cancelled")
        on_step = (lambda: progress(self.run(run_id))) if progress else None
        reader: Reader | None = None
        failed = True
        try:
            archive = self.wiki.archive(run.archive_id)
            reader = self._reader(run, archive)
            outcome = Runner(
                self.engine, self.wiki, archive, reader, run_id,
                find_candidates=find_candidates, on_step=on_step,
            ).run()  # fmt: skip
            failed = False
        except Unavailable as exc:
            log.warning("synthesis run %d paused: %s", run_id, exc.message)
            return self._finish(run_id, "paused", exc.message, "model_unavailable", ended=False)
        except AutoragError as exc:
            log.warning("synthesis run %d failed: %s", run_id, exc.message)
            return self._finish(run_id, "failed", exc.message, exc.code)
        except Exception as exc:
            why = f"synthesis failed: {type(exc).__name__}"
            self._finish(run_id, "failed", why, "internal_error")
            raise
        finally:
            self._count_tokens(reader, failed=failed)
        if outcome == "cancelled":
            return self._finish(run_id, "cancelled")
        return self._finish(run_id, "ready")

    def cancel(self, run_id: int, *, by: str) -> SynthRun:
        """Stop a run: at once when it waits (queued, paused), between two steps when
        it is running (or at once, when no job runs it any more). A run whose passes
        ended is decided with approve or reject."""
        stored = self._stored(run_id)
        run = stored.run
        waiting: tuple[str, ...] = ("queued", "paused")
        if run.status == "running" and not self._job_alive(stored.job_id):
            waiting = ("running",)
        if run.status in waiting:
            values = {"status": "cancelled", "finished_at": utcnow(), "cancel_requested": True}
            if store.update_run(self.engine, run_id, values, from_statuses=waiting):
                log.info("synthesis run %d cancelled by %s", run_id, by or "-")
                return self.run(run_id)
            run = self.run(run_id)
        if run.status == "running":
            store.update_run(
                self.engine, run_id, {"cancel_requested": True}, from_statuses=("running",)
            )
            log.info("synthesis run %d: %s asked it to stop", run_id, by or "-")
            return self.run(run_id)
        raise Conflict(
            f"synthesis run {run_id} is {run.status}: only a queued, running or paused run "
            "can be cancelled",
            code="run_not_cancellable",
        )

    def resume(self, run_id: int, *, by: str) -> SynthRun:
        """Queue a paused or failed run again (or one whose job died with its process):
        it goes on at the first step with no stored result."""
        stored = self._stored(run_id)
        statuses: tuple[str, ...] = _RESUMABLE
        if stored.run.status in ACTIVE_STATUSES and not self._job_alive(stored.job_id):
            statuses = ACTIVE_STATUSES
        elif stored.run.status not in _RESUMABLE:
            raise Conflict(
                f"synthesis run {run_id} is {stored.run.status}: only a paused or failed run "
                "can be resumed",
                code="run_not_resumable",
            )
        if not store.requeue_run(self.engine, run_id, self.workspace_id, statuses):
            raise Conflict(f"synthesis run {run_id} changed meanwhile", code="run_not_resumable")
        log.info("synthesis run %d resumed by %s", run_id, by or "-")
        return self.run(run_id)

    # -- reading -------------------------------------------------------------------------
    def runs(self, archive: ArchiveRef | None = None, *, limit: int = 50) -> list[SynthRun]:
        """The workspace's runs (of one archive, when given), newest first."""
        archive_id = self.wiki.archive(archive).id if archive is not None else None
        limit = max(1, min(int(limit), MAX_LIST))
        return store.list_runs(self.engine, self.workspace_id, archive_id=archive_id, limit=limit)

    def run(self, run_id: int) -> SynthRun:
        return self._stored(run_id).run

    def items(self, run_id: int) -> list[SynthItem]:
        """The run's change set; an undecided item with its diff against the page as it
        is now, and ``stale`` when the page changed since the run read it."""
        run = self.run(run_id)
        items = store.load_items(self.engine, run_id)
        if not any(i.action in APPLICABLE and i.status in UNDECIDED for i in items):
            return items
        archive = self.wiki.archive(run.archive_id)
        versions = self._versions(archive)
        return [self._previewed(archive, item, versions) for item in items]

    # -- deciding ------------------------------------------------------------------------
    def approve(
        self,
        run_id: int,
        *,
        only: Sequence[int] | None = None,
        by: str,
        overwrite: bool = False,
    ) -> Decision:
        """Save the chosen items (all when ``only`` is None) as page versions. An item
        whose page a person changed since the run read it is left as a ``conflict``,
        unless ``overwrite``: then it is saved on top of the page as it is now."""
        run = self._decidable(run_id)
        archive = self.wiki.archive(run.archive_id)
        items = self._chosen(run_id, only)
        versions = self._versions(archive)
        note = _Note(run.id, store.source_ids(self.engine, run_id))
        applied: list[int] = []
        conflicts: list[int] = []
        untouched: list[int] = []
        pages: list[str] = []
        for item in items:
            if item.action not in APPLICABLE or item.status not in UNDECIDED:
                untouched.append(item.id)
                continue
            version = self._apply(archive, item, versions, note, by=by, overwrite=overwrite)
            if version is None:
                conflicts.append(item.id)
            elif version < 0:
                untouched.append(item.id)
            else:
                applied.append(item.id)
                pages.append(item.path)
                versions[item.path] = version
        decided = self._settle(run, by)
        return Decision(
            decided, tuple(applied), (), tuple(conflicts), tuple(untouched), tuple(pages)
        )

    def reject(self, run_id: int, *, only: Sequence[int] | None = None, by: str) -> Decision:
        """Discard the chosen items (all undecided ones when ``only`` is None)."""
        run = self._decidable(run_id)
        rejected: list[int] = []
        untouched: list[int] = []
        now = utcnow()
        for item in self._chosen(run_id, only):
            values = {"status": "rejected", "decided_by": by, "decided_at": now}
            if item.status in UNDECIDED and store.decide_item(self.engine, item.id, values):
                rejected.append(item.id)
            else:
                untouched.append(item.id)
        decided = self._settle(run, by, rejecting=True)
        return Decision(decided, (), tuple(rejected), (), tuple(untouched), ())

    # -- internals: models, the PHI gate, DLP --------------------------------------------
    def _choose(self, model: str | None) -> _Model:
        """The model a new run reads with: the one asked for, else the workspace's chat
        model (its default, the global one, the environment's)."""
        router = self.router
        if model is not None and model.strip():
            router.check_choice(model, local_only=False)
            return self._model(model.strip())
        config = read_settings(self.app.catalog, self.app.info).agent
        global_default = get_value(self.engine, GLOBAL_DEFAULT_MODEL)
        choices = [None, config.default_model, global_default]
        return self._model(router.resolve(choices, local_only=config.local_llm_only).target.ref)

    def _model(self, ref: str) -> _Model:
        self.router.sync()
        parsed = ModelRef.parse(ref)
        provider = self.router.providers.get(parsed.provider)
        if provider is None:
            raise InvalidInput(f"model {ref!r} names no configured provider", code="unknown_model")
        return _Model(provider, parsed.model or provider.default_model)

    def _gate(self, archive: Archive, model: _Model) -> None:
        """The PHI gate: where only local models may read (the archive's or the
        workspace's ``localLLMOnly``), a model that is not local reads nothing."""
        if model.provider.local:
            return
        workspace_only = read_settings(self.app.catalog, self.app.info).agent.local_llm_only
        if not (archive.config.local_llm_only or workspace_only):
            return
        who = f"archive {archive.name!r}" if archive.config.local_llm_only else "this workspace"
        raise Forbidden(
            f"{who} allows local models only (localLLMOnly) and {model.ref!r} is not local: "
            "no text was sent to it; choose a local model",
            code="local_llm_only",
        )

    def _reader(self, run: SynthRun, archive: Archive) -> Reader:
        if run.mode == "extractive":
            return RuleReader()
        model = self._model(run.model)
        self._gate(archive, model)  # again: the archive's config may have changed
        return ModelReader(model.provider, model.name, redact=self._redactor())

    def _redactor(self) -> Callable[[str], str]:
        """DLP on text sent to a model, as chat's: the workspace's patterns, audited."""
        session = DlpService(self.app.catalog, self.app.settings.dlp).session(
            DlpContext(source="chat", channel="synthesis", workspace_id=self.workspace_id)
        )
        return lambda text: session.scan(text, channel="synthesis").redacted_text

    def _count_tokens(self, reader: Reader | None, *, failed: bool) -> None:
        """The execution's model use in chat's usage table (tokens counted like chat's)."""
        if reader is None or reader.calls == 0:
            return
        usage = reader.usage
        try:
            chat_store.record_usage(
                self.engine, self.workspace_id, Usage(usage.prompt_tokens, usage.completion_tokens),
                failed=failed,
            )  # fmt: skip
        except Exception:  # the run's own counts stand; the daily total is best effort
            log.warning("synthesis tokens not added to the usage table", exc_info=True)

    # -- internals: runs -----------------------------------------------------------------
    def _stored(self, run_id: int) -> StoredRun:
        found = None
        if isinstance(run_id, int) and not isinstance(run_id, bool):
            found = store.load_run(self.engine, self.workspace_id, run_id)
        if found is None:
            raise NotFound(f"no synthesis run {run_id} in this workspace", code="run_not_found")
        return found

    def _finish(
        self,
        run_id: int,
        status: str,
        error: str | None = None,
        code: str | None = None,
        *,
        ended: bool = True,
    ) -> SynthRun:
        values: dict[str, Any] = {"status": status, "error": error, "error_code": code}
        if ended:
            values["finished_at"] = utcnow()
        if status == "ready":
            values["current_pass"] = None
        ready = self.run(run_id) if status == "ready" else None  # its archive and items
        with self.engine.begin() as conn:
            changed = store.update_run(conn, run_id, values, from_statuses=("running",))
            if changed and ready is not None:  # the event commits with the status, or neither
                audit.record(
                    self.app.catalog, PREVIEW_READY, workspace_id=self.workspace_id,
                    source=_SOURCE, connection=conn,
                    details={"runId": run_id, "archive": ready.archive, "items": ready.items},
                )  # fmt: skip
        return self.run(run_id)

    def _job_alive(self, job_id: int | None) -> bool:
        if job_id is None:
            return False
        try:
            row = queue.get_job_row(self.engine, job_id, workspace_id=self.workspace_id)
        except NotFound:
            return False
        return row.status in queue.ACTIVE

    def _decidable(self, run_id: int) -> SynthRun:
        run = self.run(run_id)
        if run.status not in _DECIDABLE:
            raise Conflict(
                f"synthesis run {run_id} is {run.status}: only a run waiting for review "
                "(ready or partially applied) can be approved or rejected",
                code="run_not_ready",
            )
        return run

    def _chosen(self, run_id: int, only: Sequence[int] | None) -> list[SynthItem]:
        items = store.load_items(self.engine, run_id)
        if only is None:
            return items
        wanted = set(only)
        unknown = sorted(wanted - {i.id for i in items})
        if unknown:
            shown = ", ".join(str(i) for i in unknown[:10])
            raise NotFound(f"run {run_id} has no item {shown}", code="item_not_found")
        return [i for i in items if i.id in wanted]

    def _settle(self, run: SynthRun, by: str, *, rejecting: bool = False) -> SynthRun:
        """The run's status from its items' (skips need no decision; a contradiction
        is decided by dismissing it): while some wait, partially applied once one is
        applied, else still ready; once none waits, applied when something was and no
        page was turned down, partially applied when some were, rejected when nothing
        was. A run with nothing to decide is applied or rejected as asked. Once applied,
        even in part, its sources count as read."""
        items = [i for i in store.load_items(self.engine, run.id) if i.action != "skip"]
        statuses = {i.status for i in items}
        turned_down = any(i.action in APPLICABLE and i.status == "rejected" for i in items)
        status = run.status
        if not items:
            status = "rejected" if rejecting else "applied"
        elif statuses & set(UNDECIDED):
            status = "partially_applied" if "applied" in statuses else run.status
        elif "applied" in statuses:
            status = "partially_applied" if turned_down else "applied"
        else:
            status = "rejected"
        if status != run.status:
            values = {"status": status, "decided_by": by, "decided_at": utcnow()}
            store.update_run(self.engine, run.id, values, from_statuses=_DECIDABLE)
        if status in ("applied", "partially_applied"):
            store.mark_done(self.engine, run.archive_id, run.id)
        return self.run(run.id)

    # -- internals: pages ----------------------------------------------------------------
    def _versions(self, archive: Archive) -> dict[str, int]:
        """Every page's version by path (one query)."""
        return {p.path: p.version for p in self.wiki.pages(archive)}

    def _previewed(self, archive: Archive, item: SynthItem, versions: dict[str, int]) -> SynthItem:
        if item.action not in APPLICABLE or item.status not in UNDECIDED:
            return item
        now = versions.get(item.path)
        try:
            diff = self.wiki.preview_save(archive, item.path, body=item.body, title=item.title).diff
        except AutoragError:
            diff = ""
        return replace(item, diff=diff, stale=now != _base(item))

    def _apply(
        self,
        archive: Archive,
        item: SynthItem,
        versions: dict[str, int],
        note: _Note,
        *,
        by: str,
        overwrite: bool,
    ) -> int | None:
        """Save one item: the page's new version; None: a conflict (a person changed
        the page since the run read it); -1: the item cannot be saved (left as it is)."""
        now = versions.get(item.path)
        base = _base(item)
        if now != base:
            if not overwrite:
                self._conflict(item, by)
                return None
            base = now
        try:
            page = self.wiki.save_page(
                archive, item.path, body=item.body, title=item.title or None,
                base_version=base, by=by, note=note.text(item),
            )  # fmt: skip
        except (Conflict, NotFound):  # a save raced this one
            self._conflict(item, by)
            return None
        except InvalidInput as exc:
            log.warning("synthesis item %d not saved: %s", item.id, exc.message)
            return -1
        values = {
            "status": "applied", "applied_version": page.version, "decided_by": by,
            "decided_at": utcnow(),
        }  # fmt: skip
        saved = {"runId": item.run_id, "archive": archive.name, "path": page.path,
                 "version": page.version}  # fmt: skip
        store.decide_item(
            self.engine, item.id, values,
            announce=lambda conn: audit.record(
                self.app.catalog, PAGE_SAVED, workspace_id=self.workspace_id, source=_SOURCE,
                details=saved, connection=conn,
            ),
        )  # fmt: skip
        return page.version

    def _conflict(self, item: SynthItem, by: str) -> None:
        if item.status != "conflict":
            values = {"status": "conflict", "decided_by": by, "decided_at": utcnow()}
            store.decide_item(self.engine, item.id, values)


@dataclass(frozen=True)
class _Note:
    """A saved version's provenance: the run and the sources the text rests on."""

    run_id: int
    run_sources: list[str]

    def text(self, item: SynthItem) -> str:
        cited = list(dict.fromkeys(p.source_id for p in item.sources if p.source_id))
        ids = cited or self.run_sources
        shown = ", ".join(ids[:_NOTE_SOURCES])
        more = len(ids) - _NOTE_SOURCES
        if more > 0:
            shown += f" and {more} more"
        run = f"synthesis run {self.run_id}"
        return f"{run} from {shown}" if shown else run


def _base(item: SynthItem) -> int | None:
    """The page version an item expects to find (None: no page, for a new one)."""
    return None if item.action == "create" else item.base_version


def _checked(selection: Selection) -> Selection:
    """The selection in its normal form: ids positive, the type lower case without a
    dot, the date with a zone (UTC when none given)."""
    if not isinstance(selection, Selection):
        raise InvalidInput("a selection is expected", code="invalid_input")
    ids = tuple(dict.fromkeys(selection.document_ids))
    if any(not isinstance(i, int) or isinstance(i, bool) or i < 1 for i in ids):
        raise InvalidInput("document ids are positive integers", code="invalid_input")
    kind = selection.doc_type.strip().lower().lstrip(".") if selection.doc_type else None
    since = selection.since
    if since is not None:  # compared with the catalog's UTC timestamps
        since = since.astimezone(UTC) if since.tzinfo else since.replace(tzinfo=UTC)
    return replace(selection, document_ids=ids, doc_type=kind or None, since=since)
