"""``autorag youtube``: YouTube videos as documents, from their transcripts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from autorag.cli._common import camel_json, console, open_app, print_json

if TYPE_CHECKING:
    from autorag.youtube.service import AddedVideo

app = typer.Typer(
    help="YouTube videos as documents: their transcripts, timestamps kept.\n\n"
    "A video's transcript is indexed as the document /youtube/videos/VIDEO_ID, titled "
    "with the video's title; each passage opens with the second it starts at, and a "
    "citation of it links to the video there (…&t=75s). Adding a video again updates "
    "its document. Transcript languages are tried in the order of --language, else "
    "\\[youtube] languages (default: en).\n\n"
    "Example:\n\n"
    "  autorag youtube add https://youtu.be/VIDEO_ID --language es --language en\n\n"
    "  autorag add https://www.youtube.com/watch?v=VIDEO_ID",
    no_args_is_help=True,
)

LanguageOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--language",
        "-l",
        metavar="CODE",
        help="A transcript language to prefer (en, es, pt-BR…); repeat for more, first"
        " preferred. Default: the youtube.languages setting.",
    ),
]


@app.command("add")
def add(
    ctx: typer.Context,
    url: Annotated[
        str,
        typer.Argument(
            help="The video: https://www.youtube.com/watch?v=ID, https://youtu.be/ID,"
            " …/shorts/ID, …/embed/ID, or the 11-character id."
        ),
    ],
    language: LanguageOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Index a YouTube video's transcript as a document of the workspace.

    Exit 2 when the video has no transcript to read, and the message says why.

    Exit 5 when YouTube cannot be reached.
    """
    added = add_videos(ctx, [url], languages=language)[0]
    if as_json:
        print_json(camel_json(added))
    else:
        print_added(added)


def add_videos(
    ctx: typer.Context, urls: list[str], *, languages: list[str] | None = None
) -> list[AddedVideo]:
    """Add each video in turn (``autorag add`` sends YouTube URLs here)."""
    from autorag.youtube.service import add_video  # deferred: `--help` stays fast

    context = open_app(ctx)
    try:
        return [add_video(context, url, languages=languages) for url in urls]
    finally:
        context.close()


def print_added(added: AddedVideo) -> None:
    what = {"created": "added", "updated": "updated", "unchanged": "unchanged"}[added.outcome]
    track = added.track.describe()
    line = f"{what}: {escape(added.title)}  [dim]{added.source_id}[/dim]"
    console.print(line, highlight=False)
    console.print(
        f"  transcript {escape(track)}, {added.paragraphs} timed paragraphs; {added.url}",
        highlight=False,
    )
    if added.status != "ready":
        console.print(f"  [red]{added.status}[/red]: {escape(added.error or '')}", highlight=False)
