"""The Spanish and Italian evaluation sets (and the Spanish tuning set) shipped in
eval/datasets load as BEIR sets:
every query judged, every judgement naming a passage that exists, ids unique."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autorag.eval.beir import load_beir

DATASETS = Path(__file__).resolve().parents[2] / "eval" / "datasets"


@pytest.mark.parametrize(
    ("name", "split"),
    [("autorag-es", "test"), ("autorag-it", "test"), ("autorag-es-train", "train")],
)
def test_a_shipped_set_loads_whole(name: str, split: str) -> None:
    directory = DATASETS / name
    dataset = load_beir(directory, split=split)
    lines = (directory / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    ids = [json.loads(line)["_id"] for line in lines if line.strip()]
    assert len(ids) == len(set(ids)) == len(dataset.corpus)
    asked = (directory / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["_id"] for line in asked if line.strip()} == set(dataset.qrels)
    judged = {doc for docs in dataset.qrels.values() for doc in docs}
    assert judged <= set(ids)
    assert all(2 in docs.values() for docs in dataset.qrels.values())
