"""The web UI: HTML, ES modules and CSS served as they are by ``autorag serve``.

There is no build step: the files under ``ui/`` are what the browser runs, so installing
or testing the UI needs no network and no toolchain. The UI speaks only the public HTTP
API with a bearer token. ``shell`` answers the one HTML page; the app finds its page in
the URL's fragment (``/#/chat/7``), so a deep link always reaches this page and no
server route has to know the UI's pages. ``ASSETS_DIR`` holds what ``/ui/{asset}``
serves.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from html import escape
from pathlib import Path
from string import Template

from fastapi.responses import HTMLResponse

WEB_DIR = Path(__file__).parent
ASSETS_DIR = WEB_DIR / "ui"
INDEX_FILE = WEB_DIR / "index.html"
PRODUCT = "AutoRAG"

# Runs before the first paint so that a chosen theme never flashes the other one; the
# only inline script, allowed by its hash.
THEME_SCRIPT = (
    'try{var t=localStorage.getItem("autorag.theme");'
    'if(t==="light"||t==="dark")document.documentElement.dataset.theme=t}catch(e){}'
)


def _sha256(source: str) -> str:
    digest = base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()
    return f"'sha256-{digest}'"


# Scripts and styles of this origin only, and the API of this origin only: nothing is
# fetched from elsewhere, and no page may frame this one.
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src {_sha256(THEME_SCRIPT)} 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; manifest-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


@cache
def _template() -> Template:
    return Template(INDEX_FILE.read_text("utf-8"))


def shell_html(heading: str | None = None) -> str:
    """The page, titled ``heading`` (a page the server names, such as the setup page)."""
    title = f"{heading} · {PRODUCT}" if heading else PRODUCT
    return _template().substitute(
        title=escape(title),
        heading=escape(heading or PRODUCT),
        theme_script=THEME_SCRIPT,
    )


def shell(heading: str | None = None, *, cache_control: str = "no-cache") -> HTMLResponse:
    """The UI's HTML page with its security headers."""
    headers = {**SECURITY_HEADERS, "Cache-Control": cache_control}
    return HTMLResponse(shell_html(heading), headers=headers)
