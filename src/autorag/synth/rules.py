"""The extractive reader: synthesis without a model, by rules, honestly labelled.

Entities are a source's headings and the capitalised phrases it repeats (names, not the
capital that opens a sentence, not stop-words or dates); their claims are the sentences
naming them, quoted as written; a summary is the source's first sentences. A decision is
CREATE when no page matches the entity's title, else UPDATE by appending the new
statements under "## Sources"; never a contradiction (rules cannot tell one). No model is
called, so nothing leaves the machine and nothing is counted.

The citation format lives here too, shared with the model reader (``synth.llm``): a text
cites passages ``[n]``; :func:`render_citations` turns them into ``[^k]`` footnotes that
name each passage's document, and lists the cited documents under "## Sources".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from autorag.llm.base import Usage
from autorag.synth.base import (
    OVERVIEW_PATH,
    Candidate,
    Claim,
    Entity,
    EntityEvidence,
    Extraction,
    OverviewInput,
    Proposal,
    SourceText,
    entity_slug,
)
from autorag.synth.models import Mode, Passage
from autorag.text import one_line
from autorag.wiki import frontmatter
from autorag.wiki.links import key_of, mask_code, parse_links
from autorag.wiki.slugs import is_path

MAX_ENTITIES = 8  # per source (the runner keeps at most as many)
MAX_CLAIMS = 6  # per entity and source
MIN_CLAIM_WORDS = 3
MAX_CLAIM_CHARS = 400
MAX_HEADING_WORDS = 6
SUMMARY_SENTENCES = 3
SUMMARY_CHARS = 600
EXTRACTIVE_MODEL = "extractive/extractive"
SOURCES_HEADING = "## Sources"

# -- words that are never (the edge of) an entity ------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _words(
    """a an the this that these those it its it's i we you he she they our your their his
    her my me us them in on at for by with from to of and or but nor if when while after
    before during since until unless because however also then there here thus hence
    therefore moreover furthermore meanwhile although though yet all some each every any
    no not yes as so such what which who whom whose where why how one please note see
    according per via upon within without about above below under over between into
    onto than many much more most other another both either neither few several new
    first second third last next chapter section page table figure fig appendix part
    step item note notes example examples summary overview introduction conclusion
    conclusions background contents abstract references faq sources total today
    yesterday tomorrow dear regards hello hi thanks thank welcome"""
)
_DATES = _words(
    """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday
    thursday friday saturday sunday mon tue tues wed thu thurs fri sat q1 q2 q3 q4
    am pm utc gmt"""
)
_QUESTION_WORDS = _words("what how why when where who whom which whose can do does is are")
# Lower-case words that may sit inside a name ("Bank of England", "Centre for Health").
_CONNECTORS = _words("of for de du des del della van von der den da di le la &")
_TITLES = _words("dr dr. mr mr. mrs mrs. ms ms. prof prof. sir dame")
_ORGANISATION_ENDS = _words(
    """inc inc. ltd ltd. llc corp corp. corporation company group university college
    institute ministry department agency bank association foundation council committee
    hospital clinic school society board office bureau authority commission"""
)
# Sentence ends: not after a title or a single initial ("Dr. Roe", "J. Smith").
_ABBREVIATIONS = _words("dr mr mrs ms prof st inc ltd co corp jr sr vs etc e.g i.e fig")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[\w])")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*[.)]?|[ivxlc]+[.)])\s+", re.IGNORECASE)
_EMPHASIS = re.compile(r"[*_`]+")
_TOKEN = re.compile(r"[^\W_][\w'’.&-]*|&")
_POSSESSIVE = re.compile(r"['’]s$")
_SPACES = re.compile(r"\s+")


# -- the reader ---------------------------------------------------------------------------


class RuleReader:
    """The :class:`~autorag.synth.base.Reader` that needs no model (extractive mode)."""

    mode: Mode = "extractive"
    model: str = EXTRACTIVE_MODEL

    @property
    def usage(self) -> Usage:
        return Usage()

    @property
    def calls(self) -> int:
        return 0

    def extract(self, source: SourceText) -> Extraction:
        return Extraction(extract_entities(source))

    def summarize(self, source: SourceText, extraction: Extraction) -> str:
        return first_sentences(source)

    def decide(self, evidence: EntityEvidence) -> Proposal:
        return decide_by_rules(evidence)

    def overview(self, given: OverviewInput) -> str:
        return overview_by_rules(given)


# -- sentences ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Sentence:
    text: str
    passage: int  # index into the source's passages
    heading: str | None  # the heading of the section it is in
    is_heading: bool = False


def sentences(source: SourceText) -> list[Sentence]:
    """The source's sentences in order, each once (passages overlap: chunks share text),
    headings included (``is_heading``)."""
    seen: set[str] = set()
    found: list[Sentence] = []
    heading: str | None = None
    for index, passage in enumerate(source.passages):
        for text, is_heading in _blocks(passage.text):
            if is_heading:
                heading = text
            key = key_of(text)
            if key in seen:
                continue
            seen.add(key)
            found.append(Sentence(text, index, heading, is_heading))
    return found


def _blocks(text: str) -> Iterator[tuple[str, bool]]:
    """``(sentence, is_heading)`` of a passage: headings, then paragraphs and list items
    split into sentences; fenced code is not prose and is left out."""
    paragraph: list[str] = []
    for line in mask_code(text, spans=False).split("\n"):
        heading = _HEADING.match(line)
        if heading or not line.strip() or _LIST_MARK.match(line):
            yield from ((s, False) for s in _split(paragraph))
            paragraph = []
        if heading:
            title = _clean_heading(heading.group(1))
            if title:
                yield title, True
        elif line.strip():
            paragraph.append(_LIST_MARK.sub("", line, count=1))
    yield from ((s, False) for s in _split(paragraph))


def _split(lines: list[str]) -> Iterator[str]:
    text = _SPACES.sub(" ", " ".join(lines)).strip()
    if not text:
        return
    pieces = _SENTENCE_BREAK.split(text)
    held = ""
    for piece in pieces:
        held = f"{held} {piece}".strip() if held else piece.strip()
        last = held.rsplit(" ", 1)[-1].rstrip(".").lower()
        if last in _ABBREVIATIONS or re.fullmatch(r"[A-Z]\.", held.rsplit(" ", 1)[-1]):
            continue  # "Dr. Roe": the break after the title was not a sentence's end
        yield one_line(held, MAX_CLAIM_CHARS)
        held = ""
    if held:
        yield one_line(held, MAX_CLAIM_CHARS)


def _clean_heading(raw: str) -> str:
    text = _EMPHASIS.sub("", raw).strip().rstrip(":").strip()
    return _NUMBERING.sub("", text).strip()


def first_sentences(source: SourceText) -> str:
    """The extractive summary: the source's first few sentences (headings left out)."""
    chosen: list[str] = []
    size = 0
    for sentence in sentences(source):
        if sentence.is_heading or len(sentence.text.split()) < MIN_CLAIM_WORDS:
            continue
        chosen.append(sentence.text)
        size += len(sentence.text) + 1
        if len(chosen) >= SUMMARY_SENTENCES or size >= SUMMARY_CHARS:
            break
    return one_line(" ".join(chosen), SUMMARY_CHARS) if chosen else ""


# -- entities -----------------------------------------------------------------------------


@dataclass
class _Found:
    name: str
    mentions: int = 0
    first: int = 0  # position of the first mention (ties: the earlier first)
    heading: bool = False
    confirmed: bool = False  # seen where a capital is not just a sentence's start
    forms: dict[str, int] = field(default_factory=dict)  # spelling → count


def extract_entities(source: SourceText) -> tuple[Entity, ...]:
    """At most ``MAX_ENTITIES`` entities, most mentioned first, each with the sentences
    naming it as claims (an entity no sentence names is left out)."""
    text_sentences = sentences(source)
    found: dict[str, _Found] = {}
    spotted: list[tuple[int, str, bool]] = []  # (sentence, phrase, opens the sentence)
    for position, sentence in enumerate(text_sentences):
        if sentence.is_heading:
            _heading_entity(found, sentence.text, position)
        else:
            spotted += [(position, p, i) for p, i in capitalised_phrases(sentence.text)]
    named = {_entity_key(p) for _, p, initial in spotted if not initial}
    for position, phrase, initial in spotted:
        rest = phrase.split(" ", 1)[1] if initial and " " in phrase else ""
        if rest and _entity_key(rest) in named:  # "Later Acme Corp": the name is "Acme Corp"
            phrase, initial = rest, False
        entry = found.setdefault(_entity_key(phrase), _Found(phrase, first=position))
        entry.mentions += 1
        entry.forms[phrase] = entry.forms.get(phrase, 0) + 1
        entry.confirmed |= not initial or len(phrase.split()) > 1
    for entry in found.values():
        if entry.heading and not entry.forms:  # a topic is named in lower case too
            naming = _naming(entry.name)
            entry.mentions += sum(
                1 for s in text_sentences if not s.is_heading and naming.search(s.text)
            )
    kept = [e for e in found.values() if e.heading or (e.confirmed and e.mentions >= 2)]
    kept.sort(key=lambda e: (-e.mentions, e.first))
    entities: list[Entity] = []
    for entry in kept:
        name = max(entry.forms, key=lambda f: entry.forms[f]) if entry.forms else entry.name
        claims = _claims(name, text_sentences, heading=entry.name if entry.heading else None)
        if not claims:
            continue
        kind = "topic" if entry.heading and not entry.forms else _kind(entry.forms)
        description = one_line(claims[0].text, 200)
        entities.append(Entity(name, kind, description, claims, source.document_id))
        if len(entities) == MAX_ENTITIES:
            break
    return tuple(entities)


def _entity_key(phrase: str) -> str:
    """How mentions of one entity are merged: "Dr. Jane Roe" and "Jane Roe" are one."""
    words = phrase.split()
    if len(words) > 1 and words[0].lower() in _TITLES:
        words = words[1:]
    return key_of(" ".join(words))


def _heading_entity(found: dict[str, _Found], heading: str, position: int) -> None:
    words = heading.split()
    if not words or len(words) > MAX_HEADING_WORDS or heading.endswith("?"):
        return  # a sentence set as a heading is not a name
    if words[0].lower() in _QUESTION_WORDS:
        return  # "What is covered", "How to make a claim": a section, not a subject
    if all(_is_filler(w) for w in words):
        return  # "Introduction", "Summary", "March 2024"
    entry = found.setdefault(_entity_key(heading), _Found(heading, first=position))
    entry.heading = True
    entry.mentions += 1


def capitalised_phrases(sentence: str) -> list[tuple[str, bool]]:
    """The capitalised phrases of a sentence, ``(phrase, opens the sentence)``: runs of
    capitalised words with nothing but spaces between them (and "of", "de", "&", ...
    inside), stop-words and dates trimmed from both ends; numbers are not words."""
    phrases: list[tuple[str, bool]] = []
    run: list[str] = []
    initial = False
    previous_end = -1
    for match in _TOKEN.finditer(sentence):
        word = _POSSESSIVE.sub("", _strip_dot(match.group(0)))
        joined = previous_end >= 0 and not sentence[previous_end : match.start()].strip()
        if run and not joined:  # a comma, a bracket, a dash: the phrase ended
            phrases += _phrase(run, initial)
            run = []
        if _is_capitalised(word) or (run and word.lower() in _CONNECTORS):
            if not run:
                initial = not re.search(r"\w", sentence[: match.start()])
            run.append(word)
        elif run:
            phrases += _phrase(run, initial)
            run = []
        previous_end = match.end()
        if run and match.group(0) != word:  # "in Oslo. Then", "NASA's": the name ends
            phrases += _phrase(run, initial)
            run = []
    if run:
        phrases += _phrase(run, initial)
    return phrases


def _phrase(words: list[str], initial: bool) -> list[tuple[str, bool]]:
    start, end = 0, len(words)
    while start < end and (_is_filler(words[start]) or words[start].lower() in _CONNECTORS):
        start += 1
        initial = False  # "The Apollo": the name itself does not open the sentence
    while end > start and (_is_filler(words[end - 1]) or words[end - 1].lower() in _CONNECTORS):
        end -= 1
    kept = words[start:end]
    if not kept or (len(kept) == 1 and (kept[0].lower() in _TITLES or len(kept[0]) < 2)):
        return []  # "Dr." alone, "A", "I"
    return [(" ".join(kept), initial)]


def _strip_dot(word: str) -> str:
    """A word without the full stop after it, unless the stop is part of it ("Dr.",
    "U.S.")."""
    if word.lower() in _TITLES or re.fullmatch(r"(?:[A-Za-z]\.){2,}", word):
        return word
    return word.rstrip(".")


def _is_capitalised(word: str) -> bool:
    return bool(word) and word[0].isupper()


def _is_filler(word: str) -> bool:
    lower = word.lower().rstrip(".")
    return lower in _STOP or lower in _DATES or lower.isdigit()


def _kind(forms: Iterable[str]) -> str:
    """ "person" when a title names it ("Dr. Roe"), "organisation" when its last word
    says so ("... University"), else "concept"."""
    spelled = [form.lower().split() for form in forms]
    if any(words[0] in _TITLES for words in spelled):
        return "person"
    if any(words[-1] in _ORGANISATION_ENDS for words in spelled):
        return "organisation"
    return "concept"


def _claims(
    name: str, text_sentences: Sequence[Sentence], *, heading: str | None
) -> tuple[Claim, ...]:
    """The sentences naming ``name`` (whole words; any case for a heading's topic, as
    written for a name); for a heading no sentence names, its section's first sentences."""
    pattern = _naming(name, any_case=heading is not None)
    chosen = [
        s for s in text_sentences
        if not s.is_heading and pattern.search(s.text) and _is_claim(s.text)
    ]  # fmt: skip
    if not chosen and heading is not None:
        chosen = [
            s for s in text_sentences
            if not s.is_heading and s.heading == heading and _is_claim(s.text)
        ]  # fmt: skip
    return tuple(Claim(s.text, (s.passage,)) for s in chosen[:MAX_CLAIMS])


def _naming(name: str, *, any_case: bool = True) -> re.Pattern[str]:
    """Where a sentence names ``name`` (whole words, with or without a title)."""
    words = name.split()
    if len(words) > 1 and words[0].lower() in _TITLES:
        name = " ".join(words[1:])
    flags = re.IGNORECASE if any_case else 0
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)", flags)


def _is_claim(text: str) -> bool:
    return len(text.split()) >= MIN_CLAIM_WORDS


# -- decisions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Said:
    source: SourceText
    line: str  # "- the claim [1][2]"
    text: str  # the claim


def decide_by_rules(evidence: EntityEvidence) -> Proposal:
    """CREATE when no candidate page is the entity's own (its title, or its slug as the
    path), else UPDATE by appending what the page does not say yet; SKIP when the page
    already says all of it."""
    numbered, said = _claim_lines(evidence)
    match = _own_page(evidence.name, evidence.candidates)
    if match is None:
        return _create(evidence, numbered, said)
    return _update(evidence, match, numbered, said)


def _claim_lines(evidence: EntityEvidence) -> tuple[list[Passage], list[_Said]]:
    """The passages the entity's claims rest on (numbered from 1 in order) and one
    ``"- claim [n]"`` line per distinct claim."""
    sources = {s.document_id: s for s in evidence.sources}
    numbered: list[Passage] = []
    where: dict[tuple[int, int], int] = {}
    said: dict[str, _Said] = {}
    for mention in evidence.mentions:
        source = sources.get(mention.document_id)
        for claim in mention.claims:
            text = one_line(claim.text, MAX_CLAIM_CHARS)
            if source is None or key_of(text) in said or not text:
                continue
            marks = ""
            for index in claim.passages:
                if 0 <= index < len(source.passages):
                    at = where.setdefault((source.document_id, index), len(numbered) + 1)
                    if at == len(numbered) + 1:
                        numbered.append(source.passages[index])
                    marks += f"[{at}]"
            said[key_of(text)] = _Said(source, f"- {text} {marks}".rstrip(), text)
    return numbered, list(said.values())


def _own_page(name: str, candidates: Sequence[Candidate]) -> Candidate | None:
    key, paths = key_of(name), {entity_slug(name), is_path(name)}
    for candidate in candidates:
        if key_of(candidate.title) == key or candidate.path in paths:
            return candidate
    return None


def _create(evidence: EntityEvidence, numbered: list[Passage], said: list[_Said]) -> Proposal:
    path = entity_slug(evidence.name)
    if not said:
        return _skip(evidence, path, "the sources make no statement about it to quote")
    lines = "\n".join(s.line for s in said)
    text = f"Statements about {evidence.name} quoted from the sources:\n\n{lines}"
    body, cited = render_citations(text, numbered)
    return Proposal(
        verdict="create",
        reason="no page covers it yet: the sources' statements about it, quoted (extractive)",
        path=path,
        title=one_line(evidence.name, 200),
        body=frontmatter.compose({"synthesis": "extractive"}, body),
        sources=cited,
    )


def _update(
    evidence: EntityEvidence, page: Candidate, numbered: list[Passage], said: list[_Said]
) -> Proposal:
    known = key_of(page.body)
    new = [s for s in said if key_of(s.text) not in known]
    if not new:
        return _skip(evidence, page.path, f"the page {page.path!r} already says all of it")
    # Appended under the page's "## Sources" (added when it has none), each document with
    # its new statements, cited; what a person wrote above stays as it is.
    blocks: dict[int, list[str]] = {}
    for item in new:
        blocks.setdefault(item.source.document_id, [_document_line(item.source)])
        blocks[item.source.document_id].append("  " + item.line)
    addition = "\n".join("\n".join(block) for block in blocks.values())
    body, cited = render_citations(
        _append_under_sources(page.body, addition), numbered, keep=page.body
    )
    return Proposal(
        verdict="update",
        reason=f"the page {page.path!r} covers it: the new statements appended under Sources",
        path=page.path,
        title=page.title,
        body=frontmatter.compose(dict(page.front_matter), body),
        sources=cited,
    )


def _document_line(source: SourceText) -> str:
    title = one_line(source.title, 200) or "Untitled"
    return f"- {title} (`{source.source_id}`)" if source.source_id else f"- {title}"


def _skip(evidence: EntityEvidence, path: str, reason: str) -> Proposal:
    return Proposal("skip", reason, path, one_line(evidence.name, 200), "", ())


def overview_by_rules(given: OverviewInput) -> str:
    """A list of ``[[links]]`` to every page: the whole page when there is none yet, else
    the current text with the pages it does not link yet appended."""
    pages = [(path, title) for path, title in given.pages if path != OVERVIEW_PATH]
    if given.current is None or not given.current.strip():
        lines = [_link(path, title) for path, title in sorted(pages, key=_by_title)]
        intro = f"The pages of {given.archive_title or 'this archive'}:"
        body = intro + "\n\n" + ("\n".join(lines) if lines else "(no pages yet)") + "\n"
        return frontmatter.compose({"synthesis": "extractive"}, body)
    linked = set()
    for link in parse_links(given.current):
        linked.add(link.key)
        if link.slug:
            linked.add(link.slug)
    missing = [
        _link(path, title) for path, title in sorted(pages, key=_by_title)
        if path not in linked and key_of(title) not in linked
    ]  # fmt: skip
    if not missing:
        return given.current
    return given.current.rstrip() + "\n\n## New pages\n\n" + "\n".join(missing) + "\n"


def _link(path: str, title: str) -> str:
    label = one_line(title, 200).replace("|", "/").replace("]", ")").replace("[", "(")
    return f"- [[{path}|{label}]]" if label and label != path else f"- [[{path}]]"


def _by_title(page: tuple[str, str]) -> tuple[str, str]:
    return key_of(page[1]), page[0]


# -- slugs and citations (shared with the model reader) -----------------------------------


# "[1]", "[1, 2]", "[^1]"; not "[[1]]" (a link), "[1](url)" or "[1]: ..." (a definition).
_CITE = re.compile(r"(?<![\[\\])\[(\^?\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\](?![(:\]])")
_FOOTNOTE_LABEL = re.compile(r"\[\^([^\]\s]{1,40})\]")
_SOURCES_LINE = re.compile(r"^ {0,3}##\s+sources\s*#*\s*$", re.IGNORECASE)
_SECTION_END = re.compile(r"^ {0,3}#{1,2}\s|^\[\^[^\]]+\]:")


def render_citations(
    text: str, numbered: Sequence[Passage], *, keep: str = ""
) -> tuple[str, tuple[Passage, ...]]:
    """``text`` whose ``[n]`` (and ``[n, m]``) cite ``numbered[n - 1]``, with each cited
    passage a ``[^k]`` footnote naming its document, the cited documents listed under
    "## Sources" (added, or extended when the text has one), and the passages in footnote
    order. A number outside ``numbered`` is dropped: a citation always points at a real
    passage. ``keep``: the text it extends (its footnotes keep their labels; new ones are
    numbered after them; ``[^n]`` with one of its labels is left alone)."""
    kept_labels = set(_FOOTNOTE_LABEL.findall(keep))
    start = max((int(label) for label in kept_labels if label.isdigit()), default=0)
    order: dict[int, int] = {}

    def cite(match: re.Match[str]) -> str:
        inner = match.group(1)
        if inner.startswith("^") and inner[1:] in kept_labels:
            return match.group(0)  # the page's own footnote
        marks = []
        for raw in re.split(r"\s*[,;]\s*", inner.lstrip("^")):
            number = int(raw)
            if 1 <= number <= len(numbered):
                label = order.setdefault(number, start + len(order) + 1)
                marks.append(f"[^{label}]")
        return "".join(dict.fromkeys(marks))

    cited_text = _CITE.sub(cite, text).rstrip()
    cited = tuple(numbered[n - 1] for n in order)
    if not cited:
        return cited_text + "\n", ()
    documents = _source_lines(cited, cited_text)
    if documents:
        cited_text = _append_under_sources(cited_text, "\n".join(documents))
    notes = [f"[^{label}]: {_describe(numbered[n - 1])}" for n, label in order.items()]
    return cited_text.rstrip() + "\n\n" + "\n".join(notes) + "\n", cited


def _source_lines(cited: Iterable[Passage], text: str) -> list[str]:
    """One line per cited document not yet listed in ``text``."""
    lines: dict[str, str] = {}
    for passage in cited:
        ref = passage.source_id or passage.page_path or ""
        key = ref or passage.title
        if key in lines or (ref and f"`{ref}`" in text):
            continue
        title = one_line(passage.title, 200) or "Untitled"
        lines[key] = f"- {title} (`{ref}`)" if ref else f"- {title}"
    return list(lines.values())


def _describe(passage: Passage) -> str:
    where = one_line(passage.title, 200) or "Untitled"
    if passage.page is not None:
        where += f", p. {passage.page}"
    ref = passage.source_id or passage.page_path
    return f"{where} (`{ref}`)" if ref else where


def _append_under_sources(body: str, addition: str) -> str:
    """``body`` with ``addition`` at the end of its "## Sources" section (the section
    added at the end when there is none)."""
    lines = body.rstrip().split("\n")
    heading = next((i for i, line in enumerate(lines) if _SOURCES_LINE.match(line)), None)
    if heading is None:
        return "\n".join(lines).rstrip() + f"\n\n{SOURCES_HEADING}\n\n{addition}\n"
    end = heading + 1
    while end < len(lines) and not _SECTION_END.match(lines[end]):
        end += 1
    while end > heading + 1 and not lines[end - 1].strip():
        end -= 1
    rest = lines[end:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    # A list goes on as the same list; after other text, a blank line opens a new one.
    gap = [] if _LIST_MARK.match(lines[end - 1]) and _LIST_MARK.match(addition) else [""]
    merged = [*lines[:end], *gap, addition, *([""] if rest else []), *rest]
    return "\n".join(merged).rstrip() + "\n"
