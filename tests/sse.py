"""Reading a server's Server-Sent Events answer as a client would, for the tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from httpx_sse import connect_sse


def post_sse(url: str, body: Any, headers: Mapping[str, str]) -> list[tuple[str, Any]]:
    """POST ``body`` (JSON) to ``url``; the events of its 200 answer as (name, data)."""
    with (
        httpx.Client(timeout=60) as client,
        connect_sse(client, "POST", url, json=body, headers=dict(headers)) as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        return [(sse.event, sse.json()) for sse in source.iter_sse()]
