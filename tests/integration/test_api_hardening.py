"""Hardening of the HTTP surface on a real uvicorn server on loopback: the API docs from
the package's own files under the UI's CSP, the headers every response carries, request
body caps enforced before a body is parsed, what /readyz tells whom, and the page cap of
chat attachments."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from starlette.types import ASGIApp
from tests.samples import write_pdf
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.chat import store
from autorag.context import open_context
from autorag.web import CONTENT_SECURITY_POLICY

BODY_KB = 64  # server.max_body_kb here
UPLOAD_MB = 1  # server.max_upload_mb here
MAX_PAGES = 3  # ocr.max_pages here
SEARCH = "/api/workspaces/default/search"


@dataclass(frozen=True)
class Api:
    url: str
    key: str
    chat_id: int

    def call(self, method: str, path: str, *, auth: bool = True, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}"} if auth else {}
        headers |= kwargs.pop("headers", {})
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]) -> Api:
    workspace = new_workspace(tmp_path_factory.mktemp("hardening") / "kb")
    context = open_context(workspace)
    user = create_user(context.catalog, "reader", "plum-zebra-cathedral-91", "member")
    add_membership(context.catalog, "reader", "default")
    _, key = create_api_key(context.catalog, "reader", "tests", [])
    chat = store.create_chat(context.catalog.engine, context.info.id, user.id, "limits")
    context.close()
    app = create_app(
        workspace,
        server={"max_body_kb": BODY_KB, "max_upload_mb": UPLOAD_MB, "workers": 0},
        ocr={"max_pages": MAX_PAGES},
    )
    return Api(serve_asgi(app), key, chat.id)


# -- the API docs -------------------------------------------------------------------------
def _references(html: str) -> list[str]:
    return re.findall(r'<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"', html)


@pytest.mark.parametrize("page", ["/docs", "/redoc", "/docs/oauth2-redirect"])
def test_docs_pages_load_only_this_servers_files(api: Api, page: str) -> None:
    response = api.call("GET", page, auth=False)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    ui = dict(d.strip().split(" ", 1) for d in CONTENT_SECURITY_POLICY.split(";"))
    # The UI's policy; ReDoc alone may also use inline styles (styled-components).
    assert directives.pop("style-src") in (ui.pop("style-src"), "'self' 'unsafe-inline'")
    assert directives == ui
    assert response.headers["x-content-type-options"] == "nosniff"
    html = response.text
    assert "<script>" not in html  # no inline script: the CSP would block it
    assert not re.search(r"(?:src|href)=\"(?:https?:)?//", html), "an external URL"
    references = _references(html)
    assert any(r.endswith(".js") for r in references)
    for reference in references:
        url = urljoin(api.url + page, reference)
        assert urlsplit(url).netloc == urlsplit(api.url).netloc
        asset = httpx.get(url, timeout=60)
        assert asset.status_code == 200, reference
        assert asset.content, reference
        assert asset.headers["x-content-type-options"] == "nosniff"
        kind = asset.headers["content-type"]
        if reference.endswith(".js"):
            assert "javascript" in kind, (reference, kind)
        elif reference.endswith(".css"):
            assert kind.startswith("text/css"), (reference, kind)


def test_swagger_ui_is_told_where_the_spec_is(api: Api) -> None:
    init = api.call("GET", "/docs/assets/swagger-init.js", auth=False).text
    assert '"/openapi.json"' in init
    assert api.call("GET", "/openapi.json", auth=False).json()["info"]["title"] == "AutoRAG"
    missing = api.call("GET", "/docs/assets/nothing.js", auth=False)
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


# -- headers --------------------------------------------------------------------------------
def test_api_responses_and_errors_are_nosniff_and_never_stored(api: Api) -> None:
    responses = {
        "search": api.call("POST", SEARCH, json={"query": "anything"}),
        "401": api.call("POST", SEARCH, auth=False, json={"query": "anything"}),
        "404": api.call("POST", "/api/workspaces/nope/search", json={"query": "anything"}),
        "422": api.call("POST", SEARCH, json={"k": 0}),
        "413": api.call("POST", SEARCH, json={"query": "x" * (BODY_KB * 1024)}),
        "405": api.call("GET", SEARCH),
        "chats": api.call("GET", "/api/workspaces/default/chats"),
        "openai 401": api.call("GET", "/v1/models", auth=False),
        "healthz": api.call("GET", "/healthz", auth=False),
        "openapi": api.call("GET", "/openapi.json", auth=False),
    }
    expected = {"search": 200, "401": 401, "404": 404, "422": 422, "413": 413, "405": 405}
    for name, response in responses.items():
        assert response.status_code == expected.get(name, response.status_code), name
        assert response.headers["x-content-type-options"] == "nosniff", name
        assert response.headers["cache-control"] == "no-store", name
        if response.status_code >= 400 and name.startswith("openai"):
            assert response.headers["content-type"] == "application/json", name
            assert response.json()["error"]["code"], name  # OpenAI's error shape
        elif response.status_code >= 400:
            assert response.headers["content-type"] == "application/problem+json", name


def test_pages_and_assets_keep_their_own_caching_and_are_nosniff(api: Api) -> None:
    for path in ("/", "/ui/main.js", "/docs", "/docs/assets/swagger-ui-bundle.js"):
        response = api.call("GET", path, auth=False)
        assert response.status_code == 200, path
        assert response.headers["x-content-type-options"] == "nosniff", path
        assert response.headers["cache-control"] == "no-cache", path


# -- request body caps ------------------------------------------------------------------
def _too_large(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    if response.request.url.path.startswith("/v1/"):  # OpenAI's shape, which its SDK reads
        assert response.headers["content-type"] == "application/json"
        error = response.json()["error"]
        assert error["code"] == "payload_too_large", error
        assert f"{BODY_KB}.0 KiB" in error["message"] or "MiB" in error["message"]
        return
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == "payload_too_large" and problem["status"] == 413
    assert f"{BODY_KB}.0 KiB" in problem["detail"] or "MiB" in problem["detail"]


def test_a_body_over_the_cap_with_its_length_declared_is_refused(api: Api) -> None:
    # Not JSON at all: parsed, it would be a 422; refused unread, it is a 413.
    body = b"{" * (BODY_KB * 1024 + 1)
    response = api.call("POST", SEARCH, content=body, headers={"content-type": "application/json"})
    _too_large(response)
    assert f"{BODY_KB}.0 KiB" in response.json()["detail"]
    # Just under the cap it is read, and parsed.
    under = api.call(
        "POST", SEARCH, content=b"{" * 1000, headers={"content-type": "application/json"}
    )
    assert under.status_code == 422


def _chunks(total: int, size: int = 8192) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        yield b"[" * min(size, total - sent)
        sent += size


def test_a_chunked_body_over_the_cap_is_refused(api: Api) -> None:
    for path in (SEARCH, "/api/workspaces/default/chat", "/v1/chat/completions"):
        response = api.call(
            "POST",
            path,
            content=_chunks(BODY_KB * 1024 * 3),  # no Content-Length: chunked
            headers={"content-type": "application/json"},
        )
        assert "content-length" not in response.request.headers
        _too_large(response)


def test_an_oversized_declared_length_is_answered_before_any_body_is_sent(api: Api) -> None:
    """10 GB announced and nothing sent: a server waiting for the body would time out."""
    host, port = urlsplit(api.url).netloc.split(":")
    request = (
        f"POST {SEARCH} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {api.key}\r\n"
        "Content-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(request.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"application/problem+json" in answer


def test_uploads_are_capped_by_the_upload_limit_not_the_body_limit(api: Api) -> None:
    path = f"/api/workspaces/default/chats/{api.chat_id}/attachments"
    text = "".join(f"Line {n} of a long transcript about tides.\n" for n in range(2000))
    assert len(text) > BODY_KB * 1024  # over the JSON cap, under the upload one
    taken = api.call("POST", path, files={"file": ("long.txt", text.encode(), "text/plain")})
    # Received and checked (the body cap let it through); its job reads it later, held to
    # the attachment's own bound on chunks (tests/integration/test_chat_skills.py).
    assert taken.status_code == 202, taken.text
    assert taken.json()["status"] == "processing"
    huge = api.call(
        "POST",
        path,
        content=_chunks((UPLOAD_MB + 2) * 1024**2),
        headers={"content-type": "multipart/form-data; boundary=abc"},
    )
    _too_large(huge)
    assert "request body" in huge.json()["detail"]
    assert api.call("GET", "/healthz", auth=False).status_code == 200


# -- readiness ------------------------------------------------------------------------------
def test_readyz_shows_counts_to_signed_in_callers_only(api: Api) -> None:
    anonymous = api.call("GET", "/readyz", auth=False)
    assert set(anonymous.json()) == {"state"}
    stale = api.call("GET", "/readyz", auth=False, headers={"Authorization": "Bearer nope"})
    assert set(stale.json()) == {"state"} and stale.status_code == anonymous.status_code
    signed_in = api.call("GET", "/readyz").json()
    assert signed_in["state"] == anonymous.json()["state"]
    assert {"database", "reason", "documents", "chunks"} <= set(signed_in)
    assert isinstance(signed_in["chunks"], int) and isinstance(signed_in["documents"], dict)


# -- chat attachments -------------------------------------------------------------------
def test_an_attachment_over_the_page_cap_is_refused_before_parsing(
    api: Api, tmp_path: Path
) -> None:
    path = f"/api/workspaces/default/chats/{api.chat_id}/attachments"
    many = write_pdf(tmp_path / "many.pdf", [f"Page {n} of the ledger." for n in range(9)])
    refused = api.call("POST", path, files={"file": ("many.pdf", many.read_bytes(), "x")})
    assert refused.status_code == 413, refused.text
    detail = refused.json()["detail"]
    assert "9 pages" in detail and f"{MAX_PAGES}-page limit" in detail
    lines = ["The harbour ledger closes at the end of March every year.", "Audit in May."]
    few = write_pdf(tmp_path / "few.pdf", [" ".join(lines * 4)] * MAX_PAGES)
    accepted = api.call("POST", path, files={"file": ("few.pdf", few.read_bytes(), "x")})
    assert accepted.status_code == 202, accepted.text
