"""Backup destination URLs, archive names and the retry policy: what is accepted, what is
refused and how it is said. Opening a destination connects to nothing, so no server is
needed here (tests/integration/test_backup_destinations.py talks to real ones)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autorag.backup.destinations import (
    DESTINATIONS,
    DestinationError,
    DestinationRefused,
    StoredArchive,
    check_name,
    open_destination,
    put_with_retry,
)
from autorag.backup.destinations.base import is_archive_name, scrub
from autorag.backup.destinations.dropbox import DropboxDestination
from autorag.backup.destinations.email import EmailDestination
from autorag.backup.destinations.ftp import FtpDestination
from autorag.backup.destinations.gdrive import GoogleDriveDestination
from autorag.backup.destinations.local import LocalDestination
from autorag.backup.destinations.s3 import S3Destination
from autorag.backup.destinations.sftp import SftpDestination
from autorag.config import BackupSettings
from autorag.errors import InvalidInput

DEFAULT = Path("/var/backups/default")
SETTINGS = BackupSettings.model_validate(
    {
        "smtp": {"host": "mail.example.org"},
        "ftp": {"username": "from-settings"},
        "dropbox": {"access_token": "t"},
        "gdrive": {"access_token": "t"},
    }
)
NAME = "autorag-20261204T120000Z-0123abcd.autorag-backup"


def opened(url: str, settings: BackupSettings = SETTINGS) -> Any:
    return open_destination(url, settings, default_dir=DEFAULT)


def test_local_paths() -> None:
    plain = opened("/srv/backups")
    assert isinstance(plain, LocalDestination)
    assert plain.folder == Path("/srv/backups") and plain.label == "local:/srv/backups"
    assert opened("local:/srv/backups").folder == Path("/srv/backups")
    assert opened("local:").folder == DEFAULT
    assert opened("LOCAL:/x").folder == Path("/x")
    with pytest.raises(InvalidInput, match="absolute"):
        opened("local:relative/folder")


@pytest.mark.parametrize("url", ["backups", "C:\\backups", "webdav://host/x", "", "ftp"])
def test_an_unknown_destination_names_the_known_ones(url: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        opened(url)
    for scheme in DESTINATIONS:
        assert f"{scheme}:" in caught.value.message


@pytest.mark.parametrize(
    ("url", "setting"),
    [
        ("sftp://me:hunter2@host/x", "[backup.sftp] password"),
        ("ftp://me:hunter2@host/x", "[backup.ftp] password"),
        ("ftps://me:hunter2@host:990/x", "[backup.ftp] password"),
        ("s3://KEY:hunter2@bucket/x", "[backup.s3] secret_access_key"),
    ],
)
def test_a_password_in_a_url_is_refused_without_echoing_it(url: str, setting: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        opened(url)
    message = caught.value.message
    assert "hunter2" not in message
    assert "credentials come from the settings" in message and setting in message


def test_urls_with_queries_or_bad_ports_are_refused() -> None:
    with pytest.raises(InvalidInput, match="query"):
        opened("s3://bucket/x?region=eu")
    with pytest.raises(InvalidInput, match="port"):
        opened("sftp://me@host:99999/x")
    with pytest.raises(InvalidInput, match="host"):
        opened("sftp:///x")


def test_s3_bucket_and_prefix() -> None:
    root = opened("s3://bucket")
    assert isinstance(root, S3Destination)
    assert (root.bucket, root.prefix, root.label) == ("bucket", "", "s3://bucket")
    nested = opened("s3://bucket/team/nightly/")
    assert nested.prefix == "team/nightly/"


def test_sftp_parts() -> None:
    dest = opened("sftp://alice@backup.example.org/srv/autorag")
    assert isinstance(dest, SftpDestination)
    assert (dest.host, dest.port, dest.user, dest.folder) == (
        "backup.example.org",
        22,
        "alice",
        "/srv/autorag",
    )
    assert opened("sftp://alice@h:2222/~/backups").folder == "backups"  # the login folder's
    assert opened("sftp://h:2222").folder == ""
    assert opened("sftp://h/").folder == "/"


def test_ftp_parts_and_user() -> None:
    dest = opened("ftp://bob@files.example.org:2121/backups")
    assert isinstance(dest, FtpDestination)
    assert (dest.host, dest.port, dest.user, dest.folder, dest.tls) == (
        "files.example.org",
        2121,
        "bob",
        "/backups",
        False,
    )
    assert opened("ftps://files.example.org/b").tls is True
    assert opened("ftps://files.example.org/b").user == "from-settings"
    assert opened("ftp://h/b", BackupSettings()).user == "anonymous"


def test_email_addresses() -> None:
    dest = opened("email:ops@example.org, boss@example.org")
    assert isinstance(dest, EmailDestination)
    assert dest.recipients == ("ops@example.org", "boss@example.org")
    assert dest.label == "email:ops@example.org,boss@example.org"
    for bad in (
        "email:",
        "email://ops@example.org",
        "email:nobody",
        "email:a@b.c\r\nBcc: evil@x.y",
        "email:a b@c.d",
    ):
        with pytest.raises(InvalidInput):
            opened(bad)
    with pytest.raises(InvalidInput, match=r"\[backup.smtp\] host"):
        opened("email:ops@example.org", BackupSettings())


def test_dropbox_folders() -> None:
    dest = opened("dropbox:/Apps/AutoRAG/")
    assert isinstance(dest, DropboxDestination)
    assert (dest.folder, dest.label) == ("/Apps/AutoRAG", "dropbox:/Apps/AutoRAG")
    assert opened("dropbox:").folder == ""  # the root, as Dropbox's API spells it
    assert opened("dropbox:/").label == "dropbox:/"
    with pytest.raises(InvalidInput):
        opened("dropbox:/a/../b")


def test_gdrive_folder_ids() -> None:
    dest = opened("gdrive:1AbC_d-E")
    assert isinstance(dest, GoogleDriveDestination)
    assert dest.folder_id == "1AbC_d-E"
    for bad in ("gdrive:", "gdrive:a' or name contains '", "gdrive:a/b"):
        with pytest.raises(InvalidInput, match="folder id"):
            opened(bad)


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "a/b", "..\\x", "a\\b", "x..y", "a\nb", "a\x00b", " lead", "x" * 201],
)
def test_bad_archive_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput, match="bad archive name"):
        check_name(name)


def test_bad_names_are_refused_by_every_call(tmp_path: Path) -> None:
    dest = LocalDestination(tmp_path)
    (tmp_path / "secret").write_text("outside")
    with pytest.raises(InvalidInput):
        dest.get("../secret", tmp_path / "out")
    with pytest.raises(InvalidInput):
        dest.delete("../secret")
    with pytest.raises(InvalidInput):
        dest.put(tmp_path / "secret", "../elsewhere")
    assert (tmp_path / "secret").exists()


def test_local_adopt_moves_the_file_in(tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.write_bytes(b"sealed")
    dest = LocalDestination(tmp_path / "backups")
    dest.adopt(made, NAME)
    assert not made.exists()
    assert (tmp_path / "backups" / NAME).read_bytes() == b"sealed"
    assert [archive.name for archive in dest.list()] == [NAME]


def test_what_counts_as_an_archive() -> None:
    assert is_archive_name(NAME)
    assert check_name(NAME) == NAME
    assert not is_archive_name("notes.txt")
    assert not is_archive_name(".autorag-backup.part")
    assert not is_archive_name("a/b.autorag-backup")


def test_scrub_masks_secrets_and_keeps_one_line() -> None:
    assert scrub("bad token abc123\nretry", ["abc123", None]) == "bad token *** retry"


class Flaky:
    """A destination whose put fails with the given errors, then succeeds."""

    label = "flaky:"

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.puts = 0

    def put(self, local: Path, name: str) -> None:
        self.puts += 1
        if self.errors:
            raise self.errors.pop(0)

    def list(self) -> list[StoredArchive]:
        return []

    def get(self, name: str, local: Path) -> None:
        raise NotImplementedError

    def delete(self, name: str) -> None:
        raise NotImplementedError


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    path = tmp_path / NAME
    path.write_bytes(b"sealed")
    return path


def test_put_with_retry_backs_off_then_succeeds(archive: Path) -> None:
    dest = Flaky(DestinationError("down"), DestinationError("still down"))
    sleeps: list[float] = []
    notes: list[str] = []
    attempts = put_with_retry(dest, archive, NAME, sleep=sleeps.append, on_retry=notes.append)
    assert (attempts, dest.puts, sleeps) == (3, 3, [1, 2])
    assert "attempt 1 of 3 failed (down); retrying in 1 s" in notes[0]


def test_put_with_retry_gives_up_after_its_attempts(archive: Path) -> None:
    dest = Flaky(*(DestinationError(f"down {n}") for n in range(5)))
    sleeps: list[float] = []
    with pytest.raises(DestinationError, match="after 3 attempts: down 2"):
        put_with_retry(dest, archive, NAME, sleep=sleeps.append)
    assert dest.puts == 3 and sleeps == [1, 2]


@pytest.mark.parametrize(
    "error", [DestinationRefused("bad credentials"), InvalidInput("bad name"), OSError("disk")]
)
def test_put_with_retry_does_not_retry_what_will_fail_again(
    error: Exception, archive: Path
) -> None:
    dest = Flaky(error)
    sleeps: list[float] = []
    with pytest.raises(type(error)):
        put_with_retry(dest, archive, NAME, sleep=sleeps.append)
    assert dest.puts == 1 and sleeps == []


def test_put_with_retry_refuses_a_missing_file(tmp_path: Path) -> None:
    dest = Flaky()
    with pytest.raises(InvalidInput, match="no archive to upload"):
        put_with_retry(dest, tmp_path / "gone", NAME)
    assert dest.puts == 0
