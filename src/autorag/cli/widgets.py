"""``autorag widgets``: chat widgets that other sites embed with one script tag."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from autorag.cli._common import camel_json, console, open_app, print_json
from autorag.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.widget.models import Widget
    from autorag.widget.service import WidgetService

app = typer.Typer(
    help="Chat widgets: a chat bubble other sites embed with one script tag, answering "
    "anonymous visitors from a workspace.\n\n"
    "A widget answers only on the origins you allow (--origin, repeatable: "
    "https://www.example.com), within its limits per visitor and per widget (questions "
    "a minute), with its model, greeting and colours. With --context-file its answers "
    "come from that text, not from a search of the workspace. Visitors' conversations "
    "are not stored.\n\n"
    "Example:\n\n"
    "  autorag widgets add shop --origin https://shop.example.com --greeting 'Hi!'\n\n"
    "  autorag widgets show shop",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
WidgetArg = Annotated[str, typer.Argument(help="The widget's name or id (wgt_…).")]
WorkspaceOpt = Annotated[
    str | None,
    typer.Option("--workspace", metavar="NAME", help="The workspace (default: the default one)."),
]
OriginsOpt = Annotated[
    list[str] | None,
    typer.Option("--origin", metavar="URL", help="A site allowed to embed it (repeatable)."),
]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server-url",
        metavar="URL",
        help="This server's address as sites reach it, for the snippet "
        "(default: http://HOST:PORT of the \\[server] settings).",
    ),
]

ModelOpt = Annotated[str | None, typer.Option(help="provider/model (default: the workspace's).")]
GreetingOpt = Annotated[str | None, typer.Option(help="Shown when the chat opens.")]
ColourOpt = Annotated[str | None, typer.Option(help="Bubble colour, #rrggbb.")]
BackgroundOpt = Annotated[str | None, typer.Option(help="Panel colour, #rrggbb.")]
TextOpt = Annotated[str | None, typer.Option(help="Text colour, #rrggbb.")]
VisitorOpt = Annotated[int | None, typer.Option(help="Questions a minute per visitor.")]
WidgetLimitOpt = Annotated[int | None, typer.Option(help="Questions a minute in all.")]


class _Settings:
    """The options ``add`` and ``update`` share, as the service's settings."""

    @staticmethod
    def of(**given: Any) -> dict[str, Any]:
        theme = {k: given.pop(k) for k in ("primary", "background", "text") if given.get(k)}
        for key in ("primary", "background", "text"):
            given.pop(key, None)
        context_file: Path | None = given.pop("context_file", None)
        if context_file is not None:
            given["rag_context"] = context_file.read_text("utf-8")
        if theme:
            given["theme"] = theme
        return {key: value for key, value in given.items() if value is not None}


def _service(context: AppContext) -> WidgetService:
    from autorag.widget.service import WidgetService  # deferred: `--help` stays fast

    return WidgetService.for_context(context)


def _scoped(ctx: typer.Context, workspace: str | None) -> AppContext:
    context = open_app(ctx)
    if workspace:
        context = context.for_workspace(context.catalog.get_workspace(workspace))
    return context


def _public_id(service: WidgetService, workspace_id: int, widget: str) -> str:
    """A widget named by its id or its name, as its id."""
    if widget.startswith("wgt_"):
        return widget
    for found in service.list(workspace_id):
        if found.name == widget:
            return found.public_id
    raise NotFound(f"no widget {widget[:80]!r} in this workspace", code="widget_not_found")


def _snippet(context: AppContext, widget: Widget, server_url: str | None) -> str:
    from autorag.widget.models import embed_snippet

    server = context.settings.server
    return embed_snippet(server_url or f"http://{server.host}:{server.port}", widget.public_id)


def _print(context: AppContext, widget: Widget, server_url: str | None, as_json: bool) -> None:
    snippet = _snippet(context, widget, server_url)
    if as_json:
        print_json({**camel_json(widget), "snippet": snippet})
        return
    theme = ", ".join(f"{k} {v}" for k, v in widget.theme.items())
    rows = [
        ("id", widget.public_id),
        ("workspace", widget.workspace),
        ("state", "on" if widget.enabled else "off"),
        ("origins", ", ".join(widget.allowed_origins) or "none: no site may embed it yet"),
        ("model", widget.model or "the workspace's default"),
        ("greeting", widget.greeting or "none"),
        ("colours", theme),
        (
            "limits",
            f"{widget.visitor_per_minute}/min per visitor, {widget.widget_per_minute}/min in all",
        ),
        ("context", f"{len(widget.rag_context)} characters" if widget.rag_context else "none"),
    ]
    table = Table(show_header=False, title=escape(widget.name))
    for key, value in rows:
        table.add_row(key, escape(value))
    console.print(table)
    console.print("Put this on the site's pages:", highlight=False)
    console.print(escape(snippet), highlight=False, soft_wrap=True)


@app.command("list")
def list_widgets(
    ctx: typer.Context, workspace: WorkspaceOpt = None, as_json: JsonFlag = False
) -> None:
    """List the workspace's widgets."""
    context = _scoped(ctx, workspace)
    widgets = _service(context).list(context.info.id)
    if as_json:
        print_json(camel_json(widgets))
        return
    if not widgets:
        console.print("No widgets: autorag widgets add NAME --origin https://your.site")
        return
    table = Table("name", "id", "state", "origins", "limits")
    table.columns[1].no_wrap = True  # an id is copied whole
    for widget in widgets:
        table.add_row(
            escape(widget.name),
            widget.public_id,
            "on" if widget.enabled else "[dim]off[/dim]",
            escape(", ".join(widget.allowed_origins) or "none"),
            f"{widget.visitor_per_minute}/{widget.widget_per_minute} a minute",
        )
    console.print(table)


@app.command("add")
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name, unique in the workspace.")],
    origin: OriginsOpt = None,
    greeting: GreetingOpt = None,
    model: Annotated[
        str | None, typer.Option(help="provider/model (default: the workspace's).")
    ] = None,
    primary: Annotated[str | None, typer.Option(help="Bubble colour, #rrggbb.")] = None,
    background: Annotated[str | None, typer.Option(help="Panel colour, #rrggbb.")] = None,
    text: Annotated[str | None, typer.Option(help="Text colour, #rrggbb.")] = None,
    visitor_limit: Annotated[
        int | None, typer.Option(help="Questions a minute per visitor.")
    ] = None,
    widget_limit: Annotated[int | None, typer.Option(help="Questions a minute in all.")] = None,
    context_file: Annotated[
        Path | None, typer.Option(help="Answer from this text file, not from a search.")
    ] = None,
    workspace: WorkspaceOpt = None,
    server_url: ServerOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Add a widget and print the script tag to put on the site."""
    context = _scoped(ctx, workspace)
    settings = _Settings.of(
        allowed_origins=origin, greeting=greeting, model=model, primary=primary,
        background=background, text=text, visitor_per_minute=visitor_limit,
        widget_per_minute=widget_limit, context_file=context_file,
    )  # fmt: skip
    if model:
        _check_model(context, model)
    widget = _service(context).create(context.info.id, name, **settings)
    _print(context, widget, server_url, as_json)


@app.command("show")
def show(
    ctx: typer.Context,
    widget: WidgetArg,
    workspace: WorkspaceOpt = None,
    server_url: ServerOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Show a widget and its script tag."""
    context = _scoped(ctx, workspace)
    service = _service(context)
    found = service.get(context.info.id, _public_id(service, context.info.id, widget))
    _print(context, found, server_url, as_json)


@app.command("update")
def update(
    ctx: typer.Context,
    widget: WidgetArg,
    origin: OriginsOpt = None,
    greeting: GreetingOpt = None,
    model: ModelOpt = None,
    default_model: Annotated[
        bool, typer.Option("--default-model", help="Use the workspace's model again.")
    ] = False,
    primary: Annotated[str | None, typer.Option(help="Bubble colour, #rrggbb.")] = None,
    background: Annotated[str | None, typer.Option(help="Panel colour, #rrggbb.")] = None,
    text: Annotated[str | None, typer.Option(help="Text colour, #rrggbb.")] = None,
    visitor_limit: Annotated[
        int | None, typer.Option(help="Questions a minute per visitor.")
    ] = None,
    widget_limit: Annotated[int | None, typer.Option(help="Questions a minute in all.")] = None,
    context_file: Annotated[Path | None, typer.Option(help="Answer from this text file.")] = None,
    no_context: Annotated[
        bool, typer.Option("--no-context", help="Search the workspace again.")
    ] = False,
    enabled: Annotated[
        bool | None, typer.Option("--enable/--disable", help="Turn it on or off for visitors.")
    ] = None,
    workspace: WorkspaceOpt = None,
    server_url: ServerOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Change a widget: what is given changes (--origin replaces the list)."""
    if model and default_model:
        raise InvalidInput("give --model or --default-model, not both")
    if context_file and no_context:
        raise InvalidInput("give --context-file or --no-context, not both")
    context = _scoped(ctx, workspace)
    service = _service(context)
    public_id = _public_id(service, context.info.id, widget)
    changes = _Settings.of(
        allowed_origins=origin, greeting=greeting, model=model, primary=primary,
        background=background, text=text, visitor_per_minute=visitor_limit,
        widget_per_minute=widget_limit, context_file=context_file, enabled=enabled,
    )  # fmt: skip
    if default_model:
        changes["model"] = None
    if no_context:
        changes["rag_context"] = None
    if "theme" in changes:  # a colour given keeps the others
        changes["theme"] = {**service.get(context.info.id, public_id).theme, **changes["theme"]}
    if model:
        _check_model(context, model)
    _print(context, service.update(context.info.id, public_id, changes), server_url, as_json)


@app.command("remove")
def remove(ctx: typer.Context, widget: WidgetArg, workspace: WorkspaceOpt = None) -> None:
    """Remove a widget: sites that embed it show that it is not available."""
    context = _scoped(ctx, workspace)
    service = _service(context)
    public_id = _public_id(service, context.info.id, widget)
    service.delete(context.info.id, public_id)
    console.print(f"Widget {escape(widget)} removed.", highlight=False)


def _check_model(context: AppContext, model: str) -> None:
    from autorag.chat.service import ChatService  # deferred: loads the model router

    ChatService.for_context(context).check_model(context, model)
