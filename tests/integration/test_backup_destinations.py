"""Every backup destination against a real server on loopback, started here: S3 through
moto's server mode, SFTP through asyncssh, FTP through pyftpdlib, e-mail through
aiosmtpd, Dropbox and Google Drive through doubles speaking their documented HTTP APIs.

Each round trip puts an archive larger than one chunk (the chunk constants shrunk),
lists it, fetches identical bytes, deletes it and lists nothing.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import logging
import os
import ssl
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import asyncssh
import boto3
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword
from pyftpdlib.authorizers import DummyAuthorizer
from pyftpdlib.handlers import FTPHandler
from pyftpdlib.ioloop import IOLoop
from pyftpdlib.servers import FTPServer
from starlette.types import ASGIApp
from tests.doubles.dropbox_double import DropboxDouble
from tests.doubles.gdrive_double import CHUNK_UNIT, GoogleDriveDouble
from tests.ports import free_port
from tests.tls import self_signed_pem

from autorag.backup.destinations import (
    Destination,
    DestinationError,
    DestinationRefused,
    DestinationUnsupported,
    dropbox,
    gdrive,
    open_destination,
    put_with_retry,
    s3,
)
from autorag.backup.destinations.sftp import host_key_fingerprint
from autorag.config import BackupSettings
from autorag.errors import InvalidInput, NotFound, PayloadTooLarge

NAME = "autorag-20261204T120000Z-0123abcd.autorag-backup"
USER, PASSWORD = "backup", "s3cret-pass"
TOKEN = "sl.token-that-must-never-show"
START_TIMEOUT_S = 10.0


# -- helpers ---------------------------------------------------------------------------


def archive_file(folder: Path, size: int) -> tuple[Path, bytes]:
    data = os.urandom(size)
    path = folder / "made.autorag-backup"
    path.write_bytes(data)
    return path, data


def round_trip(dest: Destination, folder: Path, size: int) -> None:
    """put → list → get → delete → list empty, and what a missing archive raises."""
    source, data = archive_file(folder, size)
    dest.put(source, NAME)
    listed = dest.list()
    assert [(archive.name, archive.size) for archive in listed] == [(NAME, size)]
    fetched = folder / "fetched"
    dest.get(NAME, fetched)
    assert fetched.read_bytes() == data
    assert stat.S_IMODE(fetched.stat().st_mode) == 0o600
    dest.delete(NAME)
    assert dest.list() == []
    with pytest.raises(NotFound):
        dest.get(NAME, folder / "missing")
    assert not (folder / "missing").exists()
    with pytest.raises(NotFound):
        dest.delete(NAME)


def no_sleep(seconds: float) -> None:
    pass


# -- local -----------------------------------------------------------------------------


def test_local_round_trip_and_what_it_lists(tmp_path: Path) -> None:
    folder = tmp_path / "backups"
    dest = open_destination(f"local:{folder}", BackupSettings(), default_dir=tmp_path)
    round_trip(dest, tmp_path, 300_000)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    (folder / "notes.txt").write_text("not a backup")
    (folder / "elsewhere.autorag-backup").symlink_to(tmp_path / "made.autorag-backup")
    assert dest.list() == []  # neither another file nor a symlink is an archive here


# -- S3 (moto server) ------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def s3_settings(endpoint: str, secret: str = "moto-secret") -> BackupSettings:
    return BackupSettings.model_validate(
        {
            "s3": {
                "endpoint_url": endpoint,
                "region": "us-east-1",
                "access_key_id": "moto-key",
                "secret_access_key": secret,
                "addressing_style": "path",
            }
        }
    )


def test_s3_round_trip_in_parts(
    s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="moto-key",
        aws_secret_access_key="moto-secret",
    )
    client.create_bucket(Bucket="backups")
    part = 5 * 1024 * 1024  # S3's smallest part
    monkeypatch.setattr(s3, "MULTIPART_THRESHOLD", part)
    monkeypatch.setattr(s3, "MULTIPART_CHUNK", part)
    dest = open_destination(
        "s3://backups/team/nightly", s3_settings(s3_endpoint), default_dir=tmp_path
    )
    assert dest.label == "s3://backups/team/nightly"

    source, _ = archive_file(tmp_path, part + 100_000)
    dest.put(source, NAME)
    head = client.head_object(Bucket="backups", Key=f"team/nightly/{NAME}")
    assert head["ETag"].endswith('-2"')  # two parts: a multipart upload
    client.put_object(Bucket="backups", Key="team/nightly/notes.txt", Body=b"x")
    client.put_object(Bucket="backups", Key=f"team/nightly/deeper/{NAME}", Body=b"x")
    assert [archive.name for archive in dest.list()] == [NAME]
    dest.delete(NAME)

    round_trip(dest, tmp_path, 200_000)


def test_s3_refusals_are_not_retried_and_name_no_secret(
    s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore's own retries: not here
    settings = s3_settings(s3_endpoint)
    source, _ = archive_file(tmp_path, 10)
    missing = open_destination("s3://no-such-bucket/x", settings, default_dir=tmp_path)
    calls: list[str] = []
    with pytest.raises(DestinationRefused, match="NoSuchBucket"):
        put_with_retry(missing, source, NAME, sleep=no_sleep, on_retry=calls.append)
    assert calls == []
    unreachable = open_destination(
        "s3://backups", s3_settings(f"http://127.0.0.1:{free_port()}"), default_dir=tmp_path
    )
    with pytest.raises(DestinationError) as caught:
        unreachable.list()
    assert "moto-secret" not in caught.value.message


# -- SFTP (asyncssh) -------------------------------------------------------------------


class _PasswordServer(asyncssh.SSHServer):  # type: ignore[misc]
    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        return username == USER and password == PASSWORD


class SftpServer:
    """An asyncssh SFTP server on its own event loop in a thread, rooted at ``root``."""

    def __init__(self, root: Path, client_key: Any) -> None:
        self.root = root
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        authorized = asyncssh.import_authorized_keys(client_key.export_public_key().decode())

        async def listen() -> Any:
            return await asyncssh.listen(
                "127.0.0.1",
                0,
                server_factory=_PasswordServer,
                server_host_keys=[self.host_key],
                authorized_client_keys=authorized,
                sftp_factory=lambda channel: asyncssh.SFTPServer(channel, chroot=str(root)),
            )

        self._server = asyncio.run_coroutine_threadsafe(listen(), self._loop).result(
            START_TIMEOUT_S
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    def known_hosts_line(self) -> str:
        public = self.host_key.export_public_key().decode().split()
        return f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n"

    def stop(self) -> None:
        self._server.close()
        closing = asyncio.run_coroutine_threadsafe(self._server.wait_closed(), self._loop)
        closing.result(START_TIMEOUT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT_S)
        self._loop.close()


@pytest.fixture(scope="module")
def sftp_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SftpServer, Path]]:
    """The server, and a folder holding known_hosts and the client's private key."""
    keys = tmp_path_factory.mktemp("ssh")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    (keys / "id_ed25519").write_bytes(client_key.export_private_key("openssh"))
    server = SftpServer(tmp_path_factory.mktemp("sftp-root"), client_key)
    (keys / "known_hosts").write_text(server.known_hosts_line())
    yield server, keys
    server.stop()


def sftp_settings(keys: Path, **sftp: Any) -> BackupSettings:
    return BackupSettings.model_validate(
        {"sftp": {"known_hosts": keys / "known_hosts", "timeout_s": 10, **sftp}}
    )


def test_sftp_round_trip_with_a_password(
    sftp_world: tuple[SftpServer, Path], tmp_path: Path
) -> None:
    server, keys = sftp_world
    url = f"sftp://{USER}@127.0.0.1:{server.port}/srv/backups"
    dest = open_destination(url, sftp_settings(keys, password=PASSWORD), default_dir=tmp_path)
    assert dest.label == url
    round_trip(dest, tmp_path, 200_000)
    made = server.root / "srv" / "backups"
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    (made / "notes.txt").write_text("not a backup")
    assert dest.list() == []


def test_sftp_logs_in_with_a_key_file(sftp_world: tuple[SftpServer, Path], tmp_path: Path) -> None:
    server, keys = sftp_world
    settings = sftp_settings(keys, key_file=keys / "id_ed25519")
    dest = open_destination(
        f"sftp://{USER}@127.0.0.1:{server.port}/keyed", settings, default_dir=tmp_path
    )
    source, data = archive_file(tmp_path, 1000)
    dest.put(source, NAME)
    assert (server.root / "keyed" / NAME).read_bytes() == data
    dest.delete(NAME)


def test_sftp_refuses_an_unknown_host_key(
    sftp_world: tuple[SftpServer, Path], tmp_path: Path
) -> None:
    server, _ = sftp_world
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    settings = BackupSettings.model_validate({"sftp": {"known_hosts": empty, "password": PASSWORD}})
    url = f"sftp://{USER}@127.0.0.1:{server.port}/unknown"
    dest = open_destination(url, settings, default_dir=tmp_path)
    source, _ = archive_file(tmp_path, 10)
    with pytest.raises(DestinationRefused) as caught:
        put_with_retry(dest, source, NAME, sleep=no_sleep)
    fingerprint = server.host_key.get_fingerprint("sha256")
    assert fingerprint == host_key_fingerprint(server.host_key.public_data)
    assert fingerprint in caught.value.message
    assert f"127.0.0.1]:{server.port}" in caught.value.message
    assert not (server.root / "unknown").exists()  # refused before anything was sent


def test_sftp_wrong_password_is_refused_without_echoing_it(
    sftp_world: tuple[SftpServer, Path], tmp_path: Path
) -> None:
    server, keys = sftp_world
    settings = sftp_settings(keys, password="wrong-password-xyz")
    dest = open_destination(
        f"sftp://{USER}@127.0.0.1:{server.port}/x", settings, default_dir=tmp_path
    )
    with pytest.raises(DestinationRefused) as caught:
        dest.list()
    assert "wrong-password-xyz" not in caught.value.message


# -- FTP (pyftpdlib) -------------------------------------------------------------------


class FtpServer:
    """A pyftpdlib server polled in a thread until stopped, home folder ``home``; with
    ``certfile`` (a PEM holding the certificate and its key) it demands explicit TLS on
    the control and data connections."""

    def __init__(self, home: Path, certfile: Path | None = None) -> None:
        logging.getLogger("pyftpdlib").setLevel(logging.WARNING)
        self.home = home
        self.certfile = certfile
        authorizer = DummyAuthorizer()
        authorizer.add_user(USER, PASSWORD, str(home), perm="elradfmwMT")
        # No 3-second pause after a failed login (pyftpdlib's brake on guessing).
        options: dict[str, Any] = {"authorizer": authorizer, "auth_failed_timeout": 0.01}
        base: type[FTPHandler] = FTPHandler
        if certfile is not None:
            from pyftpdlib.handlers import TLS_FTPHandler

            base = TLS_FTPHandler
            options |= {
                "certfile": str(certfile),
                "tls_control_required": True,
                "tls_data_required": True,
            }
        handler = type("Handler", (base,), options)
        # An IOLoop of its own: by default pyftpdlib's servers share one, which two
        # threads must not poll at once.
        self._server = FTPServer(("127.0.0.1", 0), handler, ioloop=IOLoop())
        self.port = int(self._server.socket.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            self._server.serve_forever(timeout=0.05, blocking=False)
        self._server.close_all()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(START_TIMEOUT_S)


@pytest.fixture(scope="module")
def ftp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FtpServer]:
    server = FtpServer(tmp_path_factory.mktemp("ftp-home"))
    yield server
    server.stop()


def ftp_settings(password: str = PASSWORD) -> BackupSettings:
    return BackupSettings.model_validate({"ftp": {"password": password, "timeout_s": 10}})


def test_ftp_round_trip(ftp_server: FtpServer, tmp_path: Path) -> None:
    url = f"ftp://{USER}@127.0.0.1:{ftp_server.port}/team/backups"
    dest = open_destination(url, ftp_settings(), default_dir=tmp_path)
    round_trip(dest, tmp_path, 3 * 1024 * 1024 + 5)  # several of ftplib's blocks
    (ftp_server.home / "team" / "backups" / "notes.txt").write_text("not a backup")
    assert dest.list() == []


def test_ftp_wrong_password_is_refused_at_once(ftp_server: FtpServer, tmp_path: Path) -> None:
    url = f"ftp://{USER}@127.0.0.1:{ftp_server.port}/x"
    dest = open_destination(url, ftp_settings("not-the-password"), default_dir=tmp_path)
    source, _ = archive_file(tmp_path, 10)
    retries: list[str] = []
    with pytest.raises(DestinationRefused, match="refused the login") as caught:
        put_with_retry(dest, source, NAME, sleep=no_sleep, on_retry=retries.append)
    assert retries == []
    assert "not-the-password" not in caught.value.message


@pytest.fixture(scope="module")
def ftps_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FtpServer]:
    pytest.importorskip("OpenSSL", reason="pyftpdlib's TLS needs pyOpenSSL")
    pem = self_signed_pem(tmp_path_factory.mktemp("tls"))
    server = FtpServer(tmp_path_factory.mktemp("ftps-home"), certfile=pem)
    yield server
    server.stop()


def test_ftps_round_trip_with_a_trusted_certificate(
    ftps_server: FtpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"ftps://{USER}@127.0.0.1:{ftps_server.port}/tls"
    dest = open_destination(url, ftp_settings(), default_dir=tmp_path)
    with pytest.raises(DestinationRefused, match="certificate is not trusted"):
        dest.list()  # the system's trust store does not know this certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(ftps_server.certfile))  # a private CA's way
    round_trip(dest, tmp_path, 300_000)


# -- e-mail (aiosmtpd) -----------------------------------------------------------------


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Envelope) -> str:
        self.messages.append((list(envelope.rcpt_tos), bytes(envelope.content or b"")))
        return "250 OK"


def _authenticate(
    server: Any, session: Any, envelope: Any, mechanism: str, auth: Any
) -> AuthResult:
    ok = (
        isinstance(auth, LoginPassword)
        and auth.login == USER.encode()
        and auth.password == PASSWORD.encode()
    )
    return AuthResult(success=ok, handled=False)  # not handled: aiosmtpd answers 535


@pytest.fixture(scope="module")
def smtp_server() -> Iterator[tuple[Controller, _Inbox]]:
    inbox = _Inbox()
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=free_port(),
        authenticator=_authenticate,
        auth_require_tls=False,
    )
    controller.start()
    yield controller, inbox
    controller.stop()


def email_settings(port: int, password: str = PASSWORD, max_mb: float = 1) -> BackupSettings:
    return BackupSettings.model_validate(
        {
            "email_max_mb": max_mb,
            "smtp": {
                "host": "127.0.0.1",
                "port": port,
                "security": "none",
                "username": USER,
                "password": password,
                "sender": "autorag@example.org",
                "timeout_s": 10,
            },
        }
    )


def test_email_sends_the_archive_intact(
    smtp_server: tuple[Controller, _Inbox], tmp_path: Path
) -> None:
    controller, inbox = smtp_server
    inbox.messages.clear()
    url = "email:ops@example.org, boss@example.org"
    dest = open_destination(url, email_settings(controller.port), default_dir=tmp_path)
    assert dest.label == "email:ops@example.org,boss@example.org"
    source, data = archive_file(tmp_path, 400_000)
    dest.put(source, NAME)
    [(recipients, raw)] = inbox.messages
    assert recipients == ["ops@example.org", "boss@example.org"]
    message = email.message_from_bytes(raw, policy=email.policy.default)
    [attachment] = list(message.iter_attachments())  # type: ignore[attr-defined]
    assert attachment.get_filename() == NAME
    assert attachment.get_content() == data
    for call in (dest.list, lambda: dest.get(NAME, tmp_path / "x"), lambda: dest.delete(NAME)):
        with pytest.raises(DestinationUnsupported, match="keeps no list of what it sent"):
            call()


@pytest.mark.parametrize("security", ["starttls", "ssl"])
def test_email_over_tls(security: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pem = self_signed_pem(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(pem)
    inbox = _Inbox()
    tls = {"tls_context": server_tls, "require_starttls": True}
    if security == "ssl":  # implicit TLS: aiosmtpd cannot tell, so it must not demand it
        tls = {"ssl_context": server_tls, "auth_require_tls": False}
    controller = Controller(
        inbox, hostname="127.0.0.1", port=free_port(), authenticator=_authenticate, **tls
    )
    controller.start()
    try:
        settings = email_settings(controller.port)
        settings.smtp.security = security
        dest = open_destination("email:ops@example.org", settings, default_dir=tmp_path)
        source, data = archive_file(tmp_path, 1000)
        with pytest.raises(DestinationRefused, match="not trusted"):
            dest.put(source, NAME)  # the system's trust store does not know this certificate
        monkeypatch.setenv("SSL_CERT_FILE", str(pem))  # how a private CA is trusted
        dest.put(source, NAME)
    finally:
        controller.stop()
    [(_, raw)] = inbox.messages
    message = email.message_from_bytes(raw, policy=email.policy.default)
    [attachment] = list(message.iter_attachments())  # type: ignore[attr-defined]
    assert attachment.get_content() == data


def test_email_refuses_a_large_archive_before_connecting(
    smtp_server: tuple[Controller, _Inbox], tmp_path: Path
) -> None:
    closed = free_port()  # nothing listens: connecting would fail differently
    dest = open_destination(
        "email:ops@example.org", email_settings(closed, max_mb=0.1), default_dir=tmp_path
    )
    source, _ = archive_file(tmp_path, 200_000)
    with pytest.raises(PayloadTooLarge, match="email_max_mb"):
        put_with_retry(dest, source, NAME, sleep=no_sleep)


def test_email_wrong_password_is_refused(
    smtp_server: tuple[Controller, _Inbox], tmp_path: Path
) -> None:
    controller, _ = smtp_server
    settings = email_settings(controller.port, password="bad-smtp-password")
    dest = open_destination("email:ops@example.org", settings, default_dir=tmp_path)
    source, _ = archive_file(tmp_path, 100)
    with pytest.raises(DestinationRefused) as caught:
        dest.put(source, NAME)
    assert "bad-smtp-password" not in caught.value.message


# -- Dropbox (double) ------------------------------------------------------------------


@pytest.fixture(scope="module")
def dropbox_double(serve_asgi: Callable[[ASGIApp], str]) -> tuple[DropboxDouble, str]:
    double = DropboxDouble(TOKEN)
    return double, serve_asgi(double.app)


def dropbox_settings(base_url: str, token: str = TOKEN) -> BackupSettings:
    return BackupSettings.model_validate(
        {"dropbox": {"access_token": token, "api_url": base_url, "content_url": base_url}}
    )


@pytest.fixture()
def small_cloud_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dropbox, "UPLOAD_CHUNK", 100_000)
    monkeypatch.setattr(gdrive, "UPLOAD_CHUNK", 2 * CHUNK_UNIT)


@pytest.mark.usefixtures("small_cloud_chunks")
def test_dropbox_round_trip_through_an_upload_session(
    dropbox_double: tuple[DropboxDouble, str], tmp_path: Path
) -> None:
    double, base_url = dropbox_double
    double.reset()
    dest = open_destination(
        "dropbox:/Apps/AutoRAG/", dropbox_settings(base_url), default_dir=tmp_path
    )
    assert dest.label == "dropbox:/Apps/AutoRAG"
    round_trip(dest, tmp_path, 250_000)
    uploads = [call for call in double.calls if call[0].startswith("upload")]
    assert [endpoint for endpoint, _ in uploads] == [
        "upload_session/start",
        "upload_session/append_v2",
        "upload_session/finish",
    ]
    finish = uploads[-1][1]
    assert finish["cursor"]["offset"] == 200_000
    assert finish["commit"] == {
        "path": f"/Apps/AutoRAG/{NAME}",
        "mode": "overwrite",
        "autorename": False,
        "mute": True,
    }


@pytest.mark.usefixtures("small_cloud_chunks")
def test_dropbox_small_upload_and_paged_listing(
    dropbox_double: tuple[DropboxDouble, str], tmp_path: Path
) -> None:
    double, base_url = dropbox_double
    double.reset()
    dest = open_destination("dropbox:/b", dropbox_settings(base_url), default_dir=tmp_path)
    assert dest.list() == []  # the folder does not exist yet
    source, _ = archive_file(tmp_path, 1000)
    names = [f"autorag-2026120{day}T000000Z-00000000.autorag-backup" for day in range(1, 6)]
    for name in names:
        dest.put(source, name)
    double.add_file("/b/notes.txt", b"x")
    double.add_file("/b/sub/other.autorag-backup", b"x")
    assert sorted(archive.name for archive in dest.list()) == names  # over three pages
    assert "list_folder/continue" in double.endpoints()
    assert double.endpoints().count("upload") == 5


def test_dropbox_retries_a_failing_service_and_not_a_bad_token(
    dropbox_double: tuple[DropboxDouble, str], tmp_path: Path
) -> None:
    double, base_url = dropbox_double
    double.reset()
    dest = open_destination("dropbox:/r", dropbox_settings(base_url), default_dir=tmp_path)
    source, data = archive_file(tmp_path, 1000)
    double.fail_next = 2
    notes: list[str] = []
    sleeps: list[float] = []
    assert put_with_retry(dest, source, NAME, sleep=sleeps.append, on_retry=notes.append) == 3
    assert sleeps == [1, 2] and len(notes) == 2 and "HTTP 503" in notes[0]
    assert double.files[f"/r/{NAME}".lower()].data == data

    expired = open_destination(
        "dropbox:/r", dropbox_settings(base_url, "expired-tok"), default_dir=tmp_path
    )
    with pytest.raises(DestinationRefused, match="access_token") as caught:
        put_with_retry(expired, source, NAME, sleep=sleeps.append)
    assert sleeps == [1, 2]
    assert "expired-tok" not in caught.value.message  # the double echoes it; scrubbed


# -- Google Drive (double) -------------------------------------------------------------


@pytest.fixture(scope="module")
def gdrive_double(serve_asgi: Callable[[ASGIApp], str]) -> tuple[GoogleDriveDouble, str]:
    double = GoogleDriveDouble(TOKEN)
    return double, serve_asgi(double.app)


def gdrive_settings(base_url: str, token: str = TOKEN) -> BackupSettings:
    return BackupSettings.model_validate({"gdrive": {"access_token": token, "api_url": base_url}})


@pytest.mark.usefixtures("small_cloud_chunks")
def test_gdrive_round_trip_in_chunks(
    gdrive_double: tuple[GoogleDriveDouble, str], tmp_path: Path
) -> None:
    double, base_url = gdrive_double
    double.reset()
    dest = open_destination("gdrive:folder_Id-1", gdrive_settings(base_url), default_dir=tmp_path)
    assert dest.label == "gdrive:folder_Id-1"
    size = 5 * CHUNK_UNIT + 1234
    round_trip(dest, tmp_path, size)
    chunk = 2 * CHUNK_UNIT
    assert double.ranges == [
        f"bytes 0-{chunk - 1}/{size}",
        f"bytes {chunk}-{2 * chunk - 1}/{size}",
        f"bytes {2 * chunk}-{size - 1}/{size}",
    ]


@pytest.mark.usefixtures("small_cloud_chunks")
def test_gdrive_resumes_from_the_range_drive_holds(
    gdrive_double: tuple[GoogleDriveDouble, str], tmp_path: Path
) -> None:
    double, base_url = gdrive_double
    double.reset()
    double.hold_back_once = True
    dest = open_destination("gdrive:f", gdrive_settings(base_url), default_dir=tmp_path)
    size = 3 * CHUNK_UNIT
    source, data = archive_file(tmp_path, size)
    dest.put(source, NAME)
    chunk = 2 * CHUNK_UNIT
    assert double.ranges == [
        f"bytes 0-{chunk - 1}/{size}",  # Drive kept only the first 256 KiB of it
        f"bytes {CHUNK_UNIT}-{size - 1}/{size}",
    ]
    [stored] = double.files.values()
    assert stored.data == data and stored.parents == ["f"]


@pytest.mark.usefixtures("small_cloud_chunks")
def test_gdrive_lists_pages_replaces_and_retries(
    gdrive_double: tuple[GoogleDriveDouble, str], tmp_path: Path
) -> None:
    double, base_url = gdrive_double
    double.reset()
    dest = open_destination("gdrive:f", gdrive_settings(base_url), default_dir=tmp_path)
    source, _ = archive_file(tmp_path, 10)
    names = [f"autorag-2026120{day}T000000Z-00000000.autorag-backup" for day in range(1, 6)]
    for name in names:
        dest.put(source, name)
    double.add_file("notes.autorag-backup.txt", "f", b"x")
    double.add_file(NAME, "another-folder", b"x")
    assert sorted(archive.name for archive in dest.list()) == names  # over three pages
    quoted = "it's odd.autorag-backup"  # a quote, escaped in Drive's query
    dest.put(source, quoted)
    dest.get(quoted, tmp_path / "odd")
    dest.delete(quoted)

    double.fail_next = 2
    sleeps: list[float] = []
    assert put_with_retry(dest, source, names[0], sleep=sleeps.append) == 3
    assert sleeps == [1, 2]
    assert [archive.name for archive in dest.list()].count(names[0]) == 1  # replaced

    expired = open_destination(
        "gdrive:f", gdrive_settings(base_url, "expired"), default_dir=tmp_path
    )
    with pytest.raises(DestinationRefused, match="access_token"):
        put_with_retry(expired, source, NAME, sleep=sleeps.append)
    assert sleeps == [1, 2]


def test_cloud_destinations_need_a_token(tmp_path: Path) -> None:
    for url in ("dropbox:/x", "gdrive:abc"):
        with pytest.raises(InvalidInput, match="access_token"):
            open_destination(url, BackupSettings(), default_dir=tmp_path)
