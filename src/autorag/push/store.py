"""Web Push's tables (migration 0018: ``push_subscriptions``, ``push_preferences``), the
stored VAPID key (a ``system_config`` row) and the users a notification goes to.

Rows leave this module as ``push.models``' dataclasses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    Engine,
    ForeignKey,
    Index,
    Integer,
    Row,
    String,
    Text,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column

from autorag.push.models import Subscription
from autorag.store.catalog.db import dialect_insert
from autorag.store.catalog.models import Base, SystemConfigRow, UserRow, utcnow
from autorag.times import as_utc, as_utc_or_none

MAX_PER_USER = 20  # browsers per user: the oldest goes when a 21st subscribes


class PushSubscriptionRow(Base):
    __tablename__ = "push_subscriptions"
    __table_args__ = (Index("uq_push_subscriptions_endpoint", "endpoint", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    endpoint: Mapped[str] = mapped_column(Text)
    p256dh: Mapped[str] = mapped_column(Text)
    auth: Mapped[str] = mapped_column(Text)
    user_agent: Mapped[str | None] = mapped_column(String(300))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_success_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class PushPreferenceRow(Base):
    __tablename__ = "push_preferences"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    event: Mapped[str] = mapped_column(String(64), primary_key=True)  # a topic
    enabled: Mapped[bool] = mapped_column(Boolean)


S = PushSubscriptionRow
P = PushPreferenceRow


def _subscription(row: Row[Any]) -> Subscription:
    return Subscription(
        id=row.id,
        user_id=row.user_id,
        endpoint=row.endpoint,
        p256dh=row.p256dh,
        auth=row.auth,
        user_agent=row.user_agent,
        created_at=as_utc(row.created_at),
        last_success_at=as_utc_or_none(row.last_success_at),
    )


# -- subscriptions ------------------------------------------------------------------------
def save_subscription(
    engine: Engine, user_id: int, endpoint: str, p256dh: str, auth: str, user_agent: str | None
) -> Subscription:
    """The endpoint's subscription, now the user's with these keys: a browser has one
    endpoint, and whoever subscribes with it last is the one it notifies (another user
    signed in on the same browser). Past ``MAX_PER_USER`` the user's oldest goes."""
    values = {"user_id": user_id, "p256dh": p256dh, "auth": auth, "user_agent": user_agent}
    with engine.begin() as conn:
        found = conn.execute(select(S.id).where(S.endpoint == endpoint)).scalar()
        if found is None:
            statement = insert(S).values(endpoint=endpoint, created_at=utcnow(), **values)
            found = conn.execute(statement.returning(S.id)).scalar_one()
        else:
            conn.execute(update(S).where(S.id == found).values(**values))
        mine = select(S.id).where(S.user_id == user_id).order_by(S.created_at.desc(), S.id.desc())
        extra = conn.execute(mine.offset(MAX_PER_USER)).scalars().all()
        if extra:
            conn.execute(delete(S).where(S.id.in_(extra)))
    with engine.connect() as conn:
        return _subscription(conn.execute(select(S.__table__).where(S.id == found)).one())


def delete_subscription(engine: Engine, user_id: int, endpoint: str) -> bool:
    """Remove the user's own subscription of that endpoint; False when they have none."""
    with engine.begin() as conn:
        statement = delete(S).where(S.user_id == user_id, S.endpoint == endpoint)
        return conn.execute(statement).rowcount > 0


def remove_subscription(engine: Engine, subscription_id: int) -> None:
    with engine.begin() as conn:
        conn.execute(delete(S).where(S.id == subscription_id))


def mark_success(engine: Engine, subscription_id: int) -> None:
    with engine.begin() as conn:
        conn.execute(update(S).where(S.id == subscription_id).values(last_success_at=utcnow()))


def subscriptions_of(engine: Engine, user_ids: Iterable[int] | None) -> list[Subscription]:
    """The subscriptions of these users (None: everyone's), oldest first."""
    query = select(S.__table__).order_by(S.id)
    if user_ids is not None:
        query = query.where(S.user_id.in_(list(user_ids)))
    with engine.connect() as conn:
        return [_subscription(row) for row in conn.execute(query)]


def any_subscription(engine: Engine) -> bool:
    """Whether any browser is subscribed (one row read at most: asked every second)."""
    with engine.connect() as conn:
        return conn.execute(select(S.id).limit(1)).first() is not None


def subscription_count(engine: Engine, user_id: int) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count(S.id)).where(S.user_id == user_id)).scalar_one())


# -- preferences ----------------------------------------------------------------------------
def preferences(engine: Engine, user_ids: Sequence[int]) -> dict[int, dict[str, bool]]:
    """user → {topic: enabled} as stored (a topic never chosen is absent)."""
    found: dict[int, dict[str, bool]] = {user_id: {} for user_id in user_ids}
    query = select(P.user_id, P.event, P.enabled).where(P.user_id.in_(list(user_ids)))
    with engine.connect() as conn:
        for user_id, topic, enabled in conn.execute(query):
            found[user_id][topic] = bool(enabled)
    return found


def set_preferences(engine: Engine, user_id: int, choices: Mapping[str, bool]) -> None:
    if not choices:
        return
    with engine.begin() as conn:
        for topic, enabled in choices.items():
            statement = dialect_insert(engine, P).values(
                user_id=user_id, event=topic, enabled=enabled
            )
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=["user_id", "event"], set_={"enabled": enabled}
                )
            )


# -- users ------------------------------------------------------------------------------------
def active_users(
    engine: Engine, *, role: str | None = None, username: str | None = None
) -> dict[int, str]:
    """id → role of the enabled users with that role, or that name."""
    query = select(UserRow.id, UserRow.role).where(UserRow.disabled.is_(False))
    if role is not None:
        query = query.where(UserRow.role == role)
    if username is not None:
        query = query.where(UserRow.username == username)
    with engine.connect() as conn:
        return {int(user_id): str(found) for user_id, found in conn.execute(query)}


def user_role(engine: Engine, user_id: int) -> str | None:
    with engine.connect() as conn:
        role = conn.execute(select(UserRow.role).where(UserRow.id == user_id)).scalar()
        return None if role is None else str(role)


# -- the stored VAPID key -------------------------------------------------------------------
def stored_value(engine: Engine, key: str) -> str | None:
    with engine.connect() as conn:
        return conn.execute(
            select(SystemConfigRow.value).where(SystemConfigRow.key == key)
        ).scalar()


def store_value_once(engine: Engine, key: str, value: str) -> None:
    """Store ``value`` unless a value is there already (then that one stays)."""
    statement = dialect_insert(engine, SystemConfigRow).values(
        key=key, value=value, updated_at=utcnow()
    )
    with engine.begin() as conn:
        conn.execute(statement.on_conflict_do_nothing(index_elements=["key"]))
