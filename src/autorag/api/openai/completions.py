"""Chat completion bodies and stream chunks in OpenAI's shape, from a chat outcome.

Besides the standard fields, a completion carries ``citations`` (the sources its ``[n]``
refer to, as the chat API shows them; in a stream, on the chunk with the finish reason)
and ``dlp_warning``.
``usage`` counts every model call of the answer: the decision to search included.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from autorag.chat.service import ChatOutcome

DONE = "data: [DONE]\n\n"


class Completion:
    """The id, time and model one completion's body or chunks share."""

    def __init__(self, model: str) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = model

    def _base(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def whole(self, outcome: ChatOutcome, cited: list[dict[str, Any]]) -> dict[str, Any]:
        result = outcome.result
        message = {"role": "assistant", "content": result.text}
        return {
            **self._base("chat.completion"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(outcome)}],
            "usage": usage(outcome),
            "citations": cited,
            "dlp_warning": outcome.dlp_warning,
            "system_fingerprint": result.model_used,
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return data({**self._base("chat.completion.chunk"), "choices": [choice], **extra})

    def ending(
        self, outcome: ChatOutcome, cited: list[dict[str, Any]], include_usage: bool
    ) -> Iterator[str]:
        """The chunk with the finish reason and the citations, then the usage chunk when
        asked for (``stream_options.include_usage``)."""
        yield self.chunk(
            {},
            finish_reason(outcome),
            citations=cited,
            system_fingerprint=outcome.result.model_used,
        )
        if include_usage:
            yield data(
                {**self._base("chat.completion.chunk"), "choices": [], "usage": usage(outcome)}
            )


def finish_reason(outcome: ChatOutcome) -> str:
    """ "length" when max_tokens or a budget cut the answer, else "stop"."""
    result = outcome.result
    if result.finish == "length" or result.abort_reason in ("token_budget", "context_overflow"):
        return "length"
    return "stop"


def usage(outcome: ChatOutcome) -> dict[str, int]:
    spent = outcome.result.usage
    return {
        "prompt_tokens": spent.prompt_tokens,
        "completion_tokens": spent.completion_tokens,
        "total_tokens": spent.total,
    }


def data(payload: dict[str, Any]) -> str:
    """One server-sent event carrying ``payload``."""
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"
