"""The search API on a real uvicorn server on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp
from tests.samples import write_corpus
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh


@dataclass(frozen=True)
class Api:
    base_url: str
    key: str

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}"}
        return httpx.post(self.base_url + path, headers=headers, **kwargs)


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory,
    serve_asgi: Callable[[ASGIApp], str],
    module_catalog_url: str | None,
) -> Iterator[Api]:
    """A server over an indexed corpus, and an API key of a member of its workspace."""
    root = tmp_path_factory.mktemp("api")
    write_corpus(root / "docs")
    workspace = new_workspace(root / "kb", module_catalog_url, search_paths=[str(root / "docs")])
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    create_user(context.catalog, "reader", "a long enough password", "member")
    add_membership(context.catalog, "reader", "default")
    _, key = create_api_key(context.catalog, "reader", "tests", [])
    context.close()
    yield Api(serve_asgi(create_app(workspace)), key)


def test_search_returns_hits_with_source_snippet_page_and_legs(api: Api) -> None:
    response = api.post(
        "/api/workspaces/default/search",
        json={"query": "refund window", "k": 3, "documentTypes": ["pdf"]},
    )
    assert response.status_code == 200, response.text
    hit = response.json()["hits"][0]
    assert hit["source"].endswith("/docs/refunds.pdf")
    assert hit["sourceId"] == "/docs/refunds.pdf"
    assert hit["page"] == 2 and hit["type"] == "pdf"
    assert hit["legs"] in ("vector", "fts", "both") and "thirty days" in hit["snippet"]


def test_errors_are_problem_json(api: Api) -> None:
    missing = api.post("/api/workspaces/nope/search", json={"query": "x"})
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["code"] == "not_found"
    bad_date = api.post("/api/workspaces/default/search", json={"query": "x", "dateFrom": "soon"})
    assert bad_date.status_code == 400 and bad_date.json()["code"] == "invalid_input"
    invalid = api.post("/api/workspaces/default/search", json={"k": 0})
    assert invalid.status_code == 422 and invalid.json()["code"] == "validation_error"


def test_search_requires_credentials(api: Api) -> None:
    anonymous = httpx.post(f"{api.base_url}/api/workspaces/default/search", json={"query": "x"})
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"] == "Bearer"


def test_health_and_readiness(api: Api) -> None:
    base_url = api.base_url  # the probes answer without credentials
    assert httpx.get(f"{base_url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{base_url}/readyz")
    assert ready.status_code == 200 and ready.json()["state"] == "ready"
    assert httpx.get(f"{base_url}/openapi.json").json()["info"]["title"] == "AutoRAG"


def test_cors_is_off_unless_configured(api: Api) -> None:
    preflight = httpx.options(
        f"{api.base_url}/api/workspaces/default/search",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in preflight.headers
