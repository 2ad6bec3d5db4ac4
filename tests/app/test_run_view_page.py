"""The run page in a real headless Chromium: every part the page promises, checked in the DOM.

One journaled run of tests/fixtures/run_view/everything.as (against a local OpenAI-wire server
that reports tokens) is drawn once; each test looks at one part of the page. A screenshot of
the page is kept in the test's temporary folder (its path is printed).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.run_view.page import write_run_pages
from agentscript.learn.journal import Journal
from browser import Browser
from local_http import LocalHTTPServer
from run_view_support import SECRET, ViewedRun, run_everything


@pytest.fixture(scope="module")
def viewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ViewedRun, ViewedRun]]:
    """Two runs: the first, and a second whose input names the first (a run it called)."""
    server = LocalHTTPServer(host="127.0.0.1")
    server.start()
    try:
        workspace = tmp_path_factory.mktemp("run-view")
        first = run_everything(server, workspace)
        server.clear()
        second = run_everything(server, workspace, previous=first.run_id)
        yield first, second
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pages(viewed: tuple[ViewedRun, ViewedRun]) -> list[Path]:
    _first, second = viewed
    journal = Journal.for_workspace(second.workspace)
    try:
        return write_run_pages(journal, second.run_id, second.workspace / "page.html")
    finally:
        journal.close()


@pytest.fixture(scope="module")
def page(pages: list[Path]) -> Iterator[Browser]:
    with Browser.launch(width=1400, height=1000) as browser:
        browser.open(pages[0].as_uri())
        assert browser.evaluate("document.body.dataset.ready") == "1"
        wait_for_graph(browser)
        yield browser


def wait_for_graph(browser: Browser) -> None:
    """The graph is drawn just after the first frame."""
    drawn = browser.evaluate(
        """new Promise(done => { const check = () => document.body.dataset.graph === "1"
            ? done(true) : setTimeout(check, 20); check(); })"""
    )
    assert drawn is True


def steps_of(page: Browser, kind: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = page.evaluate(
        f"""[...document.querySelectorAll('.step[data-kind="{kind}"]')].map(r => ({{
            id: Number(r.dataset.id), depth: Number(r.dataset.depth), text: r.textContent,
            failed: r.classList.contains('failed'), hidden: r.hidden }}))"""
    )
    return rows


def select(page: Browser, step: int) -> str:
    """Select a step and return the text of its details."""
    text: str = page.evaluate(
        f"runPage.select({step}, true); document.getElementById('details').textContent"
    )
    return text


def test_the_page_is_one_file_that_loads_nothing(pages: list[Path]) -> None:
    html = pages[0].read_text(encoding="utf-8")
    assert "default-src 'none'" in html
    for needle in ("http://", "https://", "src=", "@import"):
        outside = [line for line in html.splitlines() if needle in line and "w3.org" not in line]
        # URLs may only appear inside the run's data (the local model server's address).
        assert all('id="run-data"' in line for line in outside), needle


@pytest.mark.browser
def test_the_header_shows_status_tokens_cost_and_the_called_run(
    page: Browser, viewed: tuple[ViewedRun, ViewedRun], pages: list[Path]
) -> None:
    first, second = viewed
    assert page.evaluate("document.getElementById('run-id').textContent") == f"Run {second.run_id}"
    assert page.evaluate("document.getElementById('run-status').textContent") == "ok"
    summary = page.evaluate("document.getElementById('run-summary').textContent")
    # Five model calls (one repaired) of 120 in / 12 out tokens at gpt-4.1-mini's price.
    assert "600 in / 60 out" in summary
    assert "$0.00034" in summary
    links = page.evaluate(
        "[...document.querySelectorAll('#links a')].map(a => a.getAttribute('href'))"
    )
    assert links == [f"{first.run_id}.html"]
    assert pages[1].name == f"{first.run_id}.html" and pages[1].exists()


@pytest.mark.browser
def test_the_timeline_nests_calls_and_shows_loops_and_parallel_branches(page: Browser) -> None:
    (parallel,) = steps_of(page, "parallel_for")
    iterations = steps_of(page, "iteration")
    assert [row["depth"] for row in iterations] == [parallel["depth"] + 1] * 3
    assert [row["text"].split("]")[0][-2:] for row in iterations] == ["[0", "[1", "[2"]
    agents = steps_of(page, "agent")
    assert len(agents) == 3 and all(row["depth"] == parallel["depth"] + 2 for row in agents)
    generates = steps_of(page, "generate")
    assert sorted(row["depth"] for row in generates) == [0, 3, 3, 3]
    assert len(steps_of(page, "for")) == 3
    bars = page.evaluate(
        "[...document.querySelectorAll('.step .bar span')].map(s => s.style.width)"
    )
    assert all(bar.endswith("%") for bar in bars)
    durations = page.evaluate(
        "[...document.querySelectorAll('.step[data-kind=generate] .duration')]"
        ".map(d => d.textContent)"
    )
    assert all(text.endswith("ms") or text.endswith(" s") for text in durations)


@pytest.mark.browser
def test_a_generate_shows_prompt_context_answer_repairs_tokens_model_and_cost(
    page: Browser,
) -> None:
    repaired = steps_of(page, "generate")[0]
    details = select(page, repaired["id"])
    assert "openai://gpt-4.1-mini" in details and "gpt-4.1-mini-2025-04-14" in details
    assert "240 in / 24 out" in details  # two attempts
    assert "$0.00013" in details
    assert "prompt estimate≈" in details and "tokens: system " in details
    system = page.evaluate("document.querySelector('#details .generate-system pre').textContent")
    assert system.startswith("Role: writer.")
    item = page.evaluate(
        """[...document.querySelectorAll('#details .context-item td')].map(t => t.textContent)"""
    )
    assert item[1] == "input.topiclabel topic" and item[2] == "200 chars"
    assert item[3] == "whole" and item[5] == "tides"
    instruction = page.evaluate(
        "document.querySelector('#details .generate-instruction').textContent"
    )
    assert "Write one line about the topic." in instruction
    answer = page.evaluate("document.querySelector('#details .generate-answer pre').textContent")
    assert json.loads(answer) == {"line": "Line 2."}
    repairs = page.evaluate(
        "[...document.querySelectorAll('#details .repair')].map(r => r.textContent)"
    )
    assert repairs[0].startswith("attempt 1/2 failed: ") and "must be a string" in repairs[0]
    assert repairs[1] == "attempt 2/2 ok"


@pytest.mark.browser
def test_a_clipped_context_item_says_so_with_both_sizes(page: Browser) -> None:
    summary = steps_of(page, "generate")[-1]
    select(page, summary["id"])
    cells = page.evaluate(
        "[...document.querySelectorAll('#details .context-item td')].map(t => t.textContent)"
    )
    assert cells[1] == "foundlabel notes" and cells[3] == "clipped"
    before, after = (int(size) for size in cells[4].split(" → "))
    assert after <= 40 < before


@pytest.mark.browser
def test_a_tool_call_shows_arguments_result_effects_and_who_approved(page: Browser) -> None:
    (write,) = [row for row in steps_of(page, "tool") if "File.write" in row["text"]]
    details = select(page, write["id"])
    assert "file://workspace" in details
    args = page.evaluate("document.querySelector('#details .tool-args pre').textContent")
    assert json.loads(args)[0]["path"] == "out.txt"
    effects = page.evaluate(
        "[...document.querySelectorAll('#details .effect')].map(e => e.textContent)"
    )
    assert len(effects) == 1 and '"action": "write"' in effects[0]
    approvals = page.evaluate(
        "[...document.querySelectorAll('#details .approval')].map(a => a.textContent)"
    )
    assert approvals == ["pending (risk effect)", "approved by auto (risk effect)"]


@pytest.mark.browser
def test_long_results_are_short_until_expanded(page: Browser) -> None:
    (query,) = [row for row in steps_of(page, "memory") if "Notes.query" in row["text"]]
    select(page, query["id"])
    shown = page.evaluate(
        """(() => { const box = document.querySelector('#details .memory-result');
            const before = box.querySelector('pre').textContent.length;
            const more = box.querySelector('.more');
            if (!more) return [before, before];
            more.click();
            return [before, box.querySelector('pre').textContent.length]; })()"""
    )
    assert shown[0] <= 601 < shown[1]


@pytest.mark.browser
def test_memory_reads_and_writes_are_steps(page: Browser) -> None:
    memory = [row["text"] for row in steps_of(page, "memory")]
    assert [text.count("Notes.add") for text in memory] == [1, 1, 1, 0]
    assert "Notes.query" in memory[-1]
    (add, *_rest) = steps_of(page, "memory")
    assert "operationadd" in select(page, add["id"]).replace(" ", "")


@pytest.mark.browser
def test_the_task_graph_has_no_overlapping_labels_and_jumps_to_steps(page: Browser) -> None:
    boxes = page.evaluate(
        """[...document.querySelectorAll('#graph .node')].map(n => {
            const t = n.transform.baseVal.consolidate().matrix; return [t.e, t.f]; })"""
    )
    assert len(boxes) >= 12
    assert len({tuple(box) for box in boxes}) == len(boxes)
    rows_per_column: dict[float, list[float]] = {}
    for x, y in boxes:
        rows_per_column.setdefault(x, []).append(y)
    for ys in rows_per_column.values():
        ys.sort()
        assert all(b - a >= 22 for a, b in itertools.pairwise(ys))
    jumped = page.evaluate(
        """(() => { const node = [...document.querySelectorAll('#graph .node[data-step]')]
              .find(n => n.dataset.id.endsWith('/call'));
            node.dispatchEvent(new MouseEvent('click', {bubbles: true}));
            return [Number(node.dataset.step),
                    Number(document.querySelector('.step.selected').dataset.id),
                    node.classList.contains('selected')]; })()"""
    )
    assert jumped[0] == jumped[1] and jumped[2] is True


@pytest.mark.browser
def test_the_graph_zooms_and_pans(page: Browser) -> None:
    before = page.evaluate("document.getElementById('graph-layer').getAttribute('transform')")
    page.evaluate("document.getElementById('zoom-in').click()")
    zoomed = page.evaluate("runPage.view.k")
    page.evaluate(
        """(() => { const frame = document.getElementById('graph-frame');
            frame.dispatchEvent(new PointerEvent('pointerdown', {clientX: 500, clientY: 500,
                                                               bubbles: true}));
            window.dispatchEvent(new PointerEvent('pointermove', {clientX: 440, clientY: 470}));
            window.dispatchEvent(new PointerEvent('pointerup', {})); })()"""
    )
    after = page.evaluate("[runPage.view.x, runPage.view.y]")
    assert page.evaluate("document.getElementById('graph-layer').getAttribute('transform')") != (
        before
    )
    assert zoomed > 0 and after[0] != 0
    page.evaluate("document.getElementById('zoom-reset').click()")


def visible_kinds(page: Browser) -> list[str]:
    kinds: list[str] = page.evaluate(
        "[...document.querySelectorAll('.step')].filter(r => !r.hidden).map(r => r.dataset.kind)"
    )
    return kinds


def set_filters(page: Browser, search: str = "", kind: str = "", agent: str = "") -> None:
    page.evaluate(
        f"""(() => {{ document.getElementById('search').value = {json.dumps(search)};
            document.getElementById('kind').value = {json.dumps(kind)};
            document.getElementById('agent').value = {json.dumps(agent)};
            runPage.applyFilter(); }})()"""
    )


@pytest.mark.browser
def test_search_and_filters_narrow_the_timeline(page: Browser) -> None:
    total = len(visible_kinds(page))
    set_filters(page, kind="tool")
    assert set(visible_kinds(page)) == {"tool"}
    set_filters(page, agent="Writer")
    assert set(visible_kinds(page)) == {"agent", "use", "generate"}
    set_filters(page, search="summarise notes")
    assert visible_kinds(page) == ["generate"]
    assert page.evaluate("document.getElementById('count').textContent") == f"1 of {total} steps"
    set_filters(page)
    page.evaluate("document.getElementById('failed').checked = true; runPage.applyFilter()")
    assert visible_kinds(page) == []  # this run failed nowhere (a repair is not a failure)
    page.evaluate("document.getElementById('failed').checked = false; runPage.applyFilter()")
    assert len(visible_kinds(page)) == total


@pytest.mark.browser
def test_collapsing_a_call_hides_its_steps(page: Browser) -> None:
    (parallel,) = steps_of(page, "parallel_for")
    before = len(visible_kinds(page))
    page.evaluate(f"document.querySelector('.step[data-id=\"{parallel['id']}\"] .toggle').click()")
    assert len(visible_kinds(page)) == before - 12
    page.evaluate(f"document.querySelector('.step[data-id=\"{parallel['id']}\"] .toggle').click()")
    assert len(visible_kinds(page)) == before


@pytest.mark.browser
def test_experiences_sections_are_there(page: Browser) -> None:
    recalled = page.evaluate("document.getElementById('experiences-recalled').textContent")
    learned = page.evaluate("document.getElementById('experiences-learned').textContent")
    assert recalled == "none" and learned == "none"  # learn=False: nothing learned or recalled


@pytest.mark.browser
def test_the_secret_is_redacted_exactly_as_in_the_trace(
    page: Browser, pages: list[Path], viewed: tuple[ViewedRun, ViewedRun]
) -> None:
    _, second = viewed
    assert second.result is not None
    assert SECRET not in json.dumps(second.result.trace)
    for written in pages:
        assert SECRET not in written.read_text(encoding="utf-8")
    (env,) = [row for row in steps_of(page, "tool") if "Env.get" in row["text"]]
    assert "[REDACTED]" in select(page, env["id"])
    (write,) = [row for row in steps_of(page, "tool") if "File.write" in row["text"]]
    assert "written with [REDACTED]" in select(page, write["id"])


@pytest.mark.browser
def test_a_screenshot_of_the_page_is_kept(page: Browser, tmp_path: Path) -> None:
    generate = steps_of(page, "generate")[0]
    select(page, generate["id"])
    shot = page.screenshot(tmp_path / "run-page.png", full_page=True)
    print(f"run page screenshot: {shot}")
    assert shot.stat().st_size > 20_000


@pytest.mark.browser
def test_a_failed_run_opens_on_its_first_failure(viewed: tuple[ViewedRun, ViewedRun]) -> None:
    server = LocalHTTPServer(host="127.0.0.1")
    server.start()
    try:
        failed = run_everything(server, viewed[0].workspace / "failing", writer_fails=True)
    finally:
        server.stop()
    journal = Journal.for_workspace(failed.workspace)
    try:
        (written,) = write_run_pages(journal, failed.run_id, None)
    finally:
        journal.close()
    assert written == failed.workspace / ".agentscript" / "views" / f"{failed.run_id}.html"
    with Browser.launch() as browser:
        browser.open(written.as_uri())
        assert browser.evaluate("document.getElementById('run-status').textContent") == "error"
        error = browser.evaluate("document.getElementById('run-error').textContent")
        assert "parallel for failed" in error
        selected = browser.evaluate("document.querySelector('.step.selected').dataset.kind")
        assert selected == "generate"
        repairs = browser.evaluate(
            "[...document.querySelectorAll('#details .repair')].map(r => r.textContent)"
        )
        assert [r.split(":")[0] for r in repairs] == ["attempt 1/2 failed", "attempt 2/2 failed"]
        browser.evaluate("document.getElementById('failed').checked = true; runPage.applyFilter()")
        failed_kinds = browser.evaluate(
            "[...document.querySelectorAll('.step')].filter(r => !r.hidden)"
            ".map(r => r.dataset.kind + (r.classList.contains('failed') ? '!' : ''))"
        )
        assert set(failed_kinds) == {"parallel_for!", "iteration!", "agent!", "generate!"}


LOOP = """import llm Model from "openai://gpt-4.1-mini"
import tool Search from "mcp://tools/search"

main agent Worker {
  model Model
  role "worker"
  description "Looks items up."
  main func(input { items list[string] }) {
    for item in input.items < 1000 {
      found = Search.query({ q: item })
      answer = generate({ input: "Say what the item is." }) -> { text string }
    }
    return input.items.length
  }
}
"""


@pytest.mark.browser
def test_a_large_graph_draws_what_is_in_view_and_shows_a_selected_steps_node(
    tmp_path: Path,
) -> None:
    program = tmp_path / "loop.as"
    program.write_text(LOOP, encoding="utf-8")
    result = agentscript.run(
        agentscript.load(program),
        {"items": [f"item {index}" for index in range(150)]},
        agentscript.RunConfig(model="mock", mock_tools=True, workspace=tmp_path, learn=False),
    )
    assert result.journal is not None and result.journal.wait(30) == []
    journal = Journal.for_workspace(tmp_path)
    try:
        (written,) = write_run_pages(journal, result.journal.run_id, tmp_path / "loop.html")
    finally:
        journal.close()
    with Browser.launch() as browser:
        browser.open(written.as_uri())
        wait_for_graph(browser)
        total = browser.evaluate(
            "JSON.parse(document.getElementById('run-data').textContent).graph.nodes.length"
        )
        drawn = browser.evaluate("document.querySelectorAll('#graph .node').length")
        assert total > 400 and 0 < drawn < total / 3
        last = steps_of(browser, "generate")[-1]["id"]
        shown = browser.evaluate(
            f"""new Promise(done => {{ runPage.select({last}, true);
                requestAnimationFrame(() => requestAnimationFrame(() => done(
                  [...document.querySelectorAll('#graph .node.selected')]
                    .map(n => Number(n.dataset.step))))); }})"""
        )
        assert shown == [last]
