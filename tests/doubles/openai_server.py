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

A user message's ``content`` may be a list of parts, ``text`` and ``image_url`` (as
vision models take images). As OpenAI does, the server refuses with 400, before any turn
is played, an image in another role's message, an ``image_url`` that is not a base64
``data:`` URL of an image type, and data that is not a PNG, JPEG, GIF or WebP image
(this double fetches no ``http`` URLs: it refuses them too).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
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
_DATA_URL = re.compile(r"data:(image/(?:png|jpeg|gif|webp));base64,(.*)", re.DOTALL)
_MAGIC = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF8",
    "image/webp": b"RIFF",
}


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

    @staticmethod
    def images(request: Mapping[str, Any]) -> list[bytes]:
        urls = (str(part["image_url"]["url"]) for _, _, _, part in _image_parts(request))
        return [base64.b64decode(url.partition(",")[2]) for url in urls]

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
        if (problem := _image_problem(body)) is not None:
            return _error(400, problem, code="invalid_image")
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
        async for token in self.server.text_tokens(reply):
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


def _image_parts(request: Mapping[str, Any]) -> Iterator[tuple[int, int, str, Any]]:
    """(message index, part index, role, part) of every content part but text."""
    for i, message in enumerate(request.get("messages") or ()):
        content = message.get("content") if isinstance(message, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else ()):
            if not (isinstance(part, dict) and part.get("type") == "text"):
                yield i, j, str(message.get("role")), part


def _image_problem(request: Mapping[str, Any]) -> str | None:
    """OpenAI's complaint about a request's images, if it has one."""
    for i, j, role, part in _image_parts(request):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind != "image_url":
            return f"Invalid value: {kind!r}. Supported values are: 'text' and 'image_url'."
        if role != "user":
            return (
                f"Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role "
                f"'user', but this message with role '{role}' contains an image URL."
            )
        data = _data_url_bytes(part.get("image_url"))
        if data is None:
            return (
                f"Invalid 'messages[{i}].content[{j}].image_url.url'. Expected a base64-encoded "
                "data URL with an image MIME type (e.g. 'data:image/png;base64,"
                "aW1nIGJ5dGVzIGhlcmU='), but got an invalid value."
            )
        if not any(data.startswith(magic) for magic in _MAGIC.values()):
            return "You uploaded an unsupported image. Please make sure your image is valid."
    return None


def _data_url_bytes(image_url: Any) -> bytes | None:
    url = image_url.get("url") if isinstance(image_url, dict) else None
    match = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
    if match is None:
        return None
    try:
        return base64.b64decode(match[2], validate=True)
    except (binascii.Error, ValueError):
        return None


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
