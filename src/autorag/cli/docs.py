"""``autorag docs``: list, show and remove indexed documents."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from autorag.cli._common import console, local_time, open_app, plural, print_json
from autorag.ingest.duplicates import display_name
from autorag.sources import to_real_path
from autorag.store.catalog.models import DocumentRow

app = typer.Typer(help="List, show and remove indexed documents.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def _as_dict(document: DocumentRow, roots: Any) -> dict[str, Any]:
    return {
        "id": document.id,
        "source_id": document.source_id,
        "name": display_name(document.source_id, document.origin),
        "path": to_real_path(document.source_id, roots),
        "title": document.title,
        "type": document.doc_type,
        "status": document.status,
        "error_code": document.error_code,
        "error": document.error,
        "pages": document.pages,
        "chunks": document.chunk_count,
        "size": document.size,
        "embedding_model": document.embedding_model,
        "date": document.doc_date.isoformat(),  # its own, else the file's modification
        "indexed_at": document.indexed_at.isoformat() if document.indexed_at else None,
    }


@app.command("list")
def list_documents(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="Only this status (ready, failed, …).")] = None,
    doc_type: Annotated[str | None, typer.Option("--type", help="Only this type.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000)] = 100,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    as_json: JsonFlag = False,
) -> None:
    """List documents with their status."""
    context = open_app(ctx)
    rows = context.catalog.list_documents(
        context.info.id, status=status, doc_type=doc_type, limit=limit, offset=offset
    )
    if as_json:
        print_json([_as_dict(d, context.roots) for d in rows])
        return
    table = Table("id", "status", "type", "chunks", "source")
    for document in rows:
        table.add_row(
            str(document.id),
            document.status,
            document.doc_type,
            str(document.chunk_count),
            display_name(document.source_id, document.origin),
        )
    console.print(table)


@app.command("show")
def show(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="Document id or source id (/docs/a.pdf).")],
    chunks: Annotated[bool, typer.Option("--chunks", help="Also print the chunks.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Show one document (and optionally its chunks)."""
    context = open_app(ctx)
    document = context.catalog.get_document(context.info.id, ref)
    data = _as_dict(document, context.roots)
    if chunks:
        data["chunk_list"] = [
            {"index": c.chunk_index, "page": c.page, "char_start": c.char_start, "text": c.text}
            for c in context.catalog.document_chunks(document.id)
        ]
    if as_json:
        print_json(data)
        return
    shown = {**data, "date": local_time(document.doc_date)}
    shown["indexed_at"] = local_time(document.indexed_at) or None
    for key, value in shown.items():
        if key != "chunk_list" and value is not None:
            console.print(f"[bold]{key}[/bold]: {value}", highlight=False)
    for chunk in data.get("chunk_list", []):
        console.rule(f"chunk {chunk['index']} (char {chunk['char_start']}, page {chunk['page']})")
        console.print(chunk["text"], highlight=False, markup=False)


@app.command("rm")
def remove(
    ctx: typer.Context,
    refs: Annotated[list[str], typer.Argument(help="Document ids or source ids.")],
) -> None:
    """Remove documents from every store (a file still on disk returns on refresh)."""
    context = open_app(ctx)
    documents = [context.catalog.get_document(context.info.id, ref) for ref in refs]
    context.indexer.remove([d.id for d in documents])
    console.print(f"Removed {plural(len(documents), 'document')}.")
