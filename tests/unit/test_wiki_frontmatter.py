"""Front matter: YAML read safely, kept apart from the body, put back for diffs."""

from __future__ import annotations

import pytest

from autorag.errors import InvalidInput
from autorag.wiki import frontmatter


def test_front_matter_is_split_from_the_body_and_put_back() -> None:
    markdown = "---\ntitle: Apollo\ntags: [space, moon]\nwhen: 2024-06-01\n---\n# Apollo\nText\n"
    front, body = frontmatter.split(markdown)
    assert front == {"title": "Apollo", "tags": ["space", "moon"], "when": "2024-06-01"}
    assert body == "# Apollo\nText\n"
    assert frontmatter.split(frontmatter.compose(front, body)) == (front, body)


def test_markdown_without_front_matter_is_all_body() -> None:
    assert frontmatter.split("# Title\n---\nnot front matter\n") == (
        {},
        "# Title\n---\nnot front matter\n",
    )
    assert frontmatter.split("---\n---\nbody") == ({}, "body")
    assert frontmatter.compose({}, "body") == "body"


@pytest.mark.parametrize(
    ("markdown", "words"),
    [
        ("---\ntitle: [unclosed\n---\nbody", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody", "must be a mapping"),
        ("---\njust text\n---\nbody", "must be a mapping"),
        ("---\ntitle: x\nbody without a closing line", "never closed"),
        ("---\na: &x [1, 2]\nb: *x\n---\n", "alias"),
        ("---\nx: !!python/object/apply:os.system ['echo hi']\n---\n", "not valid YAML"),
        ("---\nx: !!binary aGVsbG8=\n---\n", "binary"),
        ("---\n" + "k: " + "v" * 70_000 + "\n---\n", "larger than 64 KB"),
    ],
)
def test_bad_front_matter_is_refused_with_the_reason(markdown: str, words: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        frontmatter.split(markdown)
    assert caught.value.code == "invalid_front_matter"
    assert words in caught.value.message


def test_front_matter_nested_thousands_deep_is_refused_not_a_crash() -> None:
    deep = "---\nkey: " + "[" * 3000 + "]" * 3000 + "\n---\nbody"
    with pytest.raises(InvalidInput) as refused:
        frontmatter.split(deep)
    assert refused.value.code == "invalid_front_matter"
