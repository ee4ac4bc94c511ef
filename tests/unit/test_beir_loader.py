from __future__ import annotations

import gzip
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from autorag.errors import InvalidInput
from autorag.eval.beir import BeirDataset, BeirDoc, load_beir

DOCS: list[dict[str, object]] = [
    {"_id": "d1", "title": "First", "text": "alpha", "metadata": {}},
    {"_id": "d2", "title": "Second", "text": "beta \u00e9", "metadata": {}},
    {"_id": "d3", "text": "gamma without a title"},
    {"_id": "d4", "title": "Fourth", "text": "delta", "metadata": {}},
]
QUERIES: list[dict[str, object]] = [
    {"_id": "q1", "text": "what is alpha", "metadata": {}},
    {"_id": "q2", "text": "what is delta", "metadata": {}},
    {"_id": "q3", "text": "a train-only query", "metadata": {}},
    {"_id": "q4", "text": "a query without judgments", "metadata": {}},
]
# BEIR ships qrels with a header and CRLF line ends.
TEST_QRELS = "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td4\t2\r\nq2\td2\t0\r\n"
TRAIN_QRELS = "q3\td3\t1\nq3\td1\t0\n"


def _jsonl(records: Sequence[Mapping[str, object]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def write_beir(
    root: Path,
    *,
    gz: bool = False,
    corpus: str | None = None,
    queries: str | None = None,
    test_qrels: str = TEST_QRELS,
) -> Path:
    """A tiny BEIR directory under ``root/tiny``."""
    directory = root / "tiny"
    (directory / "qrels").mkdir(parents=True)
    corpus_text = _jsonl(DOCS) if corpus is None else corpus
    if gz:
        (directory / "corpus.jsonl.gz").write_bytes(gzip.compress(corpus_text.encode()))
    else:
        (directory / "corpus.jsonl").write_text(corpus_text, encoding="utf-8")
    queries_text = _jsonl(QUERIES) if queries is None else queries
    (directory / "queries.jsonl").write_text(queries_text, encoding="utf-8")
    (directory / "qrels" / "test.tsv").write_bytes(test_qrels.encode())
    (directory / "qrels" / "train.tsv").write_bytes(TRAIN_QRELS.encode())
    return directory


@pytest.mark.parametrize("gz", [False, True])
def test_loads_plain_and_gzipped_corpus(tmp_path: Path, gz: bool) -> None:
    dataset = load_beir(write_beir(tmp_path, gz=gz))
    assert dataset == BeirDataset(
        name="tiny",
        corpus=[
            BeirDoc("d1", "First", "alpha"),
            BeirDoc("d2", "Second", "beta \u00e9"),
            BeirDoc("d3", "", "gamma without a title"),
            BeirDoc("d4", "Fourth", "delta"),
        ],
        queries={"q1": "what is alpha", "q2": "what is delta"},
        qrels={"q1": {"d1": 1}, "q2": {"d4": 2}},
    )


def test_split_selects_its_qrels_and_queries(tmp_path: Path) -> None:
    dataset = load_beir(write_beir(tmp_path), split="train")
    assert dataset.qrels == {"q3": {"d3": 1}}
    assert dataset.queries == {"q3": "a train-only query"}
    assert len(dataset.corpus) == 4


def test_qrels_without_header_and_lf_ends(tmp_path: Path) -> None:
    directory = write_beir(tmp_path, test_qrels="q1\td1\t1\nq1\td2\t3\n\n")
    assert load_beir(directory).qrels == {"q1": {"d1": 1, "d2": 3}}


def test_query_with_only_non_relevant_rows_is_dropped(tmp_path: Path) -> None:
    directory = write_beir(tmp_path, test_qrels="q1\td1\t1\nq2\td2\t0\nq4\td3\t-1\n")
    dataset = load_beir(directory)
    assert dataset.qrels == {"q1": {"d1": 1}}
    assert list(dataset.queries) == ["q1"]


def test_max_docs_keeps_first_docs_plus_relevant_ones(tmp_path: Path) -> None:
    dataset = load_beir(write_beir(tmp_path), max_docs=2)
    # d1, d2 are the first two; d4 is judged relevant for q2; d3 is neither.
    assert [doc.doc_id for doc in dataset.corpus] == ["d1", "d2", "d4"]
    assert load_beir(write_beir(tmp_path / "zero"), max_docs=0).corpus == [
        BeirDoc("d1", "First", "alpha"),
        BeirDoc("d4", "Fourth", "delta"),
    ]


def test_max_docs_must_not_be_negative(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="max_docs"):
        load_beir(write_beir(tmp_path), max_docs=-1)


def test_missing_split_lists_the_available_ones(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"'dev' does not exist.*available: test, train"):
        load_beir(write_beir(tmp_path), split="dev")


@pytest.mark.parametrize("name", ["corpus.jsonl", "queries.jsonl"])
def test_missing_file_is_named(tmp_path: Path, name: str) -> None:
    directory = write_beir(tmp_path)
    (directory / name).unlink()
    with pytest.raises(InvalidInput, match=rf"missing benchmark file: .*{re.escape(name)}"):
        load_beir(directory)


def test_missing_qrels_directory(tmp_path: Path) -> None:
    directory = tmp_path / "empty"
    directory.mkdir()
    with pytest.raises(InvalidInput, match=r"missing benchmark directory: .*qrels"):
        load_beir(directory)


def test_malformed_corpus_line_reports_line_number(tmp_path: Path) -> None:
    corpus = _jsonl(DOCS[:2]) + '{"_id": "d3", "text": \n'
    with pytest.raises(InvalidInput, match=r"corpus\.jsonl:3: malformed JSON"):
        load_beir(write_beir(tmp_path, corpus=corpus))


def test_malformed_gzipped_corpus_line_reports_line_number(tmp_path: Path) -> None:
    corpus = _jsonl(DOCS[:1]) + "not json\n"
    with pytest.raises(InvalidInput, match=r"corpus\.jsonl\.gz:2: malformed JSON"):
        load_beir(write_beir(tmp_path, gz=True, corpus=corpus))


def test_malformed_query_line_reports_line_number(tmp_path: Path) -> None:
    queries = _jsonl(QUERIES[:1]) + "[1, 2]\n"
    with pytest.raises(InvalidInput, match=r"queries\.jsonl:2: expected a JSON object"):
        load_beir(write_beir(tmp_path, queries=queries))


def test_record_without_text_is_rejected(tmp_path: Path) -> None:
    corpus = _jsonl([{"_id": "d1", "title": "no text"}])
    with pytest.raises(InvalidInput, match=r"corpus\.jsonl:1: field 'text'"):
        load_beir(write_beir(tmp_path, corpus=corpus))


def test_duplicate_doc_id_is_rejected(tmp_path: Path) -> None:
    corpus = _jsonl([DOCS[0], DOCS[1], DOCS[0]])
    with pytest.raises(InvalidInput, match=r"corpus\.jsonl:3: duplicate doc id 'd1'"):
        load_beir(write_beir(tmp_path, corpus=corpus))


def test_qrels_wrong_column_count_reports_line_number(tmp_path: Path) -> None:
    qrels = "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2 d4 1\r\n"
    with pytest.raises(InvalidInput, match=r"test\.tsv:3: expected 3 tab-separated columns"):
        load_beir(write_beir(tmp_path, test_qrels=qrels))


def test_qrels_non_integer_score_after_header_is_rejected(tmp_path: Path) -> None:
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\tyes\n"
    with pytest.raises(InvalidInput, match=r"test\.tsv:2: score 'yes' is not an integer"):
        load_beir(write_beir(tmp_path, test_qrels=qrels))


def test_judged_query_missing_from_queries_is_rejected(tmp_path: Path) -> None:
    qrels = "q1\td1\t1\nq9\td1\t1\n"
    with pytest.raises(InvalidInput, match=r"not in queries\.jsonl: q9"):
        load_beir(write_beir(tmp_path, test_qrels=qrels))


def _scifact_dir() -> Path | None:
    repo_root = Path(__file__).resolve().parents[2]
    for candidate in (Path("/work/shared/data/scifact"), repo_root / "../shared/data/scifact"):
        if candidate.is_dir():
            return candidate
    return None


SCIFACT = _scifact_dir()


@pytest.mark.skipif(SCIFACT is None, reason="SciFact data not present")
def test_real_scifact_test_split() -> None:
    assert SCIFACT is not None
    dataset = load_beir(SCIFACT, split="test")
    assert dataset.name == "scifact"
    # The split restricts queries and qrels, never the corpus.
    assert len(dataset.corpus) == 5183
    assert len(dataset.queries) == 300
    assert sum(len(judged) for judged in dataset.qrels.values()) == 339
    doc_ids = {doc.doc_id for doc in dataset.corpus}
    assert all(doc_id in doc_ids for judged in dataset.qrels.values() for doc_id in judged)
