"""``autorag ocr`` as a user runs it: jobs, show, approve and reject on a workspace whose
uploads a worker pool has read."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autorag.context import open_context
from autorag.jobs.worker import WorkerPool
from autorag.workspace import init_workspace
from tests.cli import autorag
from tests.doubles import ScriptedOllama
from tests.integration.test_ocr_jobs import GARBLE, Env
from tests.ocr_samples import image_bytes, needs_tesseract, page_image

pytestmark = needs_tesseract


def run(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = autorag("-w", str(root), *args)  # through its entry point, in this process
    if check:
        assert result.returncode == 0, result.stderr
    return result


def run_json(root: Path, *args: str) -> Any:
    return json.loads(run(root, *args, "--json").stdout)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[int]]]:
    """A workspace with two uploads whose OCR waits for review, and one indexed."""
    root = tmp_path_factory.mktemp("cli-ocr") / "kb"
    context = open_context(init_workspace(root))
    pool = WorkerPool(context, workers=1, poll_interval=0.1)
    pool.start()
    env = Env(context, pool, ScriptedOllama(), root)
    try:
        uploads = [
            ("a.png", GARBLE),
            ("b.png", GARBLE[::-1]),
            ("c.png", ["The Wexford granary opens at dawn."]),
        ]
        ids = [env.upload(name, image_bytes(page_image(lines), "PNG")) for name, lines in uploads]
        for document_id in ids:
            env.settle(document_id)
        yield root, [env.job(document_id).id for document_id in ids]
    finally:
        pool.stop()
        context.close()


def test_jobs_lists_and_filters(workspace: tuple[Path, list[int]]) -> None:
    root, (first, second, third) = workspace
    jobs = run_json(root, "ocr", "jobs")
    assert {job["id"]: job["status"] for job in jobs} == {
        first: "review",
        second: "review",
        third: "indexed",
    }
    waiting = run_json(root, "ocr", "jobs", "--status", "review")
    assert {job["id"] for job in waiting} == {first, second}
    table = run(root, "ocr", "jobs").stdout
    assert "review" in table and "1/1" in table
    bad = run(root, "ocr", "jobs", "--status", "nonsense", check=False)
    assert bad.returncode == 2 and "unknown status" in bad.stderr


def test_show_prints_every_page(workspace: tuple[Path, list[int]]) -> None:
    root, (first, _, third) = workspace
    shown = run_json(root, "ocr", "show", str(third))
    assert shown["pages"][0]["status"] == "done"
    assert "Wexford granary" in shown["pages"][0]["text"]
    text = run(root, "ocr", "show", str(first)).stdout
    assert "status       review" in text and "page 1: low" in text
    missing = run(root, "ocr", "show", "424242", check=False)
    assert missing.returncode == 3 and "no OCR job 424242" in missing.stderr


def test_approve_indexes_and_reject_drops(workspace: tuple[Path, list[int]]) -> None:
    root, (first, second, _) = workspace
    assert f"OCR job {first}: indexed." in run(root, "ocr", "approve", str(first)).stdout
    assert f"OCR job {second}: rejected." in run(root, "ocr", "reject", str(second)).stdout
    again = run(root, "ocr", "approve", str(second), check=False)
    assert again.returncode == 4 and "not waiting for review" in again.stderr
    approved = run_json(root, "ocr", "show", str(first))
    assert approved["reviewedBy"].startswith("cli")
    hits = run_json(root, "search", "qwrtz bnmvx")["hits"]
    assert hits, "the approved text is searchable"
