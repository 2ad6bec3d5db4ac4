"""The tree of a run (cli/trace_tree) and `run --trace pretty`: the value, then the tree; JSON
only when asked; `make demo` short enough to read."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main
from agentscript.cli.trace_tree import brief, build_tree, run_tree, tree_lines

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("agentscript")


def generate(result: Any, **data: Any) -> dict[str, Any]:
    return {
        "kind": "generate",
        "data": {"instruction": "Decide.", "attempts": 1, "result": result, **data},
    }


def test_loop_rounds_nest_between_their_markers() -> None:
    trace = [
        {"kind": "use", "data": {"source": "input.q", "budget": None}},
        {"kind": "loop", "data": {"loop": "5:3", "statement": "loop until done", "index": 0}},
        generate({"ok": False}),
        {"kind": "for", "data": {"loop": "7:5", "item": "x", "index": 0, "value": "a"}},
        {"kind": "tool", "data": {"tool": "T", "method": "run", "result": {"n": 1}}},
        {"kind": "loop_end", "data": {"loop": "7:5", "rounds": 1, "duration_ms": 3}},
        {"kind": "loop", "data": {"loop": "5:3", "statement": "loop until done", "index": 1}},
        generate({"ok": True}),
        {"kind": "loop_end", "data": {"loop": "5:3", "rounds": 2, "duration_ms": 12}},
        generate({"answer": "x"}),
    ]
    lines = tree_lines(run_tree("main.as", trace))
    assert lines == [
        "main.as  [3 generates, 1 tool call, 0 tokens]",
        "├─ use input.q",
        "├─ loop until done  [2 rounds, 12 ms]",
        "│  ├─ round 1",
        '│  │  ├─ generate "Decide." → {ok: false}  [attempt 1/1]'.replace("  [attempt 1/1]", ""),
        "│  │  └─ for x  [1 round, 3 ms]",
        '│  │     └─ [0] "a"',
        "│  │        └─ tool T.run → {n: 1}",
        "│  └─ round 2",
        '│     └─ generate "Decide." → {ok: true}',
        '└─ generate "Decide." → {answer: "x"}',
    ]


def test_a_loop_that_reached_its_bound_says_so() -> None:
    trace = [
        {"kind": "loop", "data": {"loop": "5:3", "statement": "loop until done", "index": 0}},
        {
            "kind": "loop_end",
            "data": {"loop": "5:3", "rounds": 1, "bound_reached": True, "limit": 1},
        },
    ]
    lines = tree_lines(run_tree("main.as", trace))
    assert lines[1] == (
        "└─ loop until done  [1 round, stopped at its bound (max 1), condition never met]"
    )


def test_failed_attempts_and_repairs_are_marked_with_why() -> None:
    repaired = generate(
        {"ok": True},
        attempts=2,
        max_attempts=3,
        errors=["LLM result field 'ok' must be a boolean, got \"maybe\" at 9:40"],
        usage={"input_tokens": 100, "output_tokens": 20},
        duration_ms=1500,
    )
    failed = generate(
        None,
        attempts=3,
        max_attempts=3,
        ok=False,
        error="LLM result is missing required field 'ok'",
        errors=["first", "second", "LLM result is missing required field 'ok'"],
    )
    repaired_node, failed_node = build_tree([repaired, failed])
    assert repaired_node.text() == (
        'generate "Decide." → {ok: true}  [attempt 2/3, 120 tokens, 1.5 s]'
    )
    assert [child.text() for child in repaired_node.children] == [
        '✗ attempt 1/3 failed: "LLM result field \'ok\' must be a boolean, got \\"maybe\\" at 9:40"'
    ]
    assert failed_node.failed and "failed:" in failed_node.label
    assert failed_node.facts == ["attempt 3/3"]
    assert len(failed_node.children) == 2  # the final error is on the line itself


def test_agent_calls_and_parallel_iterations_nest() -> None:
    call = {
        "kind": "agent",
        "data": {
            "agent": "W",
            "function": "work",
            "args": [1],
            "result": 2,
            "duration_ms": 4,
            "trace": [generate("x")],
        },
    }
    parallel = {
        "kind": "parallel_for",
        "data": {
            "item": "x",
            "source": "xs",
            "items": 2,
            "concurrency": 2,
            "ok": False,
            "iterations": [
                {"index": 0, "input": "a", "ok": True, "result": 1, "trace": [call]},
                {"index": 1, "input": "b", "ok": False, "error": "boom", "trace": []},
            ],
        },
    }
    agent_node, parallel_node = build_tree([call, parallel])
    assert agent_node.text() == "W.work(1) → 2  [4 ms]"
    assert agent_node.children[0].kind == "generate"
    ok, failed = parallel_node.children
    assert ok.children[0].label.startswith("W.work(1)")
    assert failed.failed and failed.label.endswith('failed: "boom"')


def test_run_summary_counts_tokens_of_nested_generates() -> None:
    nested = {
        "kind": "agent",
        "data": {
            "agent": "W",
            "function": "f",
            "args": [],
            "result": 1,
            "trace": [generate(1, usage={"input_tokens": 5, "output_tokens": 5})],
        },
    }
    root = run_tree("p.as", [nested, generate(2, usage={"input_tokens": 1, "output_tokens": 2})])
    assert root.facts == ["2 generates, 0 tool calls, 13 tokens"]


def test_brief_keeps_every_field_visible() -> None:
    text = brief({"thought": "x" * 200, "action": "search", "hits": [1, 2, 3, 4]})
    assert text.startswith('{thought: "xxx') and 'action: "search"' in text
    assert "hits: [4 items]" in text and len(text) <= 96


# ----------------------------------------------------------------------------- the command


@pytest.fixture
def greet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(ROOT / "tests" / "fixtures" / "cli" / "greet.as", tmp_path / "greet.as")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "greet.as"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_trace_pretty_prints_the_value_then_the_tree_and_no_json_trace(
    greet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        capsys, "run", str(greet), "--mock", "--input", '{"name": "Ada"}', "--trace", "pretty"
    )
    assert code == 0
    value, _, tree = out.partition("}\n")
    assert json.loads(value + "}") == {"greeting": "", "name": "Ada"}
    assert tree.startswith(f'{greet} {{name: "Ada"}}  [1 generate, 0 tool calls, 0 tokens')
    assert "└─ generate" in tree
    assert '"trace"' not in out
    assert err.startswith("usage: 1 model call")


def test_json_with_trace_pretty_prints_the_document_before_the_tree(
    greet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        capsys,
        "run",
        str(greet),
        "--mock",
        "--input",
        '{"name": "A"}',
        "--trace",
        "pretty",
        "--json",
    )
    document, _, tree = out.partition("\n}\n")
    assert code == 0
    assert set(json.loads(document + "\n}")) == {"value", "trace"}
    assert "└─ generate" in tree


def test_quiet_with_trace_pretty_keeps_the_tree_and_drops_the_usage_line(
    greet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        capsys,
        "run",
        str(greet),
        "--mock",
        "--input",
        '{"name": "A"}',
        "--trace",
        "pretty",
        "--quiet",
    )
    assert (code, err) == (0, "")
    assert "└─ generate" in out


def test_trace_file_writes_the_trace_and_keeps_stdout_as_asked(
    greet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        capsys, "run", str(greet), "--mock", "--input", '{"name": "A"}', "--trace-file", "t.json"
    )
    assert code == 0
    assert json.loads(out)["trace"] == {"file": "t.json"}
    assert json.loads((greet.parent / "t.json").read_text())[-1]["kind"] == "generate"


def test_make_demo_is_short_question_tree_answer_usage(tmp_path: Path) -> None:
    """What `make demo` runs, in a copy of examples/ (the journal stays out of the checkout)."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = subprocess.run(
        [
            str(SCRIPT),
            "run",
            "examples/react.as",
            "--mock",
            "examples/react.responses.json",
            "--input",
            '{"question": "Which Python release added the match statement?"}',
            "--trace",
            "pretty",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    lines = (done.stdout + done.stderr).splitlines()
    assert 15 <= len(lines) <= 30
    text = "\n".join(lines)
    assert "Which Python release added the match statement?" in text
    assert '"answer": "Python 3.10 added the match statement' in text
    assert "loop until done  [3 rounds" in text and "tool Search.run" in text
    assert lines[-1].startswith("usage: 3 model calls")
    assert not (tmp_path / ".agentscript" / "memory.db").exists()  # a mock run learns nothing


def test_makefile_demo_runs_this_command() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "examples/react.as --mock examples/react.responses.json" in makefile
    assert "--trace pretty" in makefile
