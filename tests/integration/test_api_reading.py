"""Reading a source over HTTP: a document's text page by page with the cited passage
located, the original file downloaded, both checked like the document itself; and the
citations of an answer numbered in order of first use, on a real server on loopback.

The answers come from a scripted OpenAI-compatible server (the real wire protocol);
the workspace, search, catalog, DLP and embedding model are real.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from starlette.types import ASGIApp
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool
from tests.samples import write_pdf
from tests.sse import post_sse
from tests.workspaces import catalog_sql, new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from autorag.llm.extractive import NO_ANSWER
from autorag.retrieval.grounding import NO_EVIDENCE_DISCLAIMER
from autorag.workspace import Workspace

DEFAULT = "/api/workspaces/default"
ODD_NAME = 'Notes "final"; v2 été.md'


def _section(heading: str, topic: str, fact: str) -> str:
    filler = " ".join(f"The {topic} rule {i} applies to every employee alike." for i in range(14))
    return f"### {heading}\n\n{fact} {filler}\n"


HANDBOOK = "\n".join(
    [
        "# Employee Handbook 2025\n",
        _section("5.1 Annual leave", "leave", "Annual leave is twenty-five days a year."),
        _section("5.2 Carry-over", "carry-over", "Unused leave days expire at the end of March."),
        _section("6.1 Expenses", "expense", "Expense claims are paid within ten days."),
    ]
)


@dataclass(frozen=True)
class World:
    url: str
    docs: Path
    reader: str  # a member of default
    outsider: str  # a member of "other" only
    model: ScriptedOpenAI
    workspace: Workspace

    def get(self, path: str, key: str | None = None, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key or self.reader}"} if key != "" else {}
        return httpx.get(self.url + path, headers=headers, timeout=60, **kw)

    def document_id(self, name: str) -> int:
        listed = self.get(f"{DEFAULT}/documents", params={"limit": 500}).json()["items"]
        return int(next(d["id"] for d in listed if d["sourceId"].endswith("/" + name)))

    def hit(self, phrase: str, name: str) -> dict[str, Any]:
        """The chunk of document ``name`` holding ``phrase``, as a citation names it."""
        with catalog_sql(self.workspace) as conn:
            row = conn.execute(
                text(
                    "SELECT c.id, c.document_id, c.text FROM chunks c JOIN documents d "
                    "ON d.id = c.document_id WHERE d.source_id LIKE :name AND c.text LIKE :phrase"
                ),
                {"name": f"%/{name}", "phrase": f"%{phrase}%"},
            ).one()
        return {"chunkId": row[0], "documentId": row[1], "text": row[2]}


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory,
    serve_asgi: Callable[[ASGIApp], str],
    module_catalog_url: str | None,
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("reading")
    docs = root / "docs"
    docs.mkdir()
    (docs / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    write_pdf(
        docs / "manual.pdf",
        [
            "Cooling manual.\nThe quokka pump circulates coolant through the loop.",
            "Maintenance.\nReplace the quokka pump gasket every eleven months.",
        ],
    )
    (docs / "vault.txt").write_text("Ask jane.doe@example.com for the vault rota.\n")
    (docs / "changing.txt").write_text("The heron feeder is refilled on Fridays.\n")
    (docs / ODD_NAME).write_text("# Odd\n\nA file whose name needs escaping in a header.\n")
    with ScriptedOpenAI() as model:
        provider = {
            "name": "scripted",
            "kind": "openai",
            "base_url": model.base_url,
            "default_model": "gpt-test",
            "local": True,
            "timeout_s": 10,
        }
        workspace = new_workspace(
            root / "kb",
            module_catalog_url,
            search_paths=[str(docs)],
            llm={"providers": [provider], "default": "scripted"},
        )
        context = open_context(workspace)
        refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
        context.catalog.ensure_workspace("other")
        keys = []
        for name, where in (("reader", "default"), ("outsider", "other")):
            create_user(context.catalog, name, "a long enough password", "member")
            add_membership(context.catalog, name, where)
            keys.append(create_api_key(context.catalog, name, "tests", [])[1])
        context.close()
        yield World(serve_asgi(create_app(workspace)), docs, *keys, model, workspace)


# -- reading ---------------------------------------------------------------------------------
def test_a_pdf_is_read_page_by_page_with_the_cited_passage_located(world: World) -> None:
    hit = world.hit("pump gasket", "manual.pdf")
    doc = hit["documentId"]
    response = world.get(f"{DEFAULT}/documents/{doc}/text", params={"chunk": hit["chunkId"]})
    assert response.status_code == 200, response.text
    page = response.json()
    assert (page["paged"], page["pageCount"], page["page"]) == (True, 2, 2)
    mark = page["highlight"]
    assert mark["chunkId"] == hit["chunkId"]
    assert page["text"][mark["start"] : mark["end"]] == hit["text"]
    assert "gasket" in page["text"] and "circulates" not in page["text"]

    first = world.get(f"{DEFAULT}/documents/{doc}/text", params={"page": 1}).json()
    assert first["page"] == 1 and "circulates coolant" in first["text"]
    assert first["highlight"] is None
    # The passage asked for is on another page than the one shown: no highlight.
    other = {"page": 1, "chunk": hit["chunkId"]}
    assert world.get(f"{DEFAULT}/documents/{doc}/text", params=other).json()["highlight"] is None

    missing = world.get(f"{DEFAULT}/documents/{doc}/text", params={"page": 3})
    assert missing.status_code == 404
    assert missing.json()["detail"] == "no page 3 in this document (it has 2)"
    foreign = world.hit("heron feeder", "changing.txt")["chunkId"]
    wrong = world.get(f"{DEFAULT}/documents/{doc}/text", params={"chunk": foreign})
    assert wrong.status_code == 404 and "no passage" in wrong.json()["detail"]
    assert world.get(f"{DEFAULT}/documents/{doc}/text", params={"page": 0}).status_code == 422


def test_markdown_is_one_section_with_its_headings_and_offsets_kept(world: World) -> None:
    hit = world.hit("Unused leave days expire", "handbook.md")
    page = world.get(
        f"{DEFAULT}/documents/{hit['documentId']}/text", params={"chunk": hit["chunkId"]}
    ).json()
    assert (page["paged"], page["pageCount"], page["page"]) == (False, 1, 1)
    assert page["text"].startswith("# Employee Handbook 2025")
    assert "### 5.2 Carry-over" in page["text"]
    mark = page["highlight"]
    assert page["text"][mark["start"] : mark["end"]] == hit["text"]
    assert page["redacted"] is False


def test_dlp_redacts_the_text_and_withholds_the_file(world: World) -> None:
    hit = world.hit("vault rota", "vault.txt")
    doc = hit["documentId"]
    page = world.get(f"{DEFAULT}/documents/{doc}/text", params={"chunk": hit["chunkId"]}).json()
    assert page["redacted"] is True
    assert page["text"] == "Ask [REDACTED] for the vault rota."
    # The passage's offsets follow the redaction: it still spans the whole passage.
    assert (page["highlight"]["start"], page["highlight"]["end"]) == (0, len(page["text"]))
    refused = world.get(f"{DEFAULT}/documents/{doc}/file")
    assert refused.status_code == 403
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "data-loss prevention" in refused.json()["detail"]
    assert "email" in refused.json()["detail"]


# -- downloading -----------------------------------------------------------------------------
def test_the_original_downloads_as_an_attachment_under_its_own_name(world: World) -> None:
    doc = world.document_id("manual.pdf")
    response = world.get(f"{DEFAULT}/documents/{doc}/file")
    assert response.status_code == 200, response.text
    assert response.content == (world.docs / "manual.pdf").read_bytes()
    headers = response.headers
    assert headers["content-type"] == "application/octet-stream"
    assert headers["content-disposition"] == (
        "attachment; filename=\"manual.pdf\"; filename*=UTF-8''manual.pdf"
    )
    assert headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in headers["content-security-policy"]


def test_a_hostile_file_name_cannot_break_out_of_the_header(world: World) -> None:
    doc = world.document_id(ODD_NAME)
    disposition = world.get(f"{DEFAULT}/documents/{doc}/file").headers["content-disposition"]
    fallback = re.fullmatch(
        r'attachment; filename="([^"]*)"; filename\*=UTF-8\'\'(\S+)', disposition
    )
    assert fallback is not None, disposition
    assert fallback.group(1) == "Notes _final__ v2 _t_.md"
    assert fallback.group(2) == "Notes%20%22final%22%3B%20v2%20%C3%A9t%C3%A9.md"


def test_a_file_changed_since_it_was_indexed_is_not_served(world: World) -> None:
    doc = world.document_id("changing.txt")
    (world.docs / "changing.txt").write_text("Rewritten after indexing.\n")
    response = world.get(f"{DEFAULT}/documents/{doc}/file")
    assert response.status_code == 409
    assert "changed since it was indexed" in response.json()["detail"]


def test_reading_is_checked_like_the_document_itself(world: World) -> None:
    doc = world.document_id("manual.pdf")
    for suffix in ("", "/text", "/file"):
        path = f"{DEFAULT}/documents/{doc}{suffix}"
        assert world.get(path, key="").status_code == 401
        # A member of another workspace: the same 404 as the document's metadata.
        foreign = world.get(path, key=world.outsider)
        assert foreign.status_code == 404
        assert foreign.json()["detail"] == "no workspace 'default'"
        unknown = world.get(f"{DEFAULT}/documents/999999{suffix}")
        assert unknown.status_code == 404
        assert unknown.json()["detail"] == "no document 999999 in this workspace"
        # Not a document of "other" either, asked there by its member.
        there = world.get(f"/api/workspaces/other/documents/{doc}{suffix}", key=world.outsider)
        assert there.status_code == 404


# -- citations -------------------------------------------------------------------------------
def _stream(world: World, message: str) -> list[tuple[str, Any]]:
    headers = {"Authorization": f"Bearer {world.reader}"}
    return post_sse(f"{world.url}{DEFAULT}/chat/stream", {"message": message}, headers)


def _passages(tool_result: str) -> dict[int, str]:
    """The model's numbered passages: ``[n] [Source: …]`` then the text."""
    found = re.findall(r"^\[(\d+)\] \[Source: [^\n]*\]\n(.*?)(?=\n\n\[\d+\] \[Source|\Z)",
                       tool_result, re.S | re.M)  # fmt: skip
    return {int(n): text for n, text in found}


def test_an_answer_cites_sources_numbered_in_order_of_first_use(world: World) -> None:
    world.model.reset(
        [
            Tool("rag_search", {"query": "annual leave carry-over expenses"}),
            Text("Leave expires in March [5]. Claims take ten days [2]; see [5, 2] and [5]."),
        ]
    )
    events = _stream(world, "What happens to unused leave?")
    tokens = "".join(data["text"] for name, data in events if name == "token")
    assert tokens == "Leave expires in March [1]. Claims take ten days [2]; see [1, 2] and [1]."
    ((_, citations),) = [e for e in events if e[0] == "citations"]
    sources = citations["sources"]
    assert [s["number"] for s in sources] == list(range(1, len(sources) + 1))
    assert [s["cited"] for s in sources[:3]] == [True, True, False]
    assert not any(s["cited"] for s in sources[2:])
    # Source 1 is the passage the model knew as [5], source 2 the one it knew as [2].
    passages = _passages(world.model.requests[1]["messages"][-1]["content"])
    assert sources[0]["snippet"][:60] == " ".join(passages[5].split())[:60]
    assert sources[1]["snippet"][:60] == " ".join(passages[2].split())[:60]
    handbook = [s for s in sources if s["sourceId"].endswith("/handbook.md")]
    assert handbook and all(s["section"] for s in handbook)
    assert len({s["section"] for s in handbook}) == len(handbook)  # chips differ by section
    (done,) = [data for name, data in events if name == "done"]
    assert done["answer"] == tokens and done["cited"] == [1, 2]


def test_an_off_topic_question_gets_one_message(world: World) -> None:
    world.model.reset([Tool("rag_search", {"query": "weather in Paris"}), Text(NO_ANSWER)])
    events = _stream(world, "What's the weather in Paris?")
    tokens = "".join(data["text"] for name, data in events if name == "token")
    assert tokens == NO_ANSWER
    assert NO_EVIDENCE_DISCLAIMER not in tokens
    ((_, citations),) = [e for e in events if e[0] == "citations"]
    assert citations["sources"] == []  # nothing to list under an answer that found nothing
