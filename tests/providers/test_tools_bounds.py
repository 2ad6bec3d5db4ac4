"""Every shell-tool call is bounded: linear-time globs, capped output, the run's remaining time
and Ctrl-C stop it, and regex grep tells truncation, slowness and backtracking apart."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscript.providers.tools import regex_search
from agentscript.providers.tools.globs import Glob
from agentscript.providers.tools.output_caps import MAX_LINE_CHARS, MAX_OUTPUT_BYTES, MAX_RESULTS
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.runtime.budgets import BudgetExceeded, CallDeadline, Interrupted
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from tools_support import make_tools

EVIL_GLOB = "*a*a*a*a*a*a*a*a*b"


def call(tools: ToolRegistry, uri: str, argument: dict[str, Any], **deadline: Any) -> Any:
    return tools.call(ToolCall("T", uri, "run", [argument], deadline=CallDeadline(**deadline)))


def finishes(action: Any, seconds: float = 20.0) -> Any:
    """Run `action` in a daemon thread; its result, or a failure when it never returns (a
    backtracking regex cannot be interrupted, so the test must not wait on it for ever)."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(action())
        except BaseException as error:  # handed to the test thread
            outcome.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still running after {seconds} seconds"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def original_glob(glob: str) -> re.Pattern[str]:
    """The regex 0.1.0 built from a glob, the reference the matcher must agree with."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(f"(^|/){body}$")


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="ab/*?.", max_size=9), st.text(alphabet="ab/.", max_size=16))
def test_globs_match_exactly_what_the_original_regex_matched(glob: str, path: str) -> None:
    assert Glob(glob).search(path) == bool(original_glob(glob).search(path))


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="ab/*?\n", max_size=7), st.text(alphabet="ab/\n", max_size=12))
def test_paths_with_newlines_match_as_the_original_did(glob: str, path: str) -> None:
    # A star cannot cross a newline: such paths take the automaton.
    assert Glob(glob).search(path) == bool(original_glob(glob).search(path))


def test_a_catastrophic_glob_takes_no_time_even_across_a_newline() -> None:
    # Not timed: a backtracking match of these would not return within the test run.
    assert not finishes(lambda: Glob(EVIL_GLOB).search("a" * 5000))
    assert not finishes(lambda: Glob(EVIL_GLOB).search("a" * 2000 + "\n"))
    assert finishes(lambda: Glob(EVIL_GLOB).search("x/" + "a" * 2000 + "b"))


def test_a_catastrophic_find_glob_finishes(tmp_path: Path) -> None:
    (tmp_path / ("a" * 60)).write_text("x")
    tools = make_tools(tmp_path)
    result = finishes(lambda: call(tools, "sh://find", {"path": ".", "name": EVIL_GLOB}))
    assert result == {"ok": True, "files": []}
    (tmp_path / ("a" * 60 + "b")).write_text("x")
    assert call(tools, "sh://find", {"path": ".", "name": EVIL_GLOB})["files"] == ["a" * 60 + "b"]


def test_a_catastrophic_grep_include_finishes(tmp_path: Path) -> None:
    (tmp_path / ("a" * 60)).write_text("needle\n")
    tools = make_tools(tmp_path)
    argument = {"path": ".", "pattern": "needle", "include": EVIL_GLOB}
    assert finishes(lambda: call(tools, "sh://grep", argument)) == {"ok": True, "matches": []}


def test_a_glob_has_a_length_cap(tmp_path: Path) -> None:
    with pytest.raises(ExecutionError, match="glob is longer than 1000"):
        call(make_tools(tmp_path), "sh://find", {"path": ".", "name": "*" * 1001})


def test_an_interrupted_walk_stops(tmp_path: Path) -> None:
    for index in range(20):
        (tmp_path / f"f{index}.txt").write_text("needle\n")
    stopped = threading.Event()
    stopped.set()
    tools = make_tools(tmp_path)
    for uri, argument in [
        ("sh://find", {"path": "."}),
        ("sh://grep", {"path": ".", "pattern": "needle"}),
    ]:
        with pytest.raises(Interrupted):
            call(tools, uri, argument, stopped=stopped)


def test_a_walk_stops_when_the_run_time_is_up(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(BudgetExceeded, match="more than 3 seconds"):
        call(
            make_tools(tmp_path),
            "sh://find",
            {"path": "."},
            at=time.monotonic() - 1,
            max_seconds=3,
        )


def test_grep_matches_are_capped_in_number(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * (MAX_RESULTS + 500))
    tools = make_tools(tmp_path)
    for regex in (False, True):
        result = call(
            tools, "sh://grep", {"path": ".", "pattern": "hit", "max": 10**9, "regex": regex}
        )
        assert len(result["matches"]) == MAX_RESULTS
        assert result["truncated"] is True
    # A program's own max is not a cap: the result looks as it did in 0.1.0.
    assert "truncated" not in call(tools, "sh://grep", {"path": ".", "pattern": "hit", "max": 3})
    exact = call(tools, "sh://find", {"path": ".", "max": 10**9})
    assert exact == {"ok": True, "files": [".", "many.txt"]}


def test_grep_output_is_capped_in_bytes_and_long_lines_are_cut(tmp_path: Path) -> None:
    line = "hit " + "x" * 996
    for index in range(3):
        (tmp_path / f"f{index}.txt").write_text((line + "\n") * 600)
    (tmp_path / "long.txt").write_text("hit" + "y" * (MAX_LINE_CHARS * 2) + "\n")
    tools = make_tools(tmp_path)
    result = call(tools, "sh://grep", {"path": ".", "pattern": "hit", "max": 10**6})
    assert result["truncated"] is True
    total = sum(len((m["path"] + m["text"]).encode()) for m in result["matches"])
    assert MAX_OUTPUT_BYTES - 2000 < total <= MAX_OUTPUT_BYTES
    cut = call(tools, "sh://grep", {"path": "long.txt", "pattern": "hit"})
    assert len(cut["matches"][0]["text"]) == MAX_LINE_CHARS
    assert cut["matches"][0]["text"].endswith("…") and cut["truncated"] is True


def test_sed_output_is_capped(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("z" * 3000 + "\n") * 1000)
    result = call(make_tools(tmp_path), "sh://sed", {"path": "wide.txt", "max": 10**6})
    assert result["truncated"] is True
    assert len(result["text"].encode()) <= MAX_OUTPUT_BYTES
    assert result["end"] == result["text"].count("\n") + 1


def test_regex_grep_says_when_text_was_left_unsearched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regex_search, "REGEX_MAX_TOTAL_BYTES", 1000)
    (tmp_path / "a.txt").write_text("hit\n" * 100)
    (tmp_path / "b.txt").write_text("hit\n" * 300)
    result = call(make_tools(tmp_path), "sh://grep", {"path": ".", "pattern": "h.t", "regex": True})
    assert {m["path"] for m in result["matches"]} == {"a.txt"}
    assert result["truncated"] is True


def test_backtracking_is_told_apart_from_a_slow_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regex_search, "REGEX_TIMEOUT_SECONDS", 2.0)
    (tmp_path / "stuck").mkdir()
    (tmp_path / "stuck" / "a.txt").write_text("fine\n")
    (tmp_path / "stuck" / "evil.txt").write_text("fine\n" * 3 + "a" * 40 + "!\n")
    for index in range(4):  # each line takes milliseconds, all of them far longer than the cap
        (tmp_path / "slow" / f"{index}.txt").parent.mkdir(exist_ok=True)
        (tmp_path / "slow" / f"{index}.txt").write_text(("a" * 18 + "\n") * 1000)
    tools = make_tools(tmp_path)
    with pytest.raises(
        ExecutionError, match=r"backtracks catastrophically \(stuck on stuck/evil.txt"
    ):
        call(tools, "sh://grep", {"path": "stuck", "pattern": "(a+)+$", "regex": True})
    with pytest.raises(ExecutionError, match="slow rather than stuck") as slow:
        call(tools, "sh://grep", {"path": "slow", "pattern": "(a|aa)*c", "regex": True})
    assert "catastrophic" not in str(slow.value)


def test_regex_grep_stops_at_the_run_deadline_and_on_interrupt(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text("a" * 40 + "!\n")
    tools = make_tools(tmp_path)
    argument = {"path": ".", "pattern": "(a+)+$", "regex": True}
    with pytest.raises(BudgetExceeded, match="--max-seconds"):
        call(tools, "sh://grep", argument, at=time.monotonic() + 0.5, max_seconds=0.5)
    stopped = threading.Event()
    threading.Timer(0.5, stopped.set).start()
    with pytest.raises(Interrupted):
        call(tools, "sh://grep", argument, stopped=stopped)


@pytest.mark.parametrize("recursion_limit", [1000, 20_000])
def test_a_deeply_nested_pattern_is_refused_without_traceback_text(
    tmp_path: Path, recursion_limit: int
) -> None:
    # A run raises the recursion limit (deep programs): the pattern may then compile here and
    # fail only in the worker; the message must be the same either way.
    (tmp_path / "a.txt").write_text("a\n")
    pattern = "(" * 499 + "a" + ")" * 499
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(recursion_limit)
    try:
        with pytest.raises(ExecutionError) as refused:
            call(
                make_tools(tmp_path), "sh://grep", {"path": ".", "pattern": pattern, "regex": True}
            )
    finally:
        sys.setrecursionlimit(saved)
    assert str(refused.value) == (
        "Grep.run regex pattern is invalid: it is nested too deeply to compile"
    )
