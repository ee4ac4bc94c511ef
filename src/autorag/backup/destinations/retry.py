"""Putting an archive with a few retries: networks and servers fail for a moment.

Only ``DestinationError`` is retried (unreachable, timed out, failing, rate limiting);
``DestinationRefused`` (credentials, permission, an unknown host key), ``InvalidInput``
and local errors are raised at once: asking again would fail the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from autorag.backup.destinations.base import Destination, DestinationError, DestinationRefused
from autorag.errors import InvalidInput

log = logging.getLogger(__name__)

ATTEMPTS = 3
BACKOFF_S = (1.0, 2.0, 4.0)  # before the 2nd, 3rd… attempt; the last repeats


def put_with_retry(
    dest: Destination,
    local: Path,
    name: str,
    *,
    attempts: int = ATTEMPTS,
    backoff: Sequence[float] = BACKOFF_S,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[str], None] | None = None,
) -> int:
    """``dest.put(local, name)``, tried up to ``attempts`` times; the attempts it took.

    ``on_retry`` hears one sentence per failed attempt that is retried (for a run's
    log). The last attempt's error is raised, saying how many were made.
    """
    if attempts < 1 or not backoff:
        raise InvalidInput("put_with_retry needs at least one attempt and one backoff delay")
    if not local.is_file():  # a local fault: no destination to blame, nothing to retry
        raise InvalidInput(f"no archive to upload at {local}")
    for attempt in range(1, attempts + 1):
        try:
            dest.put(local, name)
        except DestinationRefused:
            raise
        except DestinationError as exc:
            if attempt == attempts:
                raise _after(exc, attempts) from exc
            delay = backoff[min(attempt - 1, len(backoff) - 1)]
            note = (
                f"upload attempt {attempt} of {attempts} failed ({exc.message}); "
                f"retrying in {delay:g} s"
            )
            log.warning("%s: %s", dest.label, note)
            if on_retry is not None:
                on_retry(note)
            sleep(delay)
        else:
            return attempt
    raise AssertionError("unreachable: the last attempt returns or raises")


def _after(exc: DestinationError, attempts: int) -> DestinationError:
    if attempts == 1:
        return exc
    return type(exc)(f"after {attempts} attempts: {exc.message}", code=exc.code)
