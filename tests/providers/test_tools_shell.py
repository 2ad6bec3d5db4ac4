"""`sh://find`, `sh://grep`, `sh://sed` and `sh://read-range` (the later releases' name for
`sed`), implemented in-process over the workspace jail."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscript.providers.tools.registry import ToolRegistry
from agentscript.runtime.errors import ExecutionError
from tools_support import call, make_tools


@pytest.fixture
def tools(tmp_path: Path) -> ToolRegistry:
    (tmp_path / "src" / "lib").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "src" / "main.ts").write_text(
        "import x\n// TODO: fix generate\nconst y = 2\r\ngenerate()\n"
    )
    (tmp_path / "src" / "lib" / "util.ts").write_text("export function generate() {}\n")
    (tmp_path / "src" / "notes.md").write_text("generate docs\n")
    (tmp_path / "docs" / "guide.md").write_text("line 1\nline 2\nline 3\nline 4\n")
    (tmp_path / "src" / "big.ts").write_text("generate\n" * 150_000)
    (tmp_path / "src" / "link.ts").symlink_to(tmp_path / "src" / "main.ts")
    return make_tools(tmp_path)


def test_find_walks_depth_first_in_sorted_order_and_skips_symlinks(tools: ToolRegistry) -> None:
    assert call(tools, "sh://find", "run", {"path": "src"}) == {
        "ok": True,
        "files": ["src", "src/big.ts", "src/lib", "src/lib/util.ts", "src/main.ts", "src/notes.md"],
    }
    assert call(tools, "sh://find", "run", {"path": "."})["files"][0] == "."


def test_find_filters_by_glob_type_and_max(tools: ToolRegistry) -> None:
    files = call(tools, "sh://find", "search", {"path": ".", "name": "*.ts", "type": "file"})[
        "files"
    ]
    assert files == ["src/big.ts", "src/lib/util.ts", "src/main.ts"]
    assert call(tools, "sh://find", "run", {"path": ".", "type": "dir"})["files"] == [
        ".",
        "docs",
        "src",
        "src/lib",
    ]
    assert call(tools, "sh://find", "run", {"path": ".", "name": "*.ts", "max": 1})["files"] == [
        "src/big.ts"
    ]
    assert call(tools, "sh://find", "run", {"path": ".", "name": "u?il.ts"})["files"] == [
        "src/lib/util.ts"
    ]


def test_grep_matches_substrings_per_line_and_skips_large_files(tools: ToolRegistry) -> None:
    result = call(
        tools, "sh://grep", "run", {"path": "src", "pattern": "generate", "include": "*.ts"}
    )
    assert result == {
        "ok": True,
        "matches": [
            {"path": "src/lib/util.ts", "line": 1, "text": "export function generate() {}"},
            {"path": "src/main.ts", "line": 2, "text": "// TODO: fix generate"},
            {"path": "src/main.ts", "line": 4, "text": "generate()"},
        ],
    }
    assert (
        len(
            call(tools, "sh://grep", "run", {"path": ".", "pattern": "generate", "max": 2})[
                "matches"
            ]
        )
        == 2
    )


def test_grep_pattern_is_literal_unless_regex_is_asked_for(tools: ToolRegistry) -> None:
    assert call(tools, "sh://grep", "run", {"path": "src", "pattern": "gen.rate"})["matches"] == []
    regex = call(
        tools, "sh://grep", "run", {"path": "src/main.ts", "pattern": "^gen.rate", "regex": True}
    )
    assert regex["matches"] == [{"path": "src/main.ts", "line": 4, "text": "generate()"}]


def test_grep_regex_has_a_time_cap(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text("a" * 40 + "!\n")
    tools = make_tools(tmp_path)
    with pytest.raises(ExecutionError, match="took longer than"):
        call(tools, "sh://grep", "run", {"path": ".", "pattern": "(a+)+$", "regex": True})


def test_grep_rejects_invalid_patterns(tools: ToolRegistry) -> None:
    with pytest.raises(ExecutionError, match="regex pattern is invalid"):
        call(tools, "sh://grep", "run", {"path": ".", "pattern": "(", "regex": True})


def test_sed_returns_a_line_window(tools: ToolRegistry) -> None:
    assert call(tools, "sh://sed", "run", {"path": "docs/guide.md", "start": 2, "max": 2}) == {
        "ok": True,
        "text": "line 2\nline 3",
        "start": 2,
        "end": 3,
    }


def test_read_range_reads_a_line_window_as_sed_does(tools: ToolRegistry) -> None:
    window = {"path": "docs/guide.md", "start": 3, "max": 5}
    assert call(tools, "sh://read-range", "run", window) == {
        "ok": True,
        "text": "line 3\nline 4\n",
        "start": 3,
        "end": 5,
    }
    assert call(tools, "sh://read-range", "read", window) == call(tools, "sh://sed", "run", window)
    whole = call(tools, "sh://read-range", "run", {"path": "src/main.ts"})
    assert whole["text"] == "import x\n// TODO: fix generate\nconst y = 2\ngenerate()\n"
    assert (whole["start"], whole["end"]) == (1, 5)


def test_read_range_output_is_capped(tools: ToolRegistry, tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("x" * 5000 + "\nshort\n")
    first = call(tools, "sh://read-range", "run", {"path": "long.txt", "max": 1})
    assert first["text"] == "x" * 4095 + "…"
    lines = call(tools, "sh://read-range", "run", {"path": "src/big.ts", "max": 20_000})
    assert lines["truncated"] is True
    assert (lines["end"], len(lines["text"].split("\n"))) == (10_000, 10_000)


def test_read_range_stays_in_the_workspace(tools: ToolRegistry) -> None:
    for path in ("../outside.txt", "/etc/passwd", "docs/../../x"):
        with pytest.raises(ExecutionError, match="Path escapes workspace"):
            call(tools, "sh://read-range", "run", {"path": path})


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("docs/guide.md", "ReadRange.run expects one json object argument"),
        ({"start": 2}, "ReadRange.run.path is required"),
        ({"path": "docs/guide.md", "max": 0}, "Expected a positive integer, got 0"),
    ],
)
def test_read_range_argument_errors_use_the_original_messages(
    tools: ToolRegistry, argument: object, message: str
) -> None:
    with pytest.raises(ExecutionError) as caught:
        call(tools, "sh://read-range", "run", argument)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("sh://sh", "Forbidden shell tool 'sh'"),
        ("sh://bash", "Forbidden shell tool 'bash'"),
        ("sh://zsh", "Forbidden shell tool 'zsh'"),
        ("sh://fish", "Forbidden shell tool 'fish'"),
        ("sh://rm", "Unsupported shell tool 'rm'. Supported: find, grep, sed, read-range"),
        ("sh://curl", "Unsupported shell tool 'curl'. Supported: find, grep, sed, read-range"),
    ],
)
def test_shells_and_other_commands_are_refused(tools: ToolRegistry, uri: str, message: str) -> None:
    with pytest.raises(ExecutionError) as caught:
        call(tools, uri, "run", {"path": ".", "command": "rm -rf /"})
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("uri", "argument", "message"),
    [
        ("sh://find", "src", "Find.run expects one json object argument"),
        ("sh://find", {}, "Find.run.path is required"),
        ("sh://grep", {"path": "."}, "Grep.run.pattern is required"),
        ("sh://find", {"path": ".", "name": 3}, "Expected a string, got 3"),
        ("sh://find", {"path": ".", "max": 0}, "Expected a positive integer, got 0"),
        (
            "sh://sed",
            {"path": "docs/guide.md", "start": 1.5},
            "Expected a positive integer, got 1.5",
        ),
    ],
)
def test_argument_errors_use_the_original_messages(
    tools: ToolRegistry, uri: str, argument: object, message: str
) -> None:
    with pytest.raises(ExecutionError) as caught:
        call(tools, uri, "run", argument)
    assert str(caught.value) == message


def test_unknown_scheme_names_the_supported_ones(tools: ToolRegistry) -> None:
    with pytest.raises(ExecutionError) as caught:
        call(tools, "ftp://host", "get", {})
    assert str(caught.value) == "Unsupported tool URI scheme 'ftp'. Supported: file, sh"


def test_grep_reads_a_file_whose_name_holds_a_backslash(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    (tmp_path / "docs" / "a\\b.md").write_text("generate here\n")
    result = call(tools, "sh://grep", "run", {"path": "docs", "pattern": "generate"})
    assert result == {
        "ok": True,
        "matches": [{"path": "docs/a\\b.md", "line": 1, "text": "generate here"}],
    }
