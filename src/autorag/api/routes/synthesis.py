"""Synthesis over HTTP (issue 19): runs that read the workspace's documents into an
archive and propose pages, the proposed change set, and the person's decision on it.

A run is ``…/archives/{name}/synthesis/{run}``. Starting one answers 202 at once: the
server's workers do the five passes (their progress is on the run). Nothing reaches the
archive until a person approves items; a page a person edited after the run read it is
not overwritten (the item becomes a ``conflict``) unless the approval says ``overwrite``.

Every route needs ``archive:write`` in the workspace (managers, admins): a run reads
every document it is given and proposes pages for everyone. The service
(``autorag.synth.service``) does the work; these routes only translate.
"""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Query
from pydantic import Field

from autorag.api.deps import ChatServiceDep, PoolDep, WorkspaceDep
from autorag.api.routes.archives import ArchiveName, CamelIn, CamelOut, Manager, Wiki
from autorag.errors import NotFound
from autorag.synth.models import Decision, Selection, SynthItem, SynthRun
from autorag.synth.service import SynthService
from autorag.times import as_utc

router = APIRouter(prefix="/api/workspaces/{workspace}/archives/{name}", tags=["synthesis"])

RUNS = "/synthesis"
RUN = RUNS + "/{run}"
MAX_ID = 2**62
MAX_IDS = 10_000  # documents or items named in one request
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="The run's id")]
Id = Annotated[int, Field(ge=1, le=MAX_ID)]


def _synth(context: WorkspaceDep, chat: ChatServiceDep, wiki: Wiki) -> SynthService:
    # The server's model router (chat's): connections added at run time are known to it.
    return SynthService(context, router=chat.router, wiki=wiki)


Synth = Annotated[SynthService, Depends(_synth)]


# -- bodies and answers -----------------------------------------------------------------
class StartIn(CamelIn):
    """Which documents the run reads; none of the filters given: every ready document
    not synthesised into this archive yet (or changed since)."""

    document_ids: list[Id] | None = Field(
        default=None, min_length=1, max_length=MAX_IDS, description="Only these documents"
    )
    since: datetime | date | None = Field(
        default=None, description="Only documents indexed since (a date, or a moment; UTC)"
    )
    doc_type: str | None = Field(
        default=None,
        min_length=1,
        max_length=16,
        pattern=r"^\.?[A-Za-z0-9]+$",
        description="Only documents of this type: pdf, docx, md, …",
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        max_length=300,
        description="provider/model; default: the workspace's chat model",
    )
    force: bool = Field(
        default=False,
        description="Also read documents already synthesised and unchanged since",
    )

    def selection(self) -> Selection:
        return Selection(
            document_ids=tuple(dict.fromkeys(self.document_ids or ())),
            since=_moment(self.since),
            doc_type=self.doc_type,  # the service normalises it (".PDF" is "pdf")
            force=self.force,
        )


def _moment(since: datetime | date | None) -> datetime | None:
    """A date is its midnight, UTC; a moment without a zone is UTC, as stored."""
    if since is None:
        return None
    if not isinstance(since, datetime):
        since = datetime.combine(since, time())
    return as_utc(since)


class ApproveIn(CamelIn):
    items: list[Id] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_IDS,
        description="Only these items; default: every pending one",
    )
    overwrite: bool = Field(
        default=False,
        description="Apply items whose page a person saved since the run read it",
    )


class RejectIn(CamelIn):
    items: list[Id] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_IDS,
        description="Only these items; default: every pending one",
    )


class RunListOut(CamelOut):
    runs: list[SynthRun]  # newest first


class ItemListOut(CamelOut):
    run: SynthRun
    items: list[SynthItem]  # in change-set order


def _run_in(synth: SynthService, wiki: Wiki, name: str, run_id: int) -> SynthRun:
    """The run, when it reads into the archive named in the path (404 otherwise, as a
    run that does not exist)."""
    archive = wiki.archive(name)
    run = synth.run(run_id)
    if run.archive_id != archive.id:
        raise NotFound(
            f"no synthesis run {run_id} in archive {archive.name!r}", code="run_not_found"
        )
    return run


# -- runs -------------------------------------------------------------------------------
@router.post(RUNS, status_code=202, response_model=SynthRun)
def start_run(
    principal: Manager,
    name: ArchiveName,
    synth: Synth,
    pool: PoolDep,
    body: Annotated[StartIn | None, Body()] = None,
) -> SynthRun:
    """Start a run (202: queued; follow it at ``…/synthesis/{run}``). Refused with 403
    ``local_llm_only`` when the archive (or the workspace's assistant) allows only a local
    model and the model is not one, before any text is sent; 400
    ``nothing_to_synthesise`` when every chosen document was synthesised already
    (the problem says why each was skipped; ``force`` reads them again)."""
    given = body or StartIn()
    run = synth.start(name, given.selection(), model=given.model, by=principal.username)
    pool.notify()
    return run


@router.get(RUNS, response_model=RunListOut)
def list_runs(
    principal: Manager,
    name: ArchiveName,
    synth: Synth,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> RunListOut:
    """The archive's runs, newest first."""
    return RunListOut(runs=synth.runs(name, limit=limit))


@router.get(RUN, response_model=SynthRun)
def get_run(
    principal: Manager, name: ArchiveName, run: RunId, synth: Synth, wiki: Wiki
) -> SynthRun:
    """A run: its status, each pass's progress, the documents it skipped, token use."""
    return _run_in(synth, wiki, name, run)


@router.get(RUN + "/items", response_model=ItemListOut)
def run_items(
    principal: Manager, name: ArchiveName, run: RunId, synth: Synth, wiki: Wiki
) -> ItemListOut:
    """The proposed change set: each item's action, page, proposed text and diff against
    the page as it is now, the source passages it cites, both passages of a
    contradiction, and ``stale`` when a person saved the page since the run read it."""
    found = _run_in(synth, wiki, name, run)
    return ItemListOut(run=found, items=synth.items(found.id))


@router.post(RUN + "/approve", response_model=Decision)
def approve_run(
    principal: Manager,
    name: ArchiveName,
    run: RunId,
    synth: Synth,
    wiki: Wiki,
    body: Annotated[ApproveIn | None, Body()] = None,
) -> Decision:
    """Save the pending items (all, or ``items``) as page versions whose history names
    the run and its sources. An item whose page a person saved since is left as a
    ``conflict`` unless ``overwrite``. 409 ``run_not_ready`` unless the run waits for
    review."""
    given = body or ApproveIn()
    found = _run_in(synth, wiki, name, run)
    return synth.approve(
        found.id, only=given.items, by=principal.username, overwrite=given.overwrite
    )


@router.post(RUN + "/reject", response_model=Decision)
def reject_run(
    principal: Manager,
    name: ArchiveName,
    run: RunId,
    synth: Synth,
    wiki: Wiki,
    body: Annotated[RejectIn | None, Body()] = None,
) -> Decision:
    """Discard the pending items (all, or ``items``); nothing is written. 409
    ``run_not_ready`` unless the run waits for review."""
    given = body or RejectIn()
    found = _run_in(synth, wiki, name, run)
    return synth.reject(found.id, only=given.items, by=principal.username)


@router.post(RUN + "/cancel", response_model=SynthRun)
def cancel_run(
    principal: Manager, name: ArchiveName, run: RunId, synth: Synth, wiki: Wiki
) -> SynthRun:
    """Stop a run: a running one stops after the step it is in."""
    found = _run_in(synth, wiki, name, run)
    return synth.cancel(found.id, by=principal.username)


@router.post(RUN + "/resume", response_model=SynthRun)
def resume_run(
    principal: Manager, name: ArchiveName, run: RunId, synth: Synth, wiki: Wiki, pool: PoolDep
) -> SynthRun:
    """Queue a paused run again (the model was unavailable): it goes on from the first
    step without a stored result."""
    found = _run_in(synth, wiki, name, run)
    resumed = synth.resume(found.id, by=principal.username)
    pool.notify()
    return resumed
