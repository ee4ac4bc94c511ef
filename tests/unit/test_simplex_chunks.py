"""Message parts under SimpleX's size limit: split, reassemble, and refuse hostile parts."""

from __future__ import annotations

import random
from collections.abc import Hashable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autorag.p2p.simplex.chunks import (
    PART_PREFIX,
    ChunkError,
    Reassembler,
    encoded_size,
    split_message,
)


def _reassemble(parts: list[str], sender: Hashable = "bob") -> str | None:
    reassembler = Reassembler()
    whole = [w for w in (reassembler.feed(sender, p) for p in parts) if w is not None]
    assert len(whole) <= 1
    return whole[0] if whole else None


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_message_that_fits_goes_unchanged() -> None:
    assert split_message("hello") == ["hello"]
    assert split_message("") == [""]
    assert Reassembler().feed("bob", "hello") == "hello"


def test_a_long_message_goes_as_numbered_parts_under_the_limit() -> None:
    payload = "".join(f'line {i}: "quoted" \\ text\n' for i in range(2000))
    parts = split_message(payload, max_bytes=2000, message_id="m1")
    assert len(parts) > 1
    assert all(encoded_size(p) <= 2000 for p in parts)
    assert parts[0].startswith(f"{PART_PREFIX}m1 1/{len(parts)}\n")
    shuffled = parts[:]
    random.Random(1).shuffle(shuffled)
    assert _reassemble(shuffled) == payload


def test_sizes_count_json_escapes_and_multibyte_characters() -> None:
    assert encoded_size('a"b') == 4 and encoded_size("\x01") == 6 and encoded_size("한") == 3
    for payload in ("\x01" * 5000, "한국어 텍스트 " * 3000, "🙂" * 4000, '"' * 5000):
        parts = split_message(payload, max_bytes=1500)
        assert all(encoded_size(p) <= 1500 for p in parts)
        assert _reassemble(parts) == payload


def test_a_short_payload_that_looks_like_a_part_is_wrapped() -> None:
    payload = f"{PART_PREFIX}x 1/1\nnot really a part"
    parts = split_message(payload)
    assert len(parts) == 1 and parts[0] != payload
    assert _reassemble(parts) == payload


def test_splitting_is_bounded() -> None:
    with pytest.raises(ChunkError) as too_many:
        split_message("x" * 10_000, max_bytes=1000, max_parts=5)
    assert too_many.value.code == "too-large"
    with pytest.raises(ChunkError):
        split_message("x" * 100, max_bytes=60)  # no room for a header and a body
    with pytest.raises(ChunkError) as surrogate:
        split_message("bad \ud800 text")
    assert surrogate.value.code == "not-utf8"
    with pytest.raises(ChunkError):
        split_message("x" * 20_000, message_id="bad id")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (f"{PART_PREFIX}m 3/2\nx", "bad-part"),
        (f"{PART_PREFIX}m 0/2\nx", "bad-part"),
        (f"{PART_PREFIX}m 1/2 x", "bad-part"),
        (f"{PART_PREFIX}bad/id 1/2\nx", "bad-part"),
        (f"{PART_PREFIX}m 1/99999\nx", "too-large"),
    ],
)
def test_malformed_parts_are_refused(text: str, code: str) -> None:
    with pytest.raises(ChunkError) as refused:
        Reassembler().feed("bob", text)
    assert refused.value.code == code


def test_identical_repeats_are_ignored_and_conflicting_ones_drop_the_message() -> None:
    drops: list[tuple[Hashable, str, str]] = []
    reassembler = Reassembler(on_drop=lambda *drop: drops.append(drop))
    assert reassembler.feed("bob", f"{PART_PREFIX}m 1/2\nab") is None
    assert reassembler.feed("bob", f"{PART_PREFIX}m 1/2\nab") is None
    with pytest.raises(ChunkError, match="different"):
        reassembler.feed("bob", f"{PART_PREFIX}m 1/2\nXY")
    assert reassembler.pending == 0 and drops == [("bob", "m", "conflict")]
    assert reassembler.feed("bob", f"{PART_PREFIX}n 1/2\nab") is None
    with pytest.raises(ChunkError, match="not 2"):
        reassembler.feed("bob", f"{PART_PREFIX}n 2/3\ncd")
    assert reassembler.pending == 0


def test_a_late_repeat_of_a_delivered_message_is_ignored() -> None:
    reassembler = Reassembler()
    parts = split_message("z" * 5000, max_bytes=1000)
    assert [reassembler.feed("bob", p) for p in parts][-1] == "z" * 5000
    assert reassembler.feed("bob", parts[0]) is None
    assert reassembler.pending == 0


def test_senders_cannot_mix_into_each_others_messages() -> None:
    reassembler = Reassembler()
    bob = split_message("b" * 3000, max_bytes=1000, message_id="same")
    eve = split_message("e" * 3000, max_bytes=1000, message_id="same")
    assert reassembler.feed("bob", bob[0]) is None
    for part in eve:
        result = reassembler.feed("eve", part)
    assert result == "e" * 3000
    assert [reassembler.feed("bob", p) for p in bob[1:]][-1] == "b" * 3000


def test_total_size_is_bounded() -> None:
    reassembler = Reassembler(max_total_bytes=1500)
    parts = split_message("x" * 3000, max_bytes=1000)
    with pytest.raises(ChunkError) as refused:
        for part in parts:
            reassembler.feed("bob", part)
    assert refused.value.code == "too-large" and reassembler.pending == 0


def test_incomplete_messages_time_out() -> None:
    clock = _Clock()
    drops: list[tuple[Hashable, str, str]] = []
    reassembler = Reassembler(timeout_s=10, clock=clock, on_drop=lambda *d: drops.append(d))
    parts = split_message("y" * 3000, max_bytes=1000, message_id="slow")
    reassembler.feed("bob", parts[0])
    clock.now = 11
    assert reassembler.expire() == [("bob", "slow")]
    assert drops == [("bob", "slow", "timeout")]
    for part in parts[1:]:  # what is left starts over and never completes
        assert reassembler.feed("bob", part) is None


def test_pending_messages_are_bounded_per_sender_and_in_all() -> None:
    reassembler = Reassembler(max_pending=5, max_pending_per_sender=2)
    for i in range(4):
        reassembler.feed("eve", f"{PART_PREFIX}e{i} 1/2\nx")
    assert reassembler.pending == 2  # eve only crowds out her own messages
    for sender in ("a", "b", "c", "d"):
        reassembler.feed(sender, f"{PART_PREFIX}m 1/2\nx")
    assert reassembler.pending == 5


@settings(max_examples=150, deadline=None)
@given(
    payload=st.text(max_size=6000),
    max_bytes=st.integers(min_value=200, max_value=3000),
    seed=st.integers(0, 2**16),
)
def test_any_text_survives_split_shuffle_and_repeats(
    payload: str, max_bytes: int, seed: int
) -> None:
    try:
        parts = split_message(payload, max_bytes=max_bytes, max_parts=10_000)
    except ChunkError as exc:
        assert exc.code == "not-utf8"
        return
    assert all(encoded_size(p) <= max_bytes for p in parts)
    rng = random.Random(seed)
    split = parts[0].startswith(PART_PREFIX)  # an ordinary message repeated is a new one
    delivered = parts + (rng.sample(parts, k=min(len(parts), 3)) if split else [])
    rng.shuffle(delivered)
    reassembler = Reassembler(max_parts=10_000, max_total_bytes=10**8)
    results = [r for r in (reassembler.feed("bob", p) for p in delivered) if r is not None]
    assert results == [payload]


_HEADERS = st.builds(
    lambda mid, i, n, body: f"{PART_PREFIX}{mid} {i}/{n}\n{body}",
    st.sampled_from(["m", "n", "o"]),
    st.integers(0, 12),
    st.integers(0, 12),
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.one_of(_HEADERS, st.text(max_size=60).map(lambda t: PART_PREFIX + t)),
        ),
        max_size=60,
    )
)
def test_hostile_parts_never_break_the_reassembler(feeds: list[tuple[str, str]]) -> None:
    reassembler = Reassembler(max_pending=3, max_pending_per_sender=2, max_parts=8)
    for sender, text in feeds:
        try:
            result = reassembler.feed(sender, text)
        except ChunkError:
            continue
        assert result is None or isinstance(result, str)
        assert reassembler.pending <= 3
