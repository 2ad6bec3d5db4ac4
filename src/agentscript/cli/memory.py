"""`agentscript memory …` for memory resources: show, export, import and repair a store.

Each command parses its options, calls `agentscript.app.memory_resources` and prints the
result; output meant for files (export) is JSONL on stdout, messages go to stderr. `export` and
`import` are shared with the long-term memory service (memory_service.py), whose commands call
`export_resource` and `import_resource` for an argument that is a URI.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.render import to_json
from agentscript.runtime.bounded_input import MIB, bounded_lines, open_lines
from agentscript.runtime.jsjson import stringify

# One line of an export holds one record or entry; a longer line is not an export.
MAX_EXPORT_LINE = 8 * MIB


@click.group(name="memory")
def memory_group() -> None:
    """Long-term memory (remember, recall, serve, …) and memory resources (file://, sqlite://,
    postgresql://: show, export URI, import URI, repair)."""


@memory_group.command(name="show")
@click.argument("uri")
@click.option("--kind", help="Only records of this kind.")
@click.option("--text", help="Only records containing this text (case-insensitive).")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True)
@click.pass_context
def show_command(
    ctx: click.Context, uri: str, kind: str | None, text: str | None, limit: int
) -> None:
    """Print the newest records of URI as JSON, filtered like a program's query."""

    def show() -> int:
        from agentscript.app.memory_resources import show

        print(to_json(show(uri, kind=kind, text=text, limit=limit)))
        return 0

    ctx.exit(reporting_errors(show))


def export_resource(uri: str) -> int:
    """Write every record of URI to stdout as JSONL, oldest first."""

    def export() -> int:
        from agentscript.app.memory_resources import export

        for envelope in export(uri):
            sys.stdout.write(stringify(envelope) + "\n")
        return 0

    return reporting_errors(export)


def import_resource(uri: str, source: str) -> int:
    """Add the records of a JSONL export (a file, or stdin for "-") to URI, keeping their
    ids; records already present are skipped."""

    def load() -> int:
        from agentscript.app.memory_resources import import_records

        with export_lines(source) as lines:
            counts = import_records(uri, lines, source="<stdin>" if source == "-" else source)
        print(f"added {counts.added}, skipped {counts.skipped}", file=sys.stderr)
        return 0

    return reporting_errors(load)


@memory_group.command(name="repair")
@click.argument("target", metavar="FILE")
@click.pass_context
def repair_command(ctx: click.Context, target: str) -> None:
    """Move unreadable lines of a JSONL memory file into FILE.corrupt and keep the rest."""

    def repair() -> int:
        from agentscript.app.memory_resources import repair

        report = repair(target)
        if report.moved:
            numbers = ", ".join(str(number) for number in report.moved)
            print(
                f"{report.path}: kept {report.kept} records, moved line(s) {numbers} "
                f"to {report.corrupt_path}",
                file=sys.stderr,
            )
        else:
            print(f"{report.path}: kept {report.kept} records, nothing to repair", file=sys.stderr)
        return 0

    ctx.exit(reporting_errors(repair))


@contextmanager
def export_lines(source: str) -> Iterator[Iterator[str]]:
    """The lines of an export: the file `source`, or stdin for "-". A device or directory is
    refused, and so is a line longer than MAX_EXPORT_LINE (`/dev/zero` has no line end)."""
    where = "<stdin>" if source == "-" else source
    if source == "-":
        yield bounded_lines(sys.stdin, MAX_EXPORT_LINE, where)
        return
    with open_lines(Path(source), "Export") as handle:
        yield bounded_lines(handle, MAX_EXPORT_LINE, where)
