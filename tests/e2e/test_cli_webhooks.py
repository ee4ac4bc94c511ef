"""``autorag webhooks`` through the command's entry point, against a real receiver on
loopback (``webhooks.allow_private`` on to reach it): added with its secret printed once,
listed, the test event delivered signed, the secret rotated, the log read, switched off
and on, removed; a mistyped event refused with the way to the names."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import autorag
from tests.doubles.webhook_receiver import running_receiver
from tests.workspaces import new_workspace


def test_a_webhook_from_the_command_line(tmp_path: Path) -> None:
    kb = str(new_workspace(tmp_path / "kb", webhooks={"allow_private": True}).root)

    def run(*args: str) -> str:
        done = autorag("-w", kb, "webhooks", *args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    with running_receiver() as receiver:
        url = receiver.url + "/ci"
        added = json.loads(run("add", "ci", url, "--event", "webhook.test", "--json"))
        assert added["secret"].startswith("whsec_") and added["events"] == ["webhook.test"]
        receiver.secrets["/ci"] = added["secret"]
        listed = json.loads(run("list", "--json"))
        assert [hook["name"] for hook in listed] == ["ci"]
        assert added["secret"] not in json.dumps(listed)  # shown once only

        assert "delivered" in run("test", "ci")
        assert receiver.at("/ci")[0].signed

        rotated = run("rotate-secret", "ci")  # the secret alone on stdout, for scripts
        new = rotated.strip()
        assert new.startswith("whsec_") and new != added["secret"]
        receiver.secrets["/ci"] = new
        run("test", "ci")
        assert receiver.at("/ci")[-1].signed

        log = json.loads(run("deliveries", "ci", "--json"))
        assert [d["status"] for d in log] == ["delivered", "delivered"]
        assert json.loads(run("disable", "ci", "--json"))["enabled"] is False
        assert json.loads(run("enable", "ci", "--json"))["enabled"] is True
        typo = autorag("-w", kb, "webhooks", "add", "x", url, "--event", "webhook.tset")
        assert typo.returncode != 0 and "webhook.tset" in typo.stderr
        run("remove", "ci")
        assert json.loads(run("list", "--json")) == []
