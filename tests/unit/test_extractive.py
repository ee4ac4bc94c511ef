from autorag.llm.base import ChatMessage, ToolSpec
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
