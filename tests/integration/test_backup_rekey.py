"""``rekey``: the catalog's sealed secrets (DLP originals, model connections' API keys)
moved from the derived key to ``AUTORAG_ENCRYPTION_KEY``, and from the key file of
earlier versions to the derived key, on a real catalog (SQLite, and PostgreSQL when
marked); a value no key opens is counted and left as it is."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text, update
from sqlalchemy.orm import Session

from autorag.backup.rekey import rekey
from autorag.config import LLMSettings, PushSettings
from autorag.connections.service import SECRET_PURPOSE, Connections
from autorag.dlp import store as dlp_store
from autorag.errors import Unavailable
from autorag.keyring import (
    ENCRYPTION_KEY_ENV,
    KEY_FILE_NAME,
    SALT_FILE_NAME,
    Keyring,
    workspace_keyring,
)
from autorag.mcp_tools import store as mcp_store
from autorag.mcp_tools.models import SECRET_PURPOSE as MCP_PURPOSE
from autorag.push.vapid import SEAL_PURPOSE as VAPID_PURPOSE
from autorag.push.vapid import vapid_keys
from autorag.secretbox import SecretBox, catalog_box
from autorag.store.catalog.db import bind_data_dir, create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.models import DlpOriginalRow
from autorag.store.catalog.repository import Catalog

API_KEY = "sk-test-Abc123Def456Ghi789"
NEW_KEY = os.urandom(32)
NEW_ENV = {ENCRYPTION_KEY_ENV: base64.b64encode(NEW_KEY).decode()}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / ".autorag"


@pytest.fixture
def engine(
    tmp_path: Path, data_dir: Path, catalog_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Engine]:
    monkeypatch.delenv(ENCRYPTION_KEY_ENV, raising=False)  # sealed first with the derived key
    engine = create_catalog_engine(catalog_url or sqlite_url(tmp_path / "catalog.db"))
    bind_data_dir(engine, data_dir)
    migrate(engine)
    Catalog(engine).ensure_workspace("default")
    yield engine
    engine.dispose()


def _original(catalog: Catalog, secret: str) -> str:
    return dlp_store.insert_original(
        catalog, original=secret, redacted="[CARD]", types=["credit_card"], source="chat",
        user_id=None, workspace_id=None, ref=f"ref-{secret}",
    )  # fmt: skip


def _mcp_server(engine: Engine, workspace_id: int) -> None:
    """An HTTP MCP server whose headers are sealed (bound to its row's id)."""
    box = catalog_box(engine, MCP_PURPOSE)
    new = mcp_store.NewServer("remote", "http", [], "https://tools.example/mcp",
                              {"Authorization": f"Bearer {API_KEY}"}, [], [])  # fmt: skip
    mcp_store.insert_server(engine, workspace_id, "default", new, actor="t",
                            seal=lambda text, bound: box.seal(text, bound_to=bound))  # fmt: skip


def _stored(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        originals = conn.execute(text("SELECT id, original FROM dlp_originals")).all()
        keys = conn.execute(text("SELECT name, api_key_sealed FROM model_connections")).all()
    return {**{row[0]: row[1] for row in originals}, **{row[0]: row[1] for row in keys}}


def test_rekey_moves_every_secret_to_the_new_key_and_leaves_a_lost_one(
    engine: Engine, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = Catalog(engine)
    cards = {_original(catalog, f"card 4111 1111 1111 111{n}"): f"card 4111 1111 1111 111{n}"
             for n in range(3)}  # fmt: skip
    Connections(engine, LLMSettings()).add("gpu", "openai", "http://gpu:8000/v1", API_KEY, by="t")
    vapid = vapid_keys(engine, PushSettings())  # made now, sealed in system_config
    _mcp_server(engine, catalog.get_workspace("default").id)
    lost_id = _original(catalog, "sealed by a key nobody has")
    lost = SecretBox.derive(os.urandom(32), dlp_store.SEAL_PURPOSE).seal("x", bound_to=lost_id)
    with engine.begin() as conn:
        conn.execute(
            update(DlpOriginalRow).where(DlpOriginalRow.id == lost_id).values(original=lost)
        )
    before = _stored(engine)

    monkeypatch.setattr("autorag.backup.rekey._BATCH", 2)  # several batches, updated between
    keyring = workspace_keyring(data_dir, environ=NEW_ENV)
    assert keyring.current == NEW_KEY and len(keyring.previous) == 1  # the derived key
    report = rekey(engine, data_dir, keyring)

    assert report.resealed == {
        dlp_store.SEAL_PURPOSE: 3, SECRET_PURPOSE: 1, "webhook_secrets": 0, VAPID_PURPOSE: 1,
        MCP_PURPOSE: 1,
    }  # fmt: skip
    assert report.failed == {dlp_store.SEAL_PURPOSE: 1}
    after = _stored(engine)
    assert after[lost_id] == lost  # untouched
    assert all(after[name] != before[name] for name in [*cards, "gpu"])
    new_only = Keyring(NEW_KEY)  # the derived key is not needed any more
    dlp_box = SecretBox.for_keyring(new_only, dlp_store.SEAL_PURPOSE)
    for original_id, card in cards.items():
        assert dlp_box.open(after[original_id], bound_to=original_id) == card
    connection_box = SecretBox.for_keyring(new_only, SECRET_PURPOSE)
    assert connection_box.open(after["gpu"], bound_to="gpu") == API_KEY

    # The features read them with the environment's key alone, the salt gone.
    (data_dir / SALT_FILE_NAME).unlink()
    monkeypatch.setenv(ENCRYPTION_KEY_ENV, NEW_ENV[ENCRYPTION_KEY_ENV])
    first = next(iter(cards))
    with Session(engine) as session:
        assert dlp_store.get_original(session, original_id=first, ref=None).original == cards[first]
        with pytest.raises(Unavailable, match="another key"):
            dlp_store.get_original(session, original_id=lost_id, ref=None)
    [settings] = Connections(engine, LLMSettings()).provider_settings()
    assert settings.api_key is not None and settings.api_key.get_secret_value() == API_KEY
    assert vapid_keys(engine, PushSettings()).public_key == vapid.public_key
    (server,) = mcp_store.list_servers(engine, catalog.get_workspace("default").id, "default")
    assert server.headers_sealed is not None
    headers = catalog_box(engine, MCP_PURPOSE).open(server.headers_sealed, bound_to=str(server.id))
    assert API_KEY in headers


def test_rekey_again_changes_nothing_it_cannot_open_and_skips_clear_values(
    engine: Engine, data_dir: Path
) -> None:
    catalog = Catalog(engine)
    sealed_id = _original(catalog, "card 5500 0000 0000 0004")
    clear_id = _original(catalog, "written before originals were sealed")
    with engine.begin() as conn:
        conn.execute(
            update(DlpOriginalRow)
            .where(DlpOriginalRow.id == clear_id)
            .values(original="written before originals were sealed")
        )
    first = rekey(engine, data_dir, workspace_keyring(data_dir, environ=NEW_ENV))
    assert first.resealed == {
        dlp_store.SEAL_PURPOSE: 1, SECRET_PURPOSE: 0, "webhook_secrets": 0, VAPID_PURPOSE: 0,
        MCP_PURPOSE: 0,
    } and not first.failed  # fmt: skip
    again = rekey(engine, data_dir, Keyring(NEW_KEY))  # the derived key dropped from the ring
    assert again.resealed == first.resealed and not again.failed
    stored = _stored(engine)
    assert stored[clear_id] == "written before originals were sealed"
    box = SecretBox.for_keyring(Keyring(NEW_KEY), dlp_store.SEAL_PURPOSE)
    assert box.open(stored[sealed_id], bound_to=sealed_id) == "card 5500 0000 0000 0004"


def test_a_workspace_sealed_with_the_earlier_key_file_opens_and_rekeys_to_the_derived_key(
    engine: Engine, data_dir: Path
) -> None:
    """Versions before the derivation sealed with a random ``secrets.key``: after the
    upgrade those values still open (the file is in the ring), and rekey moves them."""
    old_key = os.urandom(32)
    data_dir.mkdir(exist_ok=True)
    (data_dir / KEY_FILE_NAME).write_bytes(old_key)
    old_box = SecretBox.for_keyring(Keyring(old_key), dlp_store.SEAL_PURPOSE)
    catalog = Catalog(engine)
    original_id = _original(catalog, "placeholder")
    sealed = old_box.seal("card 4000 0566 5566 5556", bound_to=original_id)
    with engine.begin() as conn:
        conn.execute(
            update(DlpOriginalRow).where(DlpOriginalRow.id == original_id).values(original=sealed)
        )
    with Session(engine) as session:
        assert dlp_store.get_original(session, original_id=original_id, ref=None).original == (
            "card 4000 0566 5566 5556"
        )
    ring = workspace_keyring(data_dir, environ={})
    assert ring.previous == (old_key,)
    report = rekey(engine, data_dir, ring)
    assert report.resealed[dlp_store.SEAL_PURPOSE] == 1 and not report.failed
    derived_only = SecretBox.for_keyring(Keyring(ring.current), dlp_store.SEAL_PURPOSE)
    resealed = _stored(engine)[original_id]
    assert derived_only.open(resealed, bound_to=original_id) == "card 4000 0566 5566 5556"
