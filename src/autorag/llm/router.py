"""Which model answers: configured providers, their availability, capability labels,
the selection priority and the fallback when the chosen model is down.

Selection priority (seed 003): the chat's own choice → the workspace default → the
global default an admin set → the environment's default (``llm.default``). The first
one given is the choice. When its provider is down, the answer comes from the next
available one of those, then any available local provider, then the built-in
``extractive`` provider, which is always there; the client is told (modelUsed,
providerUsed, fallback).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, Protocol

from autorag.errors import AutoragError, Forbidden, InvalidInput
from autorag.llm.base import LLMProvider, ModelInfo

logger = logging.getLogger(__name__)

EXTRACTIVE = "extractive"
Capability = Literal["local-only", "fastest", "smartest", "reasoning"]
_REASONING = re.compile(r"(^|[^a-z])(r1|o1|o3|o4|qwq|reason|think|gpt-oss|magistral)", re.I)
_PARAMS = re.compile(r"([\d.]+)\s*([kmbt])", re.I)
_SCALE = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


@dataclass(frozen=True)
class ModelRef:
    """``provider/model``, or ``provider`` alone for its default model."""

    provider: str
    model: str | None = None

    @classmethod
    def parse(cls, text: str) -> ModelRef:
        provider, _, model = text.strip().partition("/")
        if not provider:
            raise InvalidInput(f"invalid model {text!r}: expected provider/model")
        return cls(provider, model or None)

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}" if self.model else self.provider


@dataclass(frozen=True)
class Target:
    """A provider and the model to ask it for."""

    provider: LLMProvider
    model: str

    @property
    def ref(self) -> str:
        return f"{self.provider.name}/{self.model}"


@dataclass(frozen=True)
class Resolution:
    target: Target
    fallbacks: tuple[Target, ...]  # in order, should the target fail during the answer
    requested: str | None  # what the priority chain chose, when it differs from target
    reason: str | None = None  # why the target is not the requested model


@dataclass
class ProviderStatus:
    name: str
    local: bool
    available: bool | None = None  # None: not checked yet
    checked_at: float | None = None
    error: str | None = None
    models: list[ModelInfo] = field(default_factory=list)


@dataclass(frozen=True)
class ModelEntry:
    id: str  # provider/model
    provider: str
    model: str
    local: bool
    available: bool | None
    capabilities: tuple[Capability, ...]
    parameters: str | None = None


class ProviderSource(Protocol):
    """Providers added at run time, beside the configured ones (model connections):
    ``version`` changes whenever the set does, and is cheap to ask."""

    def version(self) -> object: ...

    def providers(self, taken: Collection[str]) -> Sequence[LLMProvider]:
        """The providers now, leaving out any whose name is in ``taken``."""
        ...


class ModelRouter:
    """The configured providers, polled for availability, and the selection rules.

    With a ``source``, its providers join the configured ones (which keep their names)
    and every look at the providers first takes up a change of the source's
    ``version``; a provider that joins is asked for its models at once, in the
    background.
    """

    def __init__(
        self,
        providers: Sequence[LLMProvider],
        *,
        env_default: str,
        fallback: bool = True,
        source: ProviderSource | None = None,
    ) -> None:
        self._configured = {p.name: p for p in providers}
        self.providers = dict(self._configured)
        if EXTRACTIVE not in self.providers:
            raise ValueError("the extractive provider must always be configured")
        self.env_default = env_default
        self.fallback = fallback
        self._status = {p.name: ProviderStatus(p.name, p.local) for p in providers}
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._source = source
        self._version: object = None
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self.sync(check=False)

    # -- run-time providers -------------------------------------------------------------
    def sync(self, *, check: bool = True) -> None:
        """Take up providers the source added, changed or removed since the last look;
        ``check``: ask the new ones for their models in the background. A source that
        cannot be read leaves the providers as they were."""
        if self._source is None:
            return
        with self._sync_lock:
            try:
                version = self._source.version()
                if version == self._version:
                    return
                offered = self._source.providers(set(self._configured))
            except AutoragError as exc:
                logger.warning("model connections not read: %s", exc.message)
                return
            providers = dict(self._configured)
            providers.update((p.name, p) for p in offered if p.name not in self._configured)
            with self._lock:
                old = self.providers
                joined = [p for n, p in providers.items() if old.get(n) is not p]
                self._status = {
                    name: self._status[name]
                    if provider not in joined
                    else ProviderStatus(name, provider.local)
                    for name, provider in providers.items()
                }
                self.providers = providers
            self._version = version
        for provider in joined if check else ():
            threading.Thread(
                target=self._check, args=(provider,), name="llm-check", daemon=True
            ).start()

    # -- availability -----------------------------------------------------------------
    def refresh(self) -> None:
        """Ask every provider for its models, in parallel; a failure marks it down."""
        self.sync(check=False)
        providers = list(self.providers.values())
        with ThreadPoolExecutor(max_workers=max(1, len(providers))) as pool:
            list(pool.map(self._check, providers))

    def _check(self, provider: LLMProvider) -> None:
        try:
            models, error = provider.list_models(), None
        except AutoragError as exc:
            models, error = [], exc.message
        with self._lock:
            status = self._status.get(provider.name)
            if status is None or self.providers.get(provider.name) is not provider:
                return  # removed or replaced while it was asked
            status.available, status.error = error is None, error
            status.checked_at = time.time()
            if error is None:
                status.models = models

    def mark_down(self, name: str, error: str) -> None:
        """A call failed: treat the provider as down until the next successful poll."""
        with self._lock:
            status = self._status.get(name)
            if status is not None:
                status.available, status.error, status.checked_at = False, error, time.time()

    def is_available(self, name: str) -> bool:
        """Unknown counts as available: the first call finds out."""
        with self._lock:
            status = self._status.get(name)
            return status is None or status.available is not False

    def statuses(self) -> list[ProviderStatus]:
        self.sync()
        with self._lock:
            return [
                ProviderStatus(s.name, s.local, s.available, s.checked_at, s.error, list(s.models))
                for s in self._status.values()
            ]

    def start_polling(self, interval_s: float) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                self.refresh()
                self._stop.wait(interval_s)

        self._poller = threading.Thread(target=loop, name="llm-poller", daemon=True)
        self._poller.start()

    def stop_polling(self) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)

    # -- models and capabilities --------------------------------------------------------
    def models(self) -> list[ModelEntry]:
        """Every model on offer, labelled local-only / fastest / smartest / reasoning."""
        entries: list[tuple[ProviderStatus, ModelInfo]] = []
        for status in self.statuses():
            models = status.models or self._default_info(status)
            entries += [(status, m) for m in models]
        sizes = {_key(s, m): _size(m) for s, m in entries if s.available is not False}
        known = {k: v for k, v in sizes.items() if v is not None}
        fastest = min(known, key=known.__getitem__) if len(known) > 1 else None
        smartest = max(known, key=known.__getitem__) if len(known) > 1 else None
        result = []
        for status, info in entries:
            key = _key(status, info)
            caps: list[Capability] = []
            if status.local:
                caps.append("local-only")
            if key == fastest:
                caps.append("fastest")
            if key == smartest:
                caps.append("smartest")
            if _REASONING.search(info.id):
                caps.append("reasoning")
            result.append(
                ModelEntry(
                    key, status.name, info.id, status.local, status.available,
                    tuple(caps), info.parameters,
                )
            )  # fmt: skip
        return result

    def _default_info(self, status: ProviderStatus) -> list[ModelInfo]:
        """The provider's default model, when known without asking its server (a
        provider with no configured default learns it from its list of models)."""
        provider = self.providers.get(status.name)
        if provider is None or not getattr(provider, "knows_default_model", True):
            return []
        return [ModelInfo(provider.default_model, status.name, status.local)]

    # -- selection ------------------------------------------------------------------------
    def resolve(self, choices: Sequence[str | None], *, local_only: bool = False) -> Resolution:
        """The model to answer with, from the priority chain ``choices`` (first given wins:
        chat, workspace, global; the environment's default is appended here).

        The chat's own choice (``choices[0]``) must name a configured provider, and a
        local one in a local-only workspace; a stale or non-local default is skipped.
        """
        self.sync()
        explicit = choices[0] if choices else None
        if explicit:
            self._check_choice(explicit, local_only)
        # No choice at all (an empty environment default): the built-in provider.
        given = [c for c in (*choices, self.env_default) if c] or [EXTRACTIVE]
        chain = self._chain(given, local_only)
        if not self.fallback:
            chain = chain[:1] if chain and chain[0].ref == self._ref(given[0]) else []
        if not chain:
            raise Forbidden(f"no usable model for {given[0]!r}", code="no_model")
        target, *rest = chain
        requested = self._ref(given[0])
        if target.ref == requested:
            return Resolution(target, tuple(rest), None)
        return Resolution(target, tuple(rest), requested, self._why_not(given[0], local_only))

    def check_choice(self, choice: str, *, local_only: bool) -> None:
        """Refuse a chosen model that names no configured provider, or is not local in a
        local-only workspace."""
        self.sync()
        self._check_choice(choice, local_only)

    def _check_choice(self, choice: str, local_only: bool) -> None:
        target = self._target(ModelRef.parse(choice))
        if local_only and not target.provider.local:
            raise Forbidden(
                f"model {target.ref!r} is not local and this workspace allows local models "
                "only (localLLMOnly)",
                code="local_llm_only",
            )

    def _ref(self, choice: str) -> str:
        """``provider/model`` in full, the provider's default model filled in."""
        target = self._lookup(ModelRef.parse(choice))
        return target.ref if target else choice

    def _chain(self, given: Sequence[str], local_only: bool) -> list[Target]:
        """Candidates in order: the given choices, other local providers, extractive."""
        refs = [ModelRef.parse(g) for g in given]
        refs += [ModelRef(n) for n, p in self.providers.items() if p.local and n != EXTRACTIVE]
        refs.append(ModelRef(EXTRACTIVE))
        chain: list[Target] = []
        for ref in refs:
            provider = self.providers.get(ref.provider)
            if provider is None or (local_only and not provider.local):
                continue
            if not (self.is_available(provider.name) or ref.provider == EXTRACTIVE):
                continue
            try:
                target = self._lookup(ref)
            except AutoragError:  # its default model is unknown and its server down
                continue
            if target is not None and target.ref not in {t.ref for t in chain}:
                chain.append(target)
        return chain

    def _target(self, ref: ModelRef) -> Target:
        target = self._lookup(ref)
        if target is None:
            known = ", ".join(sorted(self.providers))
            raise InvalidInput(f"unknown model provider {ref.provider!r} (configured: {known})")
        return target

    def _lookup(self, ref: ModelRef) -> Target | None:
        provider = self.providers.get(ref.provider)
        return None if provider is None else Target(provider, ref.model or provider.default_model)

    def _why_not(self, choice: str, local_only: bool) -> str:
        target = self._lookup(ModelRef.parse(choice))
        if target is None:
            return f"{choice} names no configured provider"
        if local_only and not target.provider.local:
            return f"{target.ref} is not local and this workspace allows local models only"
        with self._lock:
            status = self._status.get(target.provider.name)
            error = status.error if status is not None else None
        return f"{target.ref} is unavailable" + (f": {error}" if error else "")


def _key(status: ProviderStatus, info: ModelInfo) -> str:
    return f"{status.name}/{info.id}"


def _size(info: ModelInfo) -> float | None:
    """Parameters (or bytes on disk) as one comparable number."""
    if info.parameters:
        match = _PARAMS.search(info.parameters)
        if match:
            return float(match.group(1)) * _SCALE[match.group(2).lower()]
    return float(info.size_bytes) if info.size_bytes else None
