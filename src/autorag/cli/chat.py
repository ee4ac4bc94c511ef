"""Commands that answer: ``ask`` (one question), ``chat`` (a conversation), ``models``.

They go through the same chat service and orchestrator as the HTTP API: tokens stream
as the model writes them, sources follow, Ctrl+C stops an answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import logging
import re
import threading
from typing import Annotated, Any

import typer

from autorag.agent.events import (
    AgentEvent,
    Emit,
    PlanEvent,
    StatusEvent,
    TokenEvent,
    WikiEditEvent,
)
from autorag.chat.service import LOCAL_USER, ChatOutcome, ChatService, ChatTurn, PreparedAnswer
from autorag.chat.store import get_chat
from autorag.cli._common import console, err_console, open_app, print_error, print_json
from autorag.cli.search import FromOption, JsonFlag, ToOption, TypeOption, cli_filters
from autorag.context import AppContext
from autorag.errors import AutoragError
from autorag.models import Citation

ModelOption = Annotated[
    str | None, typer.Option("--model", "-m", help="provider/model to answer with.")
]
ArchiveOption = Annotated[
    str | None,
    typer.Option("--archive", help="An archive (its name) the questions are about."),
]
EXIT_WORDS = {"/quit", "/exit", ":q"}
log = logging.getLogger(__name__)


def register(app: typer.Typer) -> None:
    app.command()(ask)
    app.command()(chat)


def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="Your question.")],
    k: Annotated[int | None, typer.Option("-k", min=1, max=50, help="Sources per search.")] = None,
    model: ModelOption = None,
    plan: Annotated[bool, typer.Option("--plan", help="Plan first, then answer.")] = False,
    doc_type: TypeOption = None,
    date_from: FromOption = None,
    date_to: ToOption = None,
    as_json: JsonFlag = False,
    archive: ArchiveOption = None,
) -> None:
    """Answer a question from the documents, with numbered \\[n] citations.

    With --archive the agent also reads that archive's pages (and searches them when
    the documents have nothing).

    Example: autorag ask "How long is the refund window?" --type pdf --json
    """
    filters = cli_filters(doc_type, date_from, date_to)
    app = open_app(ctx)
    if k is not None:
        app.settings.agent.search_k = k
    turn = ChatTurn(
        question, model=model, filters=filters, plan_mode=plan or None, store=False,
        archive=archive,
    )  # fmt: skip
    prepared = ChatService.for_context(app).prepare(app, turn, user=LOCAL_USER)
    outcome = _answer(prepared, live=not as_json)
    if outcome is not None and as_json:
        print_json(_outcome_json(outcome))  # a stopped answer too: abortReason "aborted"
    if outcome is None or outcome.result.abort_reason == "aborted":
        raise typer.Exit(130)  # stopped with Ctrl+C, as a shell expects


def chat(
    ctx: typer.Context,
    model: ModelOption = None,
    resume: Annotated[int | None, typer.Option("--chat", help="Continue chat ID.")] = None,
    archive: ArchiveOption = None,
) -> None:
    """A conversation in the terminal. /model NAME switches model, /new starts over,
    /quit leaves; Ctrl+C stops an answer.

    Type /help in the conversation for every command. Ctrl+D (or Ctrl+C at the prompt)
    leaves too. An error in one turn is shown and the conversation goes on.

    Example: autorag chat --model ollama/llama3.2:3b
    """
    app = open_app(ctx)
    service = ChatService.for_context(app)
    if resume is not None:
        get_chat(app.catalog.engine, app.info.id, resume, LOCAL_USER.id)  # NotFound: exit 3
    if model is not None:
        service.check_model(app, model)
    if archive is not None:
        archive = service.check_archive(app, archive)  # NotFound: exit 3
    session = _Session(service, app, model, resume, archive)
    console.print("[dim]Ask a question; /help lists the commands, /quit leaves.[/dim]")
    while True:
        try:
            line = console.input("[bold cyan]you>[/bold cyan] ").strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        if not session.handle(line):
            return


# The conversation's own commands and what /help says of each, in this order.
SLASH_COMMANDS: dict[str, tuple[str, str]] = {
    "/model": ("/model NAME", "answer with another model (/model alone lists them)"),
    "/new": ("/new", "start a new conversation"),
    "/help": ("/help", "list these commands"),
    "/quit": ("/quit", "leave (also /exit, :q or Ctrl+D)"),
}
# A line is a command when its first word is a slash and letters: "/etc/hosts?" is a question.
_COMMAND = re.compile(r"/[A-Za-z]+")


class _Session:
    """One ``autorag chat``: its chat, its model, and what each line the user types does.
    Every error of a turn is shown inline; only leaving ends the session."""

    def __init__(
        self,
        service: ChatService,
        app: AppContext,
        model: str | None,
        chat_id: int | None,
        archive: str | None = None,
    ) -> None:
        self.service, self.app, self.model, self.chat_id = service, app, model, chat_id
        self.archive = archive  # asked about in every turn (--archive)

    def handle(self, line: str) -> bool:
        """Act on one line; False once the user leaves."""
        if not line:
            return True
        word = line.split()[0]
        if word.lower() in EXIT_WORDS:
            return False
        try:
            if _COMMAND.fullmatch(word):
                self._command(word.lower(), line[len(word) :].strip())
            else:
                self._ask(line)
        except KeyboardInterrupt:
            _say_stopped()
        except AutoragError as exc:
            print_error(exc.message)
        except Exception as exc:  # a fault in one turn must not end the conversation
            log.info("the turn failed", exc_info=True)
            print_error(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        return True

    def _ask(self, question: str) -> None:
        turn = ChatTurn(question, self.chat_id, self.model, archive=self.archive)
        prepared = self.service.prepare(self.app, turn, user=LOCAL_USER)
        self.chat_id = prepared.chat_id  # the conversation goes on even if this is stopped
        _answer(prepared, live=True)

    def _command(self, word: str, argument: str) -> None:
        if word == "/model":
            self._switch_model(argument)
        elif word == "/new":
            self.chat_id = None
            console.print("[dim]New conversation.[/dim]")
        elif word == "/help":
            _print_commands()
        else:
            close = difflib.get_close_matches(word, [*SLASH_COMMANDS, *EXIT_WORDS], n=1)
            hint = f", did you mean {close[0]}?" if close else ""
            print_error(f"unknown command {word}{hint}")
            _print_commands()

    def _switch_model(self, choice: str) -> None:
        if not choice:
            self._print_models()
            return
        try:
            self.service.check_model(self.app, choice)
        except AutoragError as exc:
            print_error(exc.message)
            self._print_models()
            return
        self.model = choice
        console.print(f"[dim]Answering with {choice}.[/dim]", highlight=False)

    def _print_models(self) -> None:
        current = self.model or "the workspace's default"
        console.print(f"Answering with {current}. Models on offer:", highlight=False)
        for entry in self.service.router.models():
            down = "  (not reachable)" if entry.available is False else ""
            console.print(f"  {entry.id}{down}", highlight=False, markup=False)
        console.print("[dim]Switch with /model NAME.[/dim]")


def _print_commands() -> None:
    console.print("Commands:")
    width = max(len(usage) for usage, _ in SLASH_COMMANDS.values())
    for usage, what in SLASH_COMMANDS.values():
        console.print(f"  {usage:<{width}}  {what}", highlight=False, markup=False)
    console.print("Anything else is a question. Ctrl+C stops an answer.", highlight=False)


def _say_stopped() -> None:
    console.print("\n(Stopped)", style="dim", highlight=False)


def _answer(prepared: PreparedAnswer, *, live: bool) -> ChatOutcome | None:
    """Answer in a thread, so that Ctrl+C stops the answer instead of the program.

    The first Ctrl+C says "(Stopped)" at once and asks the answer to stop, then waits
    for it (a token at most, while the model streams), so what was said so far is kept;
    a second one leaves it to end on its own. None: stopped before there was an outcome.
    """
    cancel, done = threading.Event(), threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["outcome"] = prepared.run(_printer(live, cancel), cancel)
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="answer", daemon=True).start()
    try:
        _wait(done)
    except KeyboardInterrupt:
        cancel.set()  # the answer stops at its next token; its late output is dropped
        if live:  # said now: a model that stalls may be slow to send that next token
            _say_stopped()
        with contextlib.suppress(KeyboardInterrupt):  # asked twice: leave it to end alone
            _wait(done)
    if cancel.is_set():
        outcome: ChatOutcome | None = box.get("outcome")
        return outcome
    if "error" in box:
        raise box["error"]
    outcome = box["outcome"]
    if live:
        _print_sources(outcome.result.citations)
        if outcome.result.requested_model:
            err_console.print(f"[dim]answered by {outcome.result.model_used}[/dim]")
    return outcome


def _wait(done: threading.Event) -> None:
    # A timed wait: a signal interrupts it on every platform, and Ctrl+C lands at once.
    while not done.wait(0.2):
        pass


def _printer(live: bool, stopped: threading.Event) -> Emit:
    def show(event: AgentEvent) -> None:
        if not live or stopped.is_set():
            return
        if isinstance(event, TokenEvent):
            console.print(event.text, end="", highlight=False, markup=False)
        elif isinstance(event, StatusEvent):
            err_console.print(event.message, style="dim", markup=False, highlight=False)
        elif isinstance(event, PlanEvent):
            err_console.print(f"Plan:\n{event.plan}", style="dim", markup=False, highlight=False)
        elif isinstance(event, WikiEditEvent):
            _print_wiki_edit(event)

    return show


def _print_wiki_edit(edit: WikiEditEvent) -> None:
    """An archive page the agent changed, or proposes to change (then not saved)."""
    done = "Saved" if edit.applied else "Proposed (not saved)"
    where = f"{edit.archive}/{edit.path}"
    err_console.print(f"{done}: {edit.action} of {where}", markup=False, highlight=False)
    err_console.print(edit.diff, style="dim", markup=False, highlight=False)


def _print_sources(citations: list[Citation]) -> None:
    """The sources the answer cites, numbered as in its text, each with its section or
    page; the others after them, as "more sources"."""
    console.print()
    cited = [c for c in citations if c.cited]
    more = [c for c in citations if not c.cited]
    for heading, listed in (("Sources", cited), ("More sources (not cited)", more)):
        if listed:
            console.print(f"\n[bold]{heading}[/bold]")
        for c in listed:
            line = f"  [{c.number}] {c.title or c.source}{_where(c, citations)} · {c.source}"
            console.print(line, highlight=False, markup=False, style="" if c.cited else "dim")


def _where(citation: Citation, citations: list[Citation]) -> str:
    """Section or page; the paragraph too when another source of the same document
    would read the same, and which part of it when that is the same paragraph too."""
    where = f", page {citation.page}" if citation.page else ""
    if citation.section:
        where = f" — {citation.section}{where}"
    twins = [
        c
        for c in citations
        if c.document_id == citation.document_id
        and (c.section, c.page) == (citation.section, citation.page)
    ]
    if len(twins) < 2:
        return where
    parts = sorted(c.chunk_id for c in twins if c.paragraph == citation.paragraph)
    part = f" (part {parts.index(citation.chunk_id) + 1})" if len(parts) > 1 else ""
    return f"{where}, ¶{citation.paragraph + 1}{part}"


def _outcome_json(outcome: ChatOutcome) -> dict[str, Any]:
    result = outcome.result
    return {
        "text": result.text,
        "citations": [dataclasses.asdict(c) for c in result.citations],
        "plan": result.plan,
        "modelUsed": result.model_used,
        "providerUsed": result.provider_used,
        "requestedModel": result.requested_model,
        "fallbackReason": result.fallback_reason,
        "abortReason": result.abort_reason,
        "usage": dataclasses.asdict(result.usage),
        "diagnostics": [dataclasses.asdict(d) for d in result.diagnostics],
    }
