"""This workspace on the P2P network: it answers trusted peers and asks them.

Serving (seed 000): a query is answered only for a contact in the trusted peer registry;
the search runs in a remote session; the egress gate decides what leaves; replies follow
wire protocol v1 (docs/p2p-protocol.md). Asking: a query goes to a peer by its local
name, and its reply (after an ``approval-pending`` one, perhaps) comes back here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from autorag.chat.service import ChatService
from autorag.context import AppContext, open_policy
from autorag.dlp.service import DlpContext, DlpService, DlpSession
from autorag.errors import AutoragError, InvalidInput, NotFound
from autorag.p2p import wire
from autorag.p2p.approvals import (
    ApprovalRequest,
    Approvals,
    PendingSource,
    Resolution,
    approvals_of,
)
from autorag.p2p.egress import as_indexed, gate, still_allowed
from autorag.p2p.outgoing import OutgoingQuestion, screen_question
from autorag.p2p.session import remote_answer
from autorag.p2p.simplex.chunks import ChunkError, Reassembler
from autorag.p2p.simplex.shapes import IncomingMessage
from autorag.p2p.startup import P2PRuntime
from autorag.retrieval.filters import build_filters
from autorag.retrieval.grounding import cited_numbers
from autorag.retrieval.hybrid import SearchRequest

log = logging.getLogger(__name__)
APPROVAL_POLL_S = 1.0


@dataclass
class _Asked:
    contact_id: int
    replies: asyncio.Queue[wire.Reply] = field(default_factory=asyncio.Queue)


class PeerNode:
    def __init__(
        self,
        app: AppContext,
        runtime: P2PRuntime,
        chat: ChatService,
        dlp: DlpService,
        *,
        query_timeout_s: float = 60.0,
        approvals: Approvals | None = None,
    ) -> None:
        self.app = app
        self.runtime = runtime
        self.chat = chat
        self.dlp = dlp
        self.query_timeout_s = query_timeout_s
        self.approvals = approvals or approvals_of(app)
        self.policy = open_policy(app)
        self._asked: dict[str, _Asked] = {}
        self._parts = Reassembler(max_total_bytes=wire.MAX_MESSAGE_CHARS * 4)
        self._tasks: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- running ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Read messages and poll approvals until cancelled."""
        self.loop = asyncio.get_running_loop()
        poller = asyncio.create_task(self._poll_approvals())
        try:
            async for message in self.runtime.client.incoming():
                self._spawn(self.handle(message))
        finally:
            poller.cancel()
            for task in list(self._tasks):
                task.cancel()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def handle(self, message: IncomingMessage) -> None:
        """One message from a contact: a query to answer or a reply we wait for."""
        try:
            text = self._parts.feed(message.contact_id, message.text)
        except ChunkError as error:
            await self._send(
                message.contact_id, wire.error_reply(wire.WireError("malformed", str(error)))
            )
            return
        if text is None:
            return  # a part of a longer message: more to come
        if not wire.looks_like_protocol(text):
            log.info("p2p: ignored a plain chat message from contact %s", message.contact_id)
            return
        try:
            decoded = wire.decode(text)
        except wire.WireError as error:
            await self._send(message.contact_id, wire.error_reply(error))
            return
        if isinstance(decoded, wire.Reply):
            self._deliver(message.contact_id, decoded)
        else:
            await self._answer(message.contact_id, decoded)

    # -- serving -----------------------------------------------------------------------------
    async def _answer(self, contact_id: int, query: wire.Query) -> None:
        peer = self.runtime.registry.by_contact_id(contact_id)
        if peer is None:
            reply = _diagnostic(query.id, "not-trusted", "error", "you are not a trusted peer")
            await self._send(contact_id, reply)
            return
        cancel = threading.Event()
        try:
            reply = await asyncio.wait_for(
                asyncio.to_thread(self.serve, peer.name, contact_id, query, cancel),
                self.query_timeout_s,
            )
        except TimeoutError:
            cancel.set()
            reply = _diagnostic(query.id, "timeout", "error", "no answer within the time budget")
        await self._send(contact_id, reply)

    def serve(
        self,
        peer: str,
        contact_id: int,
        query: wire.Query,
        cancel: threading.Event | None = None,
    ) -> wire.Reply:
        """The reply to a trusted peer's query (blocking: runs in a worker thread)."""
        try:
            return self._serve(peer, contact_id, query, cancel)
        except InvalidInput as exc:
            # The detail may name local rules or paths (a corrupted policy rule): it stays
            # in this log; the peer gets the code and a generic message.
            log.warning("p2p: a peer query could not be served: %s", exc.message)
            return _diagnostic(query.id, "malformed", "error", "the query could not be served")
        except Exception:
            log.exception("p2p: a peer query failed")
            return _diagnostic(query.id, "internal-error", "error", "the query failed here")

    def _serve(
        self, peer: str, contact_id: int, query: wire.Query, cancel: threading.Event | None
    ) -> wire.Reply:
        filters = query.filters
        request = SearchRequest(
            query.text,
            k=query.k,
            filters=build_filters(filters.documentTypes, filters.dateFrom, filters.dateTo),
        )
        hits = as_indexed(
            self.app.searcher.search(request).hits, self.app.catalog, self.app.info.id
        )
        if not hits:
            return wire.empty_reply(query.id)
        dlp = self.egress_dlp()
        gated = gate(hits, self.policy, dlp)
        if gated.pending:
            approval = self.approvals.create(
                peer=peer,
                contact_id=contact_id,
                query_id=query.id,
                query=query.text,
                sources=gated.pending,
                shared=gated.shared,
            )
            log.info("p2p: query %s from %s waits for approval %s", query.id, peer, approval.id)
            return wire.Reply(
                id=query.id,
                final=False,
                diagnostic=wire.Diagnostic(
                    code="approval-pending",
                    severity="info",
                    message="some results need the owner's approval; the answer follows",
                ),
            )
        if not gated.shared:
            return _diagnostic(query.id, "policy-denied", "warning", "no result may be shared")
        return self._final(query.id, query.text, gated.shared, dlp, cancel)

    def _final(
        self,
        query_id: str,
        question: str,
        sources: list[PendingSource],
        dlp: DlpSession,
        cancel: threading.Event | None = None,
    ) -> wire.Reply:
        result = remote_answer(self.app, self.chat, question, sources, cancel)
        if not _cites_a_source(result.text, len(sources)):
            # Seed 000: a remote session that ends without structured results resolves to
            # the structured empty response. The vector leg always returns neighbours, so
            # "nothing found" shows here: an answer that cites none of them.
            return wire.empty_reply(query_id)
        answer = dlp.scan(result.text, channel="p2p_egress").redacted_text
        results = [
            wire.Result(
                source=s.source, title=s.title, snippet=s.snippet, score=s.score, page=s.page
            )
            for s in sources[: wire.MAX_K]
        ]
        return wire.Reply(id=query_id, results=results, answer=answer[:8000])

    def screen(self, question: str) -> OutgoingQuestion:
        """The question as it may be sent to a peer (DLP-redacted), or
        ``QuotesPrivateSource`` when it quotes a local source that may not leave."""
        return screen_question(question, self.app, self.policy, self.egress_dlp())

    def egress_dlp(self) -> DlpSession:
        """Peers have no role to bypass DLP with: everything leaving is scanned."""
        context = DlpContext("p2p", "p2p_egress", None, None, self.app.info.id)
        return self.dlp.session(context)

    # -- approvals ----------------------------------------------------------------------------
    async def _poll_approvals(self) -> None:
        while True:
            await asyncio.sleep(APPROVAL_POLL_S)
            try:
                for resolution in await asyncio.to_thread(self.approvals.resolved):
                    await self._conclude(resolution)
            except Exception:
                log.exception("p2p: approvals could not be read")

    async def _conclude(self, resolution: Resolution) -> None:
        request = resolution.request
        reply = await asyncio.to_thread(self._concluding_reply, resolution)
        await self._send(request.contact_id, reply)
        await asyncio.to_thread(self.approvals.close, request.id)

    def _concluding_reply(self, resolution: Resolution) -> wire.Reply:
        request: ApprovalRequest = resolution.request
        if resolution.status == "expired":
            return _diagnostic(request.query_id, "timeout", "error", "the approval expired")
        # Denying withholds only what waited for approval; what was shared is still
        # checked against the rules as they are now, never against those at asking time.
        allowed = still_allowed(request.shared, self.policy, approved=False)
        if resolution.status == "approved":
            allowed += still_allowed(request.sources, self.policy, approved=True)
        if not allowed:
            return _diagnostic(
                request.query_id, "approval-denied", "warning", "the owner did not approve"
            )
        try:
            return self._final(request.query_id, request.query, allowed, self.egress_dlp())
        except Exception:
            log.exception("p2p: an approved answer failed")
            return _diagnostic(request.query_id, "internal-error", "error", "the query failed")

    # -- asking -------------------------------------------------------------------------------
    async def ask(
        self,
        peer_name: str,
        text: str,
        *,
        k: int = 5,
        filters: wire.Filters | None = None,
        timeout_s: float = 60.0,
        on_pending: Callable[[wire.Reply], None] | None = None,
    ) -> wire.Reply:
        """Ask the peer ``peer_name``; its final reply, or a ``timeout`` one."""
        peer = self.runtime.registry.get(peer_name)
        if peer is None:
            raise NotFound(f"no trusted peer {peer_name!r} (see `autorag p2p peers`)")
        outgoing = await asyncio.to_thread(self.screen, text)
        query = wire.Query(
            id=secrets.token_hex(8), text=outgoing.text, k=k, filters=filters or wire.Filters()
        )
        asked = self._asked[query.id] = _Asked(peer.contact_id)
        try:
            await self.runtime.client.send_message(peer.contact_id, wire.encode(query))
            return await self._await_final(query.id, asked, timeout_s, on_pending)
        finally:
            del self._asked[query.id]

    async def _await_final(
        self,
        query_id: str,
        asked: _Asked,
        timeout_s: float,
        on_pending: Callable[[wire.Reply], None] | None,
    ) -> wire.Reply:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            try:
                reply = await asyncio.wait_for(asked.replies.get(), deadline - loop.time())
            except TimeoutError:
                return _diagnostic(query_id, "timeout", "error", "the peer did not answer in time")
            if reply.final:
                return reply
            if on_pending is not None:
                on_pending(reply)

    def ask_blocking(
        self, peer_name: str, text: str, *, k: int = 5, timeout_s: float = 60.0
    ) -> wire.Reply:
        """``ask`` from a worker thread (a skill), on the node's event loop."""
        if self.loop is None:
            raise AutoragError("the P2P node is not running")
        asking = self.ask(peer_name, text, k=k, timeout_s=timeout_s)
        return asyncio.run_coroutine_threadsafe(asking, self.loop).result()

    def _deliver(self, contact_id: int, reply: wire.Reply) -> None:
        asked = self._asked.get(reply.id or "")
        if asked is None or asked.contact_id != contact_id:
            log.info("p2p: dropped a reply nobody is waiting for (from contact %s)", contact_id)
            return
        asked.replies.put_nowait(reply)

    async def _send(self, contact_id: int, reply: wire.Reply) -> None:
        with contextlib.suppress(AutoragError):  # the peer is gone: nothing to tell
            await self.runtime.client.send_message(contact_id, wire.encode(reply))


def _cites_a_source(answer: str, sources: int) -> bool:
    """Whether the answer rests on a result: an ``[n]`` with ``1 <= n <= sources``."""
    return any(1 <= n <= sources for n in cited_numbers(answer))


def _diagnostic(
    query_id: str | None, code: wire.Code, severity: wire.Severity, message: str
) -> wire.Reply:
    return wire.Reply(
        id=query_id, diagnostic=wire.Diagnostic(code=code, severity=severity, message=message)
    )
