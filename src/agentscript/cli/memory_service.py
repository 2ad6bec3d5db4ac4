"""`agentscript memory remember|recall|browse|stats|check|forget|history|digest|sink|export|
import|serve`: the long-term memory service (docs/memory-service.md) at the command line; `compact`
(memory_compact.py) is registered with them.

Each command opens the configured service of `--workspace` (default: the current directory)
on `--db` (default: `$AGENTSCRIPT_MEMORY_DB`, else ~/.agentscript/memory.db) through
agentscript.app, makes one call and prints the result: rich tables at a terminal, aligned
plain text when piped, JSON with `--json`. Refusals are one line on stderr and exit code 1.

`export` and `import` also serve the language's memory resources (memory.py): an argument with
`://` is a resource URI, anything else is about the service (agentscript.app.memory_transfer:
JSONL, one entry per line with every field, ids kept; importing it again skips the ids
already present).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar, cast

import click

from agentscript.app.workspace import Workspace
from agentscript.cli.actions import reporting_errors
from agentscript.cli.memory import export_lines, export_resource, import_resource, memory_group
from agentscript.cli.memory_compact import compact_command
from agentscript.cli.options import db_option, json_option, workspace_option
from agentscript.cli.render import to_json
from agentscript.runtime.bounded_input import MIB, bounded_lines, read_stream

# `memory remember -`: far more than any entry may hold (the service then says too_large),
# far less than `/dev/zero` would feed.
MAX_STDIN_TEXT = MIB

if TYPE_CHECKING:
    from agentscript.memory import MemoryService

Command = TypeVar("Command", bound=Callable[..., Any])
KINDS = ("fact", "knowledge", "episodic", "summary")
LEVELS = ("day", "week", "month", "year")
DEFAULT_HTTP_PORT = 8765
TOKEN_VARIABLE = "AGENTSCRIPT_MEMORY_TOKEN"
_WORKSPACE_HELP = "The workspace whose memory this is (default: the current directory)."


class _Command(click.Command):
    """Usage errors read like those of the top-level commands: one line, exit code 1."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from agentscript.cli.app import plain_usage_errors

        with plain_usage_errors():
            return super().parse_args(ctx, args)


def _service_options(command: Command) -> Command:
    """--workspace, --db and --json, shared by every command that opens the service."""
    decorated = json_option()(command)
    decorated = db_option()(decorated)
    return cast(Command, workspace_option(_WORKSPACE_HELP)(decorated))


_SCOPE = click.option(
    "--scope", metavar="SCOPE", help="'global' or a workspace path (default: as routed)."
)


def _with_service(
    ctx: click.Context,
    workspace: str | None,
    db: str | None,
    action: Callable[[MemoryService], int],
) -> NoReturn:
    """Open the configured service of `workspace` (which must exist: a typo must not start a
    new scope), run `action`, close the service, exit with the action's code."""

    def run() -> int:
        with Workspace.current(workspace, db) as place:
            return action(place.memory())

    ctx.exit(reporting_errors(run))


def _usage_error(ctx: click.Context, message: str) -> NoReturn:
    """A wrong combination of arguments: one line on stderr and exit code 1, before anything
    is opened."""
    print(message, file=sys.stderr)
    ctx.exit(1)


# ----------------------------------------------------------------------------- commands


@click.command(name="remember", cls=_Command)
@click.argument("text")
@click.option("--kind", type=click.Choice(KINDS[:3]), default="knowledge", show_default=True)
@click.option("--key", help="A fact's identity: a new value replaces the old one.")
@click.option("--title", help="A one-line title (default: the first line of TEXT).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--event-time", metavar="TIME", help="When it happened (ISO time or day).")
@click.option("--context", help="Searchable surroundings that are not the memory itself.")
@_SCOPE
@_service_options
@click.pass_context
def remember_command(
    ctx: click.Context,
    text: str,
    kind: str,
    key: str | None,
    title: str | None,
    tags: tuple[str, ...],
    event_time: str | None,
    context: str | None,
    scope: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Store TEXT as a memory ("-" reads it from stdin)."""

    def remember(service: MemoryService) -> int:
        body = read_stream(sys.stdin, MAX_STDIN_TEXT, "The text on stdin") if text == "-" else text
        result = service.remember(
            body,
            kind=kind,
            key=key,
            title=title,
            tags=list(tags) or None,
            scope=scope,
            event_time=event_time,
            context=context,
        )
        if as_json:
            print(to_json(result.to_json()))
        else:
            print(
                f"{result.action} {result.id} ({result.kind}, "
                f"{_scope_name(service, result.scope)}): {result.title}"
            )
        return 0

    _with_service(ctx, workspace, db, remember)


@click.command(name="recall", cls=_Command)
@click.argument("query", required=False, default="")
@click.option("--kind", "kinds", type=click.Choice(KINDS), multiple=True, help="Only this kind.")
@click.option("--tag", "tags", multiple=True, help="Only entries with this tag (all of them).")
@click.option("--since", metavar="WHEN", help="Event time from (day, week, month, year, ISO).")
@click.option("--until", metavar="WHEN", help="Event time up to, inclusive.")
@click.option("--level", "levels", type=click.Choice(LEVELS), multiple=True)
@click.option("--include-archived", is_flag=True, help="Also archived entries.")
@click.option("--limit", type=click.IntRange(1, 200), default=10, show_default=True)
@click.option("--body-chars", type=click.IntRange(min=0), default=500, show_default=True)
@click.option(
    "--min-relevance",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Leave out hits whose relevance (0 to 1) is below this.",
)
@_SCOPE
@_service_options
@click.pass_context
def recall_command(
    ctx: click.Context,
    query: str,
    kinds: tuple[str, ...],
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    levels: tuple[str, ...],
    include_archived: bool,
    limit: int,
    body_chars: int,
    min_relevance: float,
    scope: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Search memory for QUERY, best first (no QUERY: the most recently updated).

    RELEVANCE is the share of the query's words (weighted by rarity) an entry holds: 1.00 all
    of them, near 0 only common words; SCORE orders one search's hits."""

    def recall(service: MemoryService) -> int:
        result = service.recall(
            query,
            kind=list(kinds) or None,
            tags=list(tags) or None,
            since=since,
            until=until,
            scope=scope,
            level=list(levels) or None,
            include_archived=include_archived,
            limit=limit,
            body_chars=body_chars,
            min_relevance=min_relevance,
        )
        if as_json:
            print(to_json(result.to_json()))
            return 0
        if result.note is not None:
            print(f"note: {result.note}", file=sys.stderr)
        rows = [
            [
                "-" if hit.relevance is None else f"{hit.relevance:.2f}",
                f"{hit.score:.3g}",
                hit.kind + (f" {hit.key}" if hit.key else ""),
                hit.event_time[:10],
                hit.title,
                " ".join(hit.tags),
                _scope_name(service, hit.scope),
                hit.id,
            ]
            for hit in result.hits
        ]
        _print_table(
            None,
            ["RELEVANCE", "SCORE", "KIND", "DATE", "TITLE", "TAGS", "SCOPE", "ID"],
            rows,
            empty="no memories found",
        )
        return 0

    _with_service(ctx, workspace, db, recall)


@click.command(name="browse", cls=_Command)
@click.option("--by", type=click.Choice(LEVELS), default="day", show_default=True)
@click.option("--kind", "kinds", type=click.Choice(KINDS), multiple=True, help="Only this kind.")
@click.option("--tag", "tags", multiple=True, help="Only entries with this tag (all of them).")
@click.option("--since", metavar="WHEN", help="Event time from (day, week, month, year, ISO).")
@click.option("--until", metavar="WHEN", help="Event time up to, inclusive.")
@click.option("--level", "levels", type=click.Choice(LEVELS), multiple=True)
@click.option("--include-archived", is_flag=True, help="Also archived entries.")
@click.option("--page", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--page-size", type=click.IntRange(1, 200), default=20, show_default=True)
@_SCOPE
@_service_options
@click.pass_context
def browse_command(
    ctx: click.Context,
    by: str,
    kinds: tuple[str, ...],
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    levels: tuple[str, ...],
    include_archived: bool,
    page: int,
    page_size: int,
    scope: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Entries grouped by day, week, month or year, newest first."""

    def browse(service: MemoryService) -> int:
        result = service.browse(
            by=by,
            kind=list(kinds) or None,
            tags=list(tags) or None,
            since=since,
            until=until,
            level=list(levels) or None,
            scope=scope,
            include_archived=include_archived,
            page=page,
            page_size=page_size,
        )
        if as_json:
            print(to_json(result.to_json()))
            return 0
        if not result["groups"]:
            print("no memories found")
            return 0
        for group in result["groups"]:
            rows = [
                [
                    entry["kind"] + (f" {entry['key']}" if entry["key"] else ""),
                    entry["title"],
                    " ".join(entry["tags"]),
                    entry["id"],
                ]
                for entry in group["entries"]
            ]
            shown = len(rows)
            count = group["count"]
            heading = f"{group['label']} ({count} {'entry' if count == 1 else 'entries'}"
            heading += f", {shown} shown)" if shown < count else ")"
            _print_table(heading, ["KIND", "TITLE", "TAGS", "ID"], rows)
        pages = -(-result.total_groups // result.page_size)
        print(f"page {result.page} of {pages}, {result.total_entries} entries")
        return 0

    _with_service(ctx, workspace, db, browse)


@click.command(name="stats", cls=_Command)
@click.option(
    "--by",
    type=click.Choice(("day", "week", "month")),
    help="Also count the active entries per local day, ISO week or month, newest first.",
)
@_SCOPE
@_service_options
@click.pass_context
def stats_command(
    ctx: click.Context,
    by: str | None,
    scope: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Entry counts per readable scope."""

    def stats(service: MemoryService) -> int:
        result = service.stats(scope=scope)
        if as_json:
            print(to_json(result.to_json()))
            return 0
        rows = [
            [
                _scope_name(service, item["scope"]),
                str(item["active"]),
                str(item["archived"]),
                str(item["superseded"]),
                *(str(item["by_kind"][kind]) for kind in KINDS),
                str(item["room"]),
            ]
            for item in result["scopes"]
        ]
        _print_table(
            None,
            ["SCOPE", "ACTIVE", "ARCHIVED", "SUPERSEDED", *(k.upper() for k in KINDS), "ROOM"],
            rows,
        )
        if by is not None:
            for item in result["scopes"]:
                counts = item[f"by_{by}"]
                _print_table(
                    f"{_scope_name(service, item['scope'])} by {by}",
                    [by.upper(), "ENTRIES"],
                    [[bucket, str(total)] for bucket, total in counts.items()],
                    empty=f"{_scope_name(service, item['scope'])}: no active entries",
                )
        return 0

    _with_service(ctx, workspace, db, stats)


@click.command(name="check", cls=_Command)
@_SCOPE
@_service_options
@click.pass_context
def check_command(
    ctx: click.Context, scope: str | None, workspace: str | None, db: str | None, as_json: bool
) -> None:
    """Problems of the readable scopes; exit code 1 when one is an error (warnings: 0)."""

    def check(service: MemoryService) -> int:
        result = service.check(scope=scope)
        findings = result["findings"]
        if as_json:
            print(to_json(result.to_json()))
            return 1 if any(finding["severity"] == "error" for finding in findings) else 0
        if not findings:
            names = ", ".join(_scope_name(service, name) for name in result["scopes"])
            print(f"ok: no problems in {names}")
        else:
            rows = [
                [
                    finding["severity"],
                    finding["code"],
                    _scope_name(service, finding["scope"]) if finding["scope"] else "-",
                    finding["message"],
                ]
                for finding in findings
            ]
            _print_table(None, ["SEVERITY", "CODE", "SCOPE", "MESSAGE"], rows)
        suggestions = [
            [item["signal"], _scope_name(service, item["scope"]), item["summary"]]
            for item in result["suggestions"]
        ]
        _print_table("What to distil", ["SIGNAL", "SCOPE", "SUGGESTION"], suggestions)
        for note in result["notes"]:
            print(f"note: {note}")
        return 1 if any(finding["severity"] == "error" for finding in findings) else 0

    _with_service(ctx, workspace, db, check)


@click.command(name="forget", cls=_Command)
@click.argument("entry_id", metavar="ID")
@click.option("--reason", help="Why it is forgotten (kept with the archived entry).")
@click.option(
    "--purge",
    is_flag=True,
    help="Delete the entry and every version of its key for good, instead of archiving it.",
)
@_SCOPE
@_service_options
@click.pass_context
def forget_command(
    ctx: click.Context,
    entry_id: str,
    reason: str | None,
    purge: bool,
    scope: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Archive the entry ID (recall skips it; history keeps it), or delete it with --purge."""

    def forget(service: MemoryService) -> int:
        result = service.forget(entry_id, reason=reason, purge=purge, scope=scope)
        if as_json:
            print(to_json(result.to_json()))
        elif result.action == "purged":
            count = len(result.purged)
            print(
                f"purged {count} {'entry' if count == 1 else 'entries'}: "
                + ", ".join(result.purged)
            )
        else:
            print(f"{result.action.replace('_', ' ')} {result.id}")
        return 0

    _with_service(ctx, workspace, db, forget)


@click.command(name="history", cls=_Command)
@click.argument("key")
@_SCOPE
@_service_options
@click.pass_context
def history_command(
    ctx: click.Context,
    key: str,
    scope: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Every version stored under KEY, newest first."""

    def history(service: MemoryService) -> int:
        result = service.history(key, scope=scope)
        if as_json:
            print(to_json(result.to_json()))
            return 0
        rows = [
            [
                version.status,
                version.entry.created_at[:19].replace("T", " "),
                version.entry.title,
                _scope_name(service, version.entry.scope),
                version.entry.id,
            ]
            for version in result.versions
        ]
        _print_table(
            f"key {result.key}",
            ["STATUS", "CREATED (UTC)", "TITLE", "SCOPE", "ID"],
            rows,
            empty=f"no versions of key {result.key!r}",
        )
        return 0

    _with_service(ctx, workspace, db, history)


@click.command(name="digest", cls=_Command)
@click.option("--max-bytes", type=click.IntRange(min=1), help="Budget in UTF-8 bytes.")
@click.option("--max-entries", type=click.IntRange(min=1), help="Budget in lines.")
@_SCOPE
@_service_options
@click.pass_context
def digest_command(
    ctx: click.Context,
    max_bytes: int | None,
    max_entries: int | None,
    scope: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Print the session-start digest (for a host's session-start hook)."""

    def digest(service: MemoryService) -> int:
        result = service.digest(max_bytes=max_bytes, max_entries=max_entries, scope=scope)
        if as_json:
            print(to_json(result.to_json()))
        elif result.text:
            print(result.text)
        return 0

    _with_service(ctx, workspace, db, digest)


@click.command(name="sink", cls=_Command)
@_service_options
@click.pass_context
def sink_command(ctx: click.Context, workspace: str | None, db: str | None, as_json: bool) -> None:
    """Keep compacted contexts: read a host's session events from stdin, one JSON object a
    line (compaction/start, compaction/summary, compaction/end, or Claude Code's PreCompact and
    PostCompact hook input; other events are skipped), and write a checkpoint when a
    compaction ends well. Prints the notice for the agent (--json:
    each event's outcome); exit code 1 when a line was not a valid event."""
    from agentscript.memory.compaction_sink import CompactionSink, hook_event
    from agentscript.memory.errors import MemoryServiceError

    def sink(service: MemoryService) -> int:
        machine = CompactionSink(service)
        code = 0
        for number, line in enumerate(bounded_lines(sys.stdin, MAX_STDIN_TEXT, "stdin"), 1):
            try:
                event = json.loads(line) if line.strip() else None
            except ValueError as problem:
                print(f"stdin:{number}: not JSON: {problem}", file=sys.stderr)
                code = 1
                continue
            if not isinstance(event, dict) or not (
                str(event.get("type", "")).startswith("compaction/") or hook_event(event)
            ):
                continue  # the rest of the session's firehose
            try:
                outcome = machine.feed(event)
            except MemoryServiceError as refusal:
                print(f"stdin:{number}: {refusal.message}", file=sys.stderr)
                code = 1
                continue
            if as_json:
                print(json.dumps(outcome.to_json(), ensure_ascii=False), flush=True)
            elif outcome.notice is not None:
                print(outcome.notice, flush=True)
            elif outcome.action in ("discarded", "disabled"):
                print(
                    f"no checkpoint for session {outcome.session}: {outcome.reason}",
                    file=sys.stderr,
                )
        return code

    _with_service(ctx, workspace, db, sink)


@click.command(name="export", cls=_Command)
@click.argument("target", required=False, metavar="[FILE|URI]")
@click.option("--scope", metavar="SCOPE", help="Only this scope ('global' or a workspace path).")
@click.option("--all", "every_scope", is_flag=True, help="Every scope in the database.")
@db_option()
@workspace_option("Whose scopes (default: the current directory).")
@click.pass_context
def export_command(
    ctx: click.Context,
    target: str | None,
    scope: str | None,
    every_scope: bool,
    db: str | None,
    workspace: str | None,
) -> None:
    """Write memory service entries as JSONL to FILE (default: stdout), oldest first: the
    scopes the workspace reads, one --scope, or --all. With a URI (sqlite://…, file://…),
    export that memory resource instead."""
    if target is not None and "://" in target:
        _resource_only(ctx, scope=scope, all=every_scope or None, db=db, workspace=workspace)
        ctx.exit(export_resource(target))

    def export() -> int:
        from agentscript.app.memory_transfer import export_memory

        count = export_memory(
            workspace, partial(_output, target), database=db, scope=scope, every_scope=every_scope
        )
        print(f"exported {count} {'entry' if count == 1 else 'entries'}", file=sys.stderr)
        return 0

    ctx.exit(reporting_errors(export))


@click.command(name="import", cls=_Command)
@click.argument("source", required=False, metavar="[FILE|-|URI]")
@click.argument("records", required=False, metavar="[FILE|-]")
@_service_options
@click.pass_context
def import_command(
    ctx: click.Context,
    source: str | None,
    records: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Add the entries of a JSONL service export (FILE, or stdin) with their ids and scopes;
    ids already present are skipped. Lines that hold `text` instead (remember's arguments, as a
    host would pass them) are remembered, 1000 to a transaction. With a URI, add the records of
    a resource export (the second argument, or stdin) to that memory resource instead."""
    if source is not None and "://" in source:
        _resource_only(ctx, workspace=workspace, db=db, json=as_json or None)
        ctx.exit(import_resource(source, records or "-"))
    if records is not None:
        _usage_error(
            ctx,
            f"Unexpected argument '{records}': a service import reads one FILE (a second "
            "argument is for resource URIs)",
        )
    origin = source or "-"

    def load() -> int:
        from agentscript.app.memory_transfer import import_memory

        with export_lines(origin) as lines:
            named = "<stdin>" if origin == "-" else origin
            report = import_memory(workspace, lines, named, database=db)
        if as_json:
            print(to_json(report.to_json()))
        else:
            print(report.summary(), file=sys.stderr)
        return 0

    ctx.exit(reporting_errors(load))


@click.command(name="serve", cls=_Command)
@click.option(
    "--http",
    "port",
    type=click.IntRange(0, 65535),
    is_flag=False,
    flag_value=DEFAULT_HTTP_PORT,
    default=None,
    metavar="[PORT]",
    help="Serve Streamable HTTP on 127.0.0.1:PORT (default 8765; 0: any free port) instead "
    "of stdio. Needs a bearer token.",
)
@click.option(
    "--token",
    metavar="TOKEN",
    help="The bearer token HTTP clients must send (prefer $AGENTSCRIPT_MEMORY_TOKEN: "
    "command lines are visible to other users).",
)
@db_option()
@workspace_option(_WORKSPACE_HELP)
@click.pass_context
def serve_command(
    ctx: click.Context, port: int | None, token: str | None, db: str | None, workspace: str | None
) -> None:
    """Serve the memory tools and the digest resource over MCP: on stdio by default, or over
    HTTP on 127.0.0.1 only, where every request needs `Authorization: Bearer <token>`."""
    secret = token if token is not None else os.environ.get(TOKEN_VARIABLE)
    if port is None and token is not None:
        _usage_error(ctx, "--token is for --http: stdio needs no token")
    if port is not None and not secret:
        _usage_error(
            ctx,
            f"serve --http needs a bearer token: set {TOKEN_VARIABLE} (or pass --token); "
            "none is generated",
        )

    def ready(workspace_scope: str | None, url: str) -> None:
        print(
            f"memory MCP server for {workspace_scope} at {url} "
            "(requests need Authorization: Bearer <token>)",
            file=sys.stderr,
            flush=True,
        )

    def serve() -> int:
        from agentscript.app.memory_service import serve_memory

        serve_memory(workspace, database=db, port=port, token=secret, on_ready=ready)
        return 0

    ctx.exit(reporting_errors(serve))


SERVICE_COMMANDS: tuple[click.Command, ...] = (
    remember_command,
    recall_command,
    browse_command,
    stats_command,
    check_command,
    forget_command,
    history_command,
    digest_command,
    sink_command,
    export_command,
    import_command,
    serve_command,
)


def add_service_commands(group: click.Group) -> None:
    """Add the service's commands, and compaction's `compact`, to `agentscript memory`."""
    for command in (*SERVICE_COMMANDS, compact_command):
        group.add_command(command)


# `agentscript memory`: the resource commands (memory.py) and the service's.
memory_commands = memory_group
add_service_commands(memory_commands)


# ------------------------------------------------------------------------ files


@contextmanager
def _output(target: str | None) -> Iterator[TextIO]:
    if target is None or target == "-":
        yield sys.stdout
        return
    with Path(target).open("w", encoding="utf-8") as handle:
        yield handle


def _resource_only(ctx: click.Context, **options: object) -> None:
    """Refuse service options given with a resource URI, rather than ignore them."""
    given = [name for name, value in options.items() if value is not None]
    if given:
        _usage_error(ctx, f"--{given[0]} is for the memory service, not for a resource URI")


# ------------------------------------------------------------------------------ output


def _at_terminal() -> bool:
    return sys.stdout.isatty()


def _scope_name(service: MemoryService, scope: str) -> str:
    """`workspace` for the service's own workspace (its path is long and always the same)."""
    return "workspace" if scope == service.workspace else scope


def _print_table(
    title: str | None, columns: Sequence[str], rows: Sequence[Sequence[str]], empty: str = ""
) -> None:
    """A rich table at a terminal; aligned plain columns (no colour, no box) in a pipe."""
    if not rows:
        if empty:
            print(empty)
        return
    if _at_terminal():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(title) if title else None, title_justify="left")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        Console(highlight=False).print(table)
        return
    if title:
        print(title)
    cells = [list(columns), *([" ".join(cell.split()) for cell in row] for row in rows)]
    widths = [max(len(row[index]) for row in cells) for index in range(len(columns) - 1)]
    for row in cells:
        padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*padded, row[-1]]).rstrip())
