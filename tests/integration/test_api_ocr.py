"""OCR over HTTP on a real server: images and scans uploaded with ``ocrMode``, the job
list and its per-page results, the review by a manager, and who may do what."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from tests.ocr_samples import image_bytes, needs_tesseract, page_image, sentences

from autorag.auth import service
from autorag.context import AppContext

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

pytestmark = needs_tesseract

WAIT_S = 240.0
SETTLED = ("indexed", "review", "rejected", "failed", "no_text")
GARBLE = ["Xkcd qwrtz bnmvx hjklp zzgt wrpl", "Ptkrs vbnm qwxz trpls gdfk mnbv"]


@dataclass
class Api:
    server: ApiServer
    keys: dict[str, str]  # role -> API key

    def call(self, role: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.server.call(method, f"/api/workspaces/default{path}", self.keys[role], **kwargs)

    def upload(self, name: str, content: bytes, **params: str) -> int:
        response = self.call(
            "admin", "POST", "/documents", files={"file": (name, content)}, params=params
        )
        assert response.status_code == 202, response.text
        return int(response.json()["id"])

    def ocr_job(self, document_id: int) -> dict[str, Any]:
        """The document's OCR job once it settled."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            response = self.call("member", "GET", "/ocr/jobs", params={"documentId": document_id})
            assert response.status_code == 200, response.text
            items = response.json()["items"]
            if items and items[0]["status"] in SETTLED:
                return self.detail(items[0]["id"])
            time.sleep(0.3)
        raise AssertionError(f"the OCR job of document {document_id} did not settle")

    def detail(self, job_id: int) -> dict[str, Any]:
        response = self.call("member", "GET", f"/ocr/jobs/{job_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def found(self, query: str) -> set[int]:
        response = self.call("member", "POST", "/search", json={"query": query, "k": 5})
        assert response.status_code == 200, response.text
        return {hit["documentId"] for hit in response.json()["hits"]}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi) -> Api:
    def prepare(context: AppContext) -> dict[str, str]:
        context.catalog.ensure_workspace("other")
        keys = {}
        for role in ("admin", "manager", "member"):
            service.create_user(context.catalog, role, f"a long {role} password", role)
            if role != "admin":
                service.add_membership(context.catalog, role, "default")
            keys[role] = service.create_api_key(context.catalog, role, "tests", [])[1]
        return keys

    server = launch_api(tmp_path_factory.mktemp("api-ocr") / "kb", prepare, workers=2)
    return Api(server, server.prepared)


def _tiff(pages: list[list[str]]) -> bytes:
    frames = [page_image(lines).convert("1") for lines in pages]
    buffer = io.BytesIO()
    frames[0].save(buffer, "TIFF", save_all=True, append_images=frames[1:], dpi=(300, 300))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "content", "word"),
    [
        (
            "receipt.png",
            image_bytes(page_image(["Receipt from the Fernwick bakery."]), "PNG"),
            "Fernwick",
        ),
        (
            "receipt.jpeg",
            image_bytes(page_image(["Receipt from the Dunmore mill."]), "JPEG"),
            "Dunmore",
        ),
        ("fax.tif", _tiff([["Fax one."], ["Second page: the Calloway lease."]]), "Calloway"),
    ],
    ids=["png", "jpeg", "tiff"],
)
def test_uploaded_images_are_read_and_searchable(
    api: Api, name: str, content: bytes, word: str
) -> None:
    document_id = api.upload(name, content)
    job = api.ocr_job(document_id)
    assert job["status"] == "indexed", job
    assert job["pagesDone"] == job["pagesTotal"] == len(job["pages"])
    assert all(page["status"] in ("done", "blank") for page in job["pages"])
    assert word in " ".join(page["text"] for page in job["pages"])
    document = api.call("member", "GET", f"/documents/{document_id}").json()
    assert document["status"] == "ready"
    assert document_id in api.found(word)


def test_ocr_mode_skip_leaves_a_scan_for_later(api: Api) -> None:
    image = image_bytes(page_image(sentences(3, seed=5)), "PNG")
    document_id = api.upload("later.png", image, ocrMode="skip")
    document = api.server.wait_processed(api.keys["admin"], document_id)
    assert (document["status"], document["reason"]) == ("failed", "needs_ocr")
    listing = api.call("member", "GET", "/ocr/jobs", params={"documentId": document_id}).json()
    assert listing["total"] == 0


def test_an_unknown_ocr_mode_is_refused(api: Api) -> None:
    response = api.call(
        "admin", "POST", "/documents", params={"ocrMode": "magic"}, files={"file": ("a.png", b"x")}
    )
    assert response.status_code == 422


def test_review_approve_and_reject_by_managers_only(api: Api) -> None:
    first = api.upload("garbled.png", image_bytes(page_image(GARBLE), "PNG"))
    second = api.upload("garbled2.png", image_bytes(page_image(GARBLE[::-1]), "PNG"))
    pending = [api.ocr_job(first), api.ocr_job(second)]
    assert [job["status"] for job in pending] == ["review", "review"]
    assert pending[0]["pages"][0]["status"] == "low"
    waiting = api.call("member", "GET", "/ocr/jobs", params={"status": "review"}).json()
    assert {job["id"] for job in waiting["items"]} >= {job["id"] for job in pending}
    document = api.call("member", "GET", f"/documents/{first}").json()
    assert (document["status"], document["reason"]) == ("failed", "ocr_review")
    assert first not in api.found("qwrtz bnmvx")

    job_id = pending[0]["id"]
    assert api.call("member", "POST", f"/ocr/jobs/{job_id}/approve").status_code == 403
    approved = api.call("manager", "POST", f"/ocr/jobs/{job_id}/approve")
    assert approved.status_code == 200, approved.text
    assert (approved.json()["status"], approved.json()["reviewedBy"]) == ("indexed", "manager")
    assert api.call("member", "GET", f"/documents/{first}").json()["status"] == "ready"
    assert first in api.found("qwrtz bnmvx")
    assert api.call("manager", "POST", f"/ocr/jobs/{job_id}/reject").status_code == 409

    other = pending[1]["id"]
    rejected = api.call("admin", "POST", f"/ocr/jobs/{other}/reject")
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    document = api.call("member", "GET", f"/documents/{second}").json()
    assert (document["status"], document["reason"]) == ("failed", "ocr_rejected")
    assert api.call("admin", "POST", f"/ocr/jobs/{other}/approve").status_code == 409


def test_jobs_are_scoped_to_their_workspace(api: Api) -> None:
    document_id = api.upload("scoped.png", image_bytes(page_image(["Scoped note."]), "PNG"))
    job_id = api.ocr_job(document_id)["id"]
    other = api.server.call("GET", f"/api/workspaces/other/ocr/jobs/{job_id}", api.keys["admin"])
    assert other.status_code == 404
    assert api.call("member", "GET", "/ocr/jobs/999999").status_code == 404


def test_vision_instructions_are_set_by_managers(api: Api) -> None:
    assert api.call("member", "GET", "/ocr/instructions").json() == {"instructions": ""}
    body = {"instructions": "Transcribe tables row by row."}
    assert api.call("member", "PUT", "/ocr/instructions", json=body).status_code == 403
    response = api.call("manager", "PUT", "/ocr/instructions", json=body)
    assert response.status_code == 200 and response.json() == body
    assert api.call("member", "GET", "/ocr/instructions").json() == body
    too_long = {"instructions": "x" * 4001}
    assert api.call("manager", "PUT", "/ocr/instructions", json=too_long).status_code == 422
