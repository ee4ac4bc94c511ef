"""``ScriptedOllama``: a real HTTP server speaking Ollama's native API.

Routes: ``POST /api/chat`` (NDJSON stream when ``stream`` is true or absent, as in
Ollama; one JSON object otherwise), ``GET /api/tags``, ``GET /api/version`` and
``GET /`` ("Ollama is running").

    with ScriptedOllama([Text("Hello there")], models=[OllamaModel("llama3.2:3b")]) as server:
        provider = OllamaProvider("ollama", base_url=server.base_url)

Stream lines look like Ollama's: ``{"model", "created_at", "message": {"role",
"content"}, "done": false}`` per token; tool calls whole, with ``function.arguments``
an object; a last line with ``done: true``, ``done_reason``, durations,
``prompt_eval_count`` and ``eval_count``. Failures are ``{"error": "..."}``, as an
HTTP error body or, once the stream has begun, as a line of it.

Messages may carry ``images`` (base64, as vision models take them): as Ollama does, an
image that is not valid base64 is refused with 400 before any turn is played.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

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

_NS_PER_TOKEN = 20_000_000  # plausible durations, in Ollama's nanoseconds


@dataclass(frozen=True)
class OllamaModel:
    """A model as ``/api/tags`` lists it."""

    name: str
    size: int = 2_019_393_189
    parameter_size: str = "3.2B"
    family: str = "llama"
    quantization_level: str = "Q4_K_M"

    def tag(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.name,
            "modified_at": "2025-01-01T00:00:00.000000000Z",
            "size": self.size,
            "digest": "sha256:" + hashlib.sha256(self.name.encode()).hexdigest(),
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": self.family,
                "families": [self.family],
                "parameter_size": self.parameter_size,
                "quantization_level": self.quantization_level,
            },
        }


class ScriptedOllama(ScriptedServer):
    """See the module docstring. ``models``: names or ``OllamaModel``s for /api/tags;
    ``ids_in_tool_calls``: send an ``id`` with each tool call, as recent Ollama does
    (False plays older versions, which send none)."""

    def __init__(
        self,
        script: Sequence[Turn] | Respond = (),
        *,
        models: Sequence[str | OllamaModel] = ("llama3.2:3b",),
        api_key: str | None = None,
        default: Turn = EXHAUSTED,
        reject_unknown_models: bool = False,
        ids_in_tool_calls: bool = True,
    ) -> None:
        self.tags = [m if isinstance(m, OllamaModel) else OllamaModel(m) for m in models]
        super().__init__(
            script,
            models=[m.name for m in self.tags],
            api_key=api_key,
            default=default,
            reject_unknown_models=reject_unknown_models,
        )
        self.ids_in_tool_calls = ids_in_tool_calls

    @property
    def base_url(self) -> str:
        return self.root_url

    @staticmethod
    def images(request: Mapping[str, Any]) -> list[bytes]:
        return [
            base64.b64decode(image)
            for message in request.get("messages") or ()
            for image in message.get("images") or ()
        ]

    def app(self) -> ASGIApp:
        return Starlette(
            routes=[
                Route("/", self._root, methods=["GET", "HEAD"]),
                Route("/api/version", self._version, methods=["GET"]),
                Route("/api/tags", self._tags, methods=["GET"]),
                Route("/api/chat", self._chat, methods=["POST"]),
            ]
        )

    async def _root(self, request: Request) -> Response:
        await self.receive(request)
        return PlainTextResponse("Ollama is running")

    async def _version(self, request: Request) -> Response:
        await self.receive(request)
        return JSONResponse({"version": "0.12.0"})

    async def _tags(self, request: Request) -> Response:
        await self.receive(request)
        if not self.authorized(request):
            return _error(401, "unauthorized")
        return JSONResponse({"models": [tag.tag() for tag in self.tags]})

    async def _chat(self, request: Request) -> Response:
        body = await self.receive(request, chat=True)
        if not self.authorized(request):
            return _error(401, "unauthorized")
        if not isinstance(body, dict):
            return _error(400, "invalid request body")
        if (model := self.unknown_model(body)) is not None:
            return _error(404, f'model "{model}" not found, try pulling it first')
        if (problem := _image_problem(body)) is not None:
            return _error(400, problem)
        turn = await self.next_turn(body)
        answer = _Answer(self, body)
        if isinstance(turn, Error) and turn.after_text is None:
            return _error(turn.status, turn.message) if turn.body is None else raw_response(turn)
        if isinstance(turn, Error):
            return self.stream(answer.failing(turn), "application/x-ndjson")
        reply = Reply.of(turn)
        if body.get("stream", True):
            return self.stream(answer.lines(reply), "application/x-ndjson")
        return JSONResponse(answer.whole(reply))


class _Answer:
    """One answer, as NDJSON lines or as one object."""

    def __init__(self, server: ScriptedOllama, request: dict[str, Any]) -> None:
        self.server = server
        self.request = request
        self.model = str(request.get("model", ""))

    async def lines(self, reply: Reply) -> AsyncIterator[bytes]:
        async for token in self.server.text_tokens(reply):
            yield _line(self._message(token))
        if reply.calls:
            await self.server.pause(reply.delay_s)
            yield _line(self._message("", self._tool_calls(reply)))
        yield _line(self._last(reply))

    async def failing(self, error: Error) -> AsyncIterator[bytes]:
        for token in split_tokens(error.after_text or ""):
            yield _line(self._message(token))
        yield _line(error.body or {"error": error.message})

    def whole(self, reply: Reply) -> dict[str, Any]:
        answer = self._last(reply)
        answer["message"] = self._message(reply.text, self._tool_calls(reply))["message"]
        return answer

    def _tool_calls(self, reply: Reply) -> list[dict[str, Any]]:
        ids = reply.call_ids(self.server.made_up_ids(len(reply.calls)))
        calls = []
        for index, (call_id, call) in enumerate(zip(ids, reply.calls, strict=True)):
            function = {"index": index, "name": call.name, "arguments": call.arguments}
            item: dict[str, Any] = {"id": call_id} if self.server.ids_in_tool_calls else {}
            calls.append({**item, "function": function})
        return calls

    def _message(self, content: str, tool_calls: list[dict[str, Any]] | None = None) -> Any:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {**self._envelope(), "message": message, "done": False}

    def _last(self, reply: Reply) -> dict[str, Any]:
        arguments = (arguments_text(call.arguments) for call in reply.calls)
        usage = reply.usage_for(self.request, arguments)
        return {
            **self._envelope(),
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop" if reply.finish_reason == "tool_calls" else reply.finish_reason,
            "total_duration": _NS_PER_TOKEN * (usage.total + 10),
            "load_duration": _NS_PER_TOKEN * 10,
            "prompt_eval_count": usage.prompt_tokens,
            "prompt_eval_duration": _NS_PER_TOKEN * usage.prompt_tokens,
            "eval_count": usage.completion_tokens,
            "eval_duration": _NS_PER_TOKEN * usage.completion_tokens,
        }

    def _envelope(self) -> dict[str, Any]:
        return {"model": self.model, "created_at": datetime.now(UTC).isoformat()}


def _image_problem(body: dict[str, Any]) -> str | None:
    """Ollama's complaint about a message's ``images``, if it has one."""
    for message in body.get("messages") or ():
        images = message.get("images") if isinstance(message, dict) else None
        for image in images or ():
            try:
                base64.b64decode(str(image), validate=True)
            except (binascii.Error, ValueError):
                return "illegal base64 data at input byte 0"
            if not isinstance(image, str) or not image:
                return "invalid image input"
    return None


def _line(payload: Any) -> bytes:
    return (json.dumps(payload) + "\n").encode()


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)
