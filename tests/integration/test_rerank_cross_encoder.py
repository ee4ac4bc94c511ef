"""The cross-encoder reranker with a real model: a tiny BERT cross-encoder built here
(random weights, a vocabulary of a few words, saved with transformers), since no
reranker weights can be downloaded on this machine. It proves that a local directory
loads offline and that the stage orders hits by the model's own scores, not that a
cross-encoder ranks well (quality is not measured here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.integration.test_rerank import QUERY, app, first_stage, names, search, with_rerank

from autorag.context import AppContext
from autorag.errors import InvalidInput
from autorag.rerank.cross_encoder import CrossEncoderReranker

__all__ = ["app"]  # the corpus workspace of test_rerank, shared

WORDS = "the harbour tides opens dawn shuts dusk lighthouse keeper lamp map pier private rota"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS.split()]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    torch.manual_seed(23)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=128, num_labels=1, initializer_range=0.3,
    )  # fmt: skip
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


def model_scores(folder: Path, query: str, passages: list[str]) -> list[float]:
    """The model's logits for (query, passage), computed with transformers alone."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True)
    batch = tokenizer([query] * len(passages), passages, padding=True, return_tensors="pt")
    with torch.no_grad():
        return [float(x) for x in model(**batch).logits.reshape(-1)]


def test_loads_from_the_directory_and_scores_as_the_model(model_dir: Path) -> None:
    passages = ["the harbour tides", "lighthouse keeper lamp", "map pier", "private rota dusk"]
    scores = CrossEncoderReranker(str(model_dir)).rerank(QUERY, passages)
    expected = model_scores(model_dir, QUERY, passages)
    ranked = sorted(range(len(passages)), key=lambda n: -scores[n])
    assert ranked == sorted(range(len(passages)), key=lambda n: -expected[n])
    assert ranked != list(range(len(passages)))  # this model does reorder them


def test_a_search_is_ordered_by_the_model(app: AppContext, model_dir: Path) -> None:
    before = first_stage(app)
    response = search(with_rerank(app, provider="cross-encoder", model=str(model_dir)))
    texts = {names([hit])[0]: hit.text for hit in response.hits}
    expected = model_scores(model_dir, QUERY, [texts[name] for name in before])
    assert names(response.hits) == [
        before[n] for n in sorted(range(len(before)), key=lambda n: -expected[n])
    ]
    assert names(response.hits) != before and response.diagnostics == []


def test_a_folder_that_is_no_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"no config\.json"):
        CrossEncoderReranker(str(tmp_path))
