"""An archive's writers: the members a manager or admin let write its pages.

Who may write is decided in ``autorag.auth.permissions.may_write_archive``; this module
only checks a new list of writers before the API or the command line stores it.
"""

from __future__ import annotations

from collections.abc import Iterable

from autorag.auth import service as users
from autorag.errors import InvalidInput
from autorag.store.catalog.repository import Catalog

MAX_WRITERS = 500


def checked_writers(catalog: Catalog, names: Iterable[str]) -> tuple[str, ...]:
    """``names`` without repeats, in order, each an existing user's (a misspelt name would
    grant nobody, silently: ``InvalidInput``, code ``unknown_user``)."""
    writers = tuple(dict.fromkeys(name.strip() for name in names))
    if len(writers) > MAX_WRITERS:
        raise InvalidInput(f"an archive may name at most {MAX_WRITERS} writers")
    known = users.existing_usernames(catalog, writers)
    for name in writers:
        if name not in known:
            raise InvalidInput(
                f"no user {name[:80]!r} to name among the archive's writers", code="unknown_user"
            )
    return writers
