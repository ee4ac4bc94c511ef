"""The five passes of a run, each step's result stored as soon as it is made.

A step is one reader call (a source's extraction or summary, an entity's decision, the
overview); after each, its result, the run's progress and the model use it cost are
written together (``store.save_step``). A run that stops anywhere (a model that went
away, a cancel, a killed process) therefore starts again at the first step with no
stored result, and no model call is made twice. (The candidate searches, which call no
model, are written every ``SEARCHES_PER_SAVE``: a resumed run searches the few unsaved
ones again.) Whether the run goes on is read from the catalog before every step that
may call a model, and with every write: a cancel takes effect between steps.

The runner only runs passes; the service decides what the run's status becomes when the
runner returns or raises (``Unavailable`` pauses, other ``AutoragError``s fail).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from sqlalchemy import Engine

from autorag.errors import InvalidInput, NotFound
from autorag.synth import store
from autorag.synth.base import (
    OVERVIEW_PATH,
    OVERVIEW_TITLE,
    Candidate,
    Entity,
    EntityEvidence,
    Extraction,
    OverviewInput,
    Proposal,
    Reader,
    SourceText,
    Verdict,
    proposal_path,
)
from autorag.synth.models import PASSES, Passage, PassName
from autorag.synth.store import StoredSource
from autorag.wiki import frontmatter
from autorag.wiki.links import key_of
from autorag.wiki.models import Archive, Page
from autorag.wiki.service import WikiService

log = logging.getLogger(__name__)

MAX_ENTITIES_PER_SOURCE = 8
# candidate_search makes no model call: its state is written every so many entities
# rather than after each (a resumed run searches the unsaved few again).
SEARCHES_PER_SAVE = 25

FindCandidates = Callable[[WikiService, Archive, str, Sequence[str]], tuple[Candidate, ...]]
Outcome = Literal["ready", "cancelled"]


class _Cancelled(Exception):
    """A person asked the run to stop; raised between steps."""


@dataclass(frozen=True)
class MergedEntity:
    """An entity as all the run's sources found it (merged by name)."""

    key: str
    name: str
    kind: str
    mentions: tuple[Entity, ...]

    @property
    def claims(self) -> list[str]:
        return [claim.text for mention in self.mentions for claim in mention.claims]


class Runner:
    """Runs one run's passes from where it stands (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        wiki: WikiService,
        archive: Archive,
        reader: Reader,
        run_id: int,
        *,
        find_candidates: FindCandidates,
        on_step: Callable[[], None] | None = None,
    ) -> None:
        self.engine = engine
        self.wiki = wiki
        self.archive = archive
        self.reader = reader
        self.run_id = run_id
        self.find_candidates = find_candidates
        self.on_step = on_step
        self.progress: dict[str, dict[str, Any]] = {}
        self.state: dict[str, Any] = {}
        self._stop = False  # a person asked the run to stop, as the last write read it
        # What the reader had used when last written to the run (it counts from its start).
        self._calls = reader.calls
        self._usage = reader.usage

    def run(self) -> Outcome:
        """The passes not done yet; ``cancelled`` when a person stopped the run. Raises
        what the reader raises (``Unavailable``: the run is to pause)."""
        stored = store.load_run(self.engine, self.archive.workspace_id, self.run_id)
        if stored is None:
            raise NotFound(f"no synthesis run {self.run_id}", code="run_not_found")
        self.progress = {name: dict(entry) for name, entry in stored.progress.items()}
        self.state = dict(stored.state)
        self._stop = stored.cancel_requested
        sources = store.load_sources(self.engine, self.run_id)
        try:
            sources = self._extract(sources)
            sources = self._summarise(sources)
            entities = merge_entities(sources)
            self._search(entities)
            self._decide(entities, sources)
            self._overview()
        except _Cancelled:
            return "cancelled"
        finally:
            self._save_usage()
        return "ready"

    # -- the passes -----------------------------------------------------------------------
    def _extract(self, sources: list[StoredSource]) -> list[StoredSource]:
        name: PassName = "entity_extraction"
        done = sum(s.extraction is not None for s in sources)
        self._begin(name, done, len(sources))
        result = []
        for source in sources:
            if source.extraction is None:
                self._check_cancel()
                extraction = kept(self.reader.extract(source.text), source.document_id)
                done += 1
                text = store.to_json(Extraction, extraction)
                self._save(name, done, source=(source.position, {"extraction": text}))
                source = replace(source, extraction=text)
            result.append(source)
        self._end(name)
        return result

    def _summarise(self, sources: list[StoredSource]) -> list[StoredSource]:
        name: PassName = "summary_generation"
        done = sum(s.summary is not None for s in sources)
        self._begin(name, done, len(sources))
        result = []
        for source in sources:
            if source.summary is None:
                self._check_cancel()
                summary = self.reader.summarize(source.text, extraction_of(source))
                done += 1
                self._save(name, done, source=(source.position, {"summary": summary}))
                source = replace(source, summary=summary)
            result.append(source)
        self._end(name)
        return result

    def _search(self, entities: list[MergedEntity]) -> None:
        name: PassName = "candidate_search"
        found: dict[str, Any] = dict(self.state.get("candidates") or {})
        self._begin(name, sum(e.key in found for e in entities), len(entities))
        unsaved = 0
        for entity in entities:
            if entity.key in found:
                continue
            self._check_cancel(ask=False)  # no model call: the periodic saves read it
            candidates = self.find_candidates(self.wiki, self.archive, entity.name, entity.claims)
            # Only where a page is and its version: its text is read again at decision
            # time (the page may have changed, and bodies would bloat the run's state).
            found[entity.key] = [
                {"path": c.path, "title": c.title, "version": c.version, "score": c.score}
                for c in candidates
            ]
            unsaved += 1
            if unsaved >= SEARCHES_PER_SAVE:
                self.state["candidates"] = found
                self._save(name, len([e for e in entities if e.key in found]))
                unsaved = 0
        self.state["candidates"] = found
        self._end(name, done=len(entities))

    def _decide(self, entities: list[MergedEntity], sources: list[StoredSource]) -> None:
        name: PassName = "llm_decision"
        items = store.load_items(self.engine, self.run_id)
        decided = {key_of(item.entity) for item in items if item.action != "overview"}
        done = sum(e.key in decided for e in entities)
        self._begin(name, done, len(entities))
        position = len(items)
        for entity in entities:
            if entity.key in decided:
                continue
            self._check_cancel()
            candidates = self._candidates(entity.key)
            proposal = self.reader.decide(evidence_of(entity, sources, candidates))
            done += 1
            self._save(name, done, item=self._item(entity, proposal, candidates, position))
            position += 1
        self._end(name)

    def _overview(self) -> None:
        name: PassName = "write_overview"
        items = store.load_items(self.engine, self.run_id)
        if any(item.action == "overview" for item in items) or self._is_done(name):
            self._begin(name, 1, 1)
            self._end(name)
            return
        self._begin(name, 0, 1)
        self._check_cancel()
        current = self._page(OVERVIEW_PATH)
        proposals = tuple(
            Proposal(
                _verdict(item.action), item.reason, item.path, item.title, item.body, item.sources
            )
            for item in items
            if item.action in ("create", "update")
        )
        pages = {p.path: p.title for p in self.wiki.pages(self.archive)}
        pages.update((p.path, p.title) for p in proposals if p.path not in pages)
        pages.pop(OVERVIEW_PATH, None)
        given = OverviewInput(
            self.archive.title or self.archive.name,
            current.body if current else None,
            tuple(sorted(pages.items())),
            proposals,
        )
        body = self.reader.overview(given)
        item = None
        if current is not None:
            front, text = frontmatter.split(body)
            # A reader given the body alone may return it alone: the page keeps its
            # front matter then (a save replaces it with the one the text holds).
            body = body if front else frontmatter.compose(current.front_matter, text)
        now = frontmatter.compose(current.front_matter, current.body) if current else None
        if now is None or body.strip() != now.strip():
            item = {
                "position": len(items), "action": "overview", "entity": "",
                "path": OVERVIEW_PATH, "title": OVERVIEW_TITLE, "body": body,
                "reason": "the archive's overview, brought up to date with this change set",
                "sources": "[]", "contradiction": "[]",
                "base_version": current.version if current else None, "status": "pending",
            }  # fmt: skip
        self._save(name, 1, item=item)
        self._end(name)

    # -- steps -----------------------------------------------------------------------------
    def _check_cancel(self, *, ask: bool = True) -> None:
        """Stop here if a person asked: as the last write read it, or (``ask``: before a
        step that may call a model) as the catalog says now."""
        if self._stop or (ask and store.cancel_requested(self.engine, self.run_id)):
            raise _Cancelled

    def _begin(self, name: PassName, done: int, total: int) -> None:
        if self._is_done(name) and done == total:
            return  # a resumed run passing a pass it finished: nothing to write
        self.progress[name] = {"done": done, "total": total, "state": "running"}
        values = {"current_pass": name, "progress": self._progress_json()}
        self._stop = store.save_step(self.engine, self.run_id, values)
        self._stepped()

    def _end(self, name: PassName, *, done: int | None = None) -> None:
        entry = self.progress[name]
        if entry.get("state") == "done":
            return
        entry["state"] = "done"
        if done is not None:
            entry["done"] = done
        self._save_run(name)

    def _is_done(self, name: PassName) -> bool:
        return (self.progress.get(name) or {}).get("state") == "done"

    def _save(
        self,
        name: PassName,
        done: int,
        *,
        source: tuple[int, dict[str, Any]] | None = None,
        item: dict[str, Any] | None = None,
    ) -> None:
        self.progress[name]["done"] = done
        self._save_run(name, source=source, item=item)

    def _save_run(
        self,
        name: PassName,
        *,
        source: tuple[int, dict[str, Any]] | None = None,
        item: dict[str, Any] | None = None,
    ) -> None:
        calls, prompt, completion = self._used()
        values = {"current_pass": name, "progress": self._progress_json()}
        if name == "candidate_search":  # the only pass whose results live in the state
            values["state"] = store.dumps(self.state)
        self._stop = store.save_step(
            self.engine, self.run_id, values, source=source, item=item, calls=calls,
            prompt_tokens=prompt, completion_tokens=completion,
        )  # fmt: skip
        self._stepped()

    def _save_usage(self) -> None:
        """What a failed call used (the step's result is not there to carry it)."""
        calls, prompt, completion = self._used()
        if calls or prompt or completion:
            store.save_step(
                self.engine, self.run_id, {}, calls=calls, prompt_tokens=prompt,
                completion_tokens=completion,
            )  # fmt: skip

    def _used(self) -> tuple[int, int, int]:
        """The reader's use since last written: calls, prompt and completion tokens."""
        calls, usage = self.reader.calls, self.reader.usage
        used = (
            calls - self._calls,
            usage.prompt_tokens - self._usage.prompt_tokens,
            usage.completion_tokens - self._usage.completion_tokens,
        )
        self._calls, self._usage = calls, usage
        return used

    def _progress_json(self) -> str:
        ordered = {name: self.progress[name] for name in PASSES if name in self.progress}
        return store.dumps(ordered)

    def _stepped(self) -> None:
        if self.on_step is not None:
            self.on_step()

    # -- reading pages ---------------------------------------------------------------------
    def _candidates(self, key: str) -> tuple[Candidate, ...]:
        """The entity's candidate pages as they are now (a page gone since: left out)."""
        found = []
        for entry in (self.state.get("candidates") or {}).get(key) or ():
            page = self._page(str(entry.get("path", "")))
            if page is not None:
                found.append(
                    Candidate(
                        page.path,
                        page.title,
                        page.version,
                        page.body,
                        float(entry.get("score", 0.0)),
                        dict(page.front_matter),
                    )
                )
        return tuple(found)

    def _page(self, path: str) -> Page | None:
        """The page at ``path`` exactly (not a page titled so), or None."""
        try:
            page = self.wiki.page(self.archive, path)
        except (NotFound, InvalidInput):
            return None
        return page if page.path == path else None

    def _item(
        self,
        entity: MergedEntity,
        proposal: Proposal,
        candidates: tuple[Candidate, ...],
        position: int,
    ) -> dict[str, Any]:
        """The proposal as an item row: its path normalised, and the version of the page
        it was made against (a person's save after it is a conflict on approval)."""
        action: str = proposal.verdict
        path = proposal_path(proposal.path, entity.name)
        versions = {c.path: c.version for c in candidates}
        base = versions.get(path)
        if action in ("update", "contradiction") and base is None:
            page = self._page(path)
            base = page.version if page else None
        if action == "update" and base is None:
            action = "create"  # no page there to update: what it proposes is a new one
        if action in ("create", "skip"):
            base = None  # a new page, or nothing to write: no version to check against
        return {
            "position": position,
            "action": action,
            "entity": entity.name,
            "path": path,
            "title": (proposal.title or entity.name).strip()[:300] or entity.name,
            "body": "" if action == "skip" else proposal.body,
            "reason": proposal.reason,
            "sources": store.to_json(tuple[Passage, ...], proposal.sources),
            "contradiction": store.to_json(tuple[Passage, ...], proposal.contradiction),
            "base_version": base,
            "status": "pending",
        }


# -- plain helpers --------------------------------------------------------------------------
def kept(extraction: Extraction, document_id: int) -> Extraction:
    """At most ``MAX_ENTITIES_PER_SOURCE`` named entities, each marked as the source's."""
    entities = [replace(e, document_id=document_id) for e in extraction.entities if e.name.strip()]
    return Extraction(tuple(entities[:MAX_ENTITIES_PER_SOURCE]))


def _verdict(action: str) -> Verdict:
    return "create" if action == "create" else "update"


def extraction_of(source: StoredSource) -> Extraction:
    if source.extraction is None:
        return Extraction(())
    return store.from_json(Extraction, source.extraction)


def merge_entities(sources: Sequence[StoredSource]) -> list[MergedEntity]:
    """The sources' entities merged by name (``key_of``), in order of first mention; the
    name and kind as first found."""
    merged: dict[str, MergedEntity] = {}
    for source in sources:
        for entity in extraction_of(source).entities:
            key = key_of(entity.name)
            if not key:
                continue
            known = merged.get(key)
            if known is None:
                merged[key] = MergedEntity(key, entity.name.strip(), entity.kind, (entity,))
            else:
                merged[key] = replace(known, mentions=(*known.mentions, entity))
    return list(merged.values())


def evidence_of(
    entity: MergedEntity, sources: Sequence[StoredSource], candidates: tuple[Candidate, ...]
) -> EntityEvidence:
    """What a decision about ``entity`` reads: the sources that mention it (in the run's
    order), their summaries, and the candidate pages."""
    mentioned = {m.document_id for m in entity.mentions}
    chosen = [s for s in sources if s.document_id in mentioned]
    texts: tuple[SourceText, ...] = tuple(s.text for s in chosen)
    return EntityEvidence(
        entity.name,
        entity.kind,
        entity.mentions,
        texts,
        tuple(s.summary or "" for s in chosen),
        candidates,
    )
