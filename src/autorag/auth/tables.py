"""Catalog tables of access kept beside ``autorag.store.catalog.models``'s own.

``user_sessions`` holds each user's token generation: every login token carries the
generation it was issued under, and bumping it (a password or role change, a logout)
refuses every token issued before. ``api_key_scopes`` holds the named scopes an API
key was created with (``admin:protection``). Both go with their user or key (ON DELETE
CASCADE); migration 0012 creates them.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from autorag.store.catalog.models import Base


class UserSessionRow(Base):
    __tablename__ = "user_sessions"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    # Starts at a random value, so a user id the database hands out again after a
    # deletion does not make the deleted user's tokens valid for the new user.
    generation: Mapped[int] = mapped_column(BigInteger, default=0)


class ApiKeyScopeRow(Base):
    __tablename__ = "api_key_scopes"

    key_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True
    )
    scope: Mapped[str] = mapped_column(String(64), primary_key=True)
