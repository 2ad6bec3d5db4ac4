"""How fast a large run's page opens: one run of 5,000 trace events, its `runs view` page
opened in headless Chromium (target: usable in under 2 s), against the peer in the same run,
the `runs graph --html` page of the same run.

The run is a mock run of a `for` loop whose every step has a `use`, a shaped generate and a
tool call (four events a step), with its agent calls nested, journaled into a temporary
workspace. For each page the browser opens the file `--repeat` times (a fresh load each time)
and the script reads, from the page's own clock: the load event, and for the run page the end
of its script (header, timeline and details drawn: the page is usable), the first frame
painted after it, and the end of drawing the task graph (done just after the first frame). Python's
time to gather and write the page is timed too. Prints one table; never asserts on timings.

    .venv/bin/python benchmarks/run_view.py [--events 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import agentscript
import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.app.run_view.page import write_run_pages
from agentscript.learn.journal import Journal
from agentscript.learn.pictures import render_run_html

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from browser import Browser  # the tests' DevTools driver (tests/support)

TARGET_SECONDS = 2.0
EVENTS_PER_STEP = 4

PROGRAM = """import llm Model from "openai://gpt-4.1-mini"
import tool Search from "mcp://tools/search"

agent Worker {
  model Model
  role "worker"
  description "Looks one item up."
  main func(input { items list[string] }) {
    for item in input.items < 100000 {
      use item max 200 as "item"
      found = Search.query({ q: item })
      answer = generate({ input: "Say what the item is." }) -> { text string }
    }
    return input.items.length
  }
}

main agent Lead {
  model Model
  role "lead"
  description "Splits the work."
  main func(input { batches list[list[string]] }) {
    total = 0
    for batch in input.batches < 1000 {
      total = Worker({ items: batch })
    }
    return total
  }
}
"""


def make_run(workspace: Path, events: int) -> str:
    steps = max(1, events // EVENTS_PER_STEP)
    items = [f"item {index}" for index in range(steps)]
    batches = [items[start : start + 250] for start in range(0, len(items), 250)]
    program = workspace / "large.as"
    program.write_text(PROGRAM, encoding="utf-8")
    result = agentscript.run(
        agentscript.load(program),
        {"batches": batches},
        agentscript.RunConfig(model="mock", mock_tools=True, workspace=workspace, learn=False),
    )
    assert result.journal is not None
    result.journal.wait(120)
    return result.journal.run_id


def open_times(browser: Browser, page: Path, repeat: int, run_page: bool) -> dict[str, float]:
    loads: list[float] = []
    ready: list[float] = []
    painted: list[float] = []
    graphs: list[float] = []
    for _ in range(repeat):
        browser.open(page.as_uri(), timeout=120)
        timing = browser.evaluate(
            """new Promise(done => {
                const page = window.runPage;
                const finished = () => {
                    const nav = performance.getEntriesByType('navigation')[0];
                    if (nav.loadEventEnd && (!page || page.graphAt !== null)) {
                        done({load: nav.loadEventEnd, ready: page ? page.readyAt : null,
                              painted: page ? page.paintedAt : null,
                              graph: page ? page.graphAt : null});
                    } else setTimeout(finished, 10);
                };
                finished();
            })""",
            timeout=120,
        )
        loads.append(timing["load"] / 1000)
        if run_page:
            ready.append(timing["ready"] / 1000)
            painted.append(timing["painted"] / 1000)
            graphs.append(timing["graph"] / 1000)
    figures = {"load": statistics.median(loads)}
    if run_page:
        figures["ready"] = statistics.median(ready)
        figures["painted"] = statistics.median(painted)
        figures["graph"] = statistics.median(graphs)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentscript-view-bench-") as folder:
        workspace = Path(folder)
        started = time.perf_counter()
        run_id = make_run(workspace, args.events)
        run_seconds = time.perf_counter() - started
        journal = Journal.for_workspace(workspace)
        try:
            run = journal.resolve(run_id)
            started = time.perf_counter()
            (view_page, *_) = write_run_pages(journal, run_id, workspace / "view.html")
            view_write = time.perf_counter() - started
            started = time.perf_counter()
            graph_page = render_run_html(journal, run_id, workspace / "graph.html")
            graph_write = time.perf_counter() - started
        finally:
            journal.close()
        with Browser.launch(width=1400, height=1000) as browser:
            view = open_times(browser, view_page, args.repeat, run_page=True)
            steps = browser.evaluate("document.querySelectorAll('.step').length")
            nodes = browser.evaluate("runPage && document.querySelectorAll('#graph .node').length")
            graph = open_times(browser, graph_page, args.repeat, run_page=False)
        size, graph_size = view_page.stat().st_size / 1e6, graph_page.stat().st_size / 1e6
        print(
            f"run of {run.events} events ({steps} timeline steps, {nodes} graph nodes), "
            f"mock run {run_seconds:.2f} s; median of {args.repeat} loads in headless Chromium"
        )
        print()
        print(
            f"{'page':<28} {'size MB':>8} {'write s':>8} {'load s':>8} {'ready s':>8} "
            f"{'painted s':>10} {'graph s':>8}"
        )
        print(
            f"{'runs view (this)':<28} {size:>8.2f} {view_write:>8.2f} {view['load']:>8.2f} "
            f"{view['ready']:>8.2f} {view['painted']:>10.2f} {view['graph']:>8.2f}"
        )
        print(
            f"{'runs graph --html (peer)':<28} {graph_size:>8.2f} {graph_write:>8.2f} "
            f"{graph['load']:>8.2f} {'-':>8} {'-':>10} {'-':>8}"
        )
    verdict = "meets" if view["painted"] < TARGET_SECONDS else "MISSES"
    print()
    print(
        f"target: the run page painted in under {TARGET_SECONDS:.0f} s: {verdict} "
        f"({view['painted']:.2f} s)"
    )


if __name__ == "__main__":
    main()
