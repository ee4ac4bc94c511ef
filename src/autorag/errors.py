"""The one error tree. Every error carries a stable machine ``code``.

Interfaces render these: the API as RFC 9457 problem JSON, the CLI as one line and a
non-zero exit. Nothing below the interfaces prints or exits.
"""

from __future__ import annotations


class AutoragError(Exception):
    """Base of every error AutoRAG raises on purpose."""

    code = "autorag_error"
    status = 500

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidInput(AutoragError):
    code = "invalid_input"
    status = 400


class NotFound(AutoragError):
    code = "not_found"
    status = 404


class Forbidden(AutoragError):
    code = "forbidden"
    status = 403


class Conflict(AutoragError):
    code = "conflict"
    status = 409


class StaleVersion(Conflict):
    """A save based on a version that is no longer the current one (optimistic
    concurrency): ``current_version`` is the one to base a retry on."""

    code = "stale_version"

    def __init__(self, message: str, *, current_version: int) -> None:
        super().__init__(message)
        self.current_version = current_version


class Unavailable(AutoragError):
    code = "unavailable"
    status = 503


class Unauthorized(AutoragError):
    """Missing, invalid or expired credentials (the API adds ``WWW-Authenticate``)."""

    code = "unauthorized"
    status = 401


class PayloadTooLarge(InvalidInput):
    code = "payload_too_large"
    status = 413


class UnsupportedMediaType(InvalidInput):
    code = "unsupported_media_type"
    status = 415


class MalformedUpload(InvalidInput):
    code = "malformed_multipart"


class RateLimited(AutoragError):
    code = "rate_limited"
    status = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
