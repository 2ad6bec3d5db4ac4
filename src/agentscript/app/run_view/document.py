"""Everything a run's page shows, as one JSON document gathered from the journal.

The page draws only this document. Its texts are the journal's, which holds each event as the
run's trace had it: secrets the run handed out are "[REDACTED]" here exactly as there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentscript.app.run_view.graph_layout import lay_out
from agentscript.app.run_view.steps import Step, build_steps, flatten
from agentscript.learn.experiences import experience_links
from agentscript.learn.graph import build_run_graph
from agentscript.learn.journal import Journal, RunView
from agentscript.learn.journal_store import RUN_KIND, JournalEntry
from agentscript.providers.llm.prices import cost, price_of

# A run id (`YYYYMMDD-HHMMSS-xxxxxx`) anywhere in a run's events names a run it called.
RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b")
# The memory tool method that recalls experiences into a run.
RECALL_METHODS = frozenset({"experiences", "memory_experiences"})


@dataclass(frozen=True, slots=True)
class RunDocument:
    """The page's data, and the ids of the runs it links to (their pages sit beside it)."""

    data: dict[str, Any]
    linked_runs: list[str]


def run_document(journal: Journal, reference: str) -> RunDocument:
    run = journal.resolve(reference)
    view = RunView(run, journal.status(run))
    entries = journal.store.entries(run.run_id)
    steps = build_steps(entries)
    flat = flatten(steps)
    costs = _price_generates(flat)
    graph = build_run_graph(run, entries, view.status)
    learned = experience_links(journal.graph, run.run_id)
    layout = lay_out(
        [*graph.nodes, *(link.node for link in learned)],
        [*graph.edges, *(link.edge for link in learned)],
    )
    linked = _linked_runs(journal, run.run_id, entries)
    usage = run.usage or _summed_usage(flat)
    summary = view.to_json()
    summary["duration_ms"] = round(view.duration * 1000, 3) if view.duration is not None else None
    summary["usage"] = usage
    summary["cost_usd"] = round(sum(costs), 8) if costs else None
    summary["value"] = _end_value(entries)
    return RunDocument(
        data={
            "run": summary,
            "steps": [_step_json(step, run.started_at) for step in flat],
            "graph": layout.to_json(),
            "experiences": {
                "recalled": _recalled(flat),
                "learned": [
                    {
                        "key": link.node.node_id,
                        "title": link.node.label,
                        "kind": link.node.metadata.get("kind"),
                        "lesson": link.node.metadata.get("lesson"),
                        "status": link.node.metadata.get("status"),
                        "action": link.edge.metadata.get("action"),
                    }
                    for link in learned
                ],
            },
            "links": [{"run": run_id, "href": f"{run_id}.html"} for run_id in linked],
        },
        linked_runs=linked,
    )


def _step_json(step: Step, started: float) -> dict[str, Any]:
    data = step.to_json(started)
    data["children"] = [child.id for child in step.children]
    if step.kind == "generate":
        data["data"] = _without_item_values(step.data)
    return data


def _without_item_values(data: dict[str, Any]) -> dict[str, Any]:
    """A generate's context items keep the text the model saw, not also the value it came
    from (the same content again, which would double the page of a long run)."""
    context = data.get("context")
    if not isinstance(context, dict) or not isinstance(context.get("context"), list):
        return data
    items = [
        {key: value for key, value in item.items() if key != "value"}
        if isinstance(item, dict)
        else item
        for item in context["context"]
    ]
    return {**data, "context": {**context, "context": items}}


def _price_generates(flat: list[Step]) -> list[float]:
    """Add `cost_usd` (and the price's source) to each generate whose model has a known price;
    the costs found."""
    found: list[float] = []
    for step in flat:
        if step.kind != "generate":
            continue
        usage = step.data.get("usage")
        model = step.data.get("model")
        if not isinstance(usage, dict) or not isinstance(model, str):
            continue
        price = price_of(model)
        if price is None:
            continue
        spent = cost(
            price, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        )
        step.data = {**step.data, "cost_usd": round(spent, 8), "price_source": price.source}
        found.append(spent)
    return found


def _summed_usage(flat: list[Step]) -> dict[str, int] | None:
    totals = {"input_tokens": 0, "output_tokens": 0}
    for step in flat:
        usage = step.data.get("usage") if step.kind == "generate" else None
        if isinstance(usage, dict):
            for key in totals:
                totals[key] += int(usage.get(key) or 0)
    return totals if any(totals.values()) else None


def _end_value(entries: list[JournalEntry]) -> Any:
    for entry in reversed(entries):
        if entry.phase == "end" and entry.kind == RUN_KIND and isinstance(entry.data, dict):
            return entry.data.get("value")
    return None


def _recalled(flat: list[Step]) -> list[dict[str, Any]]:
    """The experiences memory recalls handed the run, with the step that asked."""
    recalled: list[dict[str, Any]] = []
    for step in flat:
        if step.kind != "tool" or step.data.get("method") not in RECALL_METHODS:
            continue
        result = step.data.get("result")
        if isinstance(result, str):
            # `Memory.experiences` hands a program one line per lesson (memory/experience_text).
            lessons = [line[2:] for line in result.splitlines() if line.startswith("- ")]
            recalled += [{"step": step.id, "key": None, "title": text} for text in lessons]
            continue
        hits = result if isinstance(result, list) else (result or {}).get("experiences", [])
        for hit in hits if isinstance(hits, list) else []:
            if isinstance(hit, dict):
                title = hit.get("title") or hit.get("text") or hit.get("key")
                recalled.append({"step": step.id, "key": hit.get("key"), "title": title})
    return recalled


def _linked_runs(journal: Journal, run_id: str, entries: list[JournalEntry]) -> list[str]:
    """Runs this one called: run ids its events mention that are in the same journal."""
    mentioned: dict[str, None] = {}
    pending: list[Any] = [entry.data for entry in entries]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if len(value) >= 22 and "-" in value:
                mentioned.update((found, None) for found in RUN_ID.findall(value))
        elif isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    mentioned.pop(run_id, None)
    return sorted(other for other in mentioned if journal.store.run(other) is not None)
