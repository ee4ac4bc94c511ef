"""The extractive reader (synth/rules.py): entities from headings and repeated capitalised
phrases, claims quoted with their passages, first-sentence summaries, create/update
decisions with footnoted sources, the overview's link list; and the citation format the
model reader shares."""

from __future__ import annotations

import pytest

from autorag.synth.base import (
    Candidate,
    Claim,
    Entity,
    EntityEvidence,
    Extraction,
    OverviewInput,
    Proposal,
    SourceText,
    entity_slug,
)
from autorag.synth.models import Passage
from autorag.synth.rules import (
    MAX_ENTITIES,
    RuleReader,
    capitalised_phrases,
    render_citations,
)
from autorag.wiki import frontmatter

REPORT = [
    "# Apollo Program\n\n"
    "The Apollo Program was run by NASA between 1961 and 1972. Apollo 11 landed on the "
    "Moon on July 20, 1969.\nDr. Jane Roe led the guidance team at the Massachusetts "
    "Institute of Technology. The guidance computer was built by the Massachusetts "
    "Institute of Technology.",
    "## Budget\n\nIn March 2024 the Smithsonian Institution published the costs. NASA spent "
    "about 25 billion dollars. However, the Smithsonian Institution says the figure is low. "
    "Jane Roe later wrote that NASA underestimated it. The budget was approved every year "
    "by Congress.",
    # Chunks overlap: the first sentence repeats the previous passage's last one.
    "The budget was approved every year by Congress. Congress reviewed the budget in 1966. "
    "The Apollo Program kept its funding. Dr. Jane Roe testified before Congress.\n\n"
    "```\nNASA NASA NASA Houston Houston\n```",
]


def _source(texts: list[str], document_id: int = 1, title: str = "Apollo report") -> SourceText:
    source_id = f"doc:report-{document_id}"
    return SourceText(
        document_id,
        source_id,
        title,
        tuple(
            Passage(text, document_id, source_id, title, page=number)
            for number, text in enumerate(texts, start=1)
        ),
    )


@pytest.fixture(scope="module")
def report() -> SourceText:
    return _source(REPORT)


@pytest.fixture(scope="module")
def extraction(report: SourceText) -> Extraction:
    return RuleReader().extract(report)


def _entity(extraction: Extraction, name: str) -> Entity:
    return next(e for e in extraction.entities if e.name == name)


def _evidence(entity: Entity, source: SourceText, *candidates: Candidate) -> EntityEvidence:
    return EntityEvidence(entity.name, entity.kind, (entity,), (source,), ("",), candidates)


def test_the_reader_is_labelled_extractive_and_asks_no_model() -> None:
    reader = RuleReader()
    assert (reader.mode, reader.model) == ("extractive", "extractive/extractive")
    assert (reader.calls, reader.usage.total) == (0, 0)


def test_entities_are_names_and_headings_most_mentioned_first(extraction: Extraction) -> None:
    names = [e.name for e in extraction.entities]
    assert names == [  # three mentions each (in order of the first), then two
        "Apollo Program", "NASA", "Dr. Jane Roe", "Budget", "Congress",
        "Massachusetts Institute of Technology", "Smithsonian Institution",
    ]  # fmt: skip
    # Stop-words, dates, a sentence's opening capital, a name said once, code: none.
    for never in ("The", "However", "March", "July", "In March", "Apollo", "Moon", "Houston"):
        assert never not in names
    assert len(names) <= MAX_ENTITIES
    assert all(e.document_id == 1 and e.claims for e in extraction.entities)


def test_kinds_and_merged_spellings(extraction: Extraction) -> None:
    roe = _entity(extraction, "Dr. Jane Roe")  # "Jane Roe" is the same person
    assert roe.kind == "person"
    assert [c.text for c in roe.claims] == [
        "Dr. Jane Roe led the guidance team at the Massachusetts Institute of Technology.",
        "Jane Roe later wrote that NASA underestimated it.",
        "Dr. Jane Roe testified before Congress.",
    ]
    assert _entity(extraction, "Budget").kind == "topic"
    assert _entity(extraction, "NASA").kind == "concept"


def test_claims_quote_each_sentence_once_with_its_passage(extraction: Extraction) -> None:
    congress = _entity(extraction, "Congress")
    assert congress.claims == (
        Claim("The budget was approved every year by Congress.", (1,)),
        Claim("Congress reviewed the budget in 1966.", (2,)),
        Claim("Dr. Jane Roe testified before Congress.", (2,)),
    )
    assert congress.description == "The budget was approved every year by Congress."


def test_at_most_eight_entities_per_source() -> None:
    names = [f"Alpha{chr(65 + i)} Corp" for i in range(12)]
    text = " ".join(f"We met {n} today. Later {n} signed the deal." for n in names)
    text += " " + " ".join(f"Then {n} paid." for n in names[-2:])  # the last two: 3 times
    entities = RuleReader().extract(_source([text])).entities
    assert [e.name for e in entities] == names[-2:] + names[:6]
    assert len(entities) == MAX_ENTITIES
    assert {e.kind for e in entities} == {"organisation"}


@pytest.mark.parametrize(
    ("sentence", "phrases"),
    [
        ("The Apollo Program was run by NASA.", [("Apollo Program", False), ("NASA", False)]),
        ("Refunds take five days.", [("Refunds", True)]),
        ("On Monday, 3 March 2024 we met Ada Lovelace.", [("Ada Lovelace", False)]),
        ("NASA's Apollo flew.", [("NASA", True), ("Apollo", False)]),
        ("Staff of the Bank of England and Acme Ltd.", [("Bank of England", False),
                                                       ("Acme Ltd", False)]),
    ],
)  # fmt: skip
def test_capitalised_phrases(sentence: str, phrases: list[tuple[str, bool]]) -> None:
    found = [p for p in capitalised_phrases(sentence) if p[0] != "Staff"]
    assert found == phrases


def test_question_and_generic_headings_are_not_entities() -> None:
    text = (
        "# Introduction\n\nThis guide covers returns.\n\n## How to make a claim\n\n"
        "Email the team with your order number."
    )
    assert RuleReader().extract(_source([text])).entities == ()


def test_the_summary_is_the_first_sentences(report: SourceText, extraction: Extraction) -> None:
    summary = RuleReader().summarize(report, extraction)
    assert summary == (
        "The Apollo Program was run by NASA between 1961 and 1972. Apollo 11 landed on the "
        "Moon on July 20, 1969. Dr. Jane Roe led the guidance team at the Massachusetts "
        "Institute of Technology."
    )
    assert RuleReader().summarize(_source(["# Only a heading"]), Extraction(())) == ""


def test_no_matching_page_creates_one_citing_its_passages(
    report: SourceText, extraction: Extraction
) -> None:
    nasa = _entity(extraction, "NASA")
    other = Candidate("places/houston", "Houston", 2, "Mission control.", 1.0)
    proposal = RuleReader().decide(_evidence(nasa, report, other))
    assert (proposal.verdict, proposal.path, proposal.title) == ("create", "nasa", "NASA")
    front, body = frontmatter.split(proposal.body)
    assert front == {"synthesis": "extractive"}
    assert body == (
        "Statements about NASA quoted from the sources:\n\n"
        "- The Apollo Program was run by NASA between 1961 and 1972. [^1]\n"
        "- NASA spent about 25 billion dollars. [^2]\n"
        "- Jane Roe later wrote that NASA underestimated it. [^2]\n\n"
        "## Sources\n\n"
        "- Apollo report (`doc:report-1`)\n\n"
        "[^1]: Apollo report, p. 1 (`doc:report-1`)\n"
        "[^2]: Apollo report, p. 2 (`doc:report-1`)\n"
    )
    assert proposal.sources == report.passages[:2]
    assert proposal.contradiction == ()


def test_the_entitys_own_page_is_updated_under_sources(
    report: SourceText, extraction: Extraction
) -> None:
    congress = _entity(extraction, "Congress")
    page = Candidate(
        "orgs/congress",
        "Congress",
        4,
        "Congress votes the budget.\n\nCongress reviewed the budget in 1966.\n\n"
        "## Sources\n\n- Old minutes (`doc:minutes`)\n\n[^1]: Old minutes (`doc:minutes`)\n",
        0.0,
        {"tags": ["institution"]},
    )
    proposal = RuleReader().decide(_evidence(congress, report, page))
    assert (proposal.verdict, proposal.path, proposal.title) == (
        "update", "orgs/congress", "Congress"
    )  # fmt: skip
    front, body = frontmatter.split(proposal.body)
    assert front == {"tags": ["institution"]}  # the page's front matter stays
    assert body == (
        "Congress votes the budget.\n\nCongress reviewed the budget in 1966.\n\n"
        "## Sources\n\n- Old minutes (`doc:minutes`)\n"
        "- Apollo report (`doc:report-1`)\n"
        "  - The budget was approved every year by Congress. [^2]\n"
        "  - Dr. Jane Roe testified before Congress. [^3]\n\n"
        "[^1]: Old minutes (`doc:minutes`)\n\n"
        "[^2]: Apollo report, p. 2 (`doc:report-1`)\n"
        "[^3]: Apollo report, p. 3 (`doc:report-1`)\n"
    )  # what the page said already ("reviewed ... in 1966") is not repeated
    assert proposal.sources == report.passages[1:]


def test_a_page_that_says_it_all_already_is_skipped(report: SourceText) -> None:
    claim = Claim("Congress reviewed the budget in 1966.", (2,))
    entity = Entity("Congress", "concept", "", (claim,), 1)
    page = Candidate("congress", "Parliament", 1, "Congress reviewed the budget in 1966.", 0.0)
    proposal = RuleReader().decide(_evidence(entity, report, page))  # matched by its path
    assert (proposal.verdict, proposal.path, proposal.body) == ("skip", "congress", "")


def test_the_overview_lists_every_page() -> None:
    pages = (("people/ada", "Ada Lovelace"), ("overview", "Overview"), ("nasa", "NASA"))
    proposals: tuple[Proposal, ...] = ()
    fresh = RuleReader().overview(OverviewInput("Handbook", None, pages, proposals))
    front, body = frontmatter.split(fresh)
    assert front == {"synthesis": "extractive"}
    assert body == ("The pages of Handbook:\n\n- [[people/ada|Ada Lovelace]]\n- [[nasa|NASA]]\n")
    current = "Start with [[Ada Lovelace]]."
    grown = RuleReader().overview(OverviewInput("Handbook", current, pages, proposals))
    assert grown == current + "\n\n## New pages\n\n- [[nasa|NASA]]\n"
    done = "See [[nasa]] and [[Ada Lovelace]]."
    assert RuleReader().overview(OverviewInput("Handbook", done, pages, proposals)) == done


def test_citations_point_only_at_real_passages() -> None:
    one = Passage("one", 7, "doc:a", "A", page=3)
    two = Passage("two", 8, "doc:b", "B")
    text = "X is red [2]. Y [1, 9] [^2]. Not citations: [[1]], [1](http://x), a[1]: def."
    body, cited = render_citations(text, [one, two])
    assert cited == (two, one)
    assert body == (
        "X is red [^1]. Y [^2] [^1]. Not citations: [[1]], [1](http://x), a[1]: def.\n\n"
        "## Sources\n\n- B (`doc:b`)\n- A (`doc:a`)\n\n"
        "[^1]: B (`doc:b`)\n[^2]: A, p. 3 (`doc:a`)\n"
    )
    assert render_citations("Nothing [3].", [one]) == ("Nothing .\n", ())


def test_entity_slugs() -> None:
    assert entity_slug("Dr. Jane Roe") == "dr-jane-roe"
    assert entity_slug("Café Müller / TCP") == "cafe-muller-tcp"
    hangul = entity_slug("서울")
    assert hangul.startswith("entity-") and hangul == entity_slug("서울")
    assert entity_slug("Overview").startswith("entity-")  # the overview's path is taken
