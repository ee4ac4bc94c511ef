"""The MCP server with the official ``mcp`` SDK as its client: over stdio (``autorag -w
KB mcp`` spawned as a subprocess, the local operator) and over streamable HTTP (``/mcp``
on a real server on loopback, with API keys).

One workspace of documents (``default``) and an archive, a second workspace (``other``)
the member belongs to but whose name their key does not carry, a scripted model for
``ask``; one server, one stdio process for the module."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from starlette.types import ASGIApp
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from autorag.wiki.service import WikiService

TOOLS = {"search", "ask", "list_documents", "get_document", "wiki_query"}
SECRET_KEY = "sk-Abc123Def456Ghi789Jkl012"  # a model's answer leaking it: redacted
CALL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class World:
    kb: Path
    url: str  # the HTTP server
    admin_key: str
    member_key: str  # a member of both workspaces; the key names only "default"
    other_key: str  # an admin's key that names only "other"
    model: ScriptedOpenAI


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("mcp")
    docs = root / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text(
        "# Refunds\n\nThe refund window is thirty days from delivery.\n", encoding="utf-8"
    )
    (docs / "cat.txt").write_text("The office cat is called Pixel.\n", encoding="utf-8")
    with ScriptedOpenAI() as model:
        provider = {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                    "default_model": "gpt-test", "local": True, "timeout_s": 10}  # fmt: skip
        llm = {"providers": [provider], "default": "scripted"}
        kb = new_workspace(root / "kb", search_paths=[str(docs)], llm=llm)
        context = open_context(kb)
        try:
            refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
            context.catalog.ensure_workspace("other")
            wiki = WikiService(context)
            wiki.create_archive("handbook", by="test")
            wiki.save_page("handbook", "onboarding", body="Badges are collected at the front "
                           "desk. See [[parking]].", base_version=None, by="test")  # fmt: skip
            wiki.save_page("handbook", "parking", body="Visitors park on level two.",
                           base_version=None, by="test")  # fmt: skip
            create_user(context.catalog, "root", "a long enough password", "admin")
            create_user(context.catalog, "mem", "a long enough password", "member")
            add_membership(context.catalog, "mem", "default")
            add_membership(context.catalog, "mem", "other")
            _, admin_key = create_api_key(context.catalog, "root", "mcp", [])
            _, member_key = create_api_key(context.catalog, "mem", "mcp", ["default"])
            _, other_key = create_api_key(context.catalog, "root", "mcp-other", ["other"])
        finally:
            context.close()
        url = serve_asgi(create_app(kb))
        yield World(root / "kb", url, admin_key, member_key, other_key, model)


# -- clients --------------------------------------------------------------------------------
@asynccontextmanager
async def http_session(world: World, key: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT_S) as client,
        streamable_http_client(world.url + "/mcp", http_client=client) as (read, write),
        ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S) as session,
    ):
        await session.initialize()
        yield session


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # The text content carries the same JSON, for clients that read only text.
    text = result.content[0]
    assert json.loads(getattr(text, "text", "")) == result.structured_content
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return " ".join(getattr(block, "text", "") for block in result.content)


# -- stdio ----------------------------------------------------------------------------------
def test_stdio_serves_every_tool_as_the_local_operator(world: World) -> None:
    async def scenario() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "autorag", "-w", str(world.kb), "mcp"],
            env=dict(os.environ),  # the test cache folder, as every CLI test passes it
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            for tool in listed.tools:
                assert tool.description and tool.input_schema["type"] == "object"
                assert tool.output_schema is not None
            documents = structured(await session.call_tool("list_documents", {}))
            assert documents["workspace"] == "default" and documents["total"] == 2
            ids = {d["sourceId"] for d in documents["items"]}
            assert ids == {f"/{_prefix(world)}/refunds.md", f"/{_prefix(world)}/cat.txt"}
            page = structured(await session.call_tool(
                "get_document", {"sourceId": f"/{_prefix(world)}/cat.txt"}
            ))  # fmt: skip
            assert "Pixel" in page["text"] and page["document"]["type"] == "txt"
            wiki = structured(await session.call_tool("wiki_query", {"query": "badges"}))
            assert [p["path"] for p in wiki["pages"]] == ["onboarding", "parking"]
            # The operator reads every workspace; a missing one is not found.
            other = structured(await session.call_tool("list_documents", {"workspace": "other"}))
            assert other["total"] == 0
            missing = await session.call_tool("list_documents", {"workspace": "nope"})
            expected = "Error executing tool list_documents: not_found: no workspace 'nope'"
            assert error_text(missing) == expected

    anyio.run(scenario)


def _prefix(world: World) -> str:
    """The virtual root the documents' folder is served under (seed 000): its name."""
    return "docs"


# -- streamable HTTP ------------------------------------------------------------------------
def test_http_tools_carry_canonical_source_ids(world: World) -> None:
    world.model.reset(
        [Tool("rag_search", {"query": "refund window"}),
         Text(f"Thirty days [1]. The key is {SECRET_KEY}.")]
    )  # fmt: skip

    async def scenario() -> None:
        async with http_session(world, world.member_key) as session:
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            found = structured(await session.call_tool("search", {"query": "refund window"}))
            top = found["hits"][0]
            assert top["sourceId"] == "/docs/refunds.md" and "thirty days" in top["text"]
            assert all(not h["sourceId"].startswith(str(world.kb.parent)) for h in found["hits"])
            read = structured(await session.call_tool(
                "get_document", {"documentId": top["documentId"], "chunkId": top["chunkId"]}
            ))  # fmt: skip
            assert read["document"]["sourceId"] == "/docs/refunds.md"
            assert "thirty days" in read["text"]
            listed = structured(await session.call_tool("list_documents", {"type": "md"}))
            assert [d["sourceId"] for d in listed["items"]] == ["/docs/refunds.md"]
            wiki = structured(await session.call_tool("wiki_query", {"query": "parking"}))
            assert wiki["pages"][0]["sourceId"].endswith("/parking")
            assert wiki["pages"][0]["sourceId"].startswith("archive:")

            answer = structured(await session.call_tool("ask", {"question": "Refund window?"}))
            assert answer["answer"].startswith("Thirty days [1].")
            assert SECRET_KEY not in answer["answer"] and answer["dlpWarning"] is True
            (cited,) = [s for s in answer["sources"] if s["cited"]]
            assert cited["number"] == 1 and cited["sourceId"] == "/docs/refunds.md"

    anyio.run(scenario)


def test_a_key_scoped_to_one_workspace_cannot_read_another(world: World) -> None:
    async def scenario() -> None:
        async with http_session(world, world.member_key) as session:
            for tool, arguments in (
                ("search", {"query": "cat"}),
                ("list_documents", {}),
                ("get_document", {"documentId": 1}),
                ("wiki_query", {"query": "badges"}),
                ("ask", {"question": "Who is the cat?"}),
            ):
                for workspace in ("other", "nope"):  # word for word as a missing one
                    refused = await session.call_tool(tool, {**arguments, "workspace": workspace})
                    expected = f"Error executing tool {tool}: not_found: no workspace '{workspace}'"
                    assert error_text(refused) == expected
        async with http_session(world, world.admin_key) as session:  # "other" is there
            other = structured(await session.call_tool("list_documents", {"workspace": "other"}))
            assert other["workspace"] == "other" and other["total"] == 0
        async with http_session(world, world.other_key) as session:
            # Named by no call, the default is the one workspace the key may read, not
            # the configured one it may not.
            assert structured(await session.call_tool("list_documents", {}))["workspace"] == "other"
            refused = await session.call_tool("search", {"query": "cat", "workspace": "default"})
            assert error_text(refused).endswith("not_found: no workspace 'default'")

    anyio.run(scenario)


def test_no_credentials_no_mcp(world: World) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    anonymous = httpx.post(world.url + "/mcp", json=body, headers=headers)
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"] == "Bearer"
    assert anonymous.json()["code"] == "unauthorized"
    wrong = httpx.post(world.url + "/mcp", json=body, headers={**headers, **_bearer("ark_nope")})
    assert wrong.status_code == 401
    # Stateless: no session to stream from (GET) or to end (DELETE).
    for method in ("GET", "DELETE"):
        assert (
            httpx.request(method, world.url + "/mcp", headers=_bearer(world.admin_key)).status_code
            == 405
        )


def test_a_browser_page_of_another_origin_is_refused(world: World) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", **_bearer(world.admin_key)}
    evil = httpx.post(
        world.url + "/mcp", json=body, headers={**headers, "Origin": "https://evil.example"}
    )
    assert evil.status_code == 403 and evil.json()["code"] == "origin_not_allowed"
    # DNS rebinding: a page of another name resolving to this loopback server.
    rebound = httpx.post(world.url + "/mcp", json=body, headers={**headers, "Host": "evil.example"})
    assert rebound.status_code == 403 and rebound.json()["code"] == "host_not_allowed"


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_the_high_level_client_negotiates_the_current_protocol(world: World) -> None:
    """``mcp.Client`` probes ``server/discover`` (2026-07-28, no handshake): the request
    still carries its caller to the tools."""

    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {world.member_key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT_S) as http:
            transport = streamable_http_client(world.url + "/mcp", http_client=http)
            async with Client(transport) as client:
                assert client.session.protocol_version == "2026-07-28"
                documents = structured(await client.call_tool("list_documents", {}))
                assert documents["total"] == 2
                refused = await client.call_tool("list_documents", {"workspace": "other"})
                expected = "Error executing tool list_documents: not_found: no workspace 'other'"
                assert error_text(refused) == expected

    anyio.run(scenario)


# -- fuzzing: /mcp is JSON-RPC, outside the OpenAPI spec that test_api_fuzz.py fuzzes ----------
FUZZ = settings(
    max_examples=60, deadline=None, derandomize=True, database=None,
    suppress_health_check=list(HealthCheck),
)  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
JSON_BODY = {"Content-Type": "application/json"}
ARGUMENT_NAMES = ["query", "workspace", "k", "documentTypes", "dateFrom", "dateTo", "status",
                  "type", "limit", "offset", "documentId", "sourceId", "page", "chunkId",
                  "archive"]  # fmt: skip
# Every tool but ask, whose valid calls would each run the agent on the scripted model.
TOOL_CALLS = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "id": st.integers(0, 2**31),
        "method": st.just("tools/call"),
        "params": st.fixed_dictionaries(
            {
                "name": st.sampled_from(sorted(TOOLS - {"ask"})) | st.text(max_size=12),
                "arguments": st.dictionaries(
                    st.sampled_from(ARGUMENT_NAMES), JSON | st.integers(-5, 2**63), max_size=4
                ),
            }
        ),
    }
)
MESSAGES = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.integers(0, 9) | st.text(max_size=5),
     "method": st.sampled_from(["initialize", "tools/list", "ping", "resources/list", "x"]),
     "params": JSON},
)  # fmt: skip


def test_fuzzed_messages_get_protocol_answers_and_no_tool_crashes(world: World) -> None:
    """Whatever JSON is posted: no server error, JSON-RPC replies (or problem JSON from the
    API before the SDK), and a tool error always names its cause: never the bare "Error
    executing tool x" of an exception no tool expected."""
    headers = {"Accept": "application/json, text/event-stream", **_bearer(world.admin_key)}
    with httpx.Client(base_url=world.url, headers=headers, timeout=CALL_TIMEOUT_S) as client:

        @FUZZ
        @given(body=TOOL_CALLS | MESSAGES | JSON)
        def post(body: Any) -> None:
            # As text: httpx would send no body at all for json=None (JSON's null).
            response = client.post("/mcp", content=json.dumps(body), headers=JSON_BODY)
            assert response.status_code < 500, response.text
            kind = response.headers.get("content-type", "")
            if response.status_code == 202 or not response.content:
                return
            assert kind.startswith(("application/json", "application/problem+json")), kind
            reply = response.json()
            if kind.startswith("application/problem+json") or "result" not in reply:
                return
            result = reply["result"]
            if isinstance(result, dict) and result.get("isError"):
                text = " ".join(block.get("text", "") for block in result["content"])
                assert not text.startswith("Error executing tool") or ": " in text, text

        post()
