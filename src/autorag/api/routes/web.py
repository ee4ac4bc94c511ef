"""The web UI: its page at ``/`` and its static files at ``/ui/{asset}``.

The UI is served, not built: HTML, ES modules and CSS from the ``autorag.web`` package
(see its docstring). Its pages live in the URL's fragment (``/#/documents``), so ``/``
is the only page route; ``/setup`` (the first-run link) answers the same page from
``setup_page``. Everything the UI shows comes from the public API, with a bearer token.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from autorag.errors import NotFound
from autorag.web import ASSETS_DIR, SECURITY_HEADERS, shell

router = APIRouter(tags=["web"], include_in_schema=False)
# Flat: an asset name is one path segment, so nothing can reach outside the folder.
Asset = Annotated[str, Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")]
_assets = StaticFiles(directory=ASSETS_DIR)


@router.get("/", response_class=HTMLResponse)
def index() -> HTMLResponse:
    """The web UI."""
    return shell()


@router.get("/ui/{asset}")
async def asset(asset: Asset, request: Request) -> Response:
    """A module, stylesheet or icon of the UI; revalidated on every load (ETag), so an
    upgraded server is never run with stale modules."""
    try:
        if ".." in asset:
            raise HTTPException(404)
        response = await _assets.get_response(asset, request.scope)
    except HTTPException:
        raise NotFound(f"no asset {asset!r}") from None
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Content-Type-Options"] = SECURITY_HEADERS["X-Content-Type-Options"]
    return response
