"""Workspaces and documents over HTTP, on a real uvicorn server on loopback.

Uploads are processed by the server's background workers with the real embedding
model; every test waits for documents the way a client would, by polling their status.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import lancedb
import pytest
from sqlalchemy import select, text
from tests.samples import write_docx, write_pdf
from tests.workspaces import catalog_url

from autorag.auth import service
from autorag.context import AppContext, open_context
from autorag.store.catalog.models import JobRow
from autorag.store.catalog.repository import WorkspaceInfo
from autorag.workspace import Workspace

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

TIMEOUT = httpx.Timeout(120.0)
READY_WAIT_S = 180.0


@dataclass
class Server:
    api: ApiServer
    admin_key: str  # an admin's API key (every workspace)
    admin: dict[str, str]  # its headers
    member: dict[str, str]  # headers of a member of "default" only

    @property
    def url(self) -> str:
        return self.api.url

    @property
    def workspace(self) -> Workspace:
        return self.api.workspace

    def client(self, headers: dict[str, str] | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=headers or self.admin, timeout=TIMEOUT)

    def upload(
        self, name: str, content: bytes, workspace: str = "default", **kwargs: Any
    ) -> httpx.Response:
        with self.client(kwargs.pop("headers", None)) as client:
            return client.post(
                f"/api/workspaces/{workspace}/documents", files={"file": (name, content)}, **kwargs
            )

    def wait(self, document_id: int, workspace: str = "default") -> dict[str, Any]:
        return self.api.wait_processed(self.admin_key, document_id, workspace)

    def search(self, query: str, workspace: str = "default", **body: Any) -> list[dict[str, Any]]:
        with self.client() as client:
            response = client.post(
                f"/api/workspaces/{workspace}/search", json={"query": query, "k": 10, **body}
            )
        assert response.status_code == 200, response.text
        hits: list[dict[str, Any]] = response.json()["hits"]
        return hits

    def healthy(self) -> bool:
        return httpx.get(f"{self.url}/healthz", timeout=TIMEOUT).json() == {"status": "ok"}

    def info(self, name: str) -> WorkspaceInfo:
        context = open_context(self.workspace)
        try:
            return context.catalog.get_workspace(name)
        finally:
            context.close()

    def scalar(self, statement: str, **params: Any) -> Any:
        """One value from the server's catalog (SQLite or PostgreSQL)."""
        with self.api.sql() as conn:
            return conn.execute(text(statement), params).scalar()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi) -> Server:
    def prepare(context: AppContext) -> tuple[str, str]:
        context.catalog.ensure_workspace("other")
        service.create_user(context.catalog, "root", "a long admin password", "admin")
        service.create_user(context.catalog, "mia", "a long member password", "member")
        service.add_membership(context.catalog, "mia", "default")
        # The admin's key may delete workspaces and re-embed: the protection scope.
        _, admin_key = service.create_api_key(
            context.catalog, "root", "tests", [], scopes=["admin:protection"]
        )
        _, member_key = service.create_api_key(context.catalog, "mia", "tests", [])
        return admin_key, member_key

    # A 1 MiB upload limit makes "oversize" cheap to send.
    api = launch_api(
        tmp_path_factory.mktemp("api-docs") / "kb", prepare, max_upload_mb=1, workers=2
    )
    admin_key, member_key = api.prepared
    return Server(
        api,
        admin_key,
        {"Authorization": f"Bearer {admin_key}"},
        {"Authorization": f"Bearer {member_key}"},
    )


def _text(topic: str, n: int = 0) -> bytes:
    return (
        f"Field notes number {n} about {topic}. The {topic} was observed at dawn near the "
        f"river, and the {topic} notes record its habits in careful detail for later study.\n"
    ).encode()


def _vector_count(server: Server, workspace: str) -> int:
    db = lancedb.connect(str(server.workspace.vectors_dir))
    return int(db.open_table(server.info(workspace).vector_table).count_rows())


def _tables(server: Server) -> list[str]:
    listed = lancedb.connect(str(server.workspace.vectors_dir)).list_tables()
    return list(listed.tables)


def _ready_chunks(server: Server, workspace: str) -> int:
    total = server.scalar(
        "SELECT COALESCE(SUM(d.chunk_count), 0) FROM documents d JOIN workspaces w "
        "ON w.id = d.workspace_id WHERE w.name = :name AND d.status = 'ready'",
        name=workspace,
    )
    return int(total)


# -- the happy path ---------------------------------------------------------------------
def test_upload_pdf_and_docx_then_find_them(server: Server, tmp_path: Path) -> None:
    pdf = write_pdf(
        tmp_path / "manual.pdf",
        [
            "Cooling manual.\nThe quokka pump circulates coolant through the reactor loop.",
            "Maintenance.\nReplace the quokka pump gasket every eleven months without fail.",
        ],
    )
    docx = write_docx(
        tmp_path / "handbook.docx",
        [
            "Visitors sign the vellum ledger at the front desk before entering.",
            "The vellum ledger is archived in the basement vault every December.",
        ],
    )
    ids = {}
    for path in (pdf, docx):
        response = server.upload(path.name, path.read_bytes())
        assert response.status_code == 202, response.text
        body = response.json()
        assert body["status"] == "pending" and body["duplicate"] is False
        assert body["sourceId"].startswith("/uploads/default/")
        assert body["sourceId"].endswith(f"/{path.name}")
        ids[path.suffix] = body["id"]
    pdf_doc = server.wait(ids[".pdf"])
    assert pdf_doc["status"] == "ready", pdf_doc
    assert pdf_doc["pages"] == 2 and pdf_doc["chunks"] >= 1 and pdf_doc["type"] == "pdf"
    assert server.wait(ids[".docx"])["status"] == "ready"

    hits = server.search("quokka pump gasket")
    assert hits[0]["documentId"] == ids[".pdf"] and hits[0]["page"] == 2
    hits = server.search("vellum ledger", documentTypes=["docx"])
    assert hits and hits[0]["documentId"] == ids[".docx"]
    assert hits[0]["sourceId"].startswith("/uploads/default/")
    assert hits[0]["sourceId"].endswith("/handbook.docx")


def test_twenty_concurrent_uploads_all_reach_ready(server: Server) -> None:
    animals = [f"creature{i:02d}x" for i in range(20)]

    async def upload_all() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            base_url=server.url, headers=server.admin, timeout=TIMEOUT
        ) as client:
            return await asyncio.gather(
                *(
                    client.post(
                        "/api/workspaces/default/documents",
                        files={"file": (f"note-{i}.txt", _text(animal, i))},
                    )
                    for i, animal in enumerate(animals)
                )
            )

    responses = asyncio.run(upload_all())
    assert [r.status_code for r in responses] == [202] * 20, [r.text for r in responses]
    ids = [r.json()["id"] for r in responses]
    assert len(set(ids)) == 20
    documents = [server.wait(i) for i in ids]
    assert all(d["status"] == "ready" and d["chunks"] >= 1 for d in documents), documents
    with server.api.sql() as conn:
        query = select(JobRow.document_id, JobRow.status).where(JobRow.document_id.in_(ids))
        jobs = [tuple(row) for row in conn.execute(query)]
    assert sorted(jobs) == sorted((i, "done") for i in ids)  # one job each, each done
    for i in (0, 7, 19):
        assert any(h["documentId"] == ids[i] for h in server.search(animals[i])[:3])
    with server.client() as client:
        listed = client.get(
            "/api/workspaces/default/documents", params={"status": "ready", "type": "txt"}
        ).json()
    assert listed["total"] >= 20
    assert set(ids) <= {d["id"] for d in listed["items"]}


def test_listing_filters_and_pages(server: Server) -> None:
    for i in range(3):
        response = server.upload(f"page-{i}.md", b"# Paging\n\n" + _text("pagination", 100 + i))
        server.wait(response.json()["id"])
    with server.client() as client:
        first = client.get("/api/workspaces/default/documents", params={"limit": 2}).json()
        second = client.get(
            "/api/workspaces/default/documents", params={"limit": 2, "offset": 2}
        ).json()
        only_md = client.get("/api/workspaces/default/documents", params={"type": "md"}).json()
        failed = client.get("/api/workspaces/default/documents", params={"status": "failed"}).json()
        bad = client.get("/api/workspaces/default/documents", params={"status": "weird"})
    assert len(first["items"]) == 2 and first["total"] == second["total"] >= 3
    assert not {d["id"] for d in first["items"]} & {d["id"] for d in second["items"]}
    assert only_md["total"] == 3 and {d["type"] for d in only_md["items"]} == {"md"}
    assert all(d["status"] == "failed" for d in failed["items"])
    assert bad.status_code == 422


def test_duplicate_upload_is_reported_and_not_stored_twice(server: Server) -> None:
    content = _text("duplicated walrus", 1)
    first = server.upload("walrus.txt", content)
    assert first.status_code == 202
    again = server.upload("walrus-copy.txt", content)
    assert again.status_code == 200, again.text
    assert again.json()["duplicate"] is True and again.json()["id"] == first.json()["id"]
    info = server.info("default")
    stored = list((server.workspace.data_dir / "uploads" / info.short_id).glob("*.txt"))
    stored_hash = _sha(content)
    count = server.scalar("SELECT COUNT(*) FROM documents WHERE content_hash = :h", h=stored_hash)
    assert count == 1
    assert sum(p.name.startswith(stored_hash) for p in stored) == 1


def _sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def test_failed_processing_has_a_reason_and_the_worker_carries_on(server: Server) -> None:
    # A well-formed zip with the parts a sniffer looks for, but no real document inside.
    hollow = _zip({"[Content_Types].xml": b"<x/>", "word/document.xml": b"not xml at all"})
    response = server.upload("hollow.docx", hollow)
    assert response.status_code == 202, response.text
    failed = server.wait(response.json()["id"])
    assert failed["status"] == "failed" and failed["reason"] and failed["message"]
    after = server.upload("after.txt", _text("resilient heron"))
    assert server.wait(after.json()["id"])["status"] == "ready"


# -- hostile uploads ----------------------------------------------------------------------
def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


PNG = b"\x89PNG\r\n\x1a\n" + bytes(200)


@pytest.mark.parametrize(
    ("name", "content", "status", "code"),
    [
        ("photo.pdf", PNG, 415, "unsupported_media_type"),
        ("notes.txt", PNG, 415, "unsupported_media_type"),
        ("report.docx", b"%PDF-1.7\n" + bytes(100), 415, "unsupported_media_type"),
        ("sheet.xlsx", _zip({"[Content_Types].xml": b"<x/>", "word/document.xml": b"<w/>"}),
         415, "unsupported_media_type"),
        ("program.exe", b"MZ" + bytes(100), 415, "unsupported_media_type"),
        ("noextension", b"hello", 415, "unsupported_media_type"),
        ("big.txt", b"z" * (1024**2 + 512 * 1024), 413, "payload_too_large"),
        ("bomb.docx", _zip({"[Content_Types].xml": b"<x/>",
                            "word/document.xml": bytes(40 * 1024**2)}), 400, "zip_bomb"),
    ],
    ids=["png-as-pdf", "png-as-txt", "pdf-as-docx", "docx-as-xlsx", "exe", "no-ext",
         "oversize", "zip-bomb"],
)  # fmt: skip
def test_hostile_uploads_get_a_clear_problem(
    server: Server, name: str, content: bytes, status: int, code: str
) -> None:
    response = server.upload(name, content)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == code and response.json()["detail"]
    assert server.healthy()
    incoming = server.workspace.data_dir / "uploads" / ".incoming"
    assert not incoming.exists() or list(incoming.iterdir()) == []


def test_oversize_declared_length_is_refused_before_reading(server: Server) -> None:
    with server.client() as client:
        response = client.post(
            "/api/workspaces/default/documents",
            content=b"x" * (3 * 1024**2),
            headers={"content-type": "multipart/form-data; boundary=abc"},
        )
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
    assert server.healthy()


@pytest.mark.parametrize(
    ("content_type", "body", "status", "code"),
    [
        ("multipart/form-data; boundary=abc", b"--abc\r\nContent-Disposition: form-data; "
         b'name="file"; filename="a.txt"\r\n\r\ncut off here', 400, "malformed_multipart"),
        ("multipart/form-data; boundary=abc", b"garbage without any boundary", 400,
         "malformed_multipart"),
        ("multipart/form-data", b"--abc\r\n\r\n", 400, "malformed_multipart"),
        ("multipart/form-data; boundary=abc", b"--abc\r\nContent-Disposition: form-data; "
         b'name="title"\r\n\r\nno file\r\n--abc--\r\n', 400, "missing_file"),
        ("application/json", b'{"file": "x"}', 415, "unsupported_media_type"),
        ("multipart/form-data; boundary=abc", b"--abc\r\n" + b"X-Header: " + b"h" * 9000
         + b"\r\n\r\n", 400, "malformed_multipart"),
    ],
    ids=["truncated", "no-boundary-in-body", "no-boundary-param", "no-file", "json",
         "huge-header"],
)  # fmt: skip
def test_malformed_multipart_is_a_clear_400(
    server: Server, content_type: str, body: bytes, status: int, code: str
) -> None:
    with server.client() as client:
        response = client.post(
            "/api/workspaces/default/documents",
            content=body,
            headers={"content-type": content_type},
        )
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    assert server.healthy()


@pytest.mark.parametrize(
    "name",
    ["../../../../tmp/evil.txt", "..\\..\\evil2.txt", "/etc/cron.d/evil3.txt", "..", ".txt"],
)
def test_path_traversal_names_are_harmless(server: Server, name: str) -> None:
    marker = f"traversal {name}".encode()
    response = server.upload(name, marker + b" " + _text("harmless badger"))
    if name in ("..", ".txt"):
        assert response.status_code == 415  # leading dots go, and no extension is left
        return
    assert response.status_code == 202, response.text
    body = response.json()
    assert ".." not in body["sourceId"] and "\\" not in body["sourceId"]
    assert body["sourceId"].count("/") == 4  # /uploads/<ws>/<hash>/<name>
    info = server.info("default")
    folder = server.workspace.data_dir / "uploads" / info.short_id
    assert any(p.read_bytes().startswith(marker) for p in folder.iterdir())
    assert not Path("/tmp/evil.txt").exists() and not Path("/etc/cron.d/evil3.txt").exists()
    assert server.healthy()


# -- workspaces -------------------------------------------------------------------------
def test_workspace_isolation(server: Server) -> None:
    other = server.upload("secret.txt", _text("platypus ultramarine"), workspace="other")
    assert other.status_code == 202, other.text
    other_id = other.json()["id"]
    assert server.wait(other_id, "other")["status"] == "ready"
    mine = server.upload("mine.txt", _text("platypus vermilion"))
    mine_id = mine.json()["id"]
    assert server.wait(mine_id)["status"] == "ready"

    for mode in ("hybrid", "vector", "fts"):
        in_default = {h["documentId"] for h in server.search("platypus", mode=mode)}
        assert mine_id in in_default and other_id not in in_default
        in_other = {h["documentId"] for h in server.search("platypus", "other", mode=mode)}
        assert in_other == {other_id}
    with server.client() as client:
        # A document id from "other" asked for under "default" does not exist there.
        assert client.get(f"/api/workspaces/default/documents/{other_id}").status_code == 404
        assert client.delete(f"/api/workspaces/default/documents/{other_id}").status_code == 404
        assert client.get(f"/api/workspaces/other/documents/{other_id}").status_code == 200
    with server.client(server.member) as client:
        names = [w["name"] for w in client.get("/api/workspaces").json()["workspaces"]]
        assert names == ["default"]
        for method, path in [
            ("GET", f"/api/workspaces/other/documents/{other_id}"),
            ("DELETE", f"/api/workspaces/other/documents/{other_id}"),
            ("GET", "/api/workspaces/other/documents"),
            ("POST", "/api/workspaces/other/search"),
            ("GET", "/api/workspaces/other"),
        ]:
            response = client.request(method, path, json={"query": "platypus"})
            assert response.status_code == 404, (method, path, response.text)
        assert client.get(f"/api/workspaces/default/documents/{mine_id}").status_code == 200
        assert client.post("/api/workspaces", json={"name": "mine"}).status_code == 403
        assert client.post("/api/workspaces/default/reembed").status_code == 403
    assert _vector_count(server, "other") == _ready_chunks(server, "other")


def test_delete_removes_the_document_everywhere(server: Server) -> None:
    response = server.upload("ephemeral.txt", _text("ephemeral axolotl"))
    document_id = response.json()["id"]
    assert server.wait(document_id)["status"] == "ready"
    assert any(h["documentId"] == document_id for h in server.search("ephemeral axolotl"))
    info = server.info("default")
    stored = server.workspace.data_dir / "uploads" / info.short_id
    sha = server.scalar("SELECT content_hash FROM documents WHERE id = :id", id=document_id)
    assert (stored / f"{sha}.txt").is_file()
    with server.client() as client:
        assert client.delete(f"/api/workspaces/default/documents/{document_id}").status_code == 204
        assert client.get(f"/api/workspaces/default/documents/{document_id}").status_code == 404
        assert client.delete(f"/api/workspaces/default/documents/{document_id}").status_code == 404
    assert all(h["documentId"] != document_id for h in server.search("ephemeral axolotl"))
    assert not (stored / f"{sha}.txt").exists()
    assert server.scalar("SELECT COUNT(*) FROM chunks WHERE document_id = :id", id=document_id) == 0
    assert _vector_count(server, "default") == _ready_chunks(server, "default")


def test_workspace_lifecycle_and_settings(server: Server) -> None:
    with server.client() as client:
        assert client.post("/api/workspaces", json={"name": "Bad Name"}).status_code == 422
        assert client.post("/api/workspaces", json={"name": "-x"}).status_code == 422
        created = client.post("/api/workspaces", json={"name": "lab"})
        assert created.status_code == 201, created.text
        assert created.json()["documents"] == 0
        assert client.post("/api/workspaces", json={"name": "lab"}).status_code == 409

        assert client.get("/api/workspaces/lab/settings").json() == {
            "defaultK": 10,
            "redactOnIngest": False,
        }
        patched = client.patch("/api/workspaces/lab/settings", json={"defaultK": 25})
        assert patched.json() == {"defaultK": 25, "redactOnIngest": False}
        assert client.patch("/api/workspaces/lab/settings", json={"defaultK": 0}).status_code == 422
        assert client.patch("/api/workspaces/lab/settings", json={"nope": 1}).status_code == 422
        assert client.get("/api/workspaces/lab").json()["settings"]["defaultK"] == 25

    uploaded = server.upload("lab.txt", _text("luminous nautilus"), workspace="lab")
    document_id = uploaded.json()["id"]
    assert server.wait(document_id, "lab")["status"] == "ready"
    old_info = server.info("lab")

    with server.client() as client:
        renamed = client.patch("/api/workspaces/lab", json={"name": "lab-2"})
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["documents"] == 1
        assert client.get("/api/workspaces/lab").status_code == 404
        assert client.patch("/api/workspaces/default", json={"name": "x"}).status_code == 409
        assert client.delete("/api/workspaces/default").status_code == 409
    moved = server.wait(document_id, "lab-2")
    assert moved["sourceId"].startswith("/uploads/lab-2/")
    assert [h["documentId"] for h in server.search("luminous nautilus", "lab-2")][:1] == [
        document_id
    ]
    assert server.search("luminous nautilus", "default") == [] or all(
        h["documentId"] != document_id for h in server.search("luminous nautilus", "default")
    )

    uploads = server.workspace.data_dir / "uploads" / old_info.short_id
    assert uploads.is_dir()
    with server.client() as client:
        assert client.delete("/api/workspaces/lab-2").status_code == 204
        assert client.get("/api/workspaces/lab-2").status_code == 404
        names = [w["name"] for w in client.get("/api/workspaces").json()["workspaces"]]
    assert "lab-2" not in names and "default" in names
    assert not uploads.exists()
    tables = _tables(server)
    assert not any(old_info.short_id in t for t in tables)
    left = "SELECT COUNT(*) FROM documents WHERE workspace_id = :ws"
    assert server.scalar(left, ws=old_info.id) == 0
    # Nor does the full-text index keep its words.
    if catalog_url(server.workspace).startswith("sqlite"):
        indexed = "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'nautilus'"
    else:
        indexed = "SELECT COUNT(*) FROM chunks WHERE tsv @@ plainto_tsquery('nautilus')"
    assert server.scalar(indexed) == 0


def test_reembed_swaps_in_a_shadow_table(server: Server) -> None:
    uploaded = server.upload("reembed.txt", _text("reembedded tapir"))
    assert server.wait(uploaded.json()["id"])["status"] == "ready"
    with server.client() as client:
        job = client.post("/api/workspaces/default/reembed")
        assert job.status_code == 202, job.text
        job_id = job.json()["id"]
        deadline = time.monotonic() + READY_WAIT_S
        while time.monotonic() < deadline:
            state = client.get(f"/api/workspaces/default/jobs/{job_id}").json()
            if state["status"] in ("done", "failed"):
                break
            time.sleep(0.2)
            # Search keeps answering from the live table while the shadow fills.
            assert (
                client.post("/api/workspaces/default/search", json={"query": "tapir"}).status_code
                == 200
            )
        assert client.get("/api/workspaces/other/jobs/" + str(job_id)).status_code == 404
    assert state["status"] == "done", state
    assert any(h["documentId"] == uploaded.json()["id"] for h in server.search("tapir"))
    assert _vector_count(server, "default") == _ready_chunks(server, "default")
    tables = _tables(server)
    assert not any(t.endswith("_shadow") for t in tables)


def test_openapi_documents_the_upload(server: Server) -> None:
    spec = httpx.get(f"{server.url}/openapi.json").json()
    upload = spec["paths"]["/api/workspaces/{workspace}/documents"]["post"]
    assert "multipart/form-data" in upload["requestBody"]["content"]
    assert {"202", "413", "415"} <= set(upload["responses"])
