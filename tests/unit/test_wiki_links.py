"""Wikilinks: every form, never inside code, each with the sentence around it."""

from __future__ import annotations

import pytest

from autorag.errors import InvalidInput
from autorag.wiki.links import MAX_CONTEXT_CHARS, MAX_LINKS, key_of, parse_links


def test_every_form_is_parsed() -> None:
    links = parse_links(
        "See [[Project Apollo]], [[people/ada]], [[Ada Lovelace|Ada]], "
        "[[Apollo#Launch date]] and [[projects/apollo#Crew|the crew]]."
    )
    assert [(link.target, link.label, link.heading) for link in links] == [
        ("Project Apollo", None, None),
        ("people/ada", None, None),
        ("Ada Lovelace", "Ada", None),
        ("Apollo", None, "Launch date"),
        ("projects/apollo", "the crew", "Crew"),
    ]
    assert [link.position for link in links] == [0, 1, 2, 3, 4]
    assert links[0].key == "project apollo" and links[0].slug == "project-apollo"
    assert links[1].slug == "people/ada"


def test_targets_match_whatever_their_case_and_spacing() -> None:
    assert key_of("  Project   APOLLO ") == key_of("project apollo") == "project apollo"


def test_links_in_code_are_text() -> None:
    markdown = (
        "Real [[One]].\n\n```\n[[In a fence]]\n```\n\n~~~~python\n[[Tilde fence]]\n~~~~\n\n"
        "Inline `[[code span]]` and ``[[double]]`` but [[Two]].\n    "
    )
    assert [link.target for link in parse_links(markdown)] == ["One", "Two"]


def test_not_links() -> None:
    assert parse_links("[[]] [[ ]] [[#Only a heading]] [single] [[a\nb]]") == []


def test_the_context_is_the_sentence_around_the_link() -> None:
    links = parse_links(
        "# Apollo [[Moon]]\nThe crew trained hard. Then [[Ada Lovelace|Ada]] checked the "
        "numbers! Later that day.\n\n- a list item with [[Item]]\n- another"
    )
    assert [link.context for link in links] == [
        "# Apollo Moon",
        "Then Ada checked the numbers!",
        "- a list item with Item",
    ]


def test_a_long_context_is_cut_around_the_link() -> None:
    text = "word " * 200 + "[[Target]] " + "more " * 200
    (link,) = parse_links(text)
    assert len(link.context) <= MAX_CONTEXT_CHARS
    assert "Target" in link.context


def test_too_many_links_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_links("[[x]] " * (MAX_LINKS + 1))
    assert caught.value.code == "too_many_links"
