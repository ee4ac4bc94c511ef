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

# Models trained on English text only: their vectors rank a question in another language
# little better than chance (all-MiniLM-L6-v2 on the project's Spanish set: nDCG@10 0.58,
# full text 0.89). Any model not named here is taken to read every language.
ENGLISH_ONLY_MODELS = frozenset(
    {
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
        "nomic-embed-text",
        "mxbai-embed-large",
    }
)
ANY_LANGUAGE = "*"


def model_languages(model: str, configured: Sequence[str] | None) -> frozenset[str] | None:
    """The languages ``model`` reads (ISO 639-1), or None for any: ``configured``
    (``embedding.languages``; ``["*"]`` for any) when set, else what we know of the model."""
    if configured is not None:
        return None if ANY_LANGUAGE in configured else frozenset(configured)
    return frozenset({"en"}) if model in ENGLISH_ONLY_MODELS else None


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
