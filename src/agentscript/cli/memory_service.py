"""`agentscript memory remember|recall|browse|stats|check|forget|history|digest|export|import|
serve`: the long-term memory service (docs/memory-service.md) at the command line; `compact`
(memory_compact.py) is registered with them.

Each command opens the service of `--workspace` (default: the current directory) on `--db`
(default: `$AGENTSCRIPT_MEMORY_DB`, else ~/.agentscript/memory.db), makes one call and prints
the result: rich tables at a terminal, aligned plain text when piped, JSON with `--json`.
Refusals are one line on stderr and exit code 1.

`export` and `import` also serve the language's memory resources (memory.py): an argument with
`://` is a resource URI, anything else is about the service. The service's export is JSONL, one
entry per line with every field, ids kept; importing it again skips the ids already present.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TextIO, TypeVar

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.errors import CliError
from agentscript.cli.memory import export_lines, export_resource, import_resource
from agentscript.cli.memory_compact import compact_command
from agentscript.cli.render import to_json
from agentscript.runtime.bounded_input import MIB, read_stream
from agentscript.runtime.jsjson import parse, stringify

# `memory remember -`: far more than any entry may hold (the service then says too_large),
# far less than `/dev/zero` would feed.
MAX_STDIN_TEXT = MIB

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agentscript.memory import Entry, MemoryService

Command = TypeVar("Command", bound=Callable[..., Any])
KINDS = ("fact", "knowledge", "episodic", "summary")
LEVELS = ("day", "week", "month", "year")
DEFAULT_HTTP_PORT = 8765
TOKEN_VARIABLE = "AGENTSCRIPT_MEMORY_TOKEN"
_DB_HELP = (
    "The memory database, a SQLite file or a postgresql:// URI (default: "
    "$AGENTSCRIPT_MEMORY_DB, else ~/.agentscript/memory.db)."
)


class _Command(click.Command):
    """Usage errors read like those of the top-level commands: one line, exit code 1."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from agentscript.cli.app import plain_usage_errors

        with plain_usage_errors():
            return super().parse_args(ctx, args)


def _service_options(command: Command) -> Command:
    """--workspace, --db and --json, shared by every command that opens the service."""
    command = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)
    command = click.option(
        "--db",
        metavar="PATH",
        help=_DB_HELP,
    )(command)
    return click.option(
        "--workspace",
        metavar="DIR",
        help="The workspace whose memory this is (default: the current directory).",
    )(command)


_SCOPE = click.option(
    "--scope", metavar="SCOPE", help="'global' or a workspace path (default: as routed)."
)


def _open_service(workspace: str | None, db: str | None) -> MemoryService:
    """The service of `workspace` (which must exist: a typo must not start a new scope)."""
    from agentscript.memory.configured import open_configured

    root = Path(workspace) if workspace is not None else Path.cwd()
    if not root.is_dir():
        raise CliError(f"Workspace {root} is not a directory")
    return open_configured(root, database=db)


def _with_service(
    ctx: click.Context,
    workspace: str | None,
    db: str | None,
    action: Callable[[MemoryService], int],
) -> NoReturn:
    """Open the service, run `action`, close the service, exit with the action's code."""

    def run() -> int:
        with _open_service(workspace, db) as service:
            return action(service)

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
            print(to_json(result))
        else:
            print(
                f"{result['action']} {result['id']} ({result['kind']}, "
                f"{_scope_name(service, result['scope'])}): {result['title']}"
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
    scope: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Search memory for QUERY, best first (no QUERY: the most recently updated)."""

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
        )
        if as_json:
            print(to_json(result))
            return 0
        if "note" in result:
            print(f"note: {result['note']}", file=sys.stderr)
        rows = [
            [
                f"{item['score']:.3g}",
                item["kind"] + (f" {item['key']}" if item["key"] else ""),
                item["event_time"][:10],
                item["title"],
                " ".join(item["tags"]),
                _scope_name(service, item["scope"]),
                item["id"],
            ]
            for item in result["results"]
        ]
        _print_table(
            None,
            ["SCORE", "KIND", "DATE", "TITLE", "TAGS", "SCOPE", "ID"],
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
            print(to_json(result))
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
        pages = -(-result["total_groups"] // result["page_size"])
        print(f"page {result['page']} of {pages}, {result['total_entries']} entries")
        return 0

    _with_service(ctx, workspace, db, browse)


@click.command(name="stats", cls=_Command)
@_SCOPE
@_service_options
@click.pass_context
def stats_command(
    ctx: click.Context, scope: str | None, workspace: str | None, db: str | None, as_json: bool
) -> None:
    """Entry counts per readable scope."""

    def stats(service: MemoryService) -> int:
        result = service.stats(scope=scope)
        if as_json:
            print(to_json(result))
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
            print(to_json(result))
        elif not findings:
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
            print(to_json(result))
        elif result["action"] == "purged":
            count = len(result["purged"])
            print(
                f"purged {count} {'entry' if count == 1 else 'entries'}: "
                + ", ".join(result["purged"])
            )
        else:
            print(f"{result['action'].replace('_', ' ')} {result['id']}")
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
            print(to_json(result))
            return 0
        rows = [
            [
                version["status"],
                version["created_at"][:19].replace("T", " "),
                version["title"],
                _scope_name(service, version["scope"]),
                version["id"],
            ]
            for version in result["versions"]
        ]
        _print_table(
            f"key {result['key']}",
            ["STATUS", "CREATED (UTC)", "TITLE", "SCOPE", "ID"],
            rows,
            empty=f"no versions of key {result['key']!r}",
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
            print(to_json(result))
        elif result["text"]:
            print(result["text"])
        return 0

    _with_service(ctx, workspace, db, digest)


@click.command(name="export", cls=_Command)
@click.argument("target", required=False, metavar="[FILE|URI]")
@click.option("--scope", metavar="SCOPE", help="Only this scope ('global' or a workspace path).")
@click.option("--all", "every_scope", is_flag=True, help="Every scope in the database.")
@click.option(
    "--db",
    metavar="PATH",
    help=_DB_HELP,
)
@click.option("--workspace", metavar="DIR", help="Whose scopes (default: the current directory).")
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
    if scope is not None and every_scope:
        _usage_error(ctx, "Use either --scope or --all, not both")

    def export(service: MemoryService) -> int:
        from agentscript.memory.scopes import parse_scope

        if every_scope:
            scopes = tuple(count.scope for count in service.store.scopes())
        elif scope is not None:
            scopes = (parse_scope(scope),)
        else:
            scopes = service.scopes_for(None).read
        with _output(target) as stream:
            count = 0
            for entry in service.store.export(scopes) if scopes else ():
                stream.write(stringify(entry.to_dict()) + "\n")
                count += 1
        print(f"exported {count} {'entry' if count == 1 else 'entries'}", file=sys.stderr)
        return 0

    _with_service(ctx, workspace, db, export)


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
    ids already present are skipped. With a URI, add the records of a resource export (the
    second argument, or stdin) to that memory resource instead."""
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

    def load(service: MemoryService) -> int:
        with export_lines(origin) as lines:
            added, skipped = import_entries(service, lines, "<stdin>" if origin == "-" else origin)
        if as_json:
            print(to_json({"added": added, "skipped": skipped}))
        else:
            print(f"added {added}, skipped {skipped}", file=sys.stderr)
        return 0

    _with_service(ctx, workspace, db, load)


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
@click.option(
    "--db",
    metavar="PATH",
    help=_DB_HELP,
)
@click.option(
    "--workspace",
    metavar="DIR",
    help="The workspace whose memory this is (default: the current directory).",
)
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

    def serve() -> int:
        from agentscript.memory import mcp_server

        if port is None:
            with _open_service(workspace, db) as service:
                mcp_server.serve_stdio(service)
            return 0
        checked = mcp_server.check_token(secret or "")
        with _open_service(workspace, db) as service:

            def ready(url: str) -> None:
                print(
                    f"memory MCP server for {service.workspace} at {url} "
                    "(requests need Authorization: Bearer <token>)",
                    file=sys.stderr,
                    flush=True,
                )

            mcp_server.serve_http(service, checked, port, on_ready=ready)
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
    export_command,
    import_command,
    serve_command,
)


def add_service_commands(group: click.Group) -> None:
    """Add the service's commands, and compaction's `compact`, to `agentscript memory`."""
    for command in (*SERVICE_COMMANDS, compact_command):
        group.add_command(command)


# ------------------------------------------------------------------------ export / import


@cache
def _export_line_model() -> type[BaseModel]:
    """The model of one line of a service export: every field of an entry, strictly typed,
    nothing else. Built on first use: pydantic is slow to import, and every command of the
    program starts by importing this module."""
    from pydantic import BaseModel, ConfigDict, Field

    class ExportedSource(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        session: str | None = None
        run: str | None = None
        reason: str | None = None

    class ExportedEntry(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        id: str = Field(min_length=1)
        kind: Literal["fact", "knowledge", "episodic", "summary"]
        key: str | None
        title: str
        body: str
        tags: list[str]
        context: str
        scope: str = Field(min_length=1)
        created_at: str
        updated_at: str
        accessed_at: str
        event_time: str
        level: Literal["day", "week", "month", "year"] | None
        bucket: str
        archived: bool
        archive_reason: str | None
        source: ExportedSource
        archive_ref: list[str]
        reinforce_count: int = Field(ge=0)
        superseded_by: str | None

    return ExportedEntry


def import_entries(service: MemoryService, lines: Iterable[str], origin: str) -> tuple[int, int]:
    """Insert the entries of a service export as they are (ids, scopes, times, versions);
    returns (added, skipped). Every line is checked before anything is written, and all are
    written in one transaction, so a bad line or a conflict (an active entry of the same key
    or summary bucket with another id) imports nothing. Ids the database already holds, in
    any scope, and ids repeated in the input are skipped."""
    from agentscript.memory import EntryFilter, StoreConflict

    entries = [
        (number, _exported_entry(value, origin, number))
        for number, value in _json_lines(lines, origin)
    ]
    known = {count.scope for count in service.store.scopes()}
    added = skipped = 0
    seen: set[str] = set()
    with service.store.transaction() as tx:
        for number, entry in entries:
            scopes = tuple(sorted(known | {entry.scope}))
            held = tx.select(EntryFilter(scopes=scopes, ids=(entry.id,), archived=None), limit=1)
            if entry.id in seen or held:
                skipped += 1
                continue
            try:
                tx.insert(entry)
            except StoreConflict as conflict:
                raise CliError(
                    f"{origin}:{number}: {conflict.message}; nothing was imported"
                ) from None
            seen.add(entry.id)
            known.add(entry.scope)
            added += 1
    return added, skipped


def _json_lines(lines: Iterable[str], origin: str) -> Iterator[tuple[int, object]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, parse(line)
        except json.JSONDecodeError as error:
            raise CliError(f"{origin}:{number}: not valid JSON: {error.msg}") from None
        except ValueError as error:
            raise CliError(f"{origin}:{number}: not valid JSON: {error}") from None


def _exported_entry(value: object, origin: str, number: int) -> Entry:
    """An Entry from one export line, refused (naming the line and field) unless it could
    have been written by the service: canonical timestamps and scope, a bucket of the right
    level."""
    from pydantic import ValidationError

    from agentscript.memory import Entry, MemoryServiceError
    from agentscript.memory.entries import require_storable
    from agentscript.memory.scopes import parse_scope
    from agentscript.memory.timeline import (
        bucket_level,
        format_timestamp,
        parse_timestamp,
    )

    where = f"{origin}:{number}"
    try:
        data = _export_line_model().model_validate(value).model_dump()
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(line)"
        problem = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
        raise CliError(f"{where}: {field}: {problem}") from None
    for name in ("created_at", "updated_at", "accessed_at", "event_time"):
        stamp = data[name]
        try:
            canonical = format_timestamp(parse_timestamp(stamp))
        except ValueError:
            canonical = None
        if canonical != stamp:
            raise CliError(
                f"{where}: {name}: {stamp!r} is not a stored timestamp (2026-05-04T09:15:00.000Z)"
            )
    try:
        scope = parse_scope(data["scope"])
    except MemoryServiceError as error:
        raise CliError(f"{where}: scope: {error.message}") from None
    if scope != data["scope"]:
        raise CliError(f"{where}: scope: {data['scope']!r} is not a normalised scope ({scope!r})")
    summary = data["kind"] == "summary"
    if summary and data["level"] is None:
        raise CliError(f"{where}: level: a summary needs a level")
    if not summary and data["level"] is not None:
        raise CliError(f"{where}: level: only summaries have a level")
    wanted = data["level"] if summary else "day"
    if bucket_level(data["bucket"]) != wanted:
        raise CliError(f"{where}: bucket: {data['bucket']!r} is not a {wanted} bucket")
    try:
        return require_storable(Entry.from_dict(data))
    except MemoryServiceError as error:
        raise CliError(f"{where}: {error.field}: {error.message}") from None


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
