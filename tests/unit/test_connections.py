"""Model connections: the store, the rules, the connection test in words, Ollama's
detection, and the model router taking up a change without a restart.

A real catalog (SQLite, and PostgreSQL when marked), real servers on loopback speaking
Ollama's and OpenAI's wire protocols (``tests/doubles``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from tests.doubles.ollama_server import ScriptedOllama
from tests.doubles.openai_server import ScriptedOpenAI
from tests.ports import free_port

from autorag.config import LLMProviderSettings, LLMSettings
from autorag.connections.service import Connections, StoredProviders, check_url, ollama_url
from autorag.errors import Conflict, Forbidden, InvalidInput, NotFound
from autorag.llm.extractive import ExtractiveProvider
from autorag.llm.router import ModelRouter
from autorag.store.catalog.db import bind_data_dir, create_catalog_engine, migrate, sqlite_url

KEY = "sk-test-Abc123Def456Ghi789"
TOML = LLMSettings(
    providers=[LLMProviderSettings(name="lab", kind="openai", base_url="http://10.0.0.5:8000/v1")]
)


@pytest.fixture
def engine(tmp_path: Path, catalog_url: str | None) -> Iterator[Engine]:
    engine = create_catalog_engine(catalog_url or sqlite_url(tmp_path / "catalog.db"))
    bind_data_dir(engine, tmp_path / "data")
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def connections(engine: Engine) -> Connections:
    return Connections(engine, TOML)


@pytest.fixture(scope="module")
def ollama() -> Iterator[ScriptedOllama]:
    with ScriptedOllama(models=["llama3.2:3b", "qwen3:8b"]) as server:
        yield server


@pytest.fixture(scope="module")
def openai() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(models=["gpt-test"], api_key=KEY) as server:
        yield server


def _refused_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # checked free: nothing listens there


def test_a_connection_is_added_listed_changed_and_removed(
    connections: Connections, engine: Engine
) -> None:
    added = connections.add("gpu", "openai", "http://gpu-box:8000/v1/", KEY, by="boss")
    assert (added.name, added.kind, added.base_url) == ("gpu", "openai", "http://gpu-box:8000/v1")
    assert added.api_key_set and added.enabled and added.local and added.created_by == "boss"
    assert [(c.name, c.source) for c in connections.all()] == [
        ("lab", "settings"),
        ("gpu", "stored"),
    ]
    with engine.connect() as conn:
        sealed = conn.execute(text("SELECT api_key_sealed FROM model_connections")).scalar_one()
    assert sealed.startswith("sb1:") and KEY not in sealed

    changed = connections.update("gpu", enabled=False, base_url="https://gpu.example/v1", by="ann")
    assert not changed.enabled and changed.api_key_set and not changed.local
    assert changed.updated_by == "ann" and changed.created_by == "boss"
    assert not connections.update("gpu", api_key=None, by="ann").api_key_set

    connections.remove("gpu")
    assert [c.name for c in connections.all()] == ["lab"]
    with pytest.raises(NotFound, match="no model connection named 'gpu'"):
        connections.remove("gpu")


def test_names_are_checked_and_never_clash(connections: Connections) -> None:
    connections.add("local", "ollama", "http://127.0.0.1:11434", by="boss")
    with pytest.raises(Conflict, match="exists already"):
        connections.add("local", "ollama", "http://127.0.0.1:11435", by="boss")
    with pytest.raises(Conflict, match=r"taken by a provider in autorag\.toml"):
        connections.add("lab", "ollama", "http://127.0.0.1:11434", by="boss")
    with pytest.raises(InvalidInput, match="built-in model"):
        connections.add("extractive", "ollama", "http://127.0.0.1:11434", by="boss")
    with pytest.raises(InvalidInput, match="invalid connection name"):
        connections.add("Bad Name", "ollama", "http://127.0.0.1:11434", by="boss")
    with pytest.raises(InvalidInput, match="unknown connection kind 'anthropic'"):
        connections.add("x", "anthropic", "http://127.0.0.1:11434", by="boss")


def test_the_ones_in_autorag_toml_are_read_only(connections: Connections) -> None:
    with pytest.raises(Forbidden, match=r"configured in autorag\.toml"):
        connections.update("lab", enabled=False, by="boss")
    with pytest.raises(Forbidden, match=r"configured in autorag\.toml"):
        connections.remove("lab")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty"),
        ("ftp://host/models", "must start with http:// or https://"),
        ("javascript:alert(1)", "must start with http:// or https://"),
        ("localhost:11434", "must start with http:// or https://"),
        ("http://user:secret@host:11434", "API key in its own field"),
        ("http://host:11434/?x=1", "query"),
        ("http:///v1", "names no host"),
        ("http://host:99999", "not a valid address"),
        ("http://host 1:11434", "spaces"),
    ],
)
def test_a_bad_address_is_refused_in_words(url: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        check_url(url)
    assert "secret" not in caught.value.message


def test_the_connection_test_lists_models_or_says_what_is_wrong(
    connections: Connections, ollama: ScriptedOllama, openai: ScriptedOpenAI
) -> None:
    good = connections.test("ollama", ollama.base_url)
    assert good.ok and [m.id for m in good.models] == ["llama3.2:3b", "qwen3:8b"]
    assert good.message.endswith("2 models.")

    refused = connections.test("ollama", _refused_url())
    assert (refused.ok, refused.problem) == (False, "refused")
    assert "is the server running?" in refused.message

    bad_key = connections.test("openai", openai.base_url, "sk-wrong-key-000")
    assert bad_key.problem == "bad_key" and "check the key" in bad_key.message
    assert "sk-wrong" not in bad_key.message
    no_key = connections.test("openai", openai.base_url)
    assert no_key.problem == "bad_key" and "needs an API key" in no_key.message
    assert connections.test("openai", openai.base_url, KEY).ok

    wrong_kind = connections.test("ollama", openai.base_url, KEY)
    assert wrong_kind.problem == "not_server"
    assert "not as an Ollama server" in wrong_kind.message
    no_version = connections.test("openai", ollama.base_url)
    assert no_version.problem == "not_server" and "/v1" in no_version.message


def test_a_saved_connection_is_tested_with_its_sealed_key(
    connections: Connections, openai: ScriptedOpenAI
) -> None:
    connections.add("hosted", "openai", openai.base_url, KEY, by="boss")
    assert connections.test_saved("hosted").ok
    assert [m.id for m in connections.models("hosted")] == ["gpt-test"]
    connections.update("hosted", api_key="sk-rotated-but-wrong", by="boss")
    assert connections.test_saved("hosted").problem == "bad_key"


def test_a_running_ollama_is_detected(
    connections: Connections, ollama: ScriptedOllama, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", ollama.base_url.removeprefix("http://"))
    found = connections.detect()
    assert found is not None and found.base_url == ollama.base_url
    assert [m.id for m in found.models] == ["llama3.2:3b", "qwen3:8b"]
    assert found.connected_as is None
    connections.add("ollama", "ollama", ollama.base_url.replace("127.0.0.1", "localhost"), by="b")
    found = connections.detect()
    assert found is not None and found.connected_as == "ollama"

    monkeypatch.setenv("OLLAMA_HOST", _refused_url())
    assert connections.detect() is None


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("", "http://127.0.0.1:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:8080", "http://127.0.0.1:8080"),
        ("https://ollama.lan", "https://ollama.lan:11434"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(
    value: str, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", value)
    assert ollama_url() == url


def test_the_router_takes_up_a_change_without_a_restart(
    connections: Connections, ollama: ScriptedOllama
) -> None:
    extractive = ExtractiveProvider(embed=lambda texts: [[1.0] for _ in texts])
    router = ModelRouter(
        [extractive], env_default="extractive", source=StoredProviders(connections)
    )
    assert set(router.providers) == {"extractive"}

    connections.add("box", "ollama", ollama.base_url, by="boss")
    router.refresh()
    assert {m.id for m in router.models()} >= {"box/llama3.2:3b", "box/qwen3:8b"}
    router.check_choice("box/qwen3:8b", local_only=True)
    kept = router.providers["box"]
    connections.add("other", "ollama", _refused_url(), by="boss")
    assert router.resolve(["box/qwen3:8b"]).target.ref == "box/qwen3:8b"
    assert router.providers["box"] is kept  # another connection's change keeps this one

    connections.update("box", enabled=False, by="boss")
    with pytest.raises(InvalidInput, match="unknown model provider 'box'"):
        router.check_choice("box/qwen3:8b", local_only=False)
    connections.remove("other")
    assert [s.name for s in router.statuses()] == ["extractive"]
