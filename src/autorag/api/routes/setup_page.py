"""``GET /setup``: the page behind the URL `autorag serve` prints on first start.

The token travels in the URL fragment (``/setup#token=…``), which browsers never send:
it cannot end up in an access log or a proxy's. The page posts it to ``/api/setup``.
"""

from __future__ import annotations

import base64
import hashlib

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter()

_SCRIPT = """
const params = new URLSearchParams(location.hash.slice(1));
history.replaceState(null, "", location.pathname);
const out = document.getElementById("out");
document.getElementById("setup").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const response = await fetch("/api/setup", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({
      token: params.get("token") || "",
      username: form.get("username"),
      password: form.get("password"),
    }),
  });
  const body = await response.json();
  out.textContent = response.ok
    ? `Admin ${body.username} created. Log in with POST /api/auth/login.`
    : body.detail;
});
"""

_STYLE = """
body { font: 16px system-ui, sans-serif; max-width: 26rem; margin: 4rem auto; padding: 0 1rem }
label, input, button { display: block; width: 100%; margin: .4rem 0 }
"""

_PAGE = f"""<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>AutoRAG setup</title>
<style>{_STYLE}</style>
<h1>Create the first admin</h1>
<form id="setup">
  <label>Username
    <input name="username" required pattern="[a-z0-9_.\\-]{{2,64}}" autocomplete="username">
  </label>
  <label>Password (at least 10 characters)
    <input name="password" type="password" required minlength="10"
           autocomplete="new-password">
  </label>
  <button>Create admin</button>
</form>
<p id="out" role="status"></p>
<script>{_SCRIPT}</script>
</html>
"""


def _sha256(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


# Only this page's own script and style run; it talks to this server alone.
_HEADERS = {
    "Content-Security-Policy": (
        f"default-src 'none'; script-src {_sha256(_SCRIPT)}; style-src {_sha256(_STYLE)}; "
        "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@router.get("/setup", include_in_schema=False)
def setup_page() -> HTMLResponse:
    return HTMLResponse(_PAGE, headers=_HEADERS)
