"""Model connections: the rules, the connection test, Ollama's detection, and the
providers they give the model router.

A connection is a name, a kind (``ollama``: Ollama's native API at the server root;
``openai``: any OpenAI-compatible API, its URL ending in the API version, ``/v1``), a
base URL, an optional API key (sealed at rest with ``autorag.secretbox``, bound to the
connection's name; never given back, only whether one is set) and whether it is on.

Names share one namespace with the providers of autorag.toml (``[[llm.providers]]``)
and the built-in ``extractive``: a stored connection may not take one of theirs. The
TOML ones are listed here too, read-only.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from urllib.parse import urlsplit

from pydantic import SecretStr
from sqlalchemy import Engine

from autorag.config import LLMProviderSettings, LLMSettings
from autorag.connections import store
from autorag.errors import AutoragError, Conflict, Forbidden, InvalidInput
from autorag.http_client import display_url
from autorag.llm._wire import is_local_url
from autorag.llm.base import LLMProvider, ModelInfo
from autorag.llm.ollama import OllamaProvider
from autorag.llm.openai_compat import OpenAICompatProvider
from autorag.llm.registry import build_provider
from autorag.secretbox import SecretBox, catalog_box

logger = logging.getLogger(__name__)

Kind = Literal["ollama", "openai"]
KINDS: tuple[Kind, ...] = ("ollama", "openai")
KIND_LABELS = {"ollama": "Ollama", "openai": "OpenAI-compatible"}
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,39}$")  # as LLMProviderSettings.name
RESERVED = "extractive"
SECRET_PURPOSE = "model_connections"
MAX_URL_CHARS = 2000
MAX_KEY_CHARS = 4000
# The connection test waits this long for the server; detection much less, since it
# runs when a page opens and a missing Ollama must cost next to nothing.
TEST_TIMEOUT_S = 10.0
DETECT_TIMEOUT_S = 1.0

Source = Literal["stored", "settings"]
Problem = Literal["refused", "timeout", "bad_key", "not_server", "bad_url", "failed"]


@dataclass(frozen=True)
class Connection:
    """A connection as every face shows it: never the key, only whether one is set."""

    name: str
    kind: str
    base_url: str
    api_key_set: bool
    enabled: bool
    local: bool
    source: Source  # stored: added at run time; settings: autorag.toml, read-only
    created_at: datetime | None = None
    created_by: str = ""
    updated_at: datetime | None = None
    updated_by: str = ""


@dataclass(frozen=True)
class TestResult:
    """What a connection test found: the models, or what went wrong, in words."""

    ok: bool
    message: str
    models: tuple[ModelInfo, ...] = ()
    problem: Problem | None = None


@dataclass(frozen=True)
class Detected:
    """A model server found running on this machine."""

    kind: Kind
    base_url: str
    models: tuple[ModelInfo, ...]
    connected_as: str | None  # the connection or provider already pointing at it


class Unset:
    """The default of ``update``'s ``api_key``: leave the key as it is."""


UNSET = Unset()


# -- what is valid ----------------------------------------------------------------------


def check_kind(kind: str) -> Kind:
    if kind == "ollama":
        return "ollama"
    if kind == "openai":
        return "openai"
    raise InvalidInput(
        f"unknown connection kind {kind!r}: use 'ollama' (Ollama's own API) or 'openai' "
        "(any OpenAI-compatible server)",
        code="connection_kind",
    )


def check_url(url: str) -> str:
    """``url`` without surrounding spaces or a trailing slash; refused unless it is a
    plain http(s) address of a host."""
    url = url.strip()
    if not url:
        raise InvalidInput("the server address is empty", code="connection_url")
    if len(url) > MAX_URL_CHARS:
        raise InvalidInput(
            f"the server address is longer than {MAX_URL_CHARS} characters", code="connection_url"
        )
    if any(c.isspace() or not c.isprintable() for c in url):
        raise InvalidInput("the server address contains spaces or control characters",
                           code="connection_url")  # fmt: skip
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number in range
    except ValueError:
        raise InvalidInput(
            f"{display_url(url)!r} is not a valid address", code="connection_url"
        ) from None
    del port
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidInput(
            f"the server address must start with http:// or https:// (got {display_url(url)!r})",
            code="connection_url",
        )
    if not parts.hostname:
        raise InvalidInput(f"{display_url(url)!r} names no host", code="connection_url")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(
            "put the API key in its own field, not in the server address",
            code="connection_url",
        )
    if parts.query or parts.fragment:
        raise InvalidInput("the server address may not have a query (?…) or a fragment (#…)",
                           code="connection_url")  # fmt: skip
    return url.rstrip("/")


def check_name(name: str, taken: Collection[str] = ()) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise InvalidInput(
            f"invalid connection name {name!r}: 1 to 40 lowercase letters, digits, '.', '_' "
            "or '-', starting with a letter or digit",
            code="connection_name",
        )
    if name == RESERVED:
        raise InvalidInput("the name 'extractive' is the built-in model's", code="connection_name")
    if name in taken:
        raise Conflict(
            f"the name {name!r} is taken by a provider in autorag.toml", code="connection_exists"
        )
    return name


def check_key(api_key: str | None) -> str | None:
    """The key, stripped; None when empty."""
    if api_key is None or not api_key.strip():
        return None
    api_key = api_key.strip()
    if len(api_key) > MAX_KEY_CHARS:
        raise InvalidInput(f"the API key is longer than {MAX_KEY_CHARS} characters",
                           code="connection_key")  # fmt: skip
    if not api_key.isprintable() or any(c.isspace() for c in api_key):
        raise InvalidInput("the API key contains spaces or control characters",
                           code="connection_key")  # fmt: skip
    return api_key


# -- the service ------------------------------------------------------------------------


class Connections:
    """The connections of one catalog, beside the providers ``llm`` configures."""

    def __init__(self, engine: Engine, llm: LLMSettings, *, box: SecretBox | None = None) -> None:
        self.engine = engine
        self.llm = llm
        self._box = box
        self._box_lock = threading.Lock()

    @property
    def settings_names(self) -> set[str]:
        return {p.name for p in self.llm.providers}

    def all(self) -> list[Connection]:
        """autorag.toml's providers first (read-only), then the stored connections."""
        configured = [
            Connection(
                name=p.name,
                kind=p.kind,
                base_url=display_url((p.base_url or _default_url(p.kind)).rstrip("/")),
                api_key_set=p.api_key is not None,
                enabled=True,
                local=p.local
                if p.local is not None
                else is_local_url(p.base_url or _default_url(p.kind)),
                source="settings",
            )
            for p in self.llm.providers
        ]
        return configured + [_connection(row) for row in store.list_all(self.engine)]

    def check_new_name(self, name: str) -> str:
        """``name`` if a new connection may take it (before testing its server)."""
        name = check_name(name, self.settings_names)
        if any(row.name == name for row in store.list_all(self.engine)):
            raise store.taken(name)
        return name

    def add(
        self, name: str, kind: str, base_url: str, api_key: str | None = None, *,
        enabled: bool = True, by: str,
    ) -> Connection:  # fmt: skip
        name = self.check_new_name(name)
        kind, base_url, api_key = check_kind(kind), check_url(base_url), check_key(api_key)
        sealed = self._seal(api_key, name)
        row = store.insert(
            self.engine, name=name, kind=kind, base_url=base_url, api_key_sealed=sealed,
            enabled=enabled, by=by,
        )  # fmt: skip
        return _connection(row)

    def update(
        self, name: str, *, kind: str | None = None, base_url: str | None = None,
        api_key: str | Unset | None = UNSET, enabled: bool | None = None, by: str,
    ) -> Connection:  # fmt: skip
        self._stored_only(name)
        changes = store.Changes(
            kind=check_kind(kind) if kind is not None else None,
            base_url=check_url(base_url) if base_url is not None else None,
            enabled=enabled,
            set_api_key=not isinstance(api_key, Unset),
            api_key_sealed=None
            if isinstance(api_key, Unset)
            else self._seal(check_key(api_key), name),
        )
        return _connection(store.update(self.engine, name, changes, by=by))

    def remove(self, name: str) -> None:
        self._stored_only(name)
        store.remove(self.engine, name)

    def test(self, kind: str, base_url: str, api_key: str | None = None) -> TestResult:
        """Reach a server not saved yet and list its models."""
        settings = LLMProviderSettings(
            name="connection-test",
            kind=check_kind(kind),
            base_url=check_url(base_url),
            api_key=SecretStr(key) if (key := check_key(api_key)) else None,
            timeout_s=TEST_TIMEOUT_S,
        )
        return probe(settings)

    def test_saved(self, name: str) -> TestResult:
        """Reach a saved connection (or a provider of autorag.toml) and list its models."""
        return probe(self._settings(name, timeout_s=TEST_TIMEOUT_S))

    def models(self, name: str) -> list[ModelInfo]:
        """The models a connection's server lists; Unavailable when it cannot be reached."""
        provider = build_provider(self._settings(name, timeout_s=TEST_TIMEOUT_S))
        try:
            return provider.list_models()
        finally:
            provider.close()

    def detect(self) -> Detected | None:
        """A running Ollama at ``OLLAMA_HOST`` (Ollama's own variable) or its default
        address, asked for at most ``DETECT_TIMEOUT_S``; None when there is none."""
        base_url = ollama_url()
        provider = build_provider(
            LLMProviderSettings(
                name="ollama", kind="ollama", base_url=base_url, timeout_s=DETECT_TIMEOUT_S
            )
        )
        try:
            models = provider.list_models()
        except AutoragError as exc:
            logger.debug("no Ollama detected at %s: %s", base_url, exc.message)
            return None
        finally:
            provider.close()
        connected_as = next(
            (
                c.name
                for c in self.all()
                if c.kind == "ollama" and _same_server(c.base_url, base_url)
            ),
            None,
        )
        return Detected("ollama", base_url, tuple(models), connected_as)

    # -- for the model router ------------------------------------------------------------
    def provider_settings(self) -> list[LLMProviderSettings]:
        """The enabled stored connections as provider settings, keys opened; one whose
        key cannot be opened is left out (and logged)."""
        result = []
        for row in store.list_all(self.engine):
            if not row.enabled:
                continue
            try:
                result.append(self._row_settings(row, timeout_s=None))
            except AutoragError as exc:
                logger.warning("model connection %r left out: %s", row.name, exc.message)
        return result

    # -- helpers -------------------------------------------------------------------------
    def _stored_only(self, name: str) -> None:
        if name in self.settings_names:
            raise Forbidden(
                f"{name!r} is configured in autorag.toml: change it there",
                code="connection_read_only",
            )

    def _settings(self, name: str, *, timeout_s: float) -> LLMProviderSettings:
        for configured in self.llm.providers:
            if configured.name == name:
                return configured.model_copy(update={"timeout_s": timeout_s})
        return self._row_settings(store.get(self.engine, name), timeout_s=timeout_s)

    def _row_settings(
        self, row: store.StoredConnection, *, timeout_s: float | None
    ) -> LLMProviderSettings:
        key = self.box().open(row.api_key_sealed, bound_to=row.name) if row.api_key_sealed else None
        settings = LLMProviderSettings(
            name=row.name,
            kind=row.kind,
            base_url=row.base_url,
            api_key=SecretStr(key) if key else None,
        )
        return (
            settings if timeout_s is None else settings.model_copy(update={"timeout_s": timeout_s})
        )

    def _seal(self, api_key: str | None, name: str) -> str | None:
        return self.box().seal(api_key, bound_to=name) if api_key else None

    def box(self) -> SecretBox:
        with self._box_lock:
            if self._box is None:
                self._box = catalog_box(self.engine, SECRET_PURPOSE)
            return self._box


class StoredProviders:
    """The model router's source of run-time providers (``llm.router.ProviderSource``):
    one small query tells whether anything changed; providers of unchanged connections
    are kept, so their pooled connections and availability survive another's edit."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        self._built: dict[str, tuple[LLMProviderSettings, LLMProvider]] = {}
        self._lock = threading.Lock()

    def version(self) -> object:
        return store.versions(self._connections.engine)

    def providers(self, taken: Collection[str]) -> Sequence[LLMProvider]:
        with self._lock:
            built: dict[str, tuple[LLMProviderSettings, LLMProvider]] = {}
            for settings in self._connections.provider_settings():
                if settings.name in taken or settings.name == RESERVED:
                    logger.warning("model connection %r shadowed by autorag.toml", settings.name)
                    continue
                kept = self._built.get(settings.name)
                if kept is not None and kept[0] == settings:
                    built[settings.name] = kept
                    continue
                try:
                    built[settings.name] = (settings, build_provider(settings))
                except AutoragError as exc:
                    logger.warning("model connection %r left out: %s", settings.name, exc.message)
            self._built = built
            return [provider for _, provider in built.values()]


# -- the connection test ------------------------------------------------------------------


def probe(settings: LLMProviderSettings) -> TestResult:
    """Ask the server for its models through its adapter; failures in words."""
    provider = build_provider(settings)
    url = display_url((settings.base_url or _default_url(settings.kind)).rstrip("/"))
    try:
        models = provider.list_models()
    except AutoragError as exc:
        problem, message = explain(exc, settings.kind, url, has_key=settings.api_key is not None)
        return TestResult(False, message, (), problem)
    finally:
        provider.close()
    if not models:
        pull = " Pull one first (ollama pull llama3.2)." if settings.kind == "ollama" else ""
        return TestResult(True, f"Connected to {url}, but it offers no models yet.{pull}")
    count = f"{len(models)} model{'s' if len(models) != 1 else ''}"
    return TestResult(True, f"Connected to {url}: {count}.", tuple(models))


# What the HTTP seam says (``autorag.http_client``), mapped onto what a person can act on.
_REFUSED = ("cannot be reached",)
_TIMEOUT = ("did not accept a connection within", "did not answer within")
_NOT_SERVER = ("not valid JSON", "without a models list", "without a data list", " answered /")


def explain(exc: AutoragError, kind: str, url: str, *, has_key: bool) -> tuple[Problem, str]:
    """``exc`` from asking ``url`` for its models, as (problem, words for people)."""
    text = exc.message
    label = KIND_LABELS.get(kind, kind)
    if exc.code == "llm_unauthorized":
        if has_key:
            return "bad_key", f"{url} refused the API key (401/403): check the key."
        return "bad_key", f"{url} needs an API key (it answered 401/403)."
    if "has a bad URL" in text:
        return "bad_url", f"{url} is not an address that can be reached: check it."
    if any(marker in text for marker in _REFUSED):
        return "refused", f"Nothing answers at {url} (connection refused): is the server running?"
    if any(marker in text for marker in _TIMEOUT):
        return "timeout", f"{url} did not answer in time: check the address, or the server is busy."
    if any(marker in text for marker in _NOT_SERVER):
        hint = (
            " Ollama's own API is at the server root (http://host:11434), without /v1."
            if kind == "ollama"
            else " Its address usually ends in the API version, /v1."
        )
        return "not_server", f"{url} answered, but not as an {label} server.{hint}"
    return "failed", f"{url} could not list its models: {text}"


# -- detection -----------------------------------------------------------------------------


def ollama_url() -> str:
    """Where a local Ollama listens: ``OLLAMA_HOST`` as Ollama reads it (``host:port``,
    with or without a scheme; ``0.0.0.0`` means this machine), else its default."""
    host = os.environ.get("OLLAMA_HOST", "").strip()
    if not host:
        return OllamaProvider.default_base_url
    if "://" not in host:
        host = f"http://{host}"
    parts = urlsplit(host)
    hostname = parts.hostname or "127.0.0.1"
    if hostname in ("0.0.0.0", "::"):
        hostname = "127.0.0.1"
    try:
        port = parts.port or 11434
    except ValueError:
        return OllamaProvider.default_base_url
    if ":" in hostname:
        hostname = f"[{hostname}]"
    return f"{parts.scheme}://{hostname}:{port}"


def _same_server(a: str, b: str) -> bool:
    def key(url: str) -> tuple[str, int | None]:
        parts = urlsplit(url)
        host = (parts.hostname or "").replace("localhost", "127.0.0.1")
        try:
            return host, parts.port
        except ValueError:
            return host, None

    return key(a) == key(b)


def _default_url(kind: str) -> str:
    return (
        OllamaProvider.default_base_url
        if kind == "ollama"
        else OpenAICompatProvider.default_base_url
    )


def _connection(row: store.StoredConnection) -> Connection:
    return Connection(
        name=row.name,
        kind=row.kind,
        base_url=row.base_url,
        api_key_set=row.api_key_sealed is not None,
        enabled=row.enabled,
        local=is_local_url(row.base_url),
        source="stored",
        created_at=row.created_at,
        created_by=row.created_by,
        updated_at=row.updated_at,
        updated_by=row.updated_by,
    )
