"""Load a retrieval benchmark laid out the BEIR way.

A BEIR directory holds ``corpus.jsonl`` (or ``corpus.jsonl.gz``), ``queries.jsonl`` and
``qrels/<split>.tsv``. The loader reads only those files; everything else is pure.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorag.errors import InvalidInput

_CORPUS_NAMES = ("corpus.jsonl", "corpus.jsonl.gz")  # plain first when both exist
_QRELS_COLUMNS = 3


@dataclass(frozen=True)
class BeirDoc:
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    """One split of a benchmark.

    ``qrels`` maps query id -> doc id -> graded relevance (> 0) for the chosen split only;
    ``queries`` holds exactly the queries that have such judgments.
    """

    name: str
    corpus: list[BeirDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(directory: Path, *, split: str = "test", max_docs: int | None = None) -> BeirDataset:
    """Load ``directory`` as a BEIR dataset restricted to ``split``.

    ``max_docs`` is for smoke runs: it keeps the first ``max_docs`` corpus documents PLUS
    every document judged relevant for the kept queries, so each query still has its
    answers in the corpus. Documents keep their file order. ``None`` keeps the whole corpus.

    Qrels rows with score <= 0 are dropped (they mark a doc as not relevant), and a query
    left with no relevant doc is dropped with them: it cannot be answered by any run.
    """
    if max_docs is not None and max_docs < 0:
        raise InvalidInput(f"max_docs must be >= 0, got {max_docs}")
    qrels = _read_qrels(_qrels_path(directory, split))
    queries = _select_queries(_read_queries(_require(directory / "queries.jsonl")), qrels)
    corpus = _read_corpus(_corpus_path(directory), max_docs, _relevant_doc_ids(qrels))
    return BeirDataset(name=directory.absolute().name, corpus=corpus, queries=queries, qrels=qrels)


def _require(path: Path) -> Path:
    if not path.is_file():
        raise InvalidInput(f"missing benchmark file: {path}")
    return path


def _corpus_path(directory: Path) -> Path:
    for name in _CORPUS_NAMES:
        if (directory / name).is_file():
            return directory / name
    raise InvalidInput(f"missing benchmark file: {directory / 'corpus.jsonl'} (or .jsonl.gz)")


def _qrels_path(directory: Path, split: str) -> Path:
    path = directory / "qrels" / f"{split}.tsv"
    if path.is_file():
        return path
    qrels_dir = directory / "qrels"
    if not qrels_dir.is_dir():
        raise InvalidInput(f"missing benchmark directory: {qrels_dir}")
    available = sorted(p.stem for p in qrels_dir.glob("*.tsv"))
    raise InvalidInput(
        f"split {split!r} does not exist in {qrels_dir}; "
        f"available: {', '.join(available) or 'none'}"
    )


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without its CR/LF end), skipping blank lines."""
    try:
        # Text mode with universal newlines turns CRLF into LF, as BEIR ships CRLF qrels.
        with (
            gzip.open(path, "rt", encoding="utf-8")
            if path.suffix == ".gz"
            else path.open(encoding="utf-8")
        ) as handle:
            for number, line in enumerate(handle, start=1):
                stripped = line.rstrip("\n")
                if stripped.strip():
                    yield number, stripped
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc


def _json_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in _lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}:{number}: malformed JSON: {exc.msg}") from exc
        if not isinstance(record, dict):
            raise InvalidInput(f"{path}:{number}: expected a JSON object")
        yield number, record


def _text_field(record: dict[str, Any], key: str, where: str, *, required: bool) -> str:
    value = record.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"{where}: field {key!r} must be a string")
    return value


def _read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for number, record in _json_records(path):
        where = f"{path}:{number}"
        query_id = _text_field(record, "_id", where, required=True)
        if query_id in queries:
            raise InvalidInput(f"{where}: duplicate query id {query_id!r}")
        queries[query_id] = _text_field(record, "text", where, required=True)
    return queries


def _read_corpus(path: Path, max_docs: int | None, keep: set[str]) -> list[BeirDoc]:
    corpus: list[BeirDoc] = []
    seen: set[str] = set()
    for index, (number, record) in enumerate(_json_records(path)):
        where = f"{path}:{number}"
        doc_id = _text_field(record, "_id", where, required=True)
        if doc_id in seen:
            raise InvalidInput(f"{where}: duplicate doc id {doc_id!r}")
        seen.add(doc_id)
        if max_docs is None or index < max_docs or doc_id in keep:
            title = _text_field(record, "title", where, required=False)
            text = _text_field(record, "text", where, required=True)
            corpus.append(BeirDoc(doc_id=doc_id, title=title, text=text))
    return corpus


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for number, line in _lines(path):
        fields = line.split("\t")
        if len(fields) != _QRELS_COLUMNS:
            raise InvalidInput(
                f"{path}:{number}: expected {_QRELS_COLUMNS} tab-separated columns "
                f"(query-id, corpus-id, score), got {len(fields)}"
            )
        query_id, doc_id, raw_score = (field.strip() for field in fields)
        score = _parse_score(raw_score)
        if score is None:
            if number == 1:
                continue  # the optional header line, e.g. "query-id corpus-id score"
            raise InvalidInput(f"{path}:{number}: score {raw_score!r} is not an integer")
        if score > 0:
            qrels.setdefault(query_id, {})[doc_id] = score
    return qrels


def _parse_score(raw: str) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


def _select_queries(queries: dict[str, str], qrels: dict[str, dict[str, int]]) -> dict[str, str]:
    missing = sorted(set(qrels) - set(queries))
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise InvalidInput(f"{len(missing)} judged query id(s) not in queries.jsonl: {shown}")
    return {query_id: queries[query_id] for query_id in qrels}


def _relevant_doc_ids(qrels: dict[str, dict[str, int]]) -> set[str]:
    return {doc_id for judged in qrels.values() for doc_id in judged}
