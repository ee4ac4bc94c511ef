"""The catalog schema's newest revision, in a module of its own: a reader that only
checks it (``autorag status`` on SQLite) need not import SQLAlchemy or Alembic."""

from __future__ import annotations

# Bump with every new migration: lets start-up skip Alembic when the schema is current.
SCHEMA_HEAD = "0022"
