"""Which model answers: the priority chain, fallback, localLLMOnly, availability polling
and capability labels. The providers are small in-memory doubles of ``LLMProvider``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import pytest

from autorag.errors import Forbidden, InvalidInput, Unavailable
from autorag.llm.base import ChatMessage, LLMDelta, LLMProvider, ModelInfo, ToolSpec
from autorag.llm.router import EXTRACTIVE, ModelEntry, ModelRef, ModelRouter


class FakeProvider:
    """A model server that lists the models it was given, or fails as told."""

    def __init__(
        self,
        name: str,
        *,
        local: bool = True,
        default_model: str = "default",
        models: Sequence[ModelInfo | str] = (),
        error: str | None = None,
    ) -> None:
        self.name = name
        self.local = local
        self.default_model = default_model
        self.models = [m if isinstance(m, ModelInfo) else ModelInfo(m, name, local) for m in models]
        self.error = error
        self.list_calls = 0

    def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
    ) -> Iterator[LLMDelta]:
        yield LLMDelta(text=f"{self.name}/{model or self.default_model}")

    def list_models(self) -> list[ModelInfo]:
        self.list_calls += 1
        if self.error is not None:
            raise Unavailable(self.error)
        return list(self.models)


def providers() -> dict[str, FakeProvider]:
    return {
        "ollama": FakeProvider("ollama", default_model="llama3.2:3b"),
        "vllm": FakeProvider("vllm", default_model="meta-llama/Llama-3"),
        "openai": FakeProvider("openai", local=False, default_model="gpt-4o-mini"),
        EXTRACTIVE: FakeProvider(EXTRACTIVE, default_model=EXTRACTIVE),
    }


def router(
    fakes: dict[str, FakeProvider] | None = None,
    *,
    env_default: str = "vllm",
    fallback: bool = True,
) -> ModelRouter:
    configured: list[LLMProvider] = list((fakes or providers()).values())
    return ModelRouter(configured, env_default=env_default, fallback=fallback)


def info(model: str, provider: str = "ollama", **fields: object) -> ModelInfo:
    return ModelInfo(model, provider, True, **fields)  # type: ignore[arg-type]


def listed(fakes: dict[str, FakeProvider]) -> list[ModelEntry]:
    """The models on offer once the providers have been asked for their lists."""
    models = router(fakes)
    models.refresh()
    return models.models()


def entry(entries: list[ModelEntry], model_id: str) -> ModelEntry:
    return next(e for e in entries if e.id == model_id)


# -- ModelRef -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "provider", "model"),
    [
        ("ollama/llama3.2:3b", "ollama", "llama3.2:3b"),
        ("extractive", "extractive", None),
        ("vllm/meta-llama/Llama-3", "vllm", "meta-llama/Llama-3"),
        ("  ollama/llama3.2:3b  ", "ollama", "llama3.2:3b"),
        ("ollama/", "ollama", None),
    ],
)
def test_a_model_reference_is_a_provider_and_an_optional_model(
    text: str, provider: str, model: str | None
) -> None:
    assert ModelRef.parse(text) == ModelRef(provider, model)


@pytest.mark.parametrize("text", ["", "   ", "/x", "/"])
def test_a_model_reference_without_a_provider_is_invalid(text: str) -> None:
    with pytest.raises(InvalidInput):
        ModelRef.parse(text)


def test_a_model_reference_prints_as_it_is_written() -> None:
    assert str(ModelRef("vllm", "meta-llama/Llama-3")) == "vllm/meta-llama/Llama-3"
    assert str(ModelRef("extractive")) == "extractive"


def test_the_extractive_provider_must_be_configured() -> None:
    with pytest.raises(ValueError, match="extractive"):
        ModelRouter([FakeProvider("ollama")], env_default="ollama")


# -- the priority chain -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choices", "expected"),
    [
        (["ollama/chat-model", "openai/ws-model", "vllm/global-model"], "ollama/chat-model"),
        ([None, "openai/ws-model", "vllm/global-model"], "openai/ws-model"),
        ([None, None, "openai/global-model"], "openai/global-model"),
        ([None, None, None], "vllm/meta-llama/Llama-3"),
        (["", "", ""], "vllm/meta-llama/Llama-3"),
        ([], "vllm/meta-llama/Llama-3"),
    ],
    ids=["chat", "workspace", "global", "env", "empty-strings", "no-choices"],
)
def test_the_first_given_choice_wins_chat_then_workspace_then_global_then_env(
    choices: list[str | None], expected: str
) -> None:
    resolution = router().resolve(choices)
    assert resolution.target.ref == expected
    assert resolution.requested is None
    assert resolution.reason is None


def test_with_no_choice_and_no_environment_default_extractive_answers() -> None:
    resolution = router(env_default="").resolve([None, None, None])
    assert resolution.target.ref == "extractive/extractive"
    assert resolution.requested is None


def test_a_provider_alone_means_its_default_model() -> None:
    resolution = router().resolve(["ollama"])
    assert resolution.target.ref == "ollama/llama3.2:3b"
    assert resolution.target.model == "llama3.2:3b"
    assert resolution.requested is None


def test_fallbacks_are_the_other_choices_then_local_providers_then_extractive() -> None:
    resolution = router(env_default="ollama").resolve(["openai/gpt-4o", None, "vllm/big"])
    assert [t.ref for t in resolution.fallbacks] == [
        "vllm/big",
        "ollama/llama3.2:3b",  # the env default, also ollama's default: listed once
        "vllm/meta-llama/Llama-3",
        "extractive/extractive",
    ]


def test_remote_providers_nobody_chose_are_not_fallbacks() -> None:
    resolution = router().resolve(["ollama/llama3.2:3b"])
    assert "openai" not in {t.provider.name for t in resolution.fallbacks}


# -- fallback when the chosen provider is down --------------------------------------------


def test_a_down_choice_falls_back_to_the_next_given_choice_that_is_up() -> None:
    models = router(env_default="ollama")
    models.mark_down("openai", "connection refused")
    resolution = models.resolve(["openai/gpt-4o", "vllm/big"])
    assert resolution.target.ref == "vllm/big"
    assert resolution.requested == "openai/gpt-4o"
    assert resolution.reason == "openai/gpt-4o is unavailable: connection refused"
    assert [t.ref for t in resolution.fallbacks] == [
        "ollama/llama3.2:3b",
        "vllm/meta-llama/Llama-3",  # vllm's default model: another local candidate
        "extractive/extractive",
    ]


def test_down_choices_are_skipped_in_favour_of_another_local_provider() -> None:
    models = router(env_default="openai")
    models.mark_down("openai", "timeout")
    models.mark_down("vllm", "timeout")
    resolution = models.resolve(["vllm/big", "openai/gpt-4o"])
    assert resolution.target.ref == "ollama/llama3.2:3b"
    assert resolution.requested == "vllm/big"
    assert resolution.reason == "vllm/big is unavailable: timeout"


def test_extractive_answers_when_every_other_provider_is_down() -> None:
    models = router()
    for name in ("ollama", "vllm", "openai"):
        models.mark_down(name, "down")
    resolution = models.resolve(["openai/gpt-4o"])
    assert resolution.target.ref == "extractive/extractive"
    assert resolution.fallbacks == ()
    assert resolution.requested == "openai/gpt-4o"


def test_extractive_is_always_there_even_if_marked_down() -> None:
    models = router()
    for name in ("ollama", "vllm", "openai", EXTRACTIVE):
        models.mark_down(name, "down")
    assert models.resolve(["ollama"]).target.ref == "extractive/extractive"


def test_a_provider_not_checked_yet_counts_as_available() -> None:
    models = router()
    assert models.is_available("openai")
    assert models.resolve(["openai/gpt-4o"]).target.ref == "openai/gpt-4o"


def test_without_fallback_a_down_choice_is_refused() -> None:
    models = router(fallback=False)
    models.mark_down("openai", "down")
    with pytest.raises(Forbidden) as refused:
        models.resolve(["openai/gpt-4o"])
    assert refused.value.code == "no_model"


def test_without_fallback_an_available_choice_has_no_fallbacks() -> None:
    resolution = router(fallback=False).resolve(["openai/gpt-4o"])
    assert resolution.target.ref == "openai/gpt-4o"
    assert resolution.fallbacks == ()


# -- invalid and stale choices ------------------------------------------------------------


def test_an_explicit_choice_of_an_unknown_provider_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="unknown model provider 'anthropic'") as refused:
        router().resolve(["anthropic/claude"])
    assert "ollama" in refused.value.message  # the configured providers are listed


def test_an_explicit_choice_without_a_provider_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        router().resolve(["/llama"])


def test_a_stale_default_naming_no_provider_is_skipped() -> None:
    resolution = router().resolve([None, "retired/model", None])
    assert resolution.target.ref == "vllm/meta-llama/Llama-3"
    assert resolution.requested == "retired/model"
    assert resolution.reason == "retired/model names no configured provider"


# -- localLLMOnly -------------------------------------------------------------------------


def test_local_only_refuses_an_explicit_remote_model() -> None:
    with pytest.raises(Forbidden) as refused:
        router().resolve(["openai/gpt-4o"], local_only=True)
    assert refused.value.code == "local_llm_only"
    assert "openai/gpt-4o" in refused.value.message


def test_local_only_accepts_an_explicit_local_model() -> None:
    resolution = router().resolve(["ollama/llama3.2:3b"], local_only=True)
    assert resolution.target.ref == "ollama/llama3.2:3b"


def test_local_only_skips_a_remote_default() -> None:
    resolution = router().resolve([None, "openai/gpt-4o"], local_only=True)
    assert resolution.target.ref == "vllm/meta-llama/Llama-3"
    assert resolution.requested == "openai/gpt-4o"
    assert resolution.reason is not None and "not local" in resolution.reason


def test_local_only_never_falls_back_to_a_remote_model() -> None:
    models = router(env_default="openai")
    models.mark_down("ollama", "down")
    models.mark_down("vllm", "down")
    resolution = models.resolve([None, "openai/gpt-4o"], local_only=True)
    assert resolution.target.ref == "extractive/extractive"
    assert all(t.provider.local for t in (resolution.target, *resolution.fallbacks))


def test_check_choice_validates_without_resolving() -> None:
    models = router()
    models.check_choice("ollama/anything", local_only=True)
    models.check_choice("openai/gpt-4o", local_only=False)
    with pytest.raises(Forbidden):
        models.check_choice("openai/gpt-4o", local_only=True)
    with pytest.raises(InvalidInput):
        models.check_choice("nowhere/x", local_only=False)


# -- availability -------------------------------------------------------------------------


def test_refresh_marks_a_failing_provider_down_with_its_error() -> None:
    fakes = providers()
    fakes["openai"].error = "connection refused"
    fakes["ollama"].models = [info("llama3.2:3b")]
    models = router(fakes)
    models.refresh()
    statuses = {s.name: s for s in models.statuses()}
    assert statuses["openai"].available is False
    assert statuses["openai"].error == "connection refused"
    assert statuses["ollama"].available is True
    assert statuses["ollama"].error is None
    assert [m.id for m in statuses["ollama"].models] == ["llama3.2:3b"]
    assert all(s.checked_at is not None for s in statuses.values())
    assert not models.is_available("openai")
    assert models.is_available("ollama")


def test_before_the_first_refresh_availability_is_unknown() -> None:
    statuses = router().statuses()
    assert {s.available for s in statuses} == {None}
    assert {s.checked_at for s in statuses} == {None}


def test_a_provider_that_recovers_is_up_again_after_the_next_refresh() -> None:
    fakes = providers()
    models = router(fakes)
    models.mark_down("ollama", "call failed")
    assert not models.is_available("ollama")
    models.refresh()
    assert models.is_available("ollama")
    assert {s.name: s.error for s in models.statuses()}["ollama"] is None


def test_mark_down_records_the_error_and_the_time() -> None:
    models = router()
    models.mark_down("vllm", "HTTP 500")
    status = next(s for s in models.statuses() if s.name == "vllm")
    assert (status.available, status.error) == (False, "HTTP 500")
    assert status.checked_at is not None


def test_a_provider_that_goes_down_keeps_its_last_known_models() -> None:
    fakes = providers()
    fakes["ollama"].models = [info("llama3.2:3b")]
    models = router(fakes)
    models.refresh()
    fakes["ollama"].error = "gone"
    models.refresh()
    status = next(s for s in models.statuses() if s.name == "ollama")
    assert status.available is False
    assert [m.id for m in status.models] == ["llama3.2:3b"]


def test_statuses_are_copies() -> None:
    models = router()
    models.statuses()[0].available = False
    assert {s.available for s in models.statuses()} == {None}


def test_polling_refreshes_repeatedly_until_stopped() -> None:
    fakes = providers()
    models = router(fakes)
    models.start_polling(0.01)
    try:
        deadline = time.monotonic() + 5
        while fakes["ollama"].list_calls < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        models.stop_polling()
    assert fakes["ollama"].list_calls >= 3
    calls = fakes["ollama"].list_calls
    time.sleep(0.05)
    assert fakes["ollama"].list_calls == calls


def test_stopping_polling_that_never_started_is_harmless() -> None:
    router().stop_polling()


# -- models and capabilities --------------------------------------------------------------


def test_before_any_refresh_each_provider_offers_its_default_model() -> None:
    entries = router().models()
    assert sorted(e.id for e in entries) == [
        "extractive/extractive",
        "ollama/llama3.2:3b",
        "openai/gpt-4o-mini",
        "vllm/meta-llama/Llama-3",
    ]
    openai = entry(entries, "openai/gpt-4o-mini")
    assert (openai.provider, openai.model, openai.local) == ("openai", "gpt-4o-mini", False)


def test_after_a_refresh_the_listed_models_are_on_offer() -> None:
    fakes = providers()
    fakes["ollama"].models = [info("llama3.2:3b"), info("qwen2.5:7b")]
    ids = {e.id for e in listed(fakes)}
    assert {"ollama/llama3.2:3b", "ollama/qwen2.5:7b"} <= ids
    assert "vllm/meta-llama/Llama-3" in ids  # listed nothing: its default model stands in


def test_local_providers_models_are_labelled_local_only() -> None:
    entries = router().models()
    assert "local-only" in entry(entries, "ollama/llama3.2:3b").capabilities
    assert "local-only" not in entry(entries, "openai/gpt-4o-mini").capabilities


def test_fastest_and_smartest_go_by_parameter_count() -> None:
    fakes = providers()
    fakes["ollama"].models = [
        info("llama3.2:3b", parameters="3.2B"),
        info("llama3.3:70b", parameters="70B"),
        info("llama3.1:8b", parameters="8.0B"),
    ]
    entries = listed(fakes)
    assert "fastest" in entry(entries, "ollama/llama3.2:3b").capabilities
    assert "smartest" in entry(entries, "ollama/llama3.3:70b").capabilities
    middle = entry(entries, "ollama/llama3.1:8b")
    assert not {"fastest", "smartest"} & set(middle.capabilities)
    assert middle.parameters == "8.0B"


def test_parameter_counts_compare_across_scales() -> None:
    fakes = providers()
    fakes["ollama"].models = [info("tiny", parameters="500M"), info("big", parameters="1.5B")]
    entries = listed(fakes)
    assert "fastest" in entry(entries, "ollama/tiny").capabilities
    assert "smartest" in entry(entries, "ollama/big").capabilities


def test_size_on_disk_is_used_when_the_parameter_count_is_unknown() -> None:
    fakes = providers()
    fakes["ollama"].models = [info("small", size_bytes=2_000_000_000), info("large")]
    fakes["vllm"].models = [info("large", "vllm", size_bytes=40_000_000_000)]
    entries = listed(fakes)
    assert "fastest" in entry(entries, "ollama/small").capabilities
    assert "smartest" in entry(entries, "vllm/large").capabilities
    assert not {"fastest", "smartest"} & set(entry(entries, "ollama/large").capabilities)


def test_a_single_known_size_earns_no_speed_label() -> None:
    fakes = providers()
    fakes["ollama"].models = [info("llama3.2:3b", parameters="3.2B")]
    entries = listed(fakes)
    assert not {"fastest", "smartest"} & {c for e in entries for c in e.capabilities}


def test_models_of_a_down_provider_are_not_labelled_fastest_or_smartest() -> None:
    fakes = providers()
    fakes["ollama"].models = [info("small", parameters="1B"), info("mid", parameters="8B")]
    fakes["vllm"].models = [info("huge", "vllm", parameters="405B")]
    models = router(fakes)
    models.refresh()
    models.mark_down("vllm", "down")
    entries = models.models()
    huge = entry(entries, "vllm/huge")
    assert huge.available is False
    assert "smartest" not in huge.capabilities
    assert "smartest" in entry(entries, "ollama/mid").capabilities


@pytest.mark.parametrize(
    "model",
    ["deepseek-r1:7b", "qwq:32b", "gpt-oss:20b", "o1-mini", "o3", "phi4-reasoning", "magistral"],
)
def test_reasoning_models_are_labelled_by_name(model: str) -> None:
    fakes = providers()
    fakes["ollama"].models = [info(model)]
    assert "reasoning" in entry(listed(fakes), f"ollama/{model}").capabilities


@pytest.mark.parametrize("model", ["llama3.2:3b", "gpt-4o-mini", "mistral-nemo3", "qwen2.5:7b"])
def test_other_models_are_not_labelled_reasoning(model: str) -> None:
    fakes = providers()
    fakes["ollama"].models = [info(model)]
    assert "reasoning" not in entry(listed(fakes), f"ollama/{model}").capabilities
