"""The web UI: its page at ``/`` and its static files at ``/ui/{asset}``.

The UI is served, not built: HTML, ES modules and CSS from the ``autorag.web`` package
(see its docstring). Its pages live in the URL's fragment (``/#/documents``), so ``/``
is the only page route; ``/setup`` (the first-run link) answers the same page from
``setup_page``. Everything the UI shows comes from the public API, with a bearer token.

The API's documentation, ``/docs`` (Swagger UI) and ``/redoc``, is served the same way:
the Swagger UI and ReDoc files pinned in the ``fastapi-offline`` package, at
``/docs/assets/{asset}``, and pages with no inline script, under the UI's own CSP. Nothing
is fetched from elsewhere, so the docs work offline and no foreign script runs on the
origin where the UI keeps its token.
"""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path as FsPath
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.openapi.docs import get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from autorag import __version__
from autorag.errors import NotFound
from autorag.web import ASSETS_DIR, PRODUCT, SECURITY_HEADERS, shell

router = APIRouter(tags=["web"], include_in_schema=False)
# Flat: an asset name is one path segment, so nothing can reach outside the folder.
Asset = Annotated[str, Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")]
_assets = StaticFiles(directory=ASSETS_DIR)
# swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js and favicon.png.
DOCS_ASSETS_DIR = FsPath(str(files("fastapi_offline") / "static"))
_docs_assets = StaticFiles(directory=DOCS_ASSETS_DIR)
DOCS_ASSETS = "/docs/assets"
OPENAPI_URL = "/openapi.json"


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


# -- the API's documentation ---------------------------------------------------------------
_SWAGGER_INIT = f"""\
"use strict";
window.ui = SwaggerUIBundle({{
  url: "{OPENAPI_URL}",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  oauth2RedirectUrl: window.location.origin + "/docs/oauth2-redirect",
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
}});
"""
_DOCS_CSS = "body { margin: 0; padding: 0; }\n"
# FastAPI's redirect page for Swagger UI's OAuth2 flows, its inline script made a file.
_OAUTH2_SCRIPT = re.search(
    r"<script>(.*)</script>", bytes(get_swagger_ui_oauth2_redirect_html().body).decode(), re.S
)
_GENERATED = {
    "swagger-init.js": (_SWAGGER_INIT, "text/javascript"),
    "oauth2-redirect.js": (_OAUTH2_SCRIPT.group(1) if _OAUTH2_SCRIPT else "", "text/javascript"),
    "docs.css": (_DOCS_CSS, "text/css"),
}


# ReDoc styles itself with styled-components, which writes <style> elements: its page
# alone also allows inline styles. Scripts stay this origin's files only, as everywhere.
REDOC_CSP = SECURITY_HEADERS["Content-Security-Policy"].replace(
    "style-src 'self'", "style-src 'self' 'unsafe-inline'"
)


def _page(title: str, head: str, body: str, *, csp: str | None = None) -> HTMLResponse:
    html = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n"
        f'<link rel="icon" type="image/png" href="{DOCS_ASSETS}/favicon.png">\n'
        f"{head}</head>\n<body>\n{body}</body>\n</html>\n"
    )
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache"}
    if csp is not None:
        headers["Content-Security-Policy"] = csp
    return HTMLResponse(html, headers=headers)


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui() -> HTMLResponse:
    """The API's interactive documentation (Swagger UI)."""
    return _page(
        f"{PRODUCT} {__version__} API · Swagger UI",
        f'<link rel="stylesheet" href="{DOCS_ASSETS}/swagger-ui.css">\n',
        '<div id="swagger-ui"></div>\n'
        f'<script src="{DOCS_ASSETS}/swagger-ui-bundle.js"></script>\n'
        f'<script src="{DOCS_ASSETS}/swagger-init.js"></script>\n',
    )


@router.get("/docs/oauth2-redirect", response_class=HTMLResponse)
def swagger_ui_redirect() -> HTMLResponse:
    return _page(
        "Swagger UI: OAuth2 Redirect",
        "",
        f'<script src="{DOCS_ASSETS}/oauth2-redirect.js"></script>\n',
    )


@router.get("/redoc", response_class=HTMLResponse)
def redoc() -> HTMLResponse:
    """The API's reference documentation (ReDoc)."""
    return _page(
        f"{PRODUCT} {__version__} API · ReDoc",
        f'<link rel="stylesheet" href="{DOCS_ASSETS}/docs.css">\n',
        "<noscript>ReDoc needs JavaScript to show the documentation.</noscript>\n"
        f'<redoc spec-url="{OPENAPI_URL}"></redoc>\n'
        f'<script src="{DOCS_ASSETS}/redoc.standalone.js"></script>\n',
        csp=REDOC_CSP,
    )


@router.get(DOCS_ASSETS + "/{asset}")
async def docs_asset(asset: Asset, request: Request) -> Response:
    """A script, stylesheet or icon of the documentation pages."""
    response: Response
    if asset in _GENERATED:
        text, media_type = _GENERATED[asset]
        response = Response(text, media_type=media_type)
    else:
        try:
            if ".." in asset:
                raise HTTPException(404)
            response = await _docs_assets.get_response(asset, request.scope)
        except HTTPException:
            raise NotFound(f"no asset {asset!r}") from None
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Content-Type-Options"] = SECURITY_HEADERS["X-Content-Type-Options"]
    return response
