"""What the HTTP LLM adapters share: the chat JSON, locality, error mapping, transport.

httpx is imported on first use, as in ``autorag.embeddings._http``, so that loading the
provider registry does not slow down CLI start-up.

Errors: a server that cannot be reached, times out, fails (5xx), rate-limits (429) or
rejects our credentials (401/403) raises ``Unavailable`` (the caller may fall back to
another model); a request the server refuses as wrong (400, 404 unknown model, 422)
raises ``InvalidInput``. Messages name the provider and its base URL, never the key.
"""

from __future__ import annotations

import ipaddress
import json
import re
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Self
from urllib.parse import urlsplit

from autorag.errors import AutoragError, InvalidInput, Unavailable
from autorag.llm.base import ChatMessage, LLMDelta, ModelInfo, ToolCall, ToolSpec, Usage

if TYPE_CHECKING:
    import httpx

    from autorag.config import LLMProviderSettings

# How much of a server's error body we quote: enough for its reason, not a whole page.
_ERROR_SNIPPET_CHARS = 200
# A server that does not accept the connection within this is down, however patient
# we are with a slow model (``timeout_s`` covers the wait between streamed chunks).
_CONNECT_TIMEOUT_S = 10.0
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
        item: dict[str, Any] = {"role": message.role, "content": message.content}
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


def ollama_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """``messages`` as Ollama's native chat JSON: arguments are objects, and a tool result
    names its tool (``tool_name``), since Ollama matches results by name, not by id."""
    names: dict[str, str] = {}
    converted: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
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
_USERINFO = re.compile(r"(?<=//)[^/?#]*@")
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


def display_url(url: str) -> str:
    """``url`` without any ``user:password@``, fit for error messages and logs."""
    return _USERINFO.sub("", url)


# -- transport and errors ---------------------------------------------------------------


class HttpWire:
    """One provider's HTTP side: a pooled client, JSON calls, streamed lines; every
    failure surfaces as ``Unavailable`` or ``InvalidInput`` naming the provider."""

    def __init__(
        self,
        provider: str,
        base_url: str,
        *,
        api_key: str | None,
        timeout_s: float,
        not_found_hint: str,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._not_found_hint = not_found_hint
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        """How messages name the server: ``LLM provider 'x' at http://…``."""
        return f"LLM provider {self.provider!r} at {display_url(self.base_url)}"

    def get_json(self, path: str) -> Any:
        import httpx

        try:
            response = self._http().get(self.base_url + path)
            self._check(response, path)
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise self._transport_error(exc) from exc
        return self.decode(response.text)

    @contextmanager
    def stream_lines(self, path: str, body: Mapping[str, Any]) -> Iterator[Iterator[str]]:
        """POST ``body`` and give the response's lines as they arrive.

        Leaving the ``with`` block (also by closing the generator that holds it) closes
        the response and its connection at once: an aborted generation stops there.
        """
        import httpx

        try:
            with self._http().stream("POST", self.base_url + path, json=body) as response:
                if not response.is_success:
                    response.read()
                    self._check(response, path)
                yield response.iter_lines()
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise self._transport_error(exc) from exc

    def decode(self, text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            message = f"{self.where} sent invalid JSON: {_snippet(text)}"
            raise Unavailable(self.scrub(message)) from None

    def stream_error(self, error: Any) -> AutoragError:
        """The error a server reported inside a stream (``{"error": ...}``)."""
        reason = self.scrub(_reason(error))
        # Ollama reports a model it cannot find this way: a wrong name, not an outage.
        if "not found" in reason.lower():
            return InvalidInput(f"{self.where}: {reason}. {self._not_found_hint}")
        return Unavailable(f"{self.where} failed while answering: {reason}")

    def scrub(self, text: str) -> str:
        """``text`` with the API key masked: servers sometimes echo the key they reject."""
        return text.replace(self._api_key, "***") if self._api_key else text

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                import httpx

                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                timeout = httpx.Timeout(
                    self.timeout_s, connect=min(self.timeout_s, _CONNECT_TIMEOUT_S)
                )
                self._client = httpx.Client(headers=headers, timeout=timeout)
            return self._client

    def _check(self, response: httpx.Response, path: str) -> None:
        if not response.is_success:
            raise self._status_error(response.status_code, response.text, path)

    def _status_error(self, status: int, body: str, path: str) -> AutoragError:
        reason = self.scrub(f"HTTP {status}: {_reason(_json_or_text(body))}")
        if status in (401, 403):
            fix = "check its api_key" if self._api_key else "it needs an api_key"
            return Unavailable(
                f"{self.where} refused the credentials ({reason}): {fix}", code="llm_unauthorized"
            )
        if status == 404:
            message = f"{self.where} answered {path} with {reason}. {self._not_found_hint}"
            return InvalidInput(message)
        if status == 429:
            return Unavailable(f"{self.where} is rate limiting ({reason})", code="llm_rate_limited")
        if 400 <= status < 500:
            return InvalidInput(f"{self.where} refused the request ({reason})")
        return Unavailable(f"{self.where} failed ({reason})")

    def _transport_error(self, exc: Exception) -> AutoragError:
        import httpx

        detail = self.scrub(str(exc) or type(exc).__name__)
        if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
            return InvalidInput(f"{self.where}: the base_url is not usable ({detail})")
        if isinstance(exc, httpx.ConnectTimeout):
            connect = min(self.timeout_s, _CONNECT_TIMEOUT_S)
            return Unavailable(f"{self.where} did not accept a connection within {connect:g}s")
        if isinstance(exc, httpx.TimeoutException):
            return Unavailable(f"{self.where} did not answer within {self.timeout_s:g}s")
        if isinstance(exc, httpx.ConnectError):
            return Unavailable(f"{self.where} cannot be reached ({detail}): is the server running?")
        return Unavailable(f"{self.where}: the connection failed ({type(exc).__name__}: {detail})")


def _json_or_text(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return body


def _reason(error: Any) -> str:
    """The human part of an error body: OpenAI's ``{"error": {"message"}}``, Ollama's
    ``{"error": "..."}``, FastAPI's ``{"detail"}``, or the text itself, on one line."""
    if isinstance(error, Mapping):
        for key in ("error", "message", "detail"):
            if key in error:
                return _reason(error[key])
        return _snippet(json.dumps(error))
    return _snippet(error if isinstance(error, str) else json.dumps(error))


def _snippet(text: str) -> str:
    # Without its final full stop: our messages go on after the quote.
    return " ".join(text.split())[:_ERROR_SNIPPET_CHARS].rstrip(".") or "no details"


# -- the provider base ------------------------------------------------------------------


class ServerLLMProvider(ABC):
    """An ``LLMProvider`` behind an HTTP model server; subclasses speak its dialect.

    ``default_model``: the configured one, else the first configured model, else the
    first model the server lists (asked on first use, so building a provider never
    touches the network).
    """

    default_base_url: ClassVar[str]
    not_found_hint: ClassVar[str]  # what to check when the server answers 404

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
        self._wire = HttpWire(
            name,
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
                raise InvalidInput(f"{self._wire.where} lists no models: set its default_model")
            self._default_model = listed[0].id
        return self._default_model

    @default_model.setter
    def default_model(self, model: str) -> None:
        self._default_model = model

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
    ) -> Generator[LLMDelta, None, None]: ...

    @abstractmethod
    def _list_all(self) -> list[ModelInfo]:
        """Every model the server lists."""

    def close(self) -> None:
        """Release pooled connections; the provider reconnects if used again."""
        self._wire.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def optional_int(value: Any) -> int | None:
    """``value`` if the server sent a whole number, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_delta(prompt_tokens: Any, completion_tokens: Any) -> LLMDelta:
    """The usage delta from the counts a server sent (missing or odd counts are 0)."""
    usage = Usage(optional_int(prompt_tokens) or 0, optional_int(completion_tokens) or 0)
    return LLMDelta(usage=usage)
