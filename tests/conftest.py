"""Test-wide setup: no test writes to the real user cache directory."""

from __future__ import annotations

import os
import tempfile

# Set before any autorag import reads it, and inherited by CLI subprocesses.
_CACHE = tempfile.mkdtemp(prefix="autorag-test-cache-")
os.environ.setdefault("AUTORAG_EMBEDDING__CACHE_DIR", _CACHE)
os.environ.pop("AUTORAG_WORKSPACE_DIR", None)
