"""``ftp://[user@]host[:port]/path`` and ``ftps://…`` (explicit TLS: ``AUTH TLS``, then
``PROT P`` so the archive itself travels encrypted too) through ftplib.

The server's certificate is checked against the system's trust store (``SSL_CERT_FILE``
names another, for a private CA). The login: the URL's user, else ``[backup.ftp]
username``, else anonymous; the password from ``[backup.ftp] password``. ``/~/path``
(or no path) is relative to the login folder. Archives go up under a temporary name,
streamed, and are renamed into place.
"""

from __future__ import annotations

import contextlib
import ftplib
import secrets
import ssl
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from autorag.backup.destinations.base import (
    COPY_BUFFER,
    DestinationError,
    DestinationRefused,
    StoredArchive,
    check_name,
    is_archive_name,
    oldest_first,
    receiving,
    scrub,
)
from autorag.backup.destinations.urls import DestinationUrl, remote_folder, require_host
from autorag.config import BackupSettings, FtpSettings
from autorag.errors import AutoragError, NotFound

DEFAULT_PORT = 21
_T = TypeVar("_T")
_LOGIN_REFUSED = ("530", "532")
_NO_SUCH_FILE = "550"


class _ReusingFTP_TLS(ftplib.FTP_TLS):
    """FTP_TLS whose data connections resume the control connection's TLS session, as
    many servers demand (vsftpd's require_ssl_reuse) so no one else can take them over."""

    def ntransfercmd(self, cmd: str, rest: int | str | None = None) -> tuple[Any, int | None]:
        conn, size = ftplib.FTP.ntransfercmd(self, cmd, rest)
        if self._prot_p:  # type: ignore[attr-defined]
            session = self.sock.session  # type: ignore[union-attr]
            conn = self.context.wrap_socket(conn, server_hostname=self.host, session=session)
        return conn, size


class FtpDestination:
    def __init__(
        self,
        host: str,
        port: int,
        user: str | None,
        folder: str,
        settings: FtpSettings,
        *,
        tls: bool,
        label: str,
    ) -> None:
        self.host = host
        self.port = port
        self.user = user or settings.username or "anonymous"
        self.folder = folder
        self.tls = tls
        self.label = label
        self._settings = settings

    def put(self, local: Path, name: str) -> None:
        check_name(name)
        temp = f".{name}.{secrets.token_hex(4)}.part"

        def upload(ftp: ftplib.FTP) -> None:
            self._enter_folder(ftp, create=True)
            try:
                with local.open("rb") as source:
                    ftp.storbinary(f"STOR {temp}", source, blocksize=COPY_BUFFER)
                ftp.rename(temp, name)
            except BaseException:
                with contextlib.suppress(Exception):  # best effort; the upload's error wins
                    ftp.delete(temp)
                raise

        self._session(f"upload {name}", upload)

    def list(self) -> list[StoredArchive]:
        def collect(ftp: ftplib.FTP) -> list[StoredArchive]:
            try:
                self._enter_folder(ftp, create=False)
            except ftplib.error_perm as exc:
                if str(exc).startswith(_NO_SUCH_FILE):
                    return []  # no folder yet: nothing was ever put here
                raise
            return _listing(ftp)

        return oldest_first(self._session("list", collect))

    def get(self, name: str, local: Path) -> None:
        check_name(name)

        def fetch(ftp: ftplib.FTP) -> None:
            self._enter_folder(ftp, create=False)
            with receiving(local) as sink:
                ftp.retrbinary(f"RETR {name}", sink.write, blocksize=COPY_BUFFER)

        self._session(f"download {name}", fetch, missing=name)

    def delete(self, name: str) -> None:
        check_name(name)

        def remove(ftp: ftplib.FTP) -> None:
            self._enter_folder(ftp, create=False)
            ftp.delete(name)

        self._session(f"delete {name}", remove, missing=name)

    def _enter_folder(self, ftp: ftplib.FTP, *, create: bool) -> None:
        if not self.folder:
            return
        try:
            ftp.cwd(self.folder)
        except ftplib.error_perm:
            if not create:
                raise
            self._make_folder(ftp)
            ftp.cwd(self.folder)

    def _make_folder(self, ftp: ftplib.FTP) -> None:
        path = "/" if self.folder.startswith("/") else ""
        for part in self.folder.strip("/").split("/"):
            path = f"{path}{part}"
            with contextlib.suppress(ftplib.error_perm):  # it exists (or MKD says why next)
                ftp.mkd(path)
            path += "/"

    def _session(
        self, what: str, action: Callable[[ftplib.FTP], _T], *, missing: str | None = None
    ) -> _T:
        try:
            with self._connected() as ftp:
                return action(ftp)
        except AutoragError:
            raise
        except ftplib.error_perm as exc:
            raise self._refusal(what, exc, missing) from None
        except ssl.SSLCertVerificationError as exc:
            raise DestinationRefused(
                f"{self.label}: the server's TLS certificate is not trusted "
                f"({self._scrub(str(exc))}); a private CA's file can be named in SSL_CERT_FILE"
            ) from None
        except (ftplib.Error, OSError, EOFError) as exc:
            reason = self._scrub(f"{type(exc).__name__}: {exc}")
            raise DestinationError(f"{self.label}: {what} failed ({reason})") from None

    def _refusal(self, what: str, exc: ftplib.error_perm, missing: str | None) -> AutoragError:
        reason = self._scrub(str(exc))
        if missing is not None and reason.startswith(_NO_SUCH_FILE):
            return NotFound(f"no backup {missing!r} in {self.label} ({reason})")
        if reason.startswith(_LOGIN_REFUSED):
            return DestinationRefused(
                f"{self.label} refused the login of {self.user!r} ({reason}): check [backup.ftp] "
                "password"
            )
        return DestinationRefused(f"{self.label} refused to {what} ({reason})")

    @contextlib.contextmanager
    def _connected(self) -> Iterator[ftplib.FTP]:
        timeout = self._settings.timeout_s
        ftp = (
            _ReusingFTP_TLS(context=ssl.create_default_context(), timeout=timeout)
            if self.tls
            else ftplib.FTP(timeout=timeout)
        )
        try:
            ftp.connect(self.host, self.port)
            password = self._settings.password
            ftp.login(self.user, password.get_secret_value() if password else "")
            if isinstance(ftp, ftplib.FTP_TLS):
                ftp.prot_p()
            yield ftp
            with contextlib.suppress(ftplib.Error, OSError, EOFError):
                ftp.quit()
        finally:
            ftp.close()

    def _scrub(self, text: str) -> str:
        password = self._settings.password
        return scrub(text, [password.get_secret_value() if password else None])


def _listing(ftp: ftplib.FTP) -> list[StoredArchive]:
    """The archives in the current folder: MLSD's facts, else NLST with SIZE and MDTM
    (servers older than RFC 3659)."""
    try:
        entries = list(ftp.mlsd(facts=["type", "size", "modify"]))
    except ftplib.error_perm:
        return [_described(ftp, name) for name in ftp.nlst() if is_archive_name(name)]
    return [
        StoredArchive(name, int(facts.get("size", 0)), _ftp_time(facts.get("modify", "")))
        for name, facts in entries
        if facts.get("type") == "file" and is_archive_name(name)
    ]


def _described(ftp: ftplib.FTP, name: str) -> StoredArchive:
    size = ftp.size(name) or 0
    modified = ftp.sendcmd(f"MDTM {name}").split()[-1]
    return StoredArchive(name, size, _ftp_time(modified))


def _ftp_time(value: str) -> datetime:
    """RFC 3659's ``YYYYMMDDHHMMSS[.sss]`` (UTC) as a naive UTC time."""
    try:
        return datetime.strptime(value[:14], "%Y%m%d%H%M%S")
    except ValueError:
        return datetime(1970, 1, 1)  # a server that gives no time: listed, sorted first


def _open(url: DestinationUrl, settings: BackupSettings, *, tls: bool) -> FtpDestination:
    return FtpDestination(
        require_host(url),
        url.port or DEFAULT_PORT,
        url.user,
        remote_folder(url),
        settings.ftp,
        tls=tls,
        label=url.text,
    )


def open_ftp(url: DestinationUrl, settings: BackupSettings, default_dir: Path) -> FtpDestination:
    return _open(url, settings, tls=False)


def open_ftps(url: DestinationUrl, settings: BackupSettings, default_dir: Path) -> FtpDestination:
    return _open(url, settings, tls=True)
