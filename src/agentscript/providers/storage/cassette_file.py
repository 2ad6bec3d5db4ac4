"""A cassette as a file: the JSONL recording `run --record` writes, `runs export --cassette`
writes from the journal, and `run --replay FILE` reads.

One exchange per line. A model line is what `--record` has always written (the request digest,
the prompt that produced it, the answer or the not-JSON failure); a cassette exported from the
journal adds one line per tool call (`"kind": "tool"`: URI, method, arguments, result or error,
the events it reported) and per memory call (`"kind": "memory"`). A recording without tool
lines replays its tools live, as when it was made. Every line is scrubbed with the redaction
set it is written with.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from agentscript.runtime.bounded_input import USER_FILE_LIMIT, UnusableInput, read_regular_text
from agentscript.runtime.errors import LoadError
from agentscript.runtime.jsjson import parse, stringify
from agentscript.runtime.ports import Cassette, ToolExchange
from agentscript.runtime.secrets import SecretSet

FORMAT_VERSION = 1
TOOL_LINE = "tool"
MEMORY_LINE = "memory"


def material_digest(material: dict[str, Any]) -> str:
    """The digest a model request is matched by: of its material (see request_material)."""
    return hashlib.sha256(stringify(material).encode("utf-8")).hexdigest()


def entry_digest(entry: dict[str, Any]) -> str:
    """A model exchange's digest: as recorded, or, for one kept in the run journal (which saves
    the run that work), computed from its request material."""
    digest = entry.get("digest")
    if isinstance(digest, str):
        return digest
    material = entry.get("request")
    return material_digest(material) if isinstance(material, dict) else ""


def read_cassette(path: Path) -> Cassette:
    """The exchanges of the recording at `path`; a line that is not one is an error naming it."""
    try:
        lines = read_regular_text(path, USER_FILE_LIMIT, "Recording").splitlines()
    except UnusableInput as problem:
        raise LoadError(str(problem)) from None
    cassette = Cassette(str(path), tools_recorded=False)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = parse(line)
        except ValueError as problem:
            raise LoadError(f"Invalid recording line {path}:{number}: {problem}") from None
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if isinstance(entry, dict) and kind == TOOL_LINE:
            cassette.tools.append(tool_exchange(entry))
            cassette.tools_recorded = True
        elif isinstance(entry, dict) and kind == MEMORY_LINE:
            cassette.memory.append({key: entry.get(key) for key in _MEMORY_FIELDS})
            cassette.tools_recorded = True
        elif isinstance(entry, dict) and isinstance(entry.get("digest"), str):
            cassette.model.append(entry)
        else:
            raise LoadError(f"Invalid recording line {path}:{number}: not an exchange")
    return cassette


def write_cassette(cassette: Cassette, path: Path, secrets: SecretSet) -> None:
    """Write `cassette` as a standalone recording (model, tool, then memory lines, each in the
    order it happened), scrubbed with `secrets`."""
    lines = [{**entry, "digest": entry_digest(entry)} for entry in cassette.model]
    lines += [tool_line(exchange) for exchange in cassette.tools]
    lines += [{"version": FORMAT_VERSION, "kind": MEMORY_LINE, **call} for call in cassette.memory]
    text = "".join(stringify(secrets.scrub(line)) + "\n" for line in lines)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as problem:
        raise LoadError(f"Cannot write cassette {path}: {problem.strerror}") from None


_MEMORY_FIELDS = ("memory", "operation", "argument", "result")


def tool_line(exchange: ToolExchange) -> dict[str, Any]:
    return {
        "version": FORMAT_VERSION,
        "kind": TOOL_LINE,
        "uri": exchange.uri,
        "method": exchange.method,
        "args": exchange.args,
        "finished": exchange.finished,
        "result": exchange.result,
        "error": exchange.error,
        "events": [[kind, data] for kind, data in exchange.events],
        "secret": exchange.secret,
    }


def tool_exchange(line: dict[str, Any]) -> ToolExchange:
    """A tool line as a ToolExchange."""
    error = line.get("error")
    args = line.get("args")
    return ToolExchange(
        uri=str(line.get("uri")),
        method=str(line.get("method")),
        args=args if isinstance(args, list) else [],
        finished=bool(line.get("finished")),
        result=line.get("result"),
        error=error if isinstance(error, str) else None,
        events=reported_events(line.get("events")),
        secret=line.get("secret") is True,
    )


def reported_events(raw: Any) -> list[tuple[str, dict[str, Any]]]:
    """The `[kind, data]` pairs a tool call reported, as kept in a tool line or the journal."""
    return [
        (str(event[0]), dict(event[1]))
        for event in (raw if isinstance(raw, list) else [])
        if isinstance(event, list) and len(event) == 2 and isinstance(event[1], dict)
    ]
