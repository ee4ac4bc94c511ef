"""Commands that read the index: search."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from rich.table import Table

from autorag.cli._common import console, open_app, print_json, split_types
from autorag.errors import InvalidInput
from autorag.ingest.duplicates import display_name
from autorag.models import SearchFilters, SearchHit
from autorag.retrieval.filters import build_filters
from autorag.retrieval.hybrid import SearchMode, SearchRequest


def _day(value: str | None) -> str | None:
    """Refuse a date the filters cannot read, in the words of the option typed."""
    if value is not None:
        try:
            build_filters((), value)
        except InvalidInput:
            raise typer.BadParameter("not a date (expected YYYY-MM-DD)") from None
    return value


TypeOption = Annotated[
    str | None, typer.Option("--type", "-t", help="Document types, comma separated: pdf,md,…")
]
FromOption = Annotated[
    str | None,
    typer.Option(
        "--from",
        callback=_day,
        help="Documents dated on or after this day (YYYY-MM-DD). A document's date is its "
        "own (PDF, Office or front-matter metadata), else when the file was last modified.",
    ),
]
ToOption = Annotated[
    str | None,
    typer.Option(
        "--to",
        callback=_day,
        help="Documents dated on or before this day (YYYY-MM-DD; the whole day counts).",
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def cli_filters(doc_type: str | None, date_from: str | None, date_to: str | None) -> SearchFilters:
    """The filters of ``--type``, ``--from`` and ``--to``, refused in their own words."""
    if date_from and date_to:
        start = build_filters((), date_from).date_from
        end = build_filters((), None, date_to).date_to
        if start and end and start >= end:
            raise typer.BadParameter(
                f"{date_from} is not before --to {date_to}", param_hint="--from"
            )
    return build_filters(split_types(doc_type), date_from, date_to)


def register(app: typer.Typer) -> None:
    app.command("search")(search_command)


def search_command(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("-k", min=1, max=1000, help="How many hits.")] = 10,
    doc_type: TypeOption = None,
    date_from: FromOption = None,
    date_to: ToOption = None,
    mode: Annotated[str, typer.Option(help="hybrid | vector | fts")] = "hybrid",
    per_document: Annotated[
        bool, typer.Option("--per-document", help="At most one hit per document.")
    ] = False,
    rerank: Annotated[
        bool | None,
        typer.Option(
            "--rerank/--no-rerank",
            help="Rerank the first results with the configured reranker (search.rerank), "
            "or not. Default: as the workspace says.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Hybrid search (vectors + full-text, fused with RRF).

    Example: autorag search "refund window" --type pdf,md --from 2025-01-01
    """
    if not query.strip():
        raise InvalidInput("nothing to search for: the query is empty")
    if mode not in ("hybrid", "vector", "fts"):
        raise typer.BadParameter(f"{mode!r} is not one of hybrid, vector, fts", param_hint="--mode")
    filters = cli_filters(doc_type, date_from, date_to)
    app = open_app(ctx)
    response = app.searcher.search(
        SearchRequest(
            query, k=k, filters=filters, mode=_mode(mode), per_document=per_document, rerank=rerank
        )
    )
    if as_json:
        print_json(dataclasses.asdict(response))
        return
    for diagnostic in response.diagnostics:
        console.print(f"[yellow]{diagnostic.severity}:[/] {diagnostic.message}", highlight=False)
    if not response.hits:
        console.print("No results.")
        return
    console.print(_hits_table(response.hits))


def _mode(value: str) -> SearchMode:
    return "vector" if value == "vector" else "fts" if value == "fts" else "hybrid"


def _hits_table(hits: list[SearchHit]) -> Table:
    table = Table("#", "score", "legs", "source", "where", "snippet", show_lines=False)
    for n, hit in enumerate(hits, 1):
        where = f"p.{hit.page}" if hit.page else f"¶{hit.paragraph + 1}"
        snippet = " ".join(hit.text.split())[:160]
        source = display_name(hit.source)  # an upload by its original name
        table.add_row(str(n), f"{hit.score:.4f}", hit.legs, source, where, snippet)
    return table
