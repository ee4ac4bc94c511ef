"""Whether the vector leg can judge a question, from the language it is asked in.

An embedding model trained on one language ranks text in another little better than
chance (all-MiniLM-L6-v2 on the project's Spanish set: nDCG@10 0.58 against 0.89 for full
text), and fused with full text at an equal weight it pulls the ranking down (0.75). A
question in a language the model was not trained on is therefore ranked by full text;
the vector leg still orders the chunks full text did not find, after the ones it did.
"""

from __future__ import annotations

from collections.abc import Sequence

from autorag.text.language import detect_language

# The weight of a vector leg that cannot read the question. Far below the smallest step
# between two full-text ranks (RRF: 1/(k+r+1) − 1/(k+r+2), about 5e-6 at k=60 and depth
# 400), so it never reorders what full text found; above zero, so what only the vector
# leg found keeps the vector leg's order after it.
SILENT_WEIGHT = 1e-9


def query_language(query: str, languages: Sequence[str]) -> str | None:
    """The language ``query`` is asked in, among the workspace's ``languages`` (those its
    documents are in), or None when that cannot be told. A workspace in one language is
    asked in it; otherwise the question's own text decides, when detection is sure."""
    if len(languages) == 1:
        return languages[0]
    detected = detect_language(query, default="")
    return detected if detected in languages else None


def vector_reads(model_languages: frozenset[str] | None, language: str | None) -> bool:
    """Whether a model reading ``model_languages`` (None: any) can rank a question in
    ``language`` (None: unknown, given the benefit of the doubt)."""
    return model_languages is None or language is None or language in model_languages
