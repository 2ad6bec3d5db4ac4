"""`--report`: the eval as one self-contained HTML page (no network, no external file).

The page holds the summary, a case × configuration grid of scores, and for each cell its value,
expected value, score, reason, error and its run's trace, read from the journal when the page
is written, so the page stays complete when the journal is gone. The data travels as JSON in
a `<script type="application/json">`; the script only reads it and builds the page with
`textContent`, so nothing a model wrote can become markup.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from agentscript.app.evals.report_data import EvalReport

# A trace longer than this is cut (a page with hundreds of cells must stay light).
TRACE_CHARS = 20_000


def write_report(report: EvalReport, path: str | Path) -> Path:
    """Write the page to `path` (its folder is created) and return the path."""
    target = Path(path)
    data = {
        "report": report.to_json(),
        "cases": [
            {"id": case.id, "tags": list(case.tags), "input": case.input} for case in report.cases
        ],
        "rows": [row.to_json() for row in report.rows],
        "traces": _traces(report),
    }
    # `<` only occurs inside JSON strings: as \u003c, no `</script>` or `<!--` can end the block.
    payload = json.dumps(data, ensure_ascii=False, default=str).replace("<", "\\u003c")
    title = html.escape(f"eval · {Path(report.program).name} · {report.metric}")
    page = _PAGE.replace("{{TITLE}}", title).replace("{{DATA}}", payload)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")
    return target


def _traces(report: EvalReport) -> dict[str, str]:
    """Each run's trace by run id: the pretty lines `runs show --pretty` prints, then the whole
    trace as JSON (prompts, answers, usage), cut at TRACE_CHARS."""
    if report.journal is None:
        return {}
    from agentscript.learn.journal import Journal, rebuild_trace, wait_for_journal
    from agentscript.runtime.trace import format_trace

    wait_for_journal()  # first: the journal's file may be written by the background worker
    if not Path(report.journal).exists():
        return {}
    run_ids = {row.run_id for row in report.rows} | {row.judge_run_id for row in report.rows}
    journal = Journal.open(report.journal)
    traces: dict[str, str] = {}
    try:
        for run_id in sorted(run_id for run_id in run_ids if run_id):
            entries = journal.store.entries(run_id)
            if not entries:
                continue
            trace = rebuild_trace(entries, audit=True)
            text = format_trace(trace) + "\n\n" + json.dumps(trace, indent=2, ensure_ascii=False)
            if len(text) > TRACE_CHARS:
                text = text[:TRACE_CHARS] + f"\n… cut at {TRACE_CHARS:,} characters"
            traces[run_id] = text
    finally:
        journal.close()
    return traces


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<style>
  body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem; color: #1d232a; }
  h1 { font-size: 1.25rem; } h2 { font-size: 1.05rem; margin-top: 1.5rem; }
  table { border-collapse: collapse; margin: .5rem 0; }
  th, td { border: 1px solid #d5dbe1; padding: .3rem .55rem; text-align: right; }
  th:first-child, td:first-child { text-align: left; }
  th { background: #f3f5f7; }
  td.cell { cursor: pointer; text-align: center; min-width: 4.5rem; }
  td.cell:hover { outline: 2px solid #2f6fd0; }
  .pass { background: #dff3e3; } .fail { background: #fbe3e1; } .error { background: #f6d58e; }
  .missing { color: #8a949e; }
  #detail { border: 1px solid #d5dbe1; padding: .8rem 1rem; margin-top: 1rem; display: none; }
  #detail.open { display: block; }
  pre { background: #f6f8fa; padding: .6rem; overflow: auto; max-height: 24rem; white-space: pre-wrap; }
  dt { font-weight: 600; margin-top: .5rem; }
  .note { color: #56616b; }
</style>
</head>
<body>
<h1 id="title"></h1>
<p class="note" id="notes"></p>
<h2>Summary</h2>
<table id="summary"></table>
<div id="learning-block" hidden><h2>Learning: first and last quarter</h2><table id="learning"></table></div>
<div id="tags-block" hidden><h2>By case tag</h2><table id="tags"></table></div>
<h2>Cases</h2>
<p class="note">Click a cell for its value, expected value, score, reason and trace.</p>
<table id="grid"></table>
<section id="detail" aria-live="polite"></section>
<script type="application/json" id="eval-data">{{DATA}}</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("eval-data").textContent);
const report = data.report;
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function row(table, cells, header) {
  const tr = el("tr");
  for (const cell of cells) tr.appendChild(cell instanceof Node ? cell : el(header ? "th" : "td", cell));
  table.appendChild(tr);
  return tr;
}
const num = (x, d) => (x === null || x === undefined || Number.isNaN(x)) ? "n/a" : Number(x).toFixed(d);
const cost = (x) => x === null || x === undefined ? "n/a" : "$" + Number(x).toFixed(4);
document.getElementById("title").textContent =
  "eval " + report.program + " · " + report.cases + " cases · " + report.metric;
const notes = [];
if (report.not_run) notes.push(report.not_run + " cells not run: " + (report.stopped || "interrupted"));
if (report.resumed) notes.push(report.resumed + " cells taken from the results file");
if (report.judge.tokens) notes.push("judge: " + report.judge.tokens + " tokens, cost " + cost(report.judge.cost));
document.getElementById("notes").textContent = notes.join(" · ");
const summary = document.getElementById("summary");
const differences = Object.fromEntries(report.differences.map((d) => [d.configuration, d]));
const heads = ["configuration", "n", "score", "pass", "errors", "tokens", "cost", "p50", "p95"];
if (report.differences.length) heads.push("Δ vs first [95% CI]");
row(summary, heads, true);
for (const s of report.summary) {
  const cells = [s.configuration, s.n, num(s.mean_score, 3), Math.round(s.pass_rate * 100) + "%",
    s.errors, s.tokens, cost(s.cost), num(s.latency_p50, 2) + "s", num(s.latency_p95, 2) + "s"];
  if (report.differences.length) {
    const d = differences[s.configuration];
    cells.push(!d ? "baseline" : num(d.mean, 3) + " [" + num(d.low, 3) + ", " + num(d.high, 3) + "]");
  }
  row(summary, cells);
}
if (report.learning.length) {
  document.getElementById("learning-block").hidden = false;
  const learning = document.getElementById("learning");
  row(learning, ["configuration", "cases per quarter", "first", "last", "change"], true);
  for (const c of report.learning)
    row(learning, [c.configuration, c.quarter, num(c.first, 3), num(c.last, 3), num(c.last - c.first, 3)]);
}
if (report.tags.length) {
  document.getElementById("tags-block").hidden = false;
  const tags = document.getElementById("tags");
  row(tags, ["configuration", "tag", "n", "score", "pass"], true);
  for (const t of report.tags)
    row(tags, [t.configuration, t.tag, t.n, num(t.mean_score, 3), Math.round(t.pass_rate * 100) + "%"]);
}
const cells = {};
for (const r of data.rows) cells[r.id + "\\u0000" + r.configuration] = r;
const grid = document.getElementById("grid");
row(grid, ["case", ...report.configurations], true);
const detail = document.getElementById("detail");
function show(r) {
  detail.replaceChildren();
  detail.className = "open";
  detail.appendChild(el("h2", r.id + " · " + r.configuration));
  const list = el("dl");
  const add = (name, value, pre) => {
    list.appendChild(el("dt", name));
    const dd = el("dd");
    dd.appendChild(pre ? el("pre", value) : el("span", value));
    list.appendChild(dd);
  };
  add("score", num(r.score, 3) + (r.passed ? " (passed)" : " (failed)"));
  if (r.reason) add("reason", r.reason);
  if (r.error) add("error", r.error, true);
  add("value", JSON.stringify(r.value, null, 2), true);
  add("expected", JSON.stringify(r.expected, null, 2), true);
  add("usage", JSON.stringify(r.usage));
  for (const [label, id] of [["run", r.run_id], ["judge run", r.judge_run_id]]) {
    if (!id) continue;
    list.appendChild(el("dt", label));
    const dd = el("dd");
    const link = el("a", id);
    link.href = "#trace-" + id;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      const trace = document.getElementById("trace-" + id);
      if (trace) { trace.hidden = false; trace.scrollIntoView(); }
    });
    dd.appendChild(link);
    dd.appendChild(el("span", "  (agentscript runs show " + id + " --pretty)", "note"));
    const trace = el("pre", data.traces[id] || "(the trace was not in the journal when this page was written)");
    trace.id = "trace-" + id;
    trace.className = "trace";
    trace.hidden = true;
    dd.appendChild(trace);
    list.appendChild(dd);
  }
  detail.appendChild(list);
  detail.scrollIntoView();
}
for (const c of data.cases) {
  const tr = row(grid, [c.id]);
  for (const configuration of report.configurations) {
    const r = cells[c.id + "\\u0000" + configuration];
    if (!r) { tr.appendChild(el("td", "not run", "cell missing")); continue; }
    const td = el("td", r.error ? "error" : num(r.score, 2), "cell " + (r.error ? "error" : r.passed ? "pass" : "fail"));
    td.dataset.case = c.id;
    td.dataset.configuration = configuration;
    td.addEventListener("click", () => show(r));
    tr.appendChild(td);
  }
}
</script>
</body>
</html>
"""
