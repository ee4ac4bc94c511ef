"""``autorag backup rekey``: reseal every secret the catalog keeps sealed under the
keyring's current key, so the keys it replaced (the derived key, rotated keys, the key
file of earlier versions) can be dropped.

The sealed columns are listed in ``SEALED_COLUMNS``: a feature that stores a new kind of
sealed value adds its line there. Each column is resealed in one transaction; a value no
key of the ring opens is counted in ``failed`` and left as it is, and the others are
still resealed. Values stored in clear (DLP originals older than migration 0011) are not
this command's business and are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine, column, select, table, update
from sqlalchemy.sql.expression import TableClause

from autorag.backup.models import RekeyReport
from autorag.connections.service import SECRET_PURPOSE as CONNECTION_KEYS_PURPOSE
from autorag.dlp.store import SEAL_PURPOSE as DLP_ORIGINALS_PURPOSE
from autorag.errors import Unavailable
from autorag.keyring import Keyring, workspace_keyring
from autorag.secretbox import SecretBox, is_sealed

_BATCH = 500  # rows read at a time: a table of millions of originals stays flat in memory


@dataclass(frozen=True)
class SealedColumn:
    """Values of ``value_column`` in ``table_name``, sealed with ``purpose``'s box and
    bound to ``bound_to_column`` of their row; ``id_column`` orders and finds the row."""

    purpose: str
    table_name: str
    id_column: str
    value_column: str
    bound_to_column: str


SEALED_COLUMNS: tuple[SealedColumn, ...] = (
    SealedColumn(DLP_ORIGINALS_PURPOSE, "dlp_originals", "id", "original", "id"),
    SealedColumn(CONNECTION_KEYS_PURPOSE, "model_connections", "id", "api_key_sealed", "name"),
    # autorag.webhooks.models.SECRET_PURPOSE (a sibling feature: named, not imported)
    SealedColumn("webhook_secrets", "webhooks", "id", "secret_sealed", "name"),
    # autorag.push.vapid.SEAL_PURPOSE: the VAPID private key, bound to its row's key (the
    # only sealed value in system_config)
    SealedColumn("vapid_keys", "system_config", "key", "value", "key"),
    # autorag.mcp_tools.models.SECRET_PURPOSE: an HTTP MCP server's headers, bound to
    # its row's id
    SealedColumn("mcp_server_headers", "mcp_servers", "id", "headers_sealed", "id"),
)


def rekey(
    engine: Engine,
    data_dir: Path,
    keyring: Keyring | None = None,
    *,
    columns: tuple[SealedColumn, ...] = SEALED_COLUMNS,
) -> RekeyReport:
    """Reseal ``columns`` under ``keyring``'s current key (the workspace's keyring, read
    from ``data_dir`` and the environment, when None)."""
    ring = keyring if keyring is not None else workspace_keyring(data_dir)
    resealed: dict[str, int] = {}
    failed: dict[str, int] = {}
    for sealed in columns:
        done, refused = _rekey_column(engine, sealed, SecretBox.for_keyring(ring, sealed.purpose))
        resealed[sealed.purpose] = resealed.get(sealed.purpose, 0) + done
        failed[sealed.purpose] = failed.get(sealed.purpose, 0) + refused
    return RekeyReport(resealed=resealed, failed={k: n for k, n in failed.items() if n})


def _rekey_column(engine: Engine, sealed: SealedColumn, box: SecretBox) -> tuple[int, int]:
    """(values resealed, values no key opens) in one transaction."""
    names = dict.fromkeys((sealed.id_column, sealed.value_column, sealed.bound_to_column))
    rows_table = table(sealed.table_name, *(column(name) for name in names))
    resealed = failed = 0
    with engine.begin() as conn:
        for row_id, bound_to, value in _sealed_rows(conn, rows_table, sealed):
            try:
                fresh = box.reseal(value, bound_to=str(bound_to))
            except Unavailable:
                failed += 1
                continue
            conn.execute(
                update(rows_table)
                .where(rows_table.c[sealed.id_column] == row_id)
                .values({sealed.value_column: fresh})
            )
            resealed += 1
    return resealed, failed


def _sealed_rows(
    conn: Connection, rows_table: TableClause, sealed: SealedColumn
) -> Iterator[tuple[object, object, str]]:
    """(id, binding, value) of each sealed value, read ``_BATCH`` rows at a time (each
    batch read whole before its rows are updated)."""
    ids, value = rows_table.c[sealed.id_column], rows_table.c[sealed.value_column]
    last: object = None
    while True:
        query = select(ids, rows_table.c[sealed.bound_to_column], value).where(value.is_not(None))
        if last is not None:
            query = query.where(ids > last)
        rows = conn.execute(query.order_by(ids).limit(_BATCH)).all()
        if not rows:
            return
        yield from ((row[0], row[1], row[2]) for row in rows if is_sealed(row[2]))
        last = rows[-1][0]
