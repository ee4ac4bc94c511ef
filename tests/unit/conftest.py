"""Unit-test setup: no test writes to the real user data directory either.

A catalog opened with no workspace (a bare ``Catalog`` on PostgreSQL) keeps its secrets
key in the user's AutoRAG data folder (``autorag.secretbox.catalog_secrets_dir``); here
that folder is a temporary one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_DATA = tempfile.mkdtemp(prefix="autorag-test-data-")
atexit.register(shutil.rmtree, _DATA, ignore_errors=True)
os.environ.setdefault("XDG_DATA_HOME", _DATA)
