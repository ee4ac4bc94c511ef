"""``ScriptedOpenAI``: a real HTTP server speaking OpenAI's chat-completions wire format.

Routes: ``POST /v1/chat/completions`` (SSE ``chat.completion.chunk`` stream when
``stream`` is true, a ``chat.completion`` object otherwise) and ``GET /v1/models``.

    with ScriptedOpenAI([Tool("rag_search", {"query": "refunds"}), Text("30 days [1]")]) as server:
        provider = OpenAICompatProvider("openai", base_url=server.base_url)
        ...
        assert server.requests[1]["messages"][-1]["role"] == "tool"

The stream is shaped as OpenAI sends it: a role delta first, content deltas, tool-call
deltas (``index``, ``id``, ``function.name`` first, then ``arguments`` in several
pieces), a chunk with ``finish_reason``, a usage chunk with empty ``choices`` when
``stream_options.include_usage`` is set (and ``report_usage``), then ``data: [DONE]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from autorag.llm.base import Usage
from tests.doubles.script import (
    EXHAUSTED,
    Error,
    Reply,
    Respond,
    ScriptedServer,
    Turn,
    arguments_text,
    raw_response,
    split_tokens,
)

_FINGERPRINT = "fp_scripted"


class ScriptedOpenAI(ScriptedServer):
    """See the module docstring. ``report_usage=False`` plays a server that ignores
    ``stream_options.include_usage``; ``api_key`` makes every route demand it (401)."""

    def __init__(
        self,
        script: Sequence[Turn] | Respond = (),
        *,
        models: Sequence[str] = ("gpt-test",),
        api_key: str | None = None,
        default: Turn = EXHAUSTED,
        reject_unknown_models: bool = False,
        report_usage: bool = True,
    ) -> None:
        super().__init__(
            script,
            models=models,
            api_key=api_key,
            default=default,
            reject_unknown_models=reject_unknown_models,
        )
        self.report_usage = report_usage
        self._completions = 0

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def app(self) -> ASGIApp:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    async def _models(self, request: Request) -> Response:
        await self.receive(request)
        if not self.authorized(request):
            return self._unauthorized(request)
        data = [
            {"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "scripted"}
            for name in self.model_names
        ]
        return JSONResponse({"object": "list", "data": data})

    async def _chat(self, request: Request) -> Response:
        body = await self.receive(request, chat=True)
        if not self.authorized(request):
            return self._unauthorized(request)
        if not isinstance(body, dict):
            return _error(400, "We could not parse the JSON body of your request.")
        if (model := self.unknown_model(body)) is not None:
            message = f"The model `{model}` does not exist or you do not have access to it."
            return _error(404, message, code="model_not_found")
        turn = await self.next_turn(body)
        if isinstance(turn, Error) and turn.after_text is None:
            return _error(turn.status, turn.message) if turn.body is None else raw_response(turn)
        self._completions += 1
        completion = _Completion(self, body, f"chatcmpl-scripted{self._completions}")
        if isinstance(turn, Error):
            return self.stream(completion.failing(turn), "text/event-stream")
        reply = Reply.of(turn)
        if body.get("stream"):
            return self.stream(completion.chunks(reply), "text/event-stream")
        return JSONResponse(completion.whole(reply))

    def _unauthorized(self, request: Request) -> Response:
        # OpenAI quotes the key it rejected: a client must not repeat that in its errors.
        sent = (request.headers.get("authorization") or "").removeprefix("Bearer ")
        message = f"Incorrect API key provided: {sent or '(none)'}."
        return _error(401, message, kind="invalid_request_error", code="invalid_api_key")


class _Completion:
    """One answer, as a stream of chunks or as one object."""

    def __init__(self, server: ScriptedOpenAI, request: dict[str, Any], completion_id: str):
        self.server = server
        self.request = request
        self.id = completion_id
        self.model = str(request.get("model", ""))
        options = request.get("stream_options") or {}
        self.include_usage = bool(options.get("include_usage")) and server.report_usage

    async def chunks(self, reply: Reply) -> AsyncIterator[bytes]:
        calls = self._calls(reply)
        # OpenAI opens with the role; content is "" before text, null before only calls.
        content = None if calls and not reply.text else ""
        yield self._event(self._chunk({"role": "assistant", "content": content, "refusal": None}))
        for token in split_tokens(reply.text):
            await self.server.pause(reply.delay_s)
            yield self._event(self._chunk({"content": token}))
        for index, (call_id, call, arguments) in enumerate(calls):
            await self.server.pause(reply.delay_s)
            head = {"index": index, "id": call_id, "type": "function"}
            head["function"] = {"name": call.name, "arguments": ""}
            yield self._event(self._chunk({"tool_calls": [head]}))
            for piece in split_tokens(arguments):
                await self.server.pause(reply.delay_s)
                fragment = {"index": index, "function": {"arguments": piece}}
                yield self._event(self._chunk({"tool_calls": [fragment]}))
        yield self._event(self._chunk({}, finish_reason=reply.finish_reason))
        if self.include_usage:
            usage = reply.usage_for(self.request, (a for _, _, a in calls))
            yield self._event({**self._envelope(), "choices": [], "usage": _usage(usage)})
        yield b"data: [DONE]\n\n"

    async def failing(self, error: Error) -> AsyncIterator[bytes]:
        """A stream that begins, then reports an error inside itself (as vLLM does)."""
        yield self._event(self._chunk({"role": "assistant", "content": "", "refusal": None}))
        for token in split_tokens(error.after_text or ""):
            yield self._event(self._chunk({"content": token}))
        body = error.body or {"error": _error_body(error.message, "server_error", error.status)}
        yield self._event(body)

    def whole(self, reply: Reply) -> dict[str, Any]:
        calls = self._calls(reply)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text or None,
            "refusal": None,
        }
        if calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": c.name, "arguments": a}}
                for i, c, a in calls
            ]
        usage = reply.usage_for(self.request, (a for _, _, a in calls))
        choice = {"index": 0, "message": message, "logprobs": None}
        choice["finish_reason"] = reply.finish_reason
        return {
            **self._envelope("chat.completion"),
            "choices": [choice],
            "usage": _usage(usage),
        }

    def _calls(self, reply: Reply) -> list[tuple[str, Any, str]]:
        ids = reply.call_ids(self.server.made_up_ids(len(reply.calls)))
        return [
            (call_id, call, arguments_text(call.arguments))
            for call_id, call in zip(ids, reply.calls, strict=True)
        ]

    def _envelope(self, kind: str = "chat.completion.chunk") -> dict[str, Any]:
        return {
            "id": self.id,
            "object": kind,
            "created": int(time.time()),
            "model": self.model,
            "system_fingerprint": _FINGERPRINT,
        }

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        chunk = {**self._envelope(), "choices": [choice]}
        if self.include_usage:
            chunk["usage"] = None  # OpenAI sends usage: null on every chunk but the last
        return chunk

    @staticmethod
    def _event(payload: Any) -> bytes:
        return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total,
    }


def _error_body(
    message: str, kind: str, code: int | str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"message": message, "type": kind, "param": param, "code": code}


def _error(
    status: int, message: str, *, kind: str | None = None, code: str | None = None
) -> Response:
    kind = kind or ("server_error" if status >= 500 else "invalid_request_error")
    return JSONResponse({"error": _error_body(message, kind, code)}, status_code=status)
