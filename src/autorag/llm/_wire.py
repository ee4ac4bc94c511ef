"""What the HTTP LLM adapters share: the chat JSON, locality, the provider base.

The transport, its timeouts and its error mapping are the model servers' one HTTP seam,
``autorag.http_client``.
"""

from __future__ import annotations

import ipaddress
import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self
from urllib.parse import urlsplit

from autorag.errors import InvalidInput
from autorag.http_client import ModelServer
from autorag.llm.base import (
    DEFAULT_OPTIONS,
    ChatMessage,
    GenerationOptions,
    LLMDelta,
    ModelInfo,
    ToolCall,
    ToolSpec,
    Usage,
)
from autorag.llm.limits import limited

if TYPE_CHECKING:
    from autorag.config import LLMProviderSettings

RAW_ARGUMENTS_KEY = "_raw"

# -- the chat JSON ----------------------------------------------------------------------


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """``tools`` in the OpenAI ``tools`` format (Ollama's native API reads the same)."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": plain(tool.parameters),
            },
        }
        for tool in tools
    ]


def openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """``messages`` as OpenAI chat JSON: tool-call arguments as JSON strings, tool results
    as ``tool`` messages answering a ``tool_call_id``."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": _openai_content(message)}
        if message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(plain(call.arguments))},
                }
                for call in message.tool_calls
            ]
        if message.role == "tool":
            item["tool_call_id"] = message.tool_call_id or ""
        converted.append(item)
    return converted


def _openai_content(message: ChatMessage) -> str | list[dict[str, Any]]:
    """The text, or with images the content parts: the text, then each image as a
    ``data:`` URL (servers that cannot fetch URLs still read those)."""
    if not message.images:
        return message.content
    text = [{"type": "text", "text": message.content}] if message.content else []
    images = [
        {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}
        for image in message.images
    ]
    return text + images


def ollama_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """``messages`` as Ollama's native chat JSON: arguments are objects, a tool result
    names its tool (``tool_name``), since Ollama matches results by name, not by id, and
    images go in ``images`` as bare base64 (Ollama reads their type from the bytes)."""
    names: dict[str, str] = {}
    converted: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.images:
            item["images"] = [image.data for image in message.images]
        if message.tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "function": {"name": c.name, "arguments": plain(c.arguments)}}
                for c in message.tool_calls
            ]
            names.update((c.id, c.name) for c in message.tool_calls)
        if message.role == "tool" and message.tool_call_id in names:
            item["tool_name"] = names[message.tool_call_id]
        converted.append(item)
    return converted


def plain(value: Any) -> Any:
    """``value`` with every mapping a dict and every tuple a list, so json can dump it
    (``ToolSpec.parameters`` and ``ToolCall.arguments`` are any ``Mapping``)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict, from a JSON string or an object.

    Models do emit broken JSON: then the result is ``{"_raw": <the text>}``, so the tool
    (or the orchestrator) can report the malformed call to the model instead of the
    adapter failing the whole turn. Empty arguments are ``{}``.
    """
    if isinstance(raw, Mapping):
        arguments: dict[str, Any] = plain(raw)
        return arguments
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    return {RAW_ARGUMENTS_KEY: raw if isinstance(raw, str) else json.dumps(raw)}


def tool_call(call_id: Any, name: Any, arguments: Any) -> LLMDelta:
    """The delta announcing a complete tool call; servers that send no id get one."""
    identifier = call_id if isinstance(call_id, str) and call_id else new_call_id()
    return LLMDelta(tool_call=ToolCall(identifier, str(name or ""), parse_arguments(arguments)))


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


# -- locality ---------------------------------------------------------------------------

_LOCAL_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "127.0.0.0/8",  # loopback
        "::1/128",
        "10.0.0.0/8",  # RFC 1918
        "172.16.0.0/12",
        "192.168.0.0/16",
        "fc00::/7",  # unique local (ULA)
        "169.254.0.0/16",  # link-local
        "fe80::/10",
        "0.0.0.0/32",  # "any": connecting to it reaches this machine
        "::/128",
    )
)
# Names that by standard never resolve on the public internet.
_LOCAL_SUFFIXES = (".localhost", ".local", ".home.arpa", ".internal")


def is_local_url(base_url: str) -> bool:
    """Whether ``base_url`` points at this machine or its private network.

    Local: loopback, RFC 1918, ULA and link-local addresses, ``localhost``, ``*.local``
    (mDNS), ``*.home.arpa``, ``*.internal`` and single-label names (``gpu-box``, a Docker
    service name). Anything else is taken as hosted, including public addresses and
    carrier-grade NAT ranges: wrongly calling a hosted service local is the worse mistake.
    """
    host = _host(base_url)
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 zone index
    except ValueError:
        return host == "localhost" or host.endswith(_LOCAL_SUFFIXES) or "." not in host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in _LOCAL_NETWORKS)


def _host(url: str) -> str:
    if "://" not in url:
        url = f"http://{url}"  # "localhost:8080" would otherwise parse as a scheme
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return ""
    return (host or "").rstrip(".").lower()


# -- the provider base ------------------------------------------------------------------


class ServerLLMProvider(ABC):
    """An ``LLMProvider`` behind an HTTP model server; subclasses speak its dialect.

    ``default_model``: the configured one, else the first configured model, else the
    first model the server lists (asked on first use, so building a provider never
    touches the network).
    """

    default_base_url: ClassVar[str]
    not_found_hint: ClassVar[str]  # what to check when the server answers 404
    writes_json = True  # Ollama's ``format``, OpenAI's ``response_format``

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        default_model: str | None = None,
        models: Sequence[str] = (),
        local: bool | None = None,
        timeout_s: float = 120.0,
    ) -> None:
        self.name = name
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.local = local if local is not None else is_local_url(self.base_url)
        self.models = tuple(models)
        self._default_model = default_model or (self.models[0] if self.models else None)
        self._server = ModelServer(
            f"LLM provider {name!r}",
            self.base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            not_found_hint=self.not_found_hint,
        )

    @classmethod
    def from_settings(cls, config: LLMProviderSettings) -> Self:
        return cls(
            config.name,
            base_url=config.base_url,
            api_key=config.api_key.get_secret_value() if config.api_key else None,
            default_model=config.default_model,
            models=config.models,
            local=config.local,
            timeout_s=config.timeout_s,
        )

    @property
    def default_model(self) -> str:
        if self._default_model is None:
            listed = self._list_all()
            if not listed:
                raise InvalidInput(f"{self._server.where} lists no models: set its default_model")
            self._default_model = listed[0].id
        return self._default_model

    @default_model.setter
    def default_model(self, model: str) -> None:
        self._default_model = model

    @property
    def knows_default_model(self) -> bool:
        """Whether ``default_model`` is known without asking the server."""
        return self._default_model is not None

    def list_models(self) -> list[ModelInfo]:
        """The server's models; only the configured ones, in their order, if any are."""
        listed = self._list_all()
        if not self.models:
            return listed
        by_id = {model.id: model for model in listed}
        return [by_id[model] for model in self.models if model in by_id]

    @abstractmethod
    def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        temperature: float | None = None,
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> Generator[LLMDelta, None, None]: ...

    @abstractmethod
    def _list_all(self) -> list[ModelInfo]:
        """Every model the server lists."""

    def close(self) -> None:
        """Release pooled connections; the provider reconnects if used again."""
        self._server.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def server_max_tokens(options: GenerationOptions, tools: Sequence[ToolSpec]) -> int | None:
    """The ``max_tokens`` to send the server: none when tools are offered, since a tool
    call needs room to be written (``bounded`` counts the text instead)."""
    return None if tools else options.max_tokens


def sampling_fields(
    options: GenerationOptions, tools: Sequence[ToolSpec], *, max_tokens_key: str
) -> dict[str, Any]:
    """The generation options set for a call, by the names both wire dialects share
    (the cap on tokens under the dialect's own name); unset ones are left out."""
    fields: dict[str, Any] = {
        "temperature": options.temperature,
        "top_p": options.top_p,
        max_tokens_key: server_max_tokens(options, tools),
        "seed": options.seed,
        "presence_penalty": options.presence_penalty,
        "frequency_penalty": options.frequency_penalty,
        "stop": list(options.stop) or None,
    }
    return {key: value for key, value in fields.items() if value is not None}


def bounded(
    deltas: Iterable[LLMDelta], options: GenerationOptions, tools: Sequence[ToolSpec]
) -> Iterator[LLMDelta]:
    """``deltas`` with ``max_tokens`` counted here when the server was not given it."""
    if tools and options.max_tokens is not None:
        return limited(deltas, max_tokens=options.max_tokens)
    return iter(deltas)


def optional_int(value: Any) -> int | None:
    """``value`` if the server sent a whole number, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_delta(prompt_tokens: Any, completion_tokens: Any) -> LLMDelta:
    """The usage delta from the counts a server sent (missing or odd counts are 0)."""
    usage = Usage(optional_int(prompt_tokens) or 0, optional_int(completion_tokens) or 0)
    return LLMDelta(usage=usage)
