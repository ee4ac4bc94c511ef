"""Source identifiers: local files, their real paths and datasource identities."""

from autorag.sources.ids import (
    DATASOURCE_KINDS,
    FILESYSTEM_ROOTS,
    SourceRoot,
    escape_name,
    is_datasource_id,
    local_source_id,
    normalize_source,
    plan_source_roots,
    to_real_path,
)

__all__ = [
    "DATASOURCE_KINDS",
    "FILESYSTEM_ROOTS",
    "SourceRoot",
    "escape_name",
    "is_datasource_id",
    "local_source_id",
    "normalize_source",
    "plan_source_roots",
    "to_real_path",
]
