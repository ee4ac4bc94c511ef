"""The embedding provider protocol and what we know about models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]
else:

    def __getattr__(name: str) -> Any:
        # NumPy only when a vector type is asked for: the commands that never embed
        # (``status``, ``--help``) start without importing it (issue 17).
        if name == "Vectors":
            import numpy as np
            import numpy.typing as npt

            return npt.NDArray[np.float32]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Output dimensions of models we know, so a vector table can be created before the
# first embedding call. Unknown models are probed once.
KNOWN_MODEL_DIMS: dict[str, int] = {
    "all-MiniLM-L6-v2": 384,
    "sentence-transformers/all-MiniLM-L6-v2": 384,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    # Multilingual (README, Languages): a Spanish or Italian team's vector leg.
    "bge-m3": 1024,
    "BAAI/bge-m3": 1024,
    "intfloat/multilingual-e5-large": 1024,
    "intfloat/multilingual-e5-base": 768,
    "intfloat/multilingual-e5-small": 384,
    "paraphrase-multilingual-MiniLM-L12-v2": 384,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into L2-normalised float32 vectors, one row per text."""

    provider: str
    model: str

    @property
    def model_id(self) -> str:
        """``provider:model``: what documents record as the model that embedded them."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents/chunks. Returns shape (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query. Returns shape (dim,)."""
        ...
