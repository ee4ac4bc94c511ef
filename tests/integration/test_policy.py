"""Source policy on a real workspace: the catalog store, ``autorag policy`` and the API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import text
from tests.workspaces import new_workspace
from typer.testing import CliRunner, Result

from autorag.auth import service
from autorag.cli.main import app as cli
from autorag.context import AppContext, open_context, open_policy
from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.sources.policy import MAX_RULES
from autorag.store.catalog.revision import SCHEMA_HEAD
from autorag.workspace import Workspace

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

PASSWORD = "a long enough password"


def make_workspace(root: Path, database_url: str | None = None) -> tuple[Workspace, Path]:
    """A workspace whose one search path is ``<root>/docs`` (virtual ids /docs/…), its
    catalog at ``database_url`` (default: SQLite inside it)."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    workspace = new_workspace(root / "kb", database_url, search_paths=[str(docs.resolve())])
    return workspace, docs


def set_search_path(workspace: Workspace, docs: Path) -> None:
    config = workspace.read_config()
    config["search_paths"] = [str(docs.resolve())]
    workspace.write_config(config)


@pytest.fixture
def world(tmp_path: Path, catalog_url: str | None) -> Iterator[tuple[AppContext, Path]]:
    workspace, docs = make_workspace(tmp_path, catalog_url)
    context = open_context(workspace)
    yield context, docs
    context.close()


def real(path: Path) -> str:
    return os.path.realpath(path)


# -- the catalog-backed store ----------------------------------------------------------
def test_rules_are_set_listed_explained_and_removed(world: tuple[AppContext, Path]) -> None:
    context, docs = world
    store = open_policy(context)
    store.set_rule("/docs/**", "ask")
    store.set_rule("/docs/public//**", "share")  # stored canonical
    store.set_rule("C:/secrets/**", "private")
    assert [(r.glob, r.level) for r in store.list_rules()] == [
        ("/docs/**", "ask"),
        ("/docs/public/**", "share"),
        ("C:/secrets/**", "private"),
    ]
    explanation = store.explain(real(docs / "public" / "a.md"))
    assert explanation.canonical == "/docs/public/a.md"
    assert [r.glob for r in explanation.matches] == ["/docs/public/**", "/docs/**"]
    assert explanation.level == "share"
    assert store.resolve_policy("C:\\secrets\\key.txt") == "private"
    assert store.resolve_policy("/docs/../etc/passwd") == "private"

    store.remove_rule("/docs/public/**")
    assert store.resolve_policy(real(docs / "public" / "a.md")) == "ask"
    with pytest.raises(NotFound):
        store.remove_rule("/docs/public/**")
    with pytest.raises(InvalidInput, match="absolute"):
        store.set_rule("docs/**", "share")
    with pytest.raises(InvalidInput, match="level"):
        store.set_rule("/docs/**", "public")


def test_an_update_keeps_the_creation_time_and_survives_a_reopen(
    tmp_path: Path, catalog_url: str | None
) -> None:
    workspace, _ = make_workspace(tmp_path, catalog_url)
    context = open_context(workspace)
    store = open_policy(context)
    created = store.set_rule("/docs/**", "share")
    updated = store.set_rule("/docs/**", "ask")
    assert updated.created_at == created.created_at <= updated.updated_at
    assert updated.created_at.tzinfo is not None
    context.close()

    reopened = open_context(workspace)
    try:
        assert [(r.glob, r.level) for r in open_policy(reopened).list_rules()] == [
            ("/docs/**", "ask")
        ]
        with reopened.catalog.engine.connect() as conn:
            head = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            assert head == SCHEMA_HEAD
    finally:
        reopened.close()


def test_seen_sources_and_promotion(world: tuple[AppContext, Path]) -> None:
    context, docs = world
    store = open_policy(context)
    store.set_rule("/docs/**", "ask")
    source = real(docs / "report.md")
    before = datetime.now(UTC)
    assert not store.is_source_seen(source)
    assert store.mark_source_seen(source) and store.mark_source_seen("/docs/report.md")
    seen = store.seen("/docs//report.md")
    assert seen is not None and seen.source_id == "/docs/report.md" and seen.count == 2
    assert before <= seen.first_seen_at <= seen.last_seen_at

    assert not store.mark_source_seen("kakao:chat/sender/1")
    assert not store.mark_source_seen("/docs/../etc/passwd")
    assert _seen_ids(context) == ["/docs/report.md"]

    rule = store.promote_source(source, "share")
    assert (rule.glob, rule.level) == ("/docs/report.md", "share")
    assert store.resolve_policy(source) == "share"
    assert store.resolve_policy(real(docs / "other.md")) == "ask"


def test_rules_and_seen_sources_belong_to_one_workspace(world: tuple[AppContext, Path]) -> None:
    context, _ = world
    other = context.for_workspace(context.catalog.ensure_workspace("other"))
    mine, theirs = open_policy(context), open_policy(other)
    mine.set_rule("/docs/**", "share")
    mine.mark_source_seen("/docs/a.md")
    theirs.set_rule("/docs/**", "private")

    assert mine.resolve_policy("/docs/a.md") == "share"
    assert theirs.resolve_policy("/docs/a.md") == "private"
    assert not theirs.is_source_seen("/docs/a.md")
    theirs.remove_rule("/docs/**")
    assert [r.glob for r in mine.list_rules()] == ["/docs/**"]

    theirs.set_rule("/kakao/**", "ask")
    with context.catalog.engine.begin() as conn:  # foreign keys cascade the delete
        conn.execute(text("DELETE FROM workspaces WHERE name = 'other'"))
    with context.catalog.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM policy_rules")).scalar() == 1


def test_a_workspace_holds_at_most_1000_rules(world: tuple[AppContext, Path]) -> None:
    context, _ = world
    store = open_policy(context)
    now = datetime.now(UTC).isoformat()
    with context.catalog.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO policy_rules (workspace_id, glob, level, created_at, updated_at)"
                " VALUES (:ws, :glob, 'share', :now, :now)"
            ),
            [{"ws": context.info.id, "glob": f"/r/{i}/**", "now": now} for i in range(MAX_RULES)],
        )
    with pytest.raises(Conflict, match="at most 1000") as refused:
        store.set_rule("/one/more/**", "share")
    assert refused.value.code == "policy_rule_limit"
    assert store.set_rule("/r/7/**", "private").level == "private"  # an update still works
    other = open_policy(context.for_workspace(context.catalog.ensure_workspace("other")))
    other.set_rule("/one/more/**", "share")  # the limit is per workspace


def _seen_ids(context: AppContext) -> list[str]:
    with context.catalog.engine.connect() as conn:
        rows = conn.execute(text("SELECT source_id FROM policy_seen_sources ORDER BY 1"))
        return [row[0] for row in rows]


# -- autorag policy ----------------------------------------------------------------------
def _cli(workspace: Workspace, *args: str) -> Result:
    return CliRunner().invoke(cli, ["-w", str(workspace.root), "policy", *args])


def test_cli_set_list_explain_and_rm(tmp_path: Path, catalog_url: str | None) -> None:
    workspace, docs = make_workspace(tmp_path, catalog_url)
    assert _cli(workspace, "set", "/docs/**", "share").exit_code == 0
    assert _cli(workspace, "set", "/docs/[draft]/**", "private").exit_code == 0
    listed = json.loads(_cli(workspace, "list", "--json").stdout)
    assert [(r["glob"], r["level"]) for r in listed] == [
        ("/docs/**", "share"),
        ("/docs/[draft]/**", "private"),
    ]
    assert "/docs/[draft]/**" in _cli(workspace, "list").stdout  # not taken as markup

    explained = json.loads(_cli(workspace, "explain", real(docs / "a.md"), "--json").stdout)
    assert explained["canonical"] == "/docs/a.md"
    assert (explained["level"], explained["decidedBy"]) == ("share", "rule")
    assert explained["winner"] == {"glob": "/docs/**", "level": "share"}
    shown = _cli(workspace, "explain", "/docs/[draft]/a.md").stdout
    assert "/docs/[draft]/** → private  (wins)" in shown and "/docs/** → share" in shown

    invalid = _cli(workspace, "explain", "kakao:chat/sender/1")
    assert invalid.exit_code == 0
    assert "kakao:" in invalid.stdout and "private (fail closed)" in invalid.stdout
    assert "private (default: no rule matches)" in _cli(workspace, "explain", "/etc/x").stdout

    refused = _cli(workspace, "set", "docs/**", "share")
    assert refused.exit_code != 0 and isinstance(refused.exception, InvalidInput)
    assert isinstance(_cli(workspace, "rm", "/nope/**").exception, NotFound)
    assert _cli(workspace, "rm", "/docs/**").exit_code == 0
    assert [r["glob"] for r in json.loads(_cli(workspace, "list", "--json").stdout)] == [
        "/docs/[draft]/**"
    ]


def test_cli_errors_are_one_line_and_an_exit_code(tmp_path: Path) -> None:
    workspace, _ = make_workspace(tmp_path)
    autorag = [sys.executable, "-m", "autorag", "-w", str(workspace.root)]
    result = subprocess.run(
        [*autorag, "policy", "set", "C:\\x\\**", "ask"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2  # InvalidInput
    assert "forward slashes" in result.stderr and "Traceback" not in result.stderr


# -- the API -----------------------------------------------------------------------------
def test_api_reading_and_explaining_for_members_changing_for_managers(
    tmp_path: Path, launch_api: LaunchApi
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()

    def prepare(context: AppContext) -> None:
        set_search_path(context.workspace, docs)
        service.create_user(context.catalog, "mgr", PASSWORD, "manager")
        service.create_user(context.catalog, "mem", PASSWORD, "member")
        for username in ("mgr", "mem"):
            service.add_membership(context.catalog, username, "default")

    api = launch_api(tmp_path / "kb", prepare)
    manager, member = (_login(api, name) for name in ("mgr", "mem"))
    path = "/api/workspaces/default/policy"
    rule = {"glob": "/docs/**", "level": "share"}

    assert api.call("PUT", path, member, json=rule).status_code == 403
    put = api.call("PUT", path, manager, json=rule)
    assert put.status_code == 200, put.text
    assert (put.json()["glob"], put.json()["level"]) == ("/docs/**", "share")
    assert [r["glob"] for r in api.call("GET", path, member).json()["rules"]] == ["/docs/**"]

    explained = api.call("POST", path + "/explain", member, json={"source": real(docs / "a.md")})
    assert explained.status_code == 200, explained.text
    body = explained.json()
    assert (body["canonical"], body["level"], body["decidedBy"]) == ("/docs/a.md", "share", "rule")
    invalid = api.call("POST", path + "/explain", member, json={"source": "file:///etc/passwd"})
    assert (invalid.json()["canonical"], invalid.json()["level"]) == (None, "private")
    assert invalid.json()["invalidReason"]

    bad_glob = api.call("PUT", path, manager, json={"glob": "kakao:x/**", "level": "share"})
    assert bad_glob.status_code == 400 and "scheme" in bad_glob.json()["detail"]
    bad_level = api.call("PUT", path, manager, json={"glob": "/docs/**", "level": "public"})
    assert bad_level.status_code == 422

    assert api.call("DELETE", path, member, params={"glob": "/docs/**"}).status_code == 403
    assert api.call("DELETE", path, manager, params={"glob": "/docs/**"}).status_code == 204
    assert api.call("DELETE", path, manager, params={"glob": "/docs/**"}).status_code == 404
    assert api.call("GET", path, member).json()["rules"] == []
    with api.sql() as conn:
        assert conn.execute(text("SELECT count(*) FROM policy_rules")).scalar() == 0


def _login(api: ApiServer, username: str) -> str:
    body = {"username": username, "password": PASSWORD}
    response = api.call("POST", "/api/auth/login", json=body)
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token
