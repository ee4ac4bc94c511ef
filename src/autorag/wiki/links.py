"""``[[wikilinks]]`` in a page's markdown: what each names, and the sentence around it.

Forms: ``[[Title]]``, ``[[path/slug]]``, ``[[Title|label]]``, ``[[Title#Heading]]``,
``[[path#Heading|label]]``. Links inside code (fenced blocks and inline code spans) are
text, not links. A target keeps two keys: ``key`` (the text as written, whitespace
collapsed, case folded: how a title or alias matches) and ``slug`` (its normal form as a
page path, when it is a valid one: how a path matches).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from autorag.errors import InvalidInput
from autorag.wiki.slugs import is_path

MAX_TARGET_CHARS = 300
MAX_CONTEXT_CHARS = 300
MAX_LINKS = 5000
_WINDOW = 400  # characters either side of a link searched for its sentence
_LINK = re.compile(r"\[\[([^\[\]\n]{1,1000}?)\]\]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# Where a sentence ends: after . ! or ?, before a line that opens a heading, list item or
# quote, and at the end of a heading line.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+|\n(?=[ \t]*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>))|(?m:^ {0,3}#{1,6}\s[^\n]*)\n"
)
_SPACES = re.compile(r"\s+")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class ParsedLink:
    target: str  # as written, trimmed
    key: str  # title match key
    slug: str | None  # path match key
    label: str | None
    heading: str | None
    context: str
    position: int  # 0-based order in the page


def key_of(text: str) -> str:
    """How a title (or a link's target) is matched: whitespace collapsed, case folded."""
    return _SPACES.sub(" ", text).strip().casefold()


def parse_links(markdown: str) -> list[ParsedLink]:
    """Every wikilink outside code, in order. Too many → ``InvalidInput``."""
    unfenced = mask_code(markdown, spans=False)  # what a context sentence may show
    masked = mask_code(markdown)
    matches = list(_LINK.finditer(masked))
    if len(matches) > MAX_LINKS:
        raise InvalidInput(f"a page may hold at most {MAX_LINKS} links", code="too_many_links")
    breaks = [m.span() for m in _PARAGRAPH.finditer(masked)]
    links: list[ParsedLink] = []
    for match in matches:
        inner = markdown[match.start(1) : match.end(1)]
        target_part, _, label = inner.partition("|")
        target, _, heading = target_part.partition("#")
        target = _SPACES.sub(" ", target).strip()
        if not target or len(target) > MAX_TARGET_CHARS:
            continue  # [[#Heading]] (this page's own section) or not a name at all
        links.append(
            ParsedLink(
                target=target,
                key=key_of(target),
                slug=is_path(target),
                label=_SPACES.sub(" ", label).strip() or None,
                heading=_SPACES.sub(" ", heading).strip() or None,
                context=_context(unfenced, masked, breaks, match.start(), match.end()),
                position=len(links),
            )
        )
    return links


def mask_code(markdown: str, *, spans: bool = True) -> str:
    """The markdown with code blanked out (same length, newlines kept): fenced blocks and
    (when ``spans``) inline code spans, so a ``[[…]]`` shown as code is not a link."""
    out: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        opener = _FENCE.match(line)
        if fence is None and opener:
            fence = opener.group(1)
            out.append(" " * len(line))
        elif fence is not None:
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
            out.append(" " * len(line))
        else:
            out.append(line)
    joined = "\n".join(out)
    return _CODE_SPAN.sub(lambda m: _blank(m.group(0)), joined) if spans else joined


def _blank(text: str) -> str:
    return "".join("\n" if c == "\n" else " " for c in text)


def _context(
    markdown: str, masked: str, breaks: list[tuple[int, int]], start: int, end: int
) -> str:
    """The sentence holding the link (within its paragraph), links shown as their text,
    at most ``MAX_CONTEXT_CHARS`` characters centred on the link. ``markdown`` has its
    fenced code blanked; ``masked`` its inline code too; ``breaks`` its paragraph breaks."""
    at = bisect.bisect_left(breaks, (start, start))
    para_start = breaks[at - 1][1] if at > 0 and breaks[at - 1][1] <= start else 0
    while at < len(breaks) and breaks[at][0] < end:
        at += 1
    para_end = breaks[at][0] if at < len(breaks) else len(markdown)
    # A sentence is looked for near the link only: a huge paragraph costs no more.
    para_start = max(para_start, start - _WINDOW)
    para_end = min(para_end, end + _WINDOW)
    sentence_start, sentence_end = para_start, para_end
    for boundary in _SENTENCE_END.finditer(masked, para_start, para_end):
        # A heading's boundary is its line's end: the match holds the heading itself.
        ends_at = (
            boundary.end() - 1 if masked[boundary.start()] not in " \t\n" else boundary.start()
        )
        if boundary.end() <= start:
            sentence_start = boundary.end()
        elif ends_at >= end:
            sentence_end = ends_at
            break
    sentence = markdown[sentence_start:sentence_end]
    link_at = start - sentence_start
    shown = _LINK.sub(_shown_text, sentence)
    shown_at = len(_SPACES.sub(" ", _LINK.sub(_shown_text, sentence[:link_at])))
    shown = _SPACES.sub(" ", shown)
    if len(shown) <= MAX_CONTEXT_CHARS:
        return shown.strip()
    half = MAX_CONTEXT_CHARS // 2
    begin = max(0, min(shown_at - half, len(shown) - MAX_CONTEXT_CHARS))
    cut = shown[begin : begin + MAX_CONTEXT_CHARS - 2].strip()
    return (
        ("…" if begin > 0 else "")
        + cut
        + ("…" if begin + MAX_CONTEXT_CHARS - 2 < len(shown) else "")
    )


def _shown_text(match: re.Match[str]) -> str:
    target_part, _, label = match.group(1).partition("|")
    return label.strip() or target_part.partition("#")[0].strip() or target_part.strip()
