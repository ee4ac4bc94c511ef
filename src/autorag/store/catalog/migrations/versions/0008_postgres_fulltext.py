"""PostgreSQL full-text: a weighted tsvector per chunk, kept in step by a trigger, GIN-indexed.

SQLite keeps the FTS5 table of 0001, so this revision does nothing there.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The text-search configuration lives in the database, not only in settings: the stored
# vectors and the queries must agree on it, whichever process writes or searches.
_UPGRADE = [
    "CREATE TABLE fulltext_settings (id integer PRIMARY KEY CHECK (id = 1), config text NOT NULL)",
    "INSERT INTO fulltext_settings (id, config) VALUES (1, 'simple')",
    # One definition of a chunk's vector, for the trigger and for rebuilds: the title
    # (weight A) ranked apart from the text (weight D), as FTS5 weighs its columns.
    "CREATE FUNCTION chunks_tsv(config regconfig, title text, body text) RETURNS tsvector "
    "LANGUAGE sql IMMUTABLE AS $$ "
    "SELECT setweight(to_tsvector(config, coalesce(title, '')), 'A') "
    "|| setweight(to_tsvector(config, coalesce(body, '')), 'D') $$",
    "CREATE FUNCTION chunks_tsv_trigger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "NEW.tsv := chunks_tsv((SELECT config FROM fulltext_settings WHERE id = 1)::regconfig, "
    "NEW.title, NEW.text); RETURN NEW; END $$",
    "ALTER TABLE chunks ADD COLUMN tsv tsvector",
    # Inline where it fits (the text moves out first): every search reads the vectors of
    # all matching chunks, and a TOAST fetch per chunk made that the slowest part.
    "ALTER TABLE chunks ALTER COLUMN tsv SET STORAGE MAIN",
    "UPDATE chunks SET tsv = chunks_tsv('simple', title, text)",
    # BEFORE, so the vector commits in the same row write as the text it comes from.
    "CREATE TRIGGER chunks_tsv_update BEFORE INSERT OR UPDATE OF title, text ON chunks "
    "FOR EACH ROW EXECUTE FUNCTION chunks_tsv_trigger()",
    "CREATE INDEX ix_chunks_tsv ON chunks USING gin (tsv)",
]

_DOWNGRADE = [
    "DROP TRIGGER IF EXISTS chunks_tsv_update ON chunks",
    "DROP INDEX IF EXISTS ix_chunks_tsv",
    "ALTER TABLE chunks DROP COLUMN IF EXISTS tsv",
    "DROP FUNCTION IF EXISTS chunks_tsv_trigger()",
    "DROP FUNCTION IF EXISTS chunks_tsv(regconfig, text, text)",
    "DROP TABLE IF EXISTS fulltext_settings",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _UPGRADE:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _DOWNGRADE:
            op.execute(statement)
