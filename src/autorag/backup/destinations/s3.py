"""``s3://bucket/prefix``: Amazon S3, or any S3-compatible store when
``[backup.s3] endpoint_url`` is set (MinIO, Backblaze B2, Wasabi, Cloudflare R2…).

Archives above ``MULTIPART_THRESHOLD`` go up in parts of ``MULTIPART_CHUNK`` through
boto3's transfer manager: a few parts in memory at a time, whatever the archive's size
(s3transfer enlarges the parts of a huge file to stay within S3's 10,000).

boto3 is imported on first use: loading the destination registry stays cheap.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorag.backup.destinations.base import (
    DestinationError,
    DestinationRefused,
    StoredArchive,
    check_name,
    is_archive_name,
    naive_utc,
    oldest_first,
    receiving,
    scrub,
)
from autorag.backup.destinations.urls import DestinationUrl, require_host
from autorag.config import BackupSettings, S3Settings
from autorag.errors import AutoragError, NotFound

if TYPE_CHECKING:
    from collections.abc import Callable

MULTIPART_THRESHOLD = 16 * 1024 * 1024
MULTIPART_CHUNK = 16 * 1024 * 1024
MAX_CONCURRENT_PARTS = 4  # the parts in memory at once (× MULTIPART_CHUNK)
# S3's answers that no retry will change: credentials, permission, a missing bucket.
_REFUSALS = {
    "AccessDenied",
    "AllAccessDisabled",
    "ExpiredToken",
    "InvalidAccessKeyId",
    "InvalidBucketName",
    "InvalidToken",
    "NoSuchBucket",
    "SignatureDoesNotMatch",
    "AuthorizationHeaderMalformed",
}
_MISSING = {"NoSuchKey", "404", "NotFound"}


class S3Destination:
    def __init__(self, bucket: str, prefix: str, settings: S3Settings, label: str) -> None:
        self.bucket = bucket
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        self.label = label
        self._settings = settings
        self._client: Any = None

    def put(self, local: Path, name: str) -> None:
        key = self._key(name)

        def upload(s3: Any) -> None:
            # upload_fileobj, not upload_file: the latter hides S3's error code in a
            # message of its own, and the code says whether a retry can help.
            with local.open("rb") as source:
                s3.upload_fileobj(source, self.bucket, key, Config=_transfer_config())

        self._call(f"upload {name}", upload)

    def list(self) -> list[StoredArchive]:
        def collect(s3: Any) -> builtins.list[StoredArchive]:
            pages = s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix, Delimiter="/"
            )
            return [archive for page in pages for archive in self._archives(page)]

        return oldest_first(self._call("list", collect))

    def get(self, name: str, local: Path) -> None:
        key = self._key(name)

        def fetch(s3: Any) -> None:
            with receiving(local) as sink:
                s3.download_fileobj(self.bucket, key, sink, Config=_transfer_config())

        self._call(f"download {name}", fetch, missing=name)

    def delete(self, name: str) -> None:
        key = self._key(name)

        def remove(s3: Any) -> None:
            # S3 answers a DELETE of a missing key with success: ask first, to say so.
            s3.head_object(Bucket=self.bucket, Key=key)
            s3.delete_object(Bucket=self.bucket, Key=key)

        self._call(f"delete {name}", remove, missing=name)

    def _key(self, name: str) -> str:
        return self.prefix + check_name(name)

    def _archives(self, page: dict[str, Any]) -> builtins.list[StoredArchive]:
        archives = []
        for item in page.get("Contents", []):
            name = str(item["Key"])[len(self.prefix) :]
            if is_archive_name(name):
                modified = item["LastModified"]
                archives.append(StoredArchive(name, int(item["Size"]), naive_utc(modified)))
        return archives

    def _call(self, what: str, action: Callable[[Any], Any], *, missing: str | None = None) -> Any:
        """Run ``action`` with the client, botocore's errors mapped onto ours."""
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            return action(self._s3())
        except AutoragError:
            raise
        except ClientError as exc:
            raise self._client_error(what, exc, missing) from None
        except NoCredentialsError:
            raise DestinationRefused(
                f"{self.label}: no S3 credentials: set [backup.s3] access_key_id and "
                "secret_access_key, or AWS's own (environment, ~/.aws)"
            ) from None
        except (BotoCoreError, OSError) as exc:
            raise DestinationError(
                f"{self.label}: {what} failed: {self._scrub(str(exc))}"
            ) from None

    def _client_error(self, what: str, exc: Any, missing: str | None) -> AutoragError:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        reason = self._scrub(f"{code}: {error.get('Message') or exc}")
        if missing is not None and code in _MISSING:
            return NotFound(f"no backup {missing!r} in {self.label}")
        if code in _REFUSALS:
            return DestinationRefused(f"{self.label} refused to {what} ({reason})")
        return DestinationError(f"{self.label}: {what} failed ({reason})")

    def _scrub(self, text: str) -> str:
        secret = self._settings.secret_access_key
        return scrub(text, [secret.get_secret_value() if secret else None])

    def _s3(self) -> Any:
        if self._client is None:
            self._client = _client(self._settings)
        return self._client


def _client(settings: S3Settings) -> Any:
    import boto3
    from botocore.config import Config

    secret = settings.secret_access_key
    return boto3.session.Session().client(
        "s3",
        endpoint_url=settings.endpoint_url,
        region_name=settings.region,
        aws_access_key_id=settings.access_key_id,
        aws_secret_access_key=secret.get_secret_value() if secret else None,
        config=Config(s3={"addressing_style": settings.addressing_style}),
    )


def _transfer_config() -> Any:
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(
        multipart_threshold=MULTIPART_THRESHOLD,
        multipart_chunksize=MULTIPART_CHUNK,
        max_concurrency=MAX_CONCURRENT_PARTS,
    )


def open_s3(url: DestinationUrl, settings: BackupSettings, default_dir: Path) -> S3Destination:
    bucket = require_host(url, "bucket")
    return S3Destination(bucket, url.path, settings.s3, url.text)
