"""A sentence-transformers ``CrossEncoder`` from a local directory, on this machine.

Nothing is ever downloaded: the model must be a directory on disk, and it is opened with
``local_files_only`` (and the Hugging Face libraries set offline before they load).
torch loads on the first rerank, not at import: most CLI commands never rerank.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autorag.errors import InvalidInput, Unavailable
from autorag.rerank.base import checked_scores

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

_INSTALL_HINT = "install the local extra: pip install 'autorag[local]'"


class CrossEncoderReranker:
    """Scores (query, passage) pairs with the cross-encoder in ``model`` (a directory)."""

    local = True

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 32) -> None:
        self.model_dir = _model_dir(model)
        self.label = f"cross-encoder {self.model_dir}"
        self._device = device
        self._batch_size = batch_size
        self._encoder: CrossEncoder | None = None
        self._load_lock = threading.Lock()

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        pairs = [(query, passage) for passage in passages]
        scores = self._load().predict(
            pairs, batch_size=self._batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        return checked_scores(self.label, scores.reshape(-1).tolist(), len(passages))

    def _load(self) -> CrossEncoder:
        # Double-checked so that concurrent first searches load the model once.
        if self._encoder is None:
            with self._load_lock:
                if self._encoder is None:
                    self._encoder = _load_encoder(self.model_dir, self._device)
        return self._encoder


def _model_dir(model: str) -> Path:
    path = Path(model).expanduser()
    if not path.is_dir():
        raise InvalidInput(
            f"search.rerank.model {model!r} is not a directory: give the path of a local "
            "sentence-transformers CrossEncoder model (models are never downloaded)"
        )
    if not (path / "config.json").is_file():
        raise InvalidInput(f"{path} holds no config.json: it is not a Hugging Face model")
    return path.resolve()


def _load_encoder(model_dir: Path, device: str) -> CrossEncoder:
    # Read by huggingface_hub and transformers when first imported; an explicit choice of
    # the operator's stands.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:
        raise Unavailable(
            f"the cross-encoder reranker needs sentence-transformers: {_INSTALL_HINT}"
        ) from exc
    try:
        encoder: CrossEncoder = CrossEncoder(str(model_dir), device=device, local_files_only=True)
    except Exception as exc:  # any loader failure means the same thing to the stage
        raise Unavailable(f"cannot load the cross-encoder in {model_dir}: {exc}") from exc
    return encoder
