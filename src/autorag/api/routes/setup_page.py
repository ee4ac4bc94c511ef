"""``GET /setup``: the page behind the URL `autorag serve` prints on first start.

The token travels in the URL fragment (``/setup#token=…``), which browsers never send:
it cannot end up in an access log or a proxy's. The page is the web UI (``autorag.web``),
which shows its first-run form there, takes the token out of the address bar and posts
it to ``/api/setup``.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from autorag.web import shell

router = APIRouter()


@router.get("/setup", include_in_schema=False)
def setup_page() -> HTMLResponse:
    # Never cached: the page is only ever wanted once, fresh.
    return shell("Create the first admin", cache_control="no-store")
