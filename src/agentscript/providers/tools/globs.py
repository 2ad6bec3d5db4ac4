"""The shell tools' globs (`find` name, `grep` include), matched in linear time.

The original turned a glob into a regular expression (`*` → `.*`, which may cross `/`, `?` →
`.`, anchored at the start of the path or after a `/`, and at its end). A backtracking regex
engine needs exponential time for a glob like `*a*a*a*a*b` on a long name, and a regex search
cannot be interrupted. The same language is matched here in time linear in the path:

- a glob splits at its stars into segments (literal characters and `?`). Stars match
  anything, so the path matches when the first segment matches at the earliest start it can
  (the path's start or just after a `/`), each middle segment at its leftmost place after the
  previous one, and the last segment at the end: the leftmost choice leaves the most text for
  the next star, so nothing needs to be tried twice. That is one regular expression whose
  groups are atomic (`(?>…)`: the engine never backtracks into them), run in C;
- a path with a newline in it (which a star cannot cross, so the argument above fails) is
  matched by simulating the glob's automaton instead: the set of glob positions reached so
  far advances one character at a time.
"""

from __future__ import annotations

import re

from agentscript.runtime.errors import ExecutionError

MAX_GLOB_LENGTH = 1000


class Glob:
    """A compiled glob. `search(path)` says whether it matches the path's end, starting at the
    path's start or just after a `/`, as the original's `(^|/)<glob>$` regex did.

    Glob positions are bits of an integer (bit i: the first i tokens matched), so one step over
    a character is a few integer operations whatever the glob's length."""

    __slots__ = ("_accept", "_any", "_literals", "_regex", "_stars", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        tokens: list[str] = []
        for char in pattern:
            if not (char == "*" and tokens and tokens[-1] == "*"):
                tokens.append(char)  # runs of `*` are one `*`: the same language
        self._stars = sum(1 << i for i, token in enumerate(tokens) if token == "*")
        # Positions `?` stands on (it matches any character but a newline, as `.` did).
        self._any = sum(1 << i for i, token in enumerate(tokens) if token == "?")
        self._literals: dict[str, int] = {}
        for i, token in enumerate(tokens):
            if token not in "*?":
                self._literals[token] = self._literals.get(token, 0) | 1 << i
        self._accept = 1 << len(tokens)
        self._regex = _linear_regex("".join(tokens))

    @classmethod
    def compile(cls, pattern: str, label: str) -> Glob:
        if len(pattern) > MAX_GLOB_LENGTH:
            raise ExecutionError(f"{label} glob is longer than {MAX_GLOB_LENGTH} characters")
        return cls(pattern)

    def search(self, path: str) -> bool:
        if "\n" not in path:
            return self._regex.match(path) is not None
        return self._simulate(path)

    def _simulate(self, path: str) -> bool:
        """The automaton: bit i set when the first i tokens match what was read."""
        stars, any_char, literals = self._stars, self._any, self._literals
        start = self._closure(1)
        states = start
        last = len(path) - 1
        last_slash = path.rfind("/")
        for index, char in enumerate(path):
            if char == "\n":
                if index == last and states & self._accept:
                    return True  # `$` also matched just before a final newline
                # Neither `*` nor `?` matches a newline.
                states = (states & literals.get(char, 0)) << 1
            else:
                states = ((states & (literals.get(char, 0) | any_char)) << 1) | (states & stars)
            states = self._closure(states)
            if char == "/":
                states |= start
            elif not states and index > last_slash:
                return False  # nothing matched and no `/` left to start again after
        return bool(states & self._accept)

    def _closure(self, states: int) -> int:
        """`states` plus the position after each `*` it stands on (a star may match nothing;
        stars never follow one another, so one shift reaches every such position)."""
        return states | ((states & self._stars) << 1)


def _linear_regex(glob: str) -> re.Pattern[str]:
    """The glob as a regex that cannot backtrack more than linearly, for paths without a
    newline: earliest start, leftmost middle segments (atomic groups), last segment at the end."""
    segments = [_segment(part) for part in glob.split("*")]
    if len(segments) == 1:
        # No star: the whole glob just before the end, at a path start or after a `/`.
        return re.compile(rf"(?:.*/)?{segments[0]}\Z", re.DOTALL)
    first, *middle, last = segments
    body = rf"(?>(?:.*?/)??{first})" if first else ""
    body += "".join(rf"(?>.*?{segment})" for segment in middle)
    return re.compile(rf"{body}.*{last}\Z", re.DOTALL)


def _segment(part: str) -> str:
    return "".join("." if char == "?" else re.escape(char) for char in part)
