from autorag.llm.base import ChatMessage, ToolCall, ToolSpec
from autorag.llm.extractive import NO_ANSWER, ExtractiveProvider, compose_answer
from autorag.models import Citation

RAG = ToolSpec("rag_search", "search", {"type": "object"})


def _citation(number: int, text: str) -> Citation:
    return Citation(
        number=number,
        source=f"/docs/{number}.md",
        source_id=f"/docs/{number}.md",
        title=f"doc {number}",
        text=text,
        page=None,
        paragraph=0,
        score=0.03,
        legs="both",
        chunk_id=number,
        document_id=number,
    )


def test_first_decision_is_a_rag_search_tool_call() -> None:
    deltas = list(
        ExtractiveProvider().stream_chat([ChatMessage("user", "refund window?")], tools=[RAG])
    )
    assert len(deltas) == 1
    call = deltas[0].tool_call
    assert call is not None and call.name == "rag_search"
    assert call.arguments == {"query": "refund window?"}


def test_second_decision_answers_from_the_tool_results_with_citations() -> None:
    sources = (
        _citation(1, "Our refund window is 30 days from delivery. Shipping is free."),
        _citation(2, "Warranty claims take two weeks to process for all customers."),
    )
    messages = [
        ChatMessage("user", "How long is the refund window?"),
        ChatMessage("assistant", tool_calls=(ToolCall("c1", "rag_search", {"query": "x"}),)),
        ChatMessage("tool", "…", tool_call_id="c1", citations=sources),
    ]
    text = "".join(d.text for d in ExtractiveProvider().stream_chat(messages, tools=[RAG]))
    assert "Our refund window is 30 days from delivery. [1]" in text
    assert "[2]" not in text


def test_nothing_relevant_says_so() -> None:
    assert compose_answer("quantum chromodynamics", [_citation(1, "Refunds take 30 days.")]) == (
        NO_ANSWER
    )
    assert compose_answer("anything", []) == NO_ANSWER


def test_meaning_ranks_sentences_when_an_embedding_model_is_given() -> None:
    import numpy as np

    # A tiny local "model": one axis per topic word, enough to rank by meaning.
    axes = ["refund", "days", "warranty", "colour"]

    def embed(texts: object) -> np.ndarray:
        rows = []
        for text in texts:  # type: ignore[attr-defined]
            lowered = str(text).lower()
            row = np.array([lowered.count(a) for a in axes], np.float32) + 0.01
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows)

    sources = (
        _citation(1, "The colour fades after long use. Refunds take 30 days to arrive."),
        _citation(2, "Our warranty lasts two years for every product."),
    )
    answer = compose_answer("How long until my refund arrives, in days?", sources, embed=embed)
    assert answer == "Refunds take 30 days to arrive. [1]"


def test_table_header_rows_and_cut_fragments_are_not_answers() -> None:
    table = _citation(1, "region | hours | phone\nEurope | 08:00-18:00 | +31 555 0100")
    cut = _citation(2, "the refund is late. Refunds for the Europe region are paid in euros and")
    answer = compose_answer("Europe hours", (table, cut))
    assert answer == "Europe | 08:00-18:00 | +31 555 0100 [1]"
