"""A webhook receiver on loopback, as a team would write one: it verifies the signature
over the RAW body (the bytes received, before any parsing) with the webhook's secret,
and records every request with its headers.

Each path answers from its own script of statuses (default 200, then the last one
again); ``redirect`` makes a path answer 302 to another; ``barrier`` holds requests
until that many are in at once (proof that deliveries run in parallel, with no timing).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    signed: bool  # the signature matched the path's secret over these very bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str  # http://127.0.0.1:<port>
    secrets: dict[str, str] = field(default_factory=dict)  # path → the webhook's secret
    scripts: dict[str, list[int]] = field(default_factory=dict)  # path → statuses to answer
    redirects: dict[str, str] = field(default_factory=dict)  # path → Location
    barrier: threading.Barrier | None = None
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def at(self, path: str) -> list[Received]:
        with self.lock:
            return [one for one in self.received if one.path == path]

    def answer(self, path: str) -> int:
        with self.lock:
            script = self.scripts.get(path, [200])
            return script.pop(0) if len(script) > 1 else script[0]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            secret = receiver.secrets.get(self.path, "")
            expected = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
            given = self.headers.get("X-Webhook-Signature") or ""
            signed = bool(secret) and hmac.compare_digest(expected, given)
            headers = {key.lower(): value for key, value in self.headers.items()}
            with receiver.lock:
                receiver.received.append(Received(self.path, headers, raw, signed))
            if receiver.barrier is not None:
                try:
                    receiver.barrier.wait()
                except threading.BrokenBarrierError:
                    self._reply(500)
                    return
            if self.path in receiver.redirects:
                self.send_response(302)
                self.send_header("Location", receiver.redirects[self.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._reply(receiver.answer(self.path) if signed else 401)

        def _reply(self, status: int) -> None:
            body = b"ok" if status < 300 else b"no \x00thanks"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver("")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
