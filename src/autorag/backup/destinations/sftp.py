"""``sftp://user@host[:port]/path`` through paramiko; ``/~/path`` is relative to the login
folder.

The server's host key must already be in known_hosts (``[backup.sftp] known_hosts``,
else ``~/.ssh/known_hosts``): an unknown key is refused, naming the host and the key's
fingerprint so a person can check it and add it — a backup sent to whoever answers
on that address would hand them the archive. Logs in with ``[backup.sftp] password``
or ``key_file``; with neither, the SSH agent and the usual ~/.ssh keys.

Each call opens its own connection (a backup makes a handful of calls a day).
paramiko is imported on first use.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from autorag.backup.destinations.base import (
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
from autorag.config import BackupSettings, SftpSettings
from autorag.errors import AutoragError, NotFound

DEFAULT_PORT = 22
FOLDER_MODE = 0o700
_T = TypeVar("_T")


class SftpDestination:
    def __init__(
        self,
        host: str,
        port: int,
        user: str | None,
        folder: str,
        settings: SftpSettings,
        label: str,
    ) -> None:
        self.host = host
        self.port = port
        self.user = user
        self.folder = folder
        self.label = label
        self._settings = settings

    def put(self, local: Path, name: str) -> None:
        target = self._remote(name)
        temp = self._join(f".{name}.{secrets.token_hex(4)}.part")

        def upload(sftp: Any) -> None:
            self._make_folder(sftp)
            try:
                sftp.put(str(local), temp)
                _replace(sftp, temp, target)
            except BaseException:
                _remove_quietly(sftp, temp)
                raise

        self._session(f"upload {name}", upload)

    def list(self) -> list[StoredArchive]:
        def collect(sftp: Any) -> list[StoredArchive]:
            try:
                entries = sftp.listdir_attr(self.folder or ".")
            except FileNotFoundError:
                return []
            return [_archive(entry) for entry in entries if _is_archive(entry)]

        return oldest_first(self._session("list", collect))

    def get(self, name: str, local: Path) -> None:
        remote = self._remote(name)

        def fetch(sftp: Any) -> None:
            if not stat.S_ISREG(sftp.lstat(remote).st_mode or 0):
                raise NotFound(f"{name!r} in {self.label} is not a regular file")
            with receiving(local) as sink:
                sftp.getfo(remote, sink)

        self._session(f"download {name}", fetch, missing=name)

    def delete(self, name: str) -> None:
        remote = self._remote(name)
        self._session(f"delete {name}", lambda sftp: sftp.remove(remote), missing=name)

    def _remote(self, name: str) -> str:
        return self._join(check_name(name))

    def _join(self, name: str) -> str:
        return f"{self.folder.rstrip('/')}/{name}" if self.folder else name

    def _make_folder(self, sftp: Any) -> None:
        """Create the folder and its parents when missing (0700: the owner's alone)."""
        if not self.folder or self.folder == "/":
            return
        path = "/" if self.folder.startswith("/") else ""
        for part in self.folder.strip("/").split("/"):
            path = f"{path}{part}"
            try:
                sftp.stat(path)
            except FileNotFoundError:
                sftp.mkdir(path, FOLDER_MODE)
            path += "/"

    def _session(self, what: str, action: Callable[[Any], _T], *, missing: str | None = None) -> _T:
        import paramiko

        try:
            with self._sftp() as sftp:
                return action(sftp)
        except AutoragError:
            raise
        except FileNotFoundError:
            if missing is None:
                raise DestinationRefused(f"{self.label}: {what}: no such folder") from None
            raise NotFound(f"no backup {missing!r} in {self.label}") from None
        except PermissionError as exc:
            raise DestinationRefused(
                f"{self.label} refused to {what}: {self._scrub(str(exc))}"
            ) from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise self._error(what, exc) from None

    def _error(self, what: str, exc: Exception) -> AutoragError:
        import paramiko

        reason = self._scrub(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, paramiko.AuthenticationException):
            return DestinationRefused(
                f"{self.label} refused the login ({reason}): check [backup.sftp] password or "
                "key_file"
            )
        if isinstance(exc, paramiko.BadHostKeyException):
            return DestinationRefused(
                f"{self.label}: the server's host key is not the one in known_hosts: it "
                f"changed, or someone else answers on {self.host}:{self.port} ({reason})"
            )
        return DestinationError(f"{self.label}: {what} failed ({reason})")

    @contextmanager
    def _sftp(self) -> Iterator[Any]:
        import paramiko

        client = paramiko.SSHClient()
        try:
            known_hosts = self._known_hosts()
            if known_hosts.is_file():
                client.load_host_keys(str(known_hosts))
            client.set_missing_host_key_policy(_refuse_unknown_keys(known_hosts))
            password = self._settings.password
            key_file = self._settings.key_file
            client.connect(
                self.host,
                port=self.port,
                username=self.user,
                password=password.get_secret_value() if password else None,
                key_filename=str(key_file.expanduser()) if key_file else None,
                timeout=self._settings.timeout_s,
                banner_timeout=self._settings.timeout_s,
                auth_timeout=self._settings.timeout_s,
                allow_agent=password is None and key_file is None,
                look_for_keys=password is None and key_file is None,
            )
            sftp = client.open_sftp()
            sftp.get_channel().settimeout(self._settings.timeout_s)
            yield sftp
        finally:
            client.close()

    def _known_hosts(self) -> Path:
        path = self._settings.known_hosts or Path("~/.ssh/known_hosts")
        return path.expanduser()

    def _scrub(self, text: str) -> str:
        password = self._settings.password
        return scrub(text, [password.get_secret_value() if password else None])


def _refuse_unknown_keys(known_hosts: Path) -> Any:
    """A paramiko host-key policy that refuses a key known_hosts does not hold."""
    import paramiko

    class RefuseUnknown(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]
        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            kind, fingerprint = key.get_name(), host_key_fingerprint(key.asbytes())
            raise DestinationRefused(
                f"the SFTP server {hostname} is not in {known_hosts}: it offers the host key "
                f"{kind} {fingerprint}. If that is the server's key (ask its administrator, "
                f"or compare with `ssh-keygen -lf` on the server), add it to {known_hosts} "
                "(e.g. with ssh-keyscan) or name another file in [backup.sftp] known_hosts"
            )

    return RefuseUnknown()


def host_key_fingerprint(blob: bytes) -> str:
    """A public key's fingerprint as OpenSSH shows it: ``SHA256:<base64, unpadded>``."""
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def _is_archive(entry: Any) -> bool:
    return is_archive_name(entry.filename) and stat.S_ISREG(entry.st_mode or 0)


def _archive(entry: Any) -> StoredArchive:
    modified = datetime.fromtimestamp(entry.st_mtime or 0, UTC).replace(tzinfo=None)
    return StoredArchive(entry.filename, int(entry.st_size or 0), modified)


def _replace(sftp: Any, source: str, target: str) -> None:
    """Rename ``source`` over ``target``: atomically where the server has OpenSSH's
    posix-rename extension, else by removing the old archive first (plain SFTP's rename
    refuses to replace)."""
    try:
        sftp.posix_rename(source, target)
    except OSError:
        _remove_quietly(sftp, target)
        sftp.rename(source, target)


def _remove_quietly(sftp: Any, path: str) -> None:
    # Best effort: the upload may have failed before the file existed, or with the link
    # itself; the error worth reporting is the upload's, raised by the caller.
    with contextlib.suppress(Exception):
        sftp.remove(path)


def open_sftp(url: DestinationUrl, settings: BackupSettings, default_dir: Path) -> SftpDestination:
    host = require_host(url)
    folder = remote_folder(url)
    return SftpDestination(
        host, url.port or DEFAULT_PORT, url.user, folder, settings.sftp, url.text
    )
