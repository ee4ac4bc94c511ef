"""The ``autorag`` command as a user runs it, on a temporary workspace: through its entry
point in this process (``tests/cli.py``: the model loads once), with ``init``, the
workspace-less call and the terminal chat as separate processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.cli import AUTORAG, autorag, autorag_process
from tests.samples import write_corpus


def run(workspace: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    result = autorag("-w", str(workspace), *args, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"autorag {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout if check else result.stdout + result.stderr


def run_json(workspace: Path, *args: str) -> Any:
    return json.loads(run(workspace, *args, "--json"))


def test_index_search_ask_and_manage_documents(tmp_path: Path) -> None:
    docs = tmp_path / "policies"
    write_corpus(docs)
    kb = tmp_path / "kb"
    subprocess.run([*AUTORAG, "init", str(kb)], check=True, capture_output=True)
    assert (kb / "autorag.toml").is_file() and (kb / ".autorag").is_dir()
    assert run_json(kb, "status")["state"] == "configured"

    run(kb, "add", str(docs))
    report = run_json(kb, "refresh")
    assert report["indexed"] == 8 and report["failed"] == 0
    status = run_json(kb, "status")
    assert status["state"] == "ready", status
    assert status["documents"] == {"ready": 8}

    hits = run_json(kb, "search", "refund window", "-k", "3")["hits"]
    assert hits[0]["source"] == str(docs / "refunds.pdf")
    assert hits[0]["source_id"] == "/policies/refunds.pdf"
    only_md = run_json(kb, "search", "warranty refund", "--type", "md")["hits"]
    assert {h["doc_type"] for h in only_md} == {"md"}

    answer = run(kb, "ask", "How long is the refund window?")
    assert "thirty days" in answer and "[1]" in answer
    assert "Sources" in answer and str(docs / "refunds.pdf") in answer
    answered = run_json(kb, "ask", "How long is the refund window?", "--plan")
    assert answered["abortReason"] == "done" and answered["plan"]
    assert answered["modelUsed"] == "extractive/extractive" and answered["citations"]
    models = run_json(kb, "models", "list")
    assert models[0]["id"] == "extractive/extractive" and models[0]["available"]
    conversation = autorag_process(
        "-w",
        str(kb),
        "chat",
        input="How long is the refund window?\nWhich courier carries parcels?\n/quit\n",
    )
    assert conversation.returncode == 0, conversation.stderr
    assert "thirty days" in conversation.stdout and "Zephyr" in conversation.stdout

    listed = run_json(kb, "docs", "list")
    assert len(listed) == 8
    shown = run_json(kb, "docs", "show", "/policies/refunds.pdf", "--chunks")
    assert shown["pages"] == 2 and shown["chunk_list"][1]["page"] == 2
    run(kb, "docs", "rm", "/policies/notes.txt")
    assert all(
        h["source_id"] != "/policies/notes.txt"
        for h in run_json(kb, "search", "office cat")["hits"]
    )

    run(kb, "reindex")
    assert run_json(kb, "search", "office cat", "--mode", "vector", "-k", "1")["hits"]
    assert run_json(kb, "status")["state"] == "ready"


def test_bad_input_gets_one_clear_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    subprocess.run([*AUTORAG, "init", str(kb)], check=True, capture_output=True)
    missing = run(kb, "add", str(tmp_path / "nope"), check=False)
    assert "does not exist" in missing and "Traceback" not in missing
    bad_date = run(kb, "search", "x", "--from", "yesterday", check=False)
    assert "--from: not a date" in bad_date and "Traceback" not in bad_date
    nowhere = subprocess.run(
        [*AUTORAG, "-w", str(tmp_path / "none"), "status"], capture_output=True, text=True
    )
    assert nowhere.returncode == 3 and "no AutoRAG workspace" in nowhere.stderr
