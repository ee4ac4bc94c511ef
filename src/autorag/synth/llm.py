"""The model reader: a model reads the sources, through one configured provider.

One call per extract / summarize / decide / overview. Extraction and decisions come back
as JSON held to a schema (``synth.prompts``) and are parsed as data: checked, passage
numbers outside the prompt dropped, paths normalised. A reply that does not fit is asked
again once with a short correction; a second misfit degrades instead of failing the run
(no entities from that source; a SKIP decision saying why). Every message passes through
``redact`` (the workspace's DLP) before it is sent. ``Unavailable`` from the provider
propagates: the run pauses, and resuming asks again.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from autorag.errors import InvalidInput
from autorag.llm.base import ChatMessage, GenerationOptions, JsonFormat, LLMProvider, Usage
from autorag.synth import prompts
from autorag.synth.base import (
    Candidate,
    Claim,
    Entity,
    EntityEvidence,
    Extraction,
    OverviewInput,
    Proposal,
    SourceText,
    entity_slug,
    proposal_path,
)
from autorag.synth.models import Mode, Passage
from autorag.synth.rules import (
    first_sentences,
    overview_by_rules,
    render_citations,
)
from autorag.text import one_line
from autorag.wiki import frontmatter
from autorag.wiki.links import key_of
from autorag.wiki.slugs import is_path

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 120
MAX_DESCRIPTION_CHARS = 300
MAX_CLAIM_CHARS = 500
MAX_CLAIMS = 12  # per entity and source
MAX_DECISION_PASSAGES = 24  # numbered in a decision's prompt
FALLBACK_PASSAGES = 2  # per source, when no claim cites one
MAX_SUMMARY_CHARS = 2_000
MAX_REASON_CHARS = 600
MAX_ECHO_CHARS = 4_000  # of an unusable reply, shown back with the correction

T = TypeVar("T")


class _Unusable(Exception):
    """A reply that does not fit: what is wrong, said to the model once."""


# -- the reply shapes (validated as data: extra keys ignored, numbers as text accepted) ----


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _ClaimIn(_Reply):
    text: str
    passages: list[int] = Field(default_factory=list)

    @field_validator("passages", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


class _EntityIn(_Reply):
    name: str
    kind: str = "concept"
    description: str = ""
    claims: list[_ClaimIn] = Field(default_factory=list)


class _ExtractionIn(_Reply):
    entities: list[_EntityIn]


class _DecisionIn(_Reply):
    verdict: Literal["create", "update", "skip", "contradiction"]
    reason: str = ""
    path: str = ""
    title: str = ""
    body: str = ""
    passages: list[int] = Field(default_factory=list)
    page_quote: str | None = Field(default=None, alias="pageQuote")
    source_passage: int | None = Field(default=None, alias="sourcePassage")

    @field_validator("passages", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("path", "title", "body", "reason", mode="before")
    @classmethod
    def _none_is_blank(cls, value: Any) -> Any:
        return "" if value is None else value


# -- the reader ---------------------------------------------------------------------------


class ModelReader:
    """The :class:`~autorag.synth.base.Reader` backed by a model (mode "llm")."""

    mode: Mode = "llm"

    def __init__(self, provider: LLMProvider, model: str, *, redact: Callable[[str], str]) -> None:
        self.provider = provider
        self.model_name = model
        self.model = f"{provider.name}/{model}"
        self._redact = redact
        self._usage = Usage()
        self._calls = 0

    @property
    def usage(self) -> Usage:
        return self._usage

    @property
    def calls(self) -> int:
        return self._calls

    # -- the four readings --------------------------------------------------------------

    def extract(self, source: SourceText) -> Extraction:
        messages = prompts.extraction_messages(source)
        read = self._ask_json(
            messages,
            prompts.EXTRACTION_SCHEMA,
            prompts.EXTRACTION_NAME,
            lambda data: _entities(_ExtractionIn.model_validate(data), source),
        )
        if read.value is None:
            log.warning(
                "synthesis: the model's entities for %s were unusable twice (%s); "
                "the source adds no entities",
                source.source_id,
                read.problem,
            )
            return Extraction(())
        return Extraction(read.value)

    def summarize(self, source: SourceText, extraction: Extraction) -> str:
        text = _unfenced(self._ask(prompts.summary_messages(source, extraction), None))
        summary = one_line(text, MAX_SUMMARY_CHARS)
        return summary or first_sentences(source)  # an empty reply: the extractive summary

    def decide(self, evidence: EntityEvidence) -> Proposal:
        numbered, claims = decision_passages(evidence)
        read = self._ask_json(
            prompts.decision_messages(evidence, numbered, claims),
            prompts.DECISION_SCHEMA,
            prompts.DECISION_NAME,
            lambda data: _proposal(_DecisionIn.model_validate(data), evidence, numbered),
        )
        if read.value is not None:
            return read.value
        reason = (
            "the model's reply was not valid JSON for the decision schema twice "
            f"({one_line(read.problem, 300)}): nothing proposed for it"
        )
        log.warning("synthesis: %s for entity %r", reason, evidence.name)
        return Proposal("skip", reason, entity_slug(evidence.name), _title(evidence.name), "", ())

    def overview(self, given: OverviewInput) -> str:
        text = _unfenced(self._ask(prompts.overview_messages(given), None)).strip()
        if not text:
            return overview_by_rules(given)
        body = _without_front_matter(text)
        # Every page linked, whatever the model left out.
        return overview_by_rules(replace(given, current=body.strip() + "\n"))

    # -- talking to the model -----------------------------------------------------------

    def _ask(self, messages: Sequence[ChatMessage], json_format: JsonFormat | None) -> str:
        """One call: the messages redacted, the streamed text joined, the usage added."""
        sent = [replace(m, content=self._redact(m.content)) for m in messages]
        options = GenerationOptions(temperature=0, json=json_format)
        self._calls += 1
        parts: list[str] = []
        for delta in self.provider.stream_chat(sent, model=self.model_name, options=options):
            parts.append(delta.text)
            if delta.usage is not None:
                self._usage += delta.usage
        return "".join(parts)

    def _ask_json(
        self,
        messages: list[ChatMessage],
        schema: dict[str, Any],
        name: str,
        parse: Callable[[Any], T],
    ) -> _Read[T]:
        """The parsed reply; asked once more, told what was wrong, when it does not fit;
        ``value`` None when the second does not either."""
        json_format = (
            JsonFormat(schema=schema, name=name, strict=True) if self.provider.writes_json else None
        )
        problem = ""
        for attempt in range(2):
            text = self._ask(messages, json_format)
            try:
                return _Read(parse(_json_object(text)))
            except _Unusable as exc:
                problem = str(exc)
            except ValidationError as exc:
                problem = _schema_problem(exc)
            if attempt == 0:
                messages = [
                    *messages,
                    ChatMessage("assistant", one_line(text, MAX_ECHO_CHARS)),
                    prompts.correction(problem),
                ]
        return _Read(None, problem)


@dataclass(frozen=True)
class _Read(Generic[T]):
    value: T | None
    problem: str = ""


# -- replies to data ----------------------------------------------------------------------


def _json_object(text: str) -> Any:
    """The reply's JSON object (a markdown fence or words around it tolerated)."""
    raw = _unfenced(text).strip()
    try:
        data = json.loads(raw)
    except ValueError:
        start, end = raw.find("{"), raw.rfind("}")
        try:
            data = json.loads(raw[start : end + 1]) if 0 <= start < end else None
        except ValueError:
            data = None
        if data is None:
            raise _Unusable("it is not valid JSON") from None
    if not isinstance(data, dict):
        raise _Unusable("it is not a JSON object")
    return data


def _schema_problem(exc: ValidationError) -> str:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid"}
    where = ".".join(str(part) for part in first.get("loc", ())) or "the object"
    return f"it does not match the schema ({where}: {first.get('msg', 'invalid')})"


_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)


def _unfenced(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text


def _entities(reply: _ExtractionIn, source: SourceText) -> tuple[Entity, ...]:
    """The reply's entities as the source's: names trimmed and merged, kinds from the
    list, passage numbers (1-based in the prompt) as indexes into the source's passages,
    numbers outside it dropped; an entity with no claim left out."""
    count = len(source.passages)
    merged: dict[str, Entity] = {}
    for item in reply.entities:
        name = one_line(item.name, MAX_NAME_CHARS)
        claims = tuple(
            Claim(
                one_line(claim.text, MAX_CLAIM_CHARS),
                tuple(dict.fromkeys(n - 1 for n in claim.passages if 1 <= n <= count)),
            )
            for claim in item.claims[:MAX_CLAIMS]
            if claim.text.strip()
        )
        if not name or not claims:
            continue
        key = key_of(name)
        if key in merged:  # the same entity listed twice: one, with both's claims
            known = merged[key]
            merged[key] = replace(known, claims=(known.claims + claims)[:MAX_CLAIMS])
            continue
        kind = item.kind.strip().lower()
        merged[key] = Entity(
            name=name,
            kind=kind if kind in prompts.KINDS else "other",
            description=one_line(item.description, MAX_DESCRIPTION_CHARS),
            claims=claims,
            document_id=source.document_id,
        )
    if not merged and reply.entities:
        raise _Unusable("no entity has a name and at least one claim")
    return tuple(merged.values())[: prompts.MAX_ENTITIES]


def decision_passages(evidence: EntityEvidence) -> tuple[list[Passage], list[str]]:
    """The passages a decision is shown, numbered from 1 (those the entity's claims cite;
    without any, the start of each source), and the claims as lines citing them."""
    sources = {s.document_id: s for s in evidence.sources}
    numbered: list[Passage] = []
    where: dict[tuple[int, int], int] = {}
    lines: dict[str, str] = {}
    for mention in evidence.mentions:
        source = sources.get(mention.document_id)
        passages = source.passages if source is not None else ()
        for claim in mention.claims:
            if key_of(claim.text) in lines:
                continue
            marks = ""
            for index in claim.passages:
                spot = (mention.document_id, index)
                if 0 <= index < len(passages) and spot not in where:
                    if len(numbered) == MAX_DECISION_PASSAGES:
                        continue
                    numbered.append(passages[index])
                    where[spot] = len(numbered)
                if spot in where:
                    marks += f"[{where[spot]}]"
            lines[key_of(claim.text)] = f"- {one_line(claim.text, MAX_CLAIM_CHARS)} {marks}"
    if not numbered:
        for source in evidence.sources:
            numbered += source.passages[:FALLBACK_PASSAGES]
    return numbered[:MAX_DECISION_PASSAGES], [line.rstrip() for line in lines.values()]


def _proposal(reply: _DecisionIn, evidence: EntityEvidence, numbered: list[Passage]) -> Proposal:
    listed = tuple(dict.fromkeys(n for n in reply.passages if 1 <= n <= len(numbered)))
    reason = one_line(reply.reason, MAX_REASON_CHARS) or f"the model chose {reply.verdict}"
    if reply.verdict == "skip":
        page = _candidate(reply, evidence.candidates)
        path = page.path if page is not None else proposal_path(reply.path, evidence.name)
        cited = tuple(numbered[n - 1] for n in listed)
        return Proposal("skip", reason, path, _title(reply.title or evidence.name), "", cited)
    if reply.verdict == "contradiction":
        return _contradiction(reply, evidence, numbered, listed, reason)
    if not reply.body.strip():
        raise _Unusable(f'a "{reply.verdict}" needs the page\'s "body"')
    body = _without_front_matter(reply.body)
    if reply.verdict == "create":
        text, cited = _cited(body, numbered, listed)
        return Proposal(
            "create",
            reason,
            proposal_path(reply.path, evidence.name),
            _title(reply.title or evidence.name),
            frontmatter.compose({"synthesis": "llm"}, text),
            cited,
        )
    page = _candidate(reply, evidence.candidates)
    if page is None:
        raise _Unusable(_not_a_candidate(reply.path, evidence.candidates))
    if prompts.page_cut(page):  # the model saw only the start: its text is an addition
        body = page.body.rstrip() + "\n\n" + body.strip()
    text, cited = _cited(body, numbered, listed, keep=page.body)
    return Proposal(
        "update",
        reason,
        page.path,
        page.title,
        frontmatter.compose(dict(page.front_matter), text),
        cited,
    )


def _cited(
    body: str, numbered: list[Passage], listed: tuple[int, ...], *, keep: str = ""
) -> tuple[str, tuple[Passage, ...]]:
    """The body with its citations as footnotes; a body citing nothing cites the passages
    the reply lists (at its end); citing nothing at all, it is not usable."""
    text, cited = render_citations(body, numbered, keep=keep)
    if not cited and listed:
        marks = "".join(f"[{n}]" for n in listed)
        text, cited = render_citations(f"{body.rstrip()} {marks}", numbered, keep=keep)
    if not cited:
        raise _Unusable("the body cites no numbered passage (write [1], [2], ... after each fact)")
    return text, cited


def _contradiction(
    reply: _DecisionIn,
    evidence: EntityEvidence,
    numbered: list[Passage],
    listed: tuple[int, ...],
    reason: str,
) -> Proposal:
    """Both sides, as passages: the page's sentence (found in the page) and the source's
    passage."""
    quote = one_line(reply.page_quote or "", MAX_CLAIM_CHARS)
    number = reply.source_passage
    if not quote:
        raise _Unusable('a "contradiction" needs "pageQuote", the page\'s sentence')
    if number is None or not 1 <= number <= len(numbered):
        raise _Unusable(f'"sourcePassage" must be a passage number from 1 to {len(numbered)}')
    page = _candidate(reply, evidence.candidates)
    holding = [c for c in evidence.candidates if key_of(quote) in key_of(c.body)]
    if page is None or key_of(quote) not in key_of(page.body):
        page = holding[0] if holding else None
    if page is None:
        raise _Unusable('"pageQuote" must be copied exactly from one of the pages shown')
    source = numbered[number - 1]
    side = Passage(text=quote, title=page.title, page_path=page.path)
    cited = tuple(dict.fromkeys((source, *(numbered[n - 1] for n in listed))))
    return Proposal(
        "contradiction", reason, page.path, page.title, "", cited, contradiction=(side, source)
    )


def _candidate(reply: _DecisionIn, candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate page the reply names, by path (or by title, written as the path)."""
    path = is_path(reply.path) if reply.path.strip() else None
    for candidate in candidates:
        if candidate.path == path:
            return candidate
    for candidate in candidates:
        if key_of(candidate.title) in (key_of(reply.path), key_of(reply.title)):
            return candidate
    return None


def _not_a_candidate(path: str, candidates: Sequence[Candidate]) -> str:
    if not candidates:
        return 'there is no existing page to update: "update" is not possible, use "create"'
    shown = ", ".join(repr(c.path) for c in candidates)
    return f'"path" {one_line(path, 80)!r} is not one of the existing pages ({shown})'


def _title(raw: str) -> str:
    return one_line(raw, 200)


def _without_front_matter(body: str) -> str:
    """The model writes no front matter; if it did anyway, it is dropped (ours is set)."""
    if not body.lstrip().startswith("---"):
        return body
    try:
        return frontmatter.split(body.lstrip())[1]
    except InvalidInput:  # not front matter after all: a rule ("---") opening the text
        return body
