"""The runner's plain helpers: entities merged across sources, the per-source cap, the
evidence a decision reads, paths from a reader made valid, and what the passes store
surviving its JSON round trip."""

from __future__ import annotations

from autorag.synth import store
from autorag.synth.base import Candidate, Claim, Entity, Extraction, Proposal, proposal_path
from autorag.synth.models import Passage, Selection
from autorag.synth.runner import (
    MAX_ENTITIES_PER_SOURCE,
    evidence_of,
    kept,
    merge_entities,
)
from autorag.synth.store import StoredSource


def _entity(name: str, document_id: int = 0, claim: str = "") -> Entity:
    claims = (Claim(claim or f"{name} exists.", (0,)),)
    return Entity(name, "concept", f"About {name}.", claims, document_id)


def _source(position: int, document_id: int, *names: str) -> StoredSource:
    extraction = Extraction(tuple(_entity(n, document_id) for n in names))
    passage = Passage(f"Text of {document_id}.", document_id, f"/docs/{document_id}.md", "T")
    return StoredSource(
        position, document_id, f"/docs/{document_id}.md", "hash", f"Doc {document_id}",
        (passage,), store.to_json(Extraction, extraction), f"Summary {document_id}.",
    )  # fmt: skip


def test_entities_merge_by_name_across_sources_in_order_of_first_mention() -> None:
    sources = [_source(0, 10, "Apollo", "Jane Roe"), _source(1, 11, "  apollo ", "Acme")]
    merged = merge_entities(sources)
    assert [(e.key, e.name) for e in merged] == [
        ("apollo", "Apollo"), ("jane roe", "Jane Roe"), ("acme", "Acme"),
    ]  # fmt: skip
    assert [m.document_id for m in merged[0].mentions] == [10, 11]
    assert merged[0].claims == ["Apollo exists.", "  apollo  exists."]

    evidence = evidence_of(merged[2], sources, ())
    assert [s.document_id for s in evidence.sources] == [11]
    assert evidence.summaries == ("Summary 11.",) and evidence.candidates == ()


def test_a_source_keeps_at_most_eight_named_entities_marked_as_its_own() -> None:
    found = Extraction((_entity("  "), *(_entity(f"E{i}", 999) for i in range(12))))
    kept_ = kept(found, 7)
    assert len(kept_.entities) == MAX_ENTITIES_PER_SOURCE == 8
    assert [e.name for e in kept_.entities] == [f"E{i}" for i in range(8)]
    assert {e.document_id for e in kept_.entities} == {7}


def test_a_proposed_path_is_normalised_or_replaced_by_the_entity_slug() -> None:
    assert proposal_path(" People/Jane Roe.md ", "Jane Roe") == "people/jane-roe"
    assert proposal_path("../etc/passwd", "Jane Roe") == "jane-roe"
    assert proposal_path("", "Dr. Jane Roe!") == "dr-jane-roe"
    assert proposal_path("", "!!!").startswith("entity-")
    # Only the last pass writes the overview: an entity's proposal never takes its path.
    assert proposal_path("overview", "Overview") == proposal_path("", "Overview") != "overview"


def test_what_the_passes_store_survives_json() -> None:
    passage = Passage("It ships.", 3, "/docs/a.md", "A", page=2)
    proposal = Proposal("update", "why", "apollo", "Apollo", "body", (passage,))
    assert store.from_json(Proposal, store.to_json(Proposal, proposal)) == proposal
    candidate = Candidate("apollo", "Apollo", 2, "body", 1.5, {"tags": ["x"]})
    assert store.from_json(Candidate, store.to_json(Candidate, candidate)) == candidate
    selection = Selection(document_ids=(1, 2), doc_type="md", force=True)
    assert store.from_json(Selection, store.to_json(Selection, selection)) == selection
