"""Datasources: records that are not files under a search path, indexed as documents
with origin ``datasource`` and identities ``/<kind>/<instance>/...`` (seed 000)."""

from autorag.datasources.kakao import (
    ImportReport,
    KakaoChat,
    KakaoChunk,
    KakaoMessage,
    build_chunks,
    import_kakao,
    parse_kakao,
    read_export,
)
from autorag.datasources.sync import DatasourceRecord, SyncReport, sync_namespace

__all__ = [
    "DatasourceRecord",
    "ImportReport",
    "KakaoChat",
    "KakaoChunk",
    "KakaoMessage",
    "SyncReport",
    "build_chunks",
    "import_kakao",
    "parse_kakao",
    "read_export",
    "sync_namespace",
]
