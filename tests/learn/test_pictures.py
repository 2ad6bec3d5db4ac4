"""Pictures of a run: a self-contained HTML page with the task graph in inline SVG, and the
terminal tree of the tool chain."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from agentscript.learn.journal import Journal
from agentscript.learn.pictures import render_run_html, run_picture, tool_chain_tree
from experience_support import GUESSED, journal_of, learned_run, make_workspace
from learn_support import FixedClock, journaled_run


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    opened = Journal.open(tmp_path / "journal" / "runs.db", FixedClock())
    yield opened
    opened.close()


def test_the_page_draws_every_node_and_loads_nothing(
    journal: Journal, workspace: Path, tmp_path: Path
) -> None:
    run = journaled_run(journal, workspace, input={"topic": "<script>alert(1)</script>"})
    page = render_run_html(journal, run.run_id, tmp_path / "run.html").read_text("utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 1
    # The run's 21 nodes and its 3 files, one box each; one line per edge.
    assert page.count("<rect") == 24
    assert page.count("<path") == 32
    for remote in ("http:", "https:", "src=", "href=", "url(", "@import", "<script"):
        assert remote not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_page_lists_the_tool_chain_and_approvals(
    journal: Journal, workspace: Path, tmp_path: Path
) -> None:
    run = journaled_run(journal, workspace)
    page = render_run_html(journal, run.run_id, tmp_path / "run.html").read_text("utf-8")
    chain = page.split("<h2>Tool chain</h2>")[1].split("<h2>Approvals</h2>")[0]
    assert re.findall(r"<td>(\d)</td><td>([\w.]+)</td>", chain) == [
        ("1", "File.write"),
        ("2", "File.write"),
        ("3", "Search.run"),
    ]
    approvals = page.split("<h2>Approvals</h2>")[1]
    assert approvals.count("<td>approved</td>") == 2


def test_the_page_shows_the_experiences_the_run_taught(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    ran = learned_run(workspace, tmp_path / "memory.db", [GUESSED])
    journal = journal_of(workspace)
    picture = run_picture(journal, ran.run_id)
    page = render_run_html(journal, ran.run_id, tmp_path / "run.html").read_text("utf-8")

    [experience] = picture.experiences
    assert experience.metadata["status"] == "stored"
    # One box per node: the run's own, its files and the experience under its episode.
    assert page.count("<rect") == len(picture.nodes)
    assert f"<title>experience: {experience.label}" in page
    table = page.split("<h2>Experiences</h2>")[1]
    assert "<td>failure</td>" in table and "<td>stored</td>" in table
    assert f"<b>{experience.label}</b>" in table


def test_a_run_that_taught_nothing_says_so(
    journal: Journal, workspace: Path, tmp_path: Path
) -> None:
    run = journaled_run(journal, workspace)
    page = render_run_html(journal, run.run_id, tmp_path / "run.html").read_text("utf-8")
    assert "<p>No experiences.</p>" in page


def test_a_large_run_is_drawn_in_part_and_says_so(journal: Journal, workspace: Path) -> None:
    source = """import llm Model from "openai://gpt-4.1-mini"
import tool Search from "sh://grep"

main agent A {
  model Model
  role "r"
  description "d"
  main func() {
    for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] < 200 {
      for m in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16] < 200 {
        Search.run({ path: ".", pattern: "x", max: 1 })
      }
    }
    return 1
  }
}
"""
    run = journaled_run(journal, workspace, source, input={})
    from agentscript.learn.pictures import MAX_DRAWN, run_html

    picture = run_picture(journal, run.run_id)
    page = run_html(picture)
    assert page.count("<rect") == MAX_DRAWN + 1
    assert f"<p>{len(picture.nodes) - 1 - MAX_DRAWN} more nodes are not drawn.</p>" in page


def test_the_terminal_tree_shows_tools_under_the_calls_that_made_them(
    journal: Journal, workspace: Path
) -> None:
    run = journaled_run(journal, workspace)
    console = Console(record=True, width=100, color_system=None)
    console.print(tool_chain_tree(run_picture(journal, run.run_id)))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert lines == [
        f"run {run.run_id} ok",
        "├── agent Worker.write",
        "│   └── 1. File.write  ok  a.md  [approved by auto]",
        "├── agent Worker.write",
        "│   └── 2. File.write  ok  b.md  [approved by auto]",
        "└── 3. Search.run  ok  .",
    ]


def test_the_tree_shows_refusals_and_the_failure(journal: Journal, workspace: Path) -> None:
    source = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"

main agent A {
  model Model
  role "r"
  description "d"
  main func() {
    File.write({ path: "x.md", content: "x" })
    return 1
  }
}
"""
    run = journaled_run(journal, workspace, source, input={}, approve="deny")
    console = Console(record=True, width=200, color_system=None)
    console.print(tool_chain_tree(run_picture(journal, run.run_id)))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert lines[0] == f"run {run.run_id} error"
    assert lines[1] == "├── File.write refused (mode)"
    # The refused call is journaled as a failed call too.
    assert lines[2] == "├── 1. File.write  failed  x.md  [refused by mode]"
    assert lines[3].startswith(
        "└── Tool File.write (file://workspace) failed: File.write was refused"
    )
