"""``autorag models``: the models on offer, the global default, and connections to model
servers (Ollama, any OpenAI-compatible API) kept in the catalog, without editing TOML.

An API key is read from standard input (``--api-key-stdin``), never from the command
line, where other users of the machine could see it; it is stored sealed and never shown.
"""

from __future__ import annotations

import dataclasses
import getpass
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from autorag.cli._common import console, open_app, print_json
from autorag.cli.search import JsonFlag
from autorag.connections.service import KIND_LABELS, Connections, Detected
from autorag.context import AppContext
from autorag.errors import InvalidInput, Unavailable
from autorag.llm.router import EXTRACTIVE, ModelEntry
from autorag.system_config import GLOBAL_DEFAULT_MODEL, get_value, set_value

models_app = typer.Typer(
    help="Connect model servers (Ollama, OpenAI-compatible), list the models on offer, "
    "set the global default model."
)
NameArgument = Annotated[str, typer.Argument(help="The connection's name, e.g. ollama.")]


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")


def _connections(app: AppContext) -> Connections:
    return Connections(app.catalog.engine, app.settings.llm)


def _who() -> str:
    try:
        return f"{getpass.getuser()} (command line)"
    except (OSError, KeyError):
        return "command line"


@models_app.command("list")
def list_models(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """The models on offer, whether they are up, and their labels."""
    from autorag.chat.service import ChatService

    app = open_app(ctx)
    router = ChatService.for_context(app).router
    router.refresh()
    models = router.models()
    if as_json:
        print_json([dataclasses.asdict(m) for m in models])
        return
    console.print(_models_table(models))
    if all(m.provider == EXTRACTIVE for m in models):
        _hint_connect(_connections(app).detect())


def _models_table(models: list[ModelEntry]) -> Table:
    table = Table("model", "local", "available", "labels")
    for m in models:
        up = {True: "yes", False: "no", None: "?"}[m.available]
        table.add_row(escape(m.id), "yes" if m.local else "no", up, ", ".join(m.capabilities))
    return table


def _hint_connect(found: Detected | None) -> None:
    console.print(
        "Only the built-in extractive model is on offer: it quotes the best sentences of "
        "your documents but does not write answers. Connect a model server:",
        highlight=False,
    )
    if found is not None and found.connected_as is None:
        console.print(f"  An Ollama is running at {found.base_url}:", highlight=False, markup=False)
        console.print(
            f"  autorag models add ollama --kind ollama --url {found.base_url}",
            highlight=False,
            markup=False,
        )
    else:
        console.print(
            "  autorag models add ollama --kind ollama --url http://127.0.0.1:11434\n"
            "  autorag models add openai --kind openai --url https://api.openai.com/v1 "
            "--api-key-stdin",
            highlight=False,
            markup=False,
        )
    console.print("  (or in the web UI: Settings → Models)", highlight=False)


@models_app.command("default")
def default_model(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Argument(help="provider/model; omit to show.")] = None,
    unset: Annotated[bool, typer.Option("--unset", help="Remove the global default.")] = False,
) -> None:
    """Show or set the global default model (under each chat's and workspace's choice)."""
    from autorag.chat.service import ChatService

    app = open_app(ctx)
    engine = app.catalog.engine
    if model is not None or unset:
        if model is not None:
            ChatService.for_context(app).router.check_choice(model, local_only=False)
        set_value(engine, GLOBAL_DEFAULT_MODEL, None if unset else model)
    current = get_value(engine, GLOBAL_DEFAULT_MODEL)
    console.print(
        f"global default: {current or '(none)'}; environment: {app.settings.llm.default}",
        markup=False,
    )


@models_app.command("add")
def add(
    ctx: typer.Context,
    name: NameArgument,
    url: Annotated[
        str, typer.Option("--url", help="The server's address, e.g. http://127.0.0.1:11434.")
    ],
    kind: Annotated[
        str,
        typer.Option(
            "--kind", help="ollama (Ollama's own API) or openai (any OpenAI-compatible API)."
        ),
    ] = "ollama",
    api_key_stdin: Annotated[
        bool, typer.Option("--api-key-stdin", help="Read the API key from standard input.")
    ] = False,
    no_test: Annotated[
        bool, typer.Option("--no-test", help="Save without reaching the server first.")
    ] = False,
) -> None:
    """Connect a model server: test it (list its models), then save it."""
    api_key = _read_key() if api_key_stdin else None
    app = open_app(ctx)
    connections = _connections(app)
    connections.check_new_name(name)
    models: tuple[str, ...] = ()
    if not no_test:
        result = connections.test(kind, url, api_key)
        if not result.ok:
            raise Unavailable(f"{result.message} Not saved (--no-test saves it anyway).")
        models = tuple(m.id for m in result.models)
    added = connections.add(name, kind, url, api_key, by=_who())
    label = KIND_LABELS.get(added.kind, added.kind)
    console.print(
        f"Connected {added.name} ({label}, {added.base_url}).", highlight=False, markup=False
    )
    if models:
        shown = ", ".join(models[:8]) + (", …" if len(models) > 8 else "")
        console.print(f"Models: {shown}", highlight=False, markup=False)
        console.print(
            f'Ask with one: autorag ask -m {added.name}/{models[0]} "…"; make it the '
            f"default: autorag models default {added.name}/{models[0]}",
            highlight=False,
            markup=False,
        )


def _read_key() -> str:
    if sys.stdin.isatty():
        return str(typer.prompt("API key", hide_input=True))
    key = sys.stdin.readline().strip()
    if not key:
        raise InvalidInput("--api-key-stdin: standard input held no API key")
    return key


@models_app.command("test")
def test(ctx: typer.Context, name: NameArgument) -> None:
    """Reach a connection's server and list its models, or say what is wrong."""
    result = _connections(open_app(ctx)).test_saved(name)
    if not result.ok:
        raise Unavailable(result.message)
    console.print(result.message, highlight=False, markup=False)
    for model in result.models:
        size = f"  {model.parameters}" if model.parameters else ""
        console.print(f"  {name}/{model.id}{size}", highlight=False, markup=False)


@models_app.command("remove")
def remove(ctx: typer.Context, name: NameArgument) -> None:
    """Remove a connection (chats that chose its models fall back to the default)."""
    _connections(open_app(ctx)).remove(name)
    console.print(f"Removed {name}.", highlight=False, markup=False)


@models_app.command("detect")
def detect(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Look for an Ollama running on this machine (OLLAMA_HOST, else port 11434)."""
    found = _connections(open_app(ctx)).detect()
    if as_json:
        print_json(_detected_json(found))
        return
    if found is None:
        console.print("No Ollama answers on this machine.", highlight=False)
        return
    names = ", ".join(m.id for m in found.models) or "no models yet (ollama pull llama3.2)"
    console.print(f"Ollama at {found.base_url}: {names}", highlight=False, markup=False)
    if found.connected_as:
        console.print(f"Connected as {found.connected_as}.", highlight=False, markup=False)
    else:
        console.print(
            f"Connect it: autorag models add ollama --kind ollama --url {found.base_url}",
            highlight=False,
            markup=False,
        )


def _detected_json(found: Detected | None) -> dict[str, Any]:
    if found is None:
        return {"found": False}
    return {
        "found": True,
        "kind": found.kind,
        "baseUrl": found.base_url,
        "models": [m.id for m in found.models],
        "connectedAs": found.connected_as,
    }
