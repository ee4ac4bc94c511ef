"""A stale save's 409 names the version to build on, in the problem JSON."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from autorag.api.errors import install_error_handlers
from autorag.errors import Conflict, StaleVersion


def test_a_stale_save_answers_409_with_the_current_version() -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.put("/stale")
    def stale() -> None:
        raise StaleVersion("page 'a' changed since that version", current_version=7)

    @app.put("/taken")
    def taken() -> None:
        raise Conflict("a page 'a' exists already", code="page_exists")

    client = TestClient(app)
    response = client.put("/stale")
    assert response.status_code == 409
    body = response.json()
    assert (body["code"], body["currentVersion"]) == ("stale_version", 7)
    other = client.put("/taken").json()
    assert other["code"] == "page_exists" and "currentVersion" not in other
    assert isinstance(StaleVersion("x", current_version=1), Conflict)
