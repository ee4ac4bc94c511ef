"""Could the text so far still become a match, and from where?

The streaming redactor must hold back text that a later token could turn into (part of)
a secret, and nothing else. That is a question about prefixes: a suffix of the text
received is *open* when some continuation could make it (the start of) a match. A
Thompson NFA over the built-in patterns answers it incrementally: threads start at every
position, step over each character, and a thread still waiting for a character (or on a
``\\b`` or ``\\z`` that only the next character can decide) at the end of the text is
an open candidate. The earliest start among open threads is where holding back begins.

The NFA judges the *language* of the patterns, so it is conservative only where RE2's
leftmost-first choice would already be settled; the built-ins are written so that this
does not matter in practice (see ``autorag.dlp.patterns``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from autorag.dlp.nodes import (
    WORD_CHARS,
    Alt,
    Assertion,
    Capture,
    Chars,
    Node,
    Repeat,
    Seq,
    Text,
    letter_chars,
)


@dataclass
class _State:
    chars: Chars | None = None  # a character step to ``out[0]``
    assertion: str | None = None  # "word_boundary" | "end_of_text", then ``out[0]``
    out: list[int] = field(default_factory=list)  # epsilon moves when neither is set
    accept: bool = False


class Automaton:
    """The union of some patterns' trees as one NFA."""

    def __init__(self, trees: Sequence[Node]) -> None:
        self.states: list[_State] = []
        accept = self._new(_State(accept=True))
        starts = [self._build(tree, accept) for tree in trees]
        self.start = self._new(_State(out=starts))

    def _new(self, state: _State) -> int:
        self.states.append(state)
        return len(self.states) - 1

    def _build(self, node: Node, then: int) -> int:
        """The state that matches ``node`` and continues at ``then`` (built backwards)."""
        match node:
            case Chars():
                return self._new(_State(chars=node, out=[then]))
            case Text():
                for char in reversed(node.text):
                    then = self._new(_State(chars=letter_chars(char, node.ignore_case), out=[then]))
                return then
            case Seq():
                for part in reversed(node.parts):
                    then = self._build(part, then)
                return then
            case Alt():
                return self._new(_State(out=[self._build(o, then) for o in node.options]))
            case Repeat():
                return self._build_repeat(node, then)
            case Capture():
                return self._build(node.node, then)
            case Assertion():
                return self._new(_State(assertion=node.kind, out=[then]))

    def _build_repeat(self, node: Repeat, then: int) -> int:
        if node.high is None:
            loop = self._new(_State())
            loop_state = self.states[loop]
            loop_state.out = [self._build(node.node, loop), then]
            current = loop
        else:
            current = then
            for _ in range(node.high - node.low):  # optional copies, nested
                current = self._new(_State(out=[self._build(node.node, current), then]))
        for _ in range(node.low):
            current = self._build(node.node, current)
        return current


Threads = dict[int, int]  # state -> earliest absolute start of a thread in it


class PrefixTracker:
    """Feeds text through an ``Automaton`` and reports where open candidates begin."""

    def __init__(self, automaton: Automaton) -> None:
        self._nfa = automaton
        self._threads: Threads = {}  # before the closure at ``position``
        self.position = 0  # characters consumed
        self._previous: str | None = None

    def advance(self, chunk: str) -> None:
        for char in chunk:
            closed = self._close(self._with_new_thread(), char)
            stepped: Threads = {}
            for state, start in sorted(closed.items(), key=lambda item: item[1]):
                chars = self._nfa.states[state].chars
                if chars is not None and chars.accepts(char):
                    stepped.setdefault(self._nfa.states[state].out[0], start)
            self._threads = stepped
            self._previous = char
            self.position += 1

    def earliest_open(self) -> int | None:
        """The smallest start of a thread that more text could still carry on, if any."""
        starts = self._close(self._threads.items(), None).values()
        return min(starts, default=None)

    def _with_new_thread(self) -> list[tuple[int, int]]:
        return [*self._threads.items(), (self._nfa.start, self.position)]

    def _close(self, seeds: Iterable[tuple[int, int]], following: str | None) -> Threads:
        """The states reachable without consuming a character, that wait for one.

        ``following`` is the next character, or None when it is not known yet: an
        assertion it would decide is then kept as waiting. Seeds are visited by
        ascending start, so each state keeps the earliest start that reaches it.
        """
        waiting: Threads = {}
        seen: set[int] = set()
        for seed, start in sorted(seeds, key=lambda item: item[1]):
            stack = [seed]
            while stack:
                index = stack.pop()
                if index in seen:
                    continue
                seen.add(index)
                state = self._nfa.states[index]
                if state.chars is not None:
                    waiting[index] = start
                elif state.assertion is not None:
                    verdict = self._assert(state.assertion, following)
                    if verdict is None:
                        waiting[index] = start
                    elif verdict:
                        stack.append(state.out[0])
                else:
                    stack.extend(state.out)
        return waiting

    def _assert(self, kind: str, following: str | None) -> bool | None:
        """Whether the assertion holds here; None when only the next character can say."""
        if following is None:
            return None
        if kind == "end_of_text":
            return False
        before = self._previous is not None and self._previous in WORD_CHARS
        return before != (following in WORD_CHARS)
