"""``autorag widgets`` through the command's entry point on a real workspace: a widget
made with its origins and limits, shown with the tag to embed, changed (a context file,
its colour, turned off), listed as JSON, refused with a clear message for a wildcard
origin or a name taken, removed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import autorag
from tests.workspaces import new_workspace


def test_widgets_from_the_command_line(tmp_path: Path) -> None:
    ws = str(new_workspace(tmp_path / "kb").root)
    made = autorag("-w", ws, "widgets", "add", "shop", "--origin", "https://shop.example.com",
                   "--greeting", "Hi!", "--visitor-limit", "5", "--server-url",
                   "https://kb.example.com/", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    widget = json.loads(made.stdout)
    wid = widget["publicId"]
    assert widget["allowedOrigins"] == ["https://shop.example.com"]
    assert widget["visitorPerMinute"] == 5 and widget["widgetPerMinute"] == 120
    assert widget["snippet"] == (
        f'<script src="https://kb.example.com/widget.js" data-widget-id="{wid}" async></script>'
    )
    shown = autorag("-w", ws, "widgets", "show", "shop")
    assert shown.returncode == 0 and f'data-widget-id="{wid}"' in shown.stdout

    context = tmp_path / "hours.txt"
    context.write_text("Opening hours: 9 to 17.\n", encoding="utf-8")
    changed = autorag("-w", ws, "widgets", "update", wid, "--context-file", str(context),
                      "--primary", "#AA2200", "--disable", "--json")  # fmt: skip
    assert changed.returncode == 0, changed.stderr
    after = json.loads(changed.stdout)
    assert (after["ragContext"], after["theme"]["primary"], after["enabled"]) == (
        "Opening hours: 9 to 17.\n", "#aa2200", False,
    )  # fmt: skip

    wildcard = autorag("-w", ws, "widgets", "add", "docs", "--origin", "https://*.example.com")
    assert wildcard.returncode == 2 and "no wildcards" in wildcard.stderr
    taken = autorag("-w", ws, "widgets", "add", "shop")
    assert taken.returncode == 4 and "exists" in taken.stderr
    listed = autorag("-w", ws, "widgets", "list", "--json")
    assert [w["name"] for w in json.loads(listed.stdout)] == ["shop"]
    assert autorag("-w", ws, "widgets", "remove", "shop").returncode == 0
    assert autorag("-w", ws, "widgets", "show", "shop").returncode == 3
