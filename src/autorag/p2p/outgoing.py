"""The outgoing gate: what a question to a peer may carry.

A question leaves this machine as text. It passes DLP (a key or an e-mail address in it
is redacted), and it must not quote a local source that may not leave: a question built
from what the agent just read in a private document would carry that document's words.
The check searches this workspace for the question itself: a private passage the
question quotes is one the search finds, and a quote is a long run of shared words or a
shared token that identifies something (a number, a code, a key).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from autorag.context import AppContext
from autorag.dlp.service import DlpSession
from autorag.errors import Forbidden
from autorag.retrieval.hybrid import SearchRequest
from autorag.sources.policy import PolicyStore

# Shared consecutive words that make a quote (a sentence fragment, not a common phrase).
QUOTE_WORDS = 5
# Local passages checked: those a quote would put first.
CHECKED_HITS = 10
_WORD = re.compile(r"\w[\w'-]*", re.UNICODE)
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class OutgoingQuestion:
    text: str  # what may be sent: the question with DLP's redactions
    redacted: int  # how many findings DLP redacted


class QuotesPrivateSource(Forbidden):
    """The question quotes a local source whose policy keeps it here."""


def screen_question(
    question: str, app: AppContext, policy: PolicyStore, dlp: DlpSession
) -> OutgoingQuestion:
    """The question as it may leave, or ``QuotesPrivateSource`` when it may not."""
    scanned = dlp.scan(question, channel="p2p_query")
    text = scanned.redacted_text
    hits = app.searcher.search(SearchRequest(text, k=CHECKED_HITS)).hits
    kept_here = [hit for hit in hits if policy.resolve_policy(hit.source_id) != "share"]
    quoted = next((hit for hit in kept_here if quotes(text, hit.text)), None)
    if quoted is not None:
        raise QuotesPrivateSource(
            f"not sent to peers: the question quotes {quoted.source}, a local source that "
            "may not leave this machine; ask without its words",
            code="p2p_question_quotes_private",
        )
    return OutgoingQuestion(text, len(scanned.matches))


def quotes(question: str, passage: str) -> bool:
    """Whether ``question`` repeats ``passage``: ``QUOTE_WORDS`` words in a row, or one
    identifying token (with a digit, at least 5 characters: not a year or a page)."""
    asked = _words(question)
    words = _words(passage)
    if _identifiers(asked) & _identifiers(words):
        return True
    runs = {tuple(words[i : i + QUOTE_WORDS]) for i in range(len(words) - QUOTE_WORDS + 1)}
    return any(
        tuple(asked[i : i + QUOTE_WORDS]) in runs for i in range(len(asked) - QUOTE_WORDS + 1)
    )


def _words(text: str) -> list[str]:
    return [word.casefold() for word in _WORD.findall(text)]


def _identifiers(words: Sequence[str]) -> set[str]:
    return {word for word in words if len(word) >= 5 and _DIGIT.search(word)}
