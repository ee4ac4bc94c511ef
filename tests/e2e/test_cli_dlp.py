"""``autorag dlp`` as a user runs it, on a temporary workspace: through the command's entry
point in this process (``tests/cli.py``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli import autorag

EMAIL = "mario.rossi@example.com"
TEXT = f"Write to {EMAIL}\nor pay with 4111 1111 1111 1111 and quote TCK-123456.\n"


def run(
    *args: str, cwd: Path, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = autorag(*args, cwd=cwd, input=stdin, env={"AUTORAG_WORKSPACE_DIR": None})
    if check and result.returncode != 0:
        raise AssertionError(f"autorag {' '.join(args)}:\n{result.stdout}\n{result.stderr}")
    return result


def test_scan_patterns_and_their_management(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    run("init", str(kb), cwd=tmp_path)
    sample = tmp_path / "sample.txt"
    sample.write_text(TEXT)

    scanned = run("-w", str(kb), "dlp", "scan", str(sample), cwd=tmp_path)
    assert scanned.stdout == "Write to [REDACTED]\nor pay with [REDACTED] and quote TCK-123456.\n"
    assert "email" in scanned.stderr and "credit_card" in scanned.stderr  # the table
    assert EMAIL not in scanned.stderr + scanned.stdout

    run("-w", str(kb), "dlp", "patterns", "add", "ticket", r"TCK-[0-9]{6}", cwd=tmp_path)
    as_json = json.loads(
        run("-w", str(kb), "dlp", "scan", "-", "--json", cwd=tmp_path, stdin=TEXT).stdout
    )
    assert as_json["hasMatch"] is True
    assert [m["type"] for m in as_json["matches"]] == ["email", "credit_card", "ticket"]
    assert as_json["redactedText"].count("[REDACTED]") == 3

    refused = run(
        "-w", str(kb), "dlp", "patterns", "add", "bad", "(?=x)y", cwd=tmp_path, check=False
    )
    assert refused.returncode == 2
    assert "RE2" in refused.stderr and "Traceback" not in refused.stderr

    listed = json.loads(
        run("-w", str(kb), "dlp", "patterns", "list", "--json", cwd=tmp_path).stdout
    )
    assert len(listed) == 11 and {p["name"] for p in listed if not p["builtin"]} == {"ticket"}

    run("-w", str(kb), "dlp", "patterns", "disable", "email", cwd=tmp_path)
    assert EMAIL in run("-w", str(kb), "dlp", "scan", str(sample), cwd=tmp_path).stdout
    run("-w", str(kb), "dlp", "patterns", "enable", "email", cwd=tmp_path)
    assert EMAIL not in run("-w", str(kb), "dlp", "scan", str(sample), cwd=tmp_path).stdout

    tested = run(
        "-w", str(kb), "dlp", "patterns", "test", "id EMP-42", "--regex", r"EMP-\d+", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert json.loads(tested.stdout)["redactedText"] == "id [REDACTED]"
    kept = run("-w", str(kb), "dlp", "patterns", "rm", "email", cwd=tmp_path, check=False)
    assert kept.returncode == 4 and "disable it instead" in kept.stderr


def test_scan_outside_a_workspace_uses_the_builtins(tmp_path: Path) -> None:
    scanned = run("dlp", "scan", "-", cwd=tmp_path, stdin=TEXT)
    assert "built-in patterns only" in scanned.stderr
    assert EMAIL not in scanned.stdout and "TCK-123456" in scanned.stdout
    missing = run("dlp", "scan", str(tmp_path / "nope.txt"), cwd=tmp_path, check=False)
    assert missing.returncode == 3 and "no file" in missing.stderr
