"""DLP on an answer in progress: the question scanned on the way in, tokens and sources
redacted on the way out, originals kept for an admin's reveal.

Every chat interface that sends text to someone goes through here (the HTTP chat API
and the OpenAI-compatible API); the command line, whose user reads the files anyway,
does not.
"""

from __future__ import annotations

from dataclasses import replace

from autorag.agent.events import AgentEvent, CitationsEvent, Emit, TokenEvent, WikiEditEvent
from autorag.dlp.service import DlpSession
from autorag.models import Citation


class RedactingEmitter:
    """Wraps an ``Emit``: tokens pass through the streaming redactor (held back only
    while they could still become a secret), sources are scanned whole."""

    def __init__(self, emit: Emit, session: DlpSession) -> None:
        self.emit = emit
        self.session = session
        self.stream = session.stream(channel="chat_output")
        self.visible: list[str] = []
        self.types: list[str] = []
        self.citations_redacted = False
        self.citations: list[Citation] | None = None  # as sent, once sent
        self._flushed = False

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TokenEvent):
            self._send(self.stream.feed(event.text))
        elif isinstance(event, CitationsEvent):
            self.flush()  # the answer is complete before its sources are sent
            self.citations = self.redact_citations(list(event.citations))
            self.emit(CitationsEvent(tuple(self.citations)))
        elif isinstance(event, WikiEditEvent):  # the model may write what it read
            title, body, diff = self.session.scan_many(
                [event.title, event.body, event.diff], channel="chat_output"
            )
            # the answer's DLP warning covers what the edit had redacted too
            self.citations_redacted |= title.has_match or body.has_match or diff.has_match
            self.emit(
                replace(
                    event,
                    title=title.redacted_text,
                    body=body.redacted_text,
                    diff=diff.redacted_text,
                )
            )
        else:
            self.emit(event)

    def flush(self) -> None:
        if not self._flushed:
            self._flushed = True
            self._send(self.stream.flush())
            self.types += list(self.stream.types)

    def _send(self, text: str) -> None:
        if text:
            self.visible.append(text)
            self.emit(TokenEvent(text))

    def redact_citations(self, citations: list[Citation]) -> list[Citation]:
        texts = [c.text for c in citations] + [c.title for c in citations]
        scanned = self.session.scan_many(texts, channel="citations")
        if any(r.has_match for r in scanned):
            self.citations_redacted = True
        n = len(citations)
        return [
            replace(c, text=scanned[i].redacted_text, title=scanned[n + i].redacted_text)
            for i, c in enumerate(citations)
        ]

    @property
    def text(self) -> str:
        return "".join(self.visible)

    @property
    def redacted(self) -> bool:
        return self.stream.redacted or self.citations_redacted
