"""Source identifiers: local files, their real paths and datasource identities."""

from autorag.sources.ids import (
    FILESYSTEM_ROOTS,
    SourceRoot,
    is_datasource_id,
    normalize_source,
    plan_source_roots,
    to_real_path,
)

__all__ = [
    "FILESYSTEM_ROOTS",
    "SourceRoot",
    "is_datasource_id",
    "normalize_source",
    "plan_source_roots",
    "to_real_path",
]
