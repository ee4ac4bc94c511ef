"""The request bodies of ``/v1`` and what they ask of the model.

Honoured: ``temperature`` (0–2), ``top_p`` (0–1), ``max_tokens`` /
``max_completion_tokens``, ``stop`` (a string or up to 4), ``seed``, the presence and
frequency penalties (−2–2), ``response_format`` (json_object / json_schema, where the
answering model can write JSON), ``stream`` and ``stream_options.include_usage``.
Refused with a 400 naming the field: ``n`` other than 1 (each answer is a whole agent
run: ask again for another), ``tools`` / ``tool_choice`` / ``functions`` /
``function_call`` (the agent's own skills are the tools), ``logprobs``, message parts that
are not text (images, audio, files). Other fields
OpenAI defines (``user``, ``metadata``…) are accepted and ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from autorag.api.openai.errors import InvalidParam
from autorag.llm.base import GenerationOptions, JsonFormat

MAX_STOP_SEQUENCES = 4
MAX_STOP_CHARS = 200
MAX_EMBEDDING_INPUTS = 2048
MAX_EMBEDDING_CHARS = 32_000  # an input; about 8,000 tokens, OpenAI's bound


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class InMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text or "" for p in self.content if p.type == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class JsonSchemaSpec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str = Field(default="response", min_length=1, max_length=64)
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaSpec | None = None


class CompletionBody(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=500)
    messages: list[InMessage] = Field(min_length=1, max_length=500)
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = None
    n: int | None = None
    seed: int | None = None
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    response_format: ResponseFormat | None = None
    tools: list[Any] | None = None
    tool_choice: Any = None
    functions: list[Any] | None = None
    function_call: Any = None
    logprobs: bool | None = None
    top_logprobs: int | None = None

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    def options(self) -> GenerationOptions:
        """What the request asks of the model; a 400 naming the field for what cannot be
        done here."""
        self._refuse_unsupported()
        return GenerationOptions(
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_completion_tokens or self.max_tokens,
            stop=_stop_sequences(self.stop),
            json=_json_format(self.response_format),
            seed=self.seed,
            presence_penalty=self.presence_penalty,
            frequency_penalty=self.frequency_penalty,
        )

    def _refuse_unsupported(self) -> None:
        if self.n is not None and self.n != 1:
            raise InvalidParam(
                "n",
                f"n must be 1 (got {self.n}): each answer is a whole search-and-answer run; "
                "send the request again for another answer",
            )
        for name in ("tools", "functions"):
            if getattr(self, name):
                raise InvalidParam(
                    name,
                    f"{name} are not supported: the answer comes from the workspace's "
                    "agent, which calls its own skills (search, memory); send the question "
                    "without tools",
                    code="unsupported_parameter",
                )
        for name in ("tool_choice", "function_call"):
            if getattr(self, name) not in (None, "none"):
                raise InvalidParam(
                    name,
                    f"{name} is not supported: this API takes no tools",
                    code="unsupported_parameter",
                )
        for index, message in enumerate(self.messages):
            parts = message.content if isinstance(message.content, list) else ()
            if kinds := sorted({part.type for part in parts} - {"text"}):
                raise InvalidParam(
                    f"messages[{index}].content",
                    f"only text is read here, not {', '.join(kinds)}: send the text, or "
                    "upload files to the workspace",
                    code="unsupported_content",
                )
        if self.logprobs or self.top_logprobs:
            raise InvalidParam(
                "logprobs" if self.logprobs else "top_logprobs",
                "logprobs: log probabilities are not available from this API",
                code="unsupported_parameter",
            )


def _stop_sequences(stop: str | list[str] | None) -> tuple[str, ...]:
    sequences = [stop] if isinstance(stop, str) else list(stop or ())
    if len(sequences) > MAX_STOP_SEQUENCES:
        raise InvalidParam(
            "stop", f"stop takes at most {MAX_STOP_SEQUENCES} sequences (got {len(sequences)})"
        )
    for sequence in sequences:
        if not sequence or len(sequence) > MAX_STOP_CHARS:
            raise InvalidParam(
                "stop", f"each stop sequence must have 1 to {MAX_STOP_CHARS} characters"
            )
    return tuple(sequences)


def _json_format(response_format: ResponseFormat | None) -> JsonFormat | None:
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_object":
        return JsonFormat()
    spec = response_format.json_schema
    if spec is None or spec.json_schema is None:
        raise InvalidParam(
            "response_format.json_schema",
            "response_format of type json_schema needs json_schema.schema (a JSON schema)",
            code="missing_required_parameter",
        )
    return JsonFormat(spec.json_schema, spec.name, bool(spec.strict))


class EmbeddingBody(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=500)
    input: str | list[Any]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)

    def texts(self) -> list[str]:
        """The inputs as texts; token arrays, empty and oversized inputs refused."""
        items = [self.input] if isinstance(self.input, str) else self.input
        if not items:
            raise InvalidParam("input", "input must be a string or a non-empty list of strings")
        if len(items) > MAX_EMBEDDING_INPUTS:
            raise InvalidParam(
                "input", f"input takes at most {MAX_EMBEDDING_INPUTS} strings (got {len(items)})"
            )
        for index, item in enumerate(items):
            where = "input" if isinstance(self.input, str) else f"input[{index}]"
            if not isinstance(item, str):
                raise InvalidParam(
                    where, "input must be text: token arrays are not accepted, send the text"
                )
            if not item.strip():
                raise InvalidParam(where, "input must not be empty")
            if len(item) > MAX_EMBEDDING_CHARS:
                raise InvalidParam(
                    where, f"an input may have at most {MAX_EMBEDDING_CHARS} characters"
                )
        return [str(item) for item in items]
