"""Destination URLs taken apart: the scheme that picks a provider, and the parts each
provider reads (``sftp://user@host:2222/backups``, ``email:ops@example.com``…).

Credentials never travel in a URL (it is shown in logs, listings and the catalog):
a password in one is refused, with where to put it instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urlsplit

from autorag.errors import InvalidInput
from autorag.http_client import display_url

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", re.DOTALL)
# Where each networked scheme's password goes instead of the URL.
_PASSWORD_SETTING = {
    "s3": "[backup.s3] secret_access_key (AUTORAG_BACKUP__S3__SECRET_ACCESS_KEY)",
    "sftp": "[backup.sftp] password or key_file (AUTORAG_BACKUP__SFTP__PASSWORD)",
    "ftp": "[backup.ftp] password (AUTORAG_BACKUP__FTP__PASSWORD)",
    "ftps": "[backup.ftp] password (AUTORAG_BACKUP__FTP__PASSWORD)",
}


@dataclass(frozen=True)
class DestinationUrl:
    """A destination URL's parts. ``rest`` is everything after ``scheme:``; the
    networked schemes (``scheme://``) also fill ``user``, ``host``, ``port``, ``path``."""

    text: str  # as written, stripped (it holds no password: those are refused)
    scheme: str  # lower case; "local" for a plain absolute path
    rest: str
    user: str | None = None
    host: str | None = None
    port: int | None = None
    path: str = ""  # percent-decoded


def parse_destination_url(url: str, known: Iterable[str]) -> DestinationUrl:
    """``url`` taken apart; ``InvalidInput`` for an unknown scheme (naming the known
    ones), a password in the URL, or a URL that does not parse."""
    text = url.strip()
    if text.startswith("/"):
        return DestinationUrl(text=f"local:{text}", scheme="local", rest=text, path=text)
    match = _SCHEME.match(text)
    schemes = sorted(known)
    if match is None or match.group(1).lower() not in schemes:
        given = f"scheme {match.group(1)!r}" if match else "no scheme"
        raise InvalidInput(
            f"unknown backup destination {display_url(text)!r} ({given}); use an absolute "
            f"path or one of: {', '.join(s + ':' for s in schemes)}"
        )
    scheme, rest = match.group(1).lower(), match.group(2)
    if not rest.startswith("//"):
        return DestinationUrl(text=text, scheme=scheme, rest=rest)
    return _networked(text, scheme, rest)


def _networked(text: str, scheme: str, rest: str) -> DestinationUrl:
    parts = urlsplit(f"{scheme}:{rest}")
    if parts.password is not None:
        where = _PASSWORD_SETTING.get(scheme, "the settings of its [backup] section")
        raise InvalidInput(
            f"backup destination {display_url(text)!r} holds a password: URLs are shown in "
            f"logs and listings, so credentials come from the settings: put it in {where}"
        )
    if parts.query or parts.fragment:
        raise InvalidInput(
            f"backup destination {text!r}: a '?query' or '#fragment' is not understood"
        )
    return DestinationUrl(
        text=text,
        scheme=scheme,
        rest=rest,
        user=unquote(parts.username) if parts.username else None,
        host=parts.hostname or None,
        port=_port(parts, text),
        path=unquote(parts.path),
    )


def _port(parts: SplitResult, text: str) -> int | None:
    try:
        return parts.port
    except ValueError:
        raise InvalidInput(f"backup destination {text!r} has a bad port") from None


def require_host(url: DestinationUrl, what: str = "host") -> str:
    if not url.host:
        raise InvalidInput(f"backup destination {url.text!r} names no {what}")
    return url.host


def remote_folder(url: DestinationUrl) -> str:
    """The folder a networked URL names on its server: ``/path`` is absolute, ``/~/path``
    (or no path at all) is relative to the login folder."""
    path = url.path
    if path in ("", "/", "/~", "/~/"):
        return "" if path != "/" else "/"
    if path.startswith("/~/"):
        return path[3:].rstrip("/")
    return path.rstrip("/")
