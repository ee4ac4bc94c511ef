"""A webhook over HTTPS, against a real TLS receiver on loopback: the POST goes to the
address the guard checked, while TLS names (SNI) and verifies the URL's host; a
certificate for another name is refused; connections are kept for the next event, and
an answer too long to read is cut without losing the next delivery."""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.tls import self_signed_pem

from autorag.config import WebhookSettings
from autorag.webhooks.delivery import Poster

HOST = "hooks.test"
LONG_ANSWER = 1 << 20  # bytes answered to /long: far more than a delivery reads


@dataclass
class Receiver:
    port: int
    names: list[str | None] = field(default_factory=list)  # SNI of each TLS handshake
    hosts: list[str] = field(default_factory=list)  # Host of each request
    connections: int = 0


@pytest.fixture()
def tls(tmp_path: Path) -> Iterator[tuple[Receiver, ssl.SSLContext]]:
    pem = self_signed_pem(tmp_path, HOST)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(pem)
    receiver = Receiver(0)
    server_side.sni_callback = lambda _sock, name, _ctx: receiver.names.append(name)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            receiver.connections += 1
            super().setup()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            receiver.hosts.append(self.headers["Host"])
            answer = b"x" * (LONG_ANSWER if self.path.startswith("/long") else 2)
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            # The poster may read what it wants of a long answer and hang up.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError):
                self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = server_side.wrap_socket(server.socket, server_side=True)
    receiver.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client_side = ssl.create_default_context(cafile=str(pem))
    try:
        yield receiver, client_side
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def poster(tls: tuple[Receiver, ssl.SSLContext]) -> Iterator[Poster]:
    # Every name resolves to loopback: the guard checks it (allowed here) and pins it.
    made = Poster(
        WebhookSettings(allow_private=True, timeout_s=10),
        resolver=lambda _host, _port: ["127.0.0.1"],
        ssl_context=tls[1],
    )
    yield made
    made.close()


def _post(poster: Poster, url: str) -> tuple[str, str | None]:
    outcome = poster.post(url, "whsec_test", b"{}", delivery_id="whd_1", event="test")
    return outcome.status, outcome.error


def test_tls_names_and_verifies_the_urls_host_while_connecting_to_the_checked_address(
    tls: tuple[Receiver, ssl.SSLContext], poster: Poster
) -> None:
    receiver = tls[0]
    assert _post(poster, f"https://{HOST}:{receiver.port}/hook?token=t") == ("delivered", None)
    assert _post(poster, f"https://{HOST}:{receiver.port}/hook") == ("delivered", None)
    assert receiver.names == [HOST]  # one handshake, naming the host
    assert receiver.hosts == [f"{HOST}:{receiver.port}"] * 2
    assert receiver.connections == 1  # the second event rode the first's connection


def test_a_certificate_for_another_name_is_refused(
    tls: tuple[Receiver, ssl.SSLContext], poster: Poster
) -> None:
    receiver = tls[0]
    status, error = _post(poster, f"https://elsewhere.test:{receiver.port}/hook")
    assert status == "failed" and error is not None and error.startswith("could not deliver")
    assert receiver.hosts == []  # nothing was POSTed


def test_an_answer_too_long_is_cut_and_the_next_delivery_still_goes(
    tls: tuple[Receiver, ssl.SSLContext], poster: Poster
) -> None:
    receiver = tls[0]
    assert _post(poster, f"https://{HOST}:{receiver.port}/long") == ("delivered", None)
    assert _post(poster, f"https://{HOST}:{receiver.port}/hook") == ("delivered", None)
    assert len(receiver.hosts) == 2
    assert receiver.connections == 2  # the long answer's connection was closed, not drained
