"""What the command line prints: run results as JSON, the trace as a tree or plain lines, and
the prompts a dry run would send.

Rendering only; rich is imported when a tree is actually drawn, to keep start-up fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agentscript.runtime.jsjson import stringify
from agentscript.runtime.trace import event_title, format_trace, nested_groups

if TYPE_CHECKING:
    from rich.tree import Tree

    from agentscript.providers.llm.endpoints import ModelReport
    from agentscript.runtime.ports import GenerateRequest


def to_json(value: Any) -> str:
    """Pretty JSON exactly as the original printed it (`JSON.stringify(value, null, 2)`)."""
    return stringify(value, 2)


def run_output(value: Any, trace: list[dict[str, Any]], trace_file: str | None = None) -> str:
    """The `{"value": …, "trace": …}` document of a run; the trace is only referenced when it
    was written to a file."""
    shown: Any = {"file": trace_file} if trace_file is not None else trace
    return to_json({"value": value, "trace": shown})


def usage_line(usage: dict[str, float | int]) -> str:
    """One line saying what a run spent, for stderr."""
    calls = int(usage.get("calls", 0))
    return (
        f"usage: {calls} model call{'' if calls == 1 else 's'}, "
        f"{int(usage.get('input_tokens', 0)):,} input + "
        f"{int(usage.get('output_tokens', 0)):,} output tokens, "
        f"{float(usage.get('seconds', 0.0)):.2f} s"
    )


def model_table(reports: list[ModelReport]) -> str:
    """The llm imports of a program as aligned columns; keys are only said to be set or not."""
    if not reports:
        return "(no llm imports)"
    rows = [("NAME", "PROTOCOL", "MODEL", "ENDPOINT", "KEY")]
    for report in reports:
        if report.problem is not None and report.protocol is None:
            rows.append((report.name, "-", "-", "-", f"error: {report.problem}"))
            continue
        if report.key_variable is None:
            key = "not needed"
        elif report.key_present:
            key = f"{report.key_variable} set"
        elif report.key_required:
            key = f"{report.key_variable} missing (required)"
        else:
            key = f"{report.key_variable} not set (optional with a custom base URL)"
        rows.append(
            (report.name, report.protocol or "-", report.model or "-", report.base_url or "-", key)
        )
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + "  "
        + row[4]
        for row in rows
    )


def undo_report(report: dict[str, Any], dry_run: bool) -> str:
    """What `agentscript undo` did (or would do), one line per effect, conflicts last."""
    lines: list[str] = []
    verb = "would " if dry_run else ""
    for item in report["undone"]:
        action = "delete" if item.get("action") == "delete" else "restore"
        lines.append(f"{verb}{action} {item['path']}")
    for item in report["skipped"]:
        lines.append(f"skip {item.get('path') or item.get('effect')}: {item['reason']}")
    for item in report["conflicts"]:
        lines.append(f"CONFLICT {item['path']}: {item['reason']} (left as it is)")
    for item in report.get("refused", []):
        lines.append(f"REFUSED {item['path']}: {item['reason']} (left as it is)")
    return "\n".join(lines) if lines else "nothing to undo"


def tool_listing(listing: list[dict[str, Any]]) -> str:
    """Tool imports and, for MCP servers, what starting one launches and its tools with the
    risk the configuration gives them (and the server's own claim when that differs)."""
    if not listing:
        return "(no tool imports)"
    lines: list[str] = []
    for entry in listing:
        lines.append(f"{entry['name']}  {entry['uri']}")
        server = entry.get("server")
        if server is not None:
            lines.append(f"  starts: {_launch_line(server)}")
        if "problem" in entry:
            lines.append(f"  error: {entry['problem']}")
        if "tools" not in entry:
            for name, risk in entry.get("configured", {}).items():
                lines.append(f"  {name} [{risk}] (configured)")
        for tool in entry.get("tools", []):
            description = (tool.get("description") or "").strip().splitlines()
            summary = f" - {description[0]}" if description else ""
            claim = tool.get("claimedRisk")
            claimed = f" (server claims {claim})" if claim and claim != tool.get("risk") else ""
            name = tool["name"] + tool.get("signature", "")
            lines.append(f"  {name} [{tool.get('risk', '?')}]{claimed}{summary}")
    return "\n".join(lines)


def _launch_line(server: dict[str, Any]) -> str:
    if server.get("transport") == "http":
        return f"connect to {server.get('url')}"
    text = " ".join(str(part) for part in server.get("command", []))
    if server.get("env"):
        text += " (env: " + ", ".join(server["env"]) + ")"
    if server.get("cwd"):
        text += f" in {server['cwd']}"
    return text


def write_trace_file(path: str, trace: list[dict[str, Any]]) -> None:
    Path(path).write_text(to_json(trace) + "\n", encoding="utf-8")


def print_trace(trace: list[dict[str, Any]], stream: TextIO) -> None:
    """The pretty trace: a tree for a person at a terminal, stable plain lines for pipes."""
    if stream.isatty():
        _print_trace_tree(trace, stream)
    else:
        stream.write(format_trace(trace) + "\n")


def _print_trace_tree(trace: list[dict[str, Any]], stream: TextIO) -> None:
    from rich.console import Console
    from rich.text import Text
    from rich.tree import Tree

    root = Tree(Text("trace" if trace else "trace (empty)", style="bold"), guide_style="dim")
    _add_branches(root, trace)
    Console(file=stream, highlight=False).print(root)


def _add_branches(node: Tree, trace: list[dict[str, Any]]) -> None:
    from rich.text import Text

    for event in trace:
        kind = str(event.get("kind"))
        data = event.get("data") or {}
        # The plain title starts with "- <kind>"; the tree shows the kind in colour instead.
        rest = event_title(kind, data)[len(f"- {kind}") :]
        label = Text.assemble((kind, _KIND_STYLES.get(kind, "bold")), rest)
        branch = node.add(label)
        for heading, events in nested_groups(kind, data):
            if heading is None:
                _add_branches(branch, events)
            else:
                _add_branches(branch.add(Text(heading[2:], style="dim")), events)


_KIND_STYLES = {
    "agent": "bold magenta",
    "generate": "bold cyan",
    "tool": "bold yellow",
    "memory": "bold green",
    "input": "bold blue",
    "for": "bold",
    "use": "dim",
    "approval": "bold red",
    "parallel_for": "bold magenta",
    "llm_retry": "yellow",
    "llm_wait": "yellow",
}


def token_line(breakdown: dict[str, Any]) -> str:
    """`system 14 · [0] input.question 9 · [notes] 120 · instruction 15 · schema 31 · total
    189 (estimated)`: where a prompt's tokens go, from BuiltContext.token_breakdown()."""
    parts = [f"system {breakdown['system']}"]
    for item in breakdown["context"]:
        name = item.get("label", item["index"])
        parts.append(f"[{name}] {item['tokens']}")
    parts.append(f"instruction {breakdown['instruction']}")
    if breakdown["schema"]:
        parts.append(f"schema {breakdown['schema']}")
    parts.append(f"total {breakdown['total']} (estimated)")
    return " · ".join(parts)


class PromptPrinter:
    """Shows each prompt of a dry run, so the exact model input can be read before paying for it.

    Both messages are framed by marker lines naming the call, since they are multi-line texts.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._count = 0

    def __call__(self, request: GenerateRequest) -> None:
        self._count += 1
        title = f"dry-run prompt {self._count}: {request.call_key} (attempt {request.attempt})"
        self._stream.write(
            f"=== {title} ===\n"
            f"--- system ---\n{request.built.system}\n"
            f"--- user ---\n{request.built.final_user_message}\n"
            f"--- tokens ---\n{token_line(request.built.token_breakdown())}\n"
            f"=== end of prompt {self._count} ===\n"
        )
        self._stream.flush()
