"""``autorag models``: add (tested first), test, list, detect and remove a connection,
in-process on a temporary workspace, against an Ollama double and a key-protected
OpenAI-compatible double on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli import WorkspaceCli
from tests.doubles.ollama_server import ScriptedOllama
from tests.doubles.openai_server import ScriptedOpenAI
from tests.ports import free_port
from tests.workspaces import new_workspace

from autorag.errors import Conflict, Unavailable

KEY = "sk-cli-Abc123Def456Ghi789"


@pytest.fixture
def cli(tmp_path: Path) -> WorkspaceCli:
    return WorkspaceCli(new_workspace(tmp_path / "kb"), columns=200)


@pytest.fixture(scope="module")
def ollama() -> Iterator[ScriptedOllama]:
    with ScriptedOllama(models=["llama3.2:3b"]) as server:
        yield server


@pytest.fixture(scope="module")
def openai() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(models=["gpt-test"], api_key=KEY) as server:
        yield server


def test_with_only_the_builtin_model_list_says_how_to_connect_one(
    cli: WorkspaceCli, ollama: ScriptedOllama, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{free_port()}")
    out = cli("models", "list")
    assert "extractive/extractive" in out and "Only the built-in extractive model" in out
    assert "autorag models add ollama --kind ollama --url http://127.0.0.1:11434" in out
    monkeypatch.setenv("OLLAMA_HOST", ollama.base_url)
    out = cli("models", "list")
    assert f"An Ollama is running at {ollama.base_url}" in out
    assert ollama.base_url in cli("models", "detect")
    assert json.loads(cli("models", "detect", "--json"))["models"] == ["llama3.2:3b"]


def test_a_connection_is_added_tested_listed_and_removed(
    cli: WorkspaceCli, ollama: ScriptedOllama, openai: ScriptedOpenAI
) -> None:
    out = cli("models", "add", "box", "--kind", "ollama", "--url", ollama.base_url)
    assert "Connected box (Ollama" in out and "llama3.2:3b" in out
    out = cli(
        "models", "add", "hosted", "--kind", "openai", "--url", openai.base_url,
        "--api-key-stdin", stdin=KEY + "\n",
    )  # fmt: skip
    assert "gpt-test" in out and KEY not in out
    assert "gpt-test" in cli("models", "test", "hosted")

    listed = {m["id"] for m in json.loads(cli("models", "list", "--json"))}
    assert {"box/llama3.2:3b", "hosted/gpt-test", "extractive/extractive"} <= listed
    table = cli("models", "list")
    assert "box/llama3.2:3b" in table and "Only the built-in" not in table

    error = cli.error("models", "add", "box", "--url", ollama.base_url)
    assert isinstance(error, Conflict)
    cli("models", "remove", "hosted")
    assert "hosted/gpt-test" not in cli("models", "list")
    cli("models", "default", "box/llama3.2:3b")
    assert "global default: box/llama3.2:3b" in cli("models", "default")


def test_a_server_that_fails_the_test_is_not_saved(
    cli: WorkspaceCli, openai: ScriptedOpenAI
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    error = cli.error("models", "add", "gone", "--kind", "ollama", "--url", nowhere)
    assert isinstance(error, Unavailable) and "is the server running?" in error.message
    assert "--no-test" in error.message
    error = cli.error(
        "models", "add", "hosted", "--kind", "openai", "--url", openai.base_url,
        "--api-key-stdin", stdin="sk-wrong-000\n",
    )  # fmt: skip
    assert isinstance(error, Unavailable) and "refused the API key" in error.message
    assert "gone" not in cli("models", "list")

    cli("models", "add", "gone", "--kind", "ollama", "--url", nowhere, "--no-test")
    error = cli.error("models", "test", "gone")
    assert isinstance(error, Unavailable) and "connection refused" in error.message
