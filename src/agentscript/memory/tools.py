"""The memory service as tools for a model: one JSON-Schema'd definition per tool, one dispatcher.

The MCP server (`mcp_server.py`) and the `memory://` scheme of programs (`adapter.py`) both
serve these definitions, so a model, an MCP client and a program see the same names, argument
schemas, validation messages and results. Nothing here imports the MCP SDK: annotations are
plain dicts with MCP's field names, which the server hands to the SDK as they are.

Arguments are validated by pydantic models, strictly, the way the published JSON Schema reads:
a string is not a number, `true` is not 1, unknown arguments are refused; only a number without
a fractional part counts as an integer even when written `5.0`, as JSON Schema says. Every
refusal, of the arguments or by the service, comes back as `{"error": {code, message, field}}`
instead of an exception, because a model reads it and tries again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
)

from agentscript.memory.compaction_sink import write_checkpoint
from agentscript.memory.entries import KINDS
from agentscript.memory.errors import INVALID_ARGUMENT, MemoryServiceError
from agentscript.memory.experience_text import (
    DEFAULT_BUDGET_TOKENS,
    experiences_text,
    rank_experiences,
)
from agentscript.memory.results import (
    ExperiencesResult,
    ForgetResult,
    JsonResult,
    RecallResult,
    UpdateResult,
)
from agentscript.memory.service import (
    DEFAULT_BODY_CHARS,
    DEFAULT_RECALL_LIMIT,
    MAX_BATCH_ITEMS,
    MAX_PAGE_SIZE,
    MAX_RECALL_LIMIT,
    MemoryService,
)
from agentscript.memory.timeline import LEVELS

UNKNOWN_TOOL = "unknown_tool"
# Experiences are knowledge entries tagged `experience`; a second tag names their kind.
EXPERIENCE_TAG = "experience"
EXPERIENCE_KINDS = ("success", "failure", "preference", "procedure")
DEFAULT_EXPERIENCES = 5
# Experience bodies are short; whole ones are read so their confidence line is seen.
EXPERIENCE_BODY_CHARS = 4000

_QUALITY = (
    "Remember only what a later session needs: facts about the user, the project or the "
    "environment (give them a key, such as user.editor, so a new value replaces the old one), "
    "reusable knowledge (how to build, test, deploy, debug; conventions; pitfalls), and "
    "episodes with their outcome (what was tried, what happened, what it taught). Never store "
    "temporary state (the current task's progress, scratch values), content that can be read "
    "again from files (code, documentation: note where it is instead), or credentials, tokens "
    "and other secrets. One memory per call, self-contained, written for a reader who has none "
    "of today's context."
)
_RECALL_BOOKKEEPING = (
    "Read-only for your purposes: the only write is the bookkeeping of when entries were last "
    "recalled (accessed_at)."
)


def _json_integer(value: object) -> object:
    """JSON Schema's integer: any number without a fractional part, so 5.0 is 5. Booleans and
    strings stay as they are and are refused by the strict check that follows."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _listed(value: object) -> object:
    """One value or a list of them: a lone string becomes a one-item list."""
    return [value] if isinstance(value, str) else value


def _one_or_many_schema(values: tuple[str, ...]) -> dict[str, Any]:
    one = {"type": "string", "enum": list(values)}
    return {"anyOf": [one, {"type": "array", "items": one}]}


Integer = Annotated[int, BeforeValidator(_json_integer)]
RememberedKind = Literal["fact", "knowledge", "episodic"]
KindName = Literal["fact", "knowledge", "episodic", "summary"]
LevelName = Literal["day", "week", "month", "year"]
KindList = Annotated[
    list[KindName], BeforeValidator(_listed), WithJsonSchema(_one_or_many_schema(KINDS))
]
LevelList = Annotated[
    list[LevelName], BeforeValidator(_listed), WithJsonSchema(_one_or_many_schema(LEVELS))
]

_SCOPE = (
    "'global' (true in every workspace, such as the user's preferences) or an absolute "
    "workspace path; default: the current workspace, routed by its memory.yml"
)
_TAGS = "Tags (lowercased); an entry must carry all of them"
_SINCE = (
    "Only entries whose event time is at or after this: a day (2026-05-04), a week "
    "(2026-W18), a month (2026-05), a year or an ISO time; local time"
)
_UNTIL = "Only entries whose event time is at or before this (inclusive), same forms as since"


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class SourceArguments(_Arguments):
    session: str | None = Field(None, description="The host's session id")
    run: str | None = Field(None, description="The host's run id")
    reason: str | None = Field(None, description="Why this was remembered")


class RememberArguments(_Arguments):
    text: str = Field(
        description="The memory itself (markdown); its first line is the title unless one is given"
    )
    kind: RememberedKind = Field(
        "knowledge",
        description="fact: a value, usually keyed; knowledge: reusable know-how; episodic: "
        "something that happened, with its outcome",
    )
    key: str | None = Field(
        None,
        description="Identity of a fact (compared case-insensitively): remembering the same "
        "key again replaces the value and keeps the old one as history",
    )
    title: str | None = Field(None, description="A one-line title (default: the first line)")
    tags: list[str] | None = Field(None, description="Tags, such as deploy or experience")
    scope: str | None = Field(None, description=_SCOPE)
    event_time: str | None = Field(
        None,
        description="When it happened (ISO time or day, local time); default now. Relative "
        "text such as yesterday is not understood",
    )
    context: str | None = Field(
        None,
        description="Searchable surroundings that are not the memory itself (the "
        "conversation around it), weighted below the text",
    )
    source: SourceArguments | None = Field(None, description="Where the memory came from")


class RememberManyArguments(_Arguments):
    items: list[RememberArguments] = Field(
        min_length=1,
        max_length=MAX_BATCH_ITEMS,
        description="The memories, each with remember's arguments; written together or not at all",
    )


class RecallArguments(_Arguments):
    query: str = Field(
        "",
        description="What to look for, in words; empty lists the most recently updated entries",
    )
    kind: KindList | None = Field(None, description="Only these kinds (one or a list)")
    tags: list[str] | None = Field(None, description=_TAGS)
    since: str | None = Field(None, description=_SINCE)
    until: str | None = Field(None, description=_UNTIL)
    scope: str | None = Field(None, description=_SCOPE)
    level: LevelList | None = Field(
        None, description="Only summaries of these levels (one or a list)"
    )
    include_archived: bool = Field(False, description="Also archived and superseded entries")
    limit: Integer = Field(
        DEFAULT_RECALL_LIMIT, ge=1, le=MAX_RECALL_LIMIT, description="How many results at most"
    )
    body_chars: Integer = Field(
        DEFAULT_BODY_CHARS, ge=0, le=1_000_000, description="Bodies are cut at this length"
    )
    min_relevance: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Leave out hits whose relevance is below this (0: every match)",
    )


class UpdateArguments(_Arguments):
    id: str = Field(description="The id of the active entry to correct")
    text: str | None = Field(None, description="The corrected text (the title follows it)")
    title: str | None = Field(None, description="A new title")
    tags: list[str] | None = Field(None, description="Tags that replace the old ones")
    context: str | None = Field(None, description="New searchable surroundings")
    event_time: str | None = Field(None, description="A corrected event time")
    scope: str | None = Field(None, description=_SCOPE)


class ForgetArguments(_Arguments):
    id: str = Field(description="The id of the entry")
    reason: str | None = Field(None, description="Why it is forgotten (kept with the entry)")
    purge: bool = Field(
        False,
        description="Delete the entry and every version of its key for good, from the table "
        "and the text index, instead of archiving it; cannot be undone",
    )
    scope: str | None = Field(None, description=_SCOPE)


class ScopeArguments(_Arguments):
    scope: str | None = Field(None, description=_SCOPE)


class BrowseArguments(_Arguments):
    by: LevelName = Field("day", description="Group entries by local day, week, month or year")
    kind: KindList | None = Field(None, description="Only these kinds (one or a list)")
    tags: list[str] | None = Field(None, description=_TAGS)
    since: str | None = Field(None, description=_SINCE)
    until: str | None = Field(None, description=_UNTIL)
    level: LevelList | None = Field(None, description="Only summaries of these levels")
    scope: str | None = Field(None, description=_SCOPE)
    include_archived: bool = Field(False, description="Also archived and superseded entries")
    page: Integer = Field(1, ge=1, le=1_000_000, description="Which page of groups, from 1")
    page_size: Integer = Field(20, ge=1, le=MAX_PAGE_SIZE, description="Groups per page")
    per_group: Integer = Field(50, ge=1, le=1000, description="Entries listed per group")


class DigestArguments(_Arguments):
    max_bytes: Integer | None = Field(
        None,
        ge=256,
        le=10_000_000,
        description="Budget in UTF-8 bytes, wrapper included (default: memory.yml)",
    )
    max_entries: Integer | None = Field(
        None, ge=1, le=10_000, description="Budget in lines (default: memory.yml)"
    )
    scope: str | None = Field(None, description=_SCOPE)


class HistoryArguments(_Arguments):
    key: str = Field(description="The key whose versions to list")
    scope: str | None = Field(None, description=_SCOPE)


class ExperiencesArguments(_Arguments):
    task: str = Field(
        description="The task at hand, in words; experiences are ranked against it (empty: "
        "the most recent ones)"
    )
    limit: Integer = Field(
        DEFAULT_EXPERIENCES, ge=1, le=MAX_RECALL_LIMIT, description="How many at most"
    )
    budget: Integer = Field(
        DEFAULT_BUDGET_TOKENS,
        ge=1,
        le=100_000,
        description="Estimated tokens the compact `text` may take (whole lines only)",
    )
    scope: str | None = Field(None, description=_SCOPE)


class CheckpointArguments(_Arguments):
    session: str = Field(description="The host's id of the session whose context was compacted")
    summary: str = Field(description="The summary that replaced the context (markdown)")
    trigger: str | None = Field(None, description="Why it was compacted, such as auto or manual")
    scope: str | None = Field(None, description=_SCOPE)


def _checkpoint(service: MemoryService, arguments: dict[str, Any]) -> JsonResult:
    return write_checkpoint(service, **arguments)


# A tool's call of the service: a typed result (sent as its `to_json()`) or plain JSON.
Handler = Callable[[MemoryService, dict[str, Any]], JsonResult | dict[str, Any]]


@dataclass(frozen=True)
class ToolDefinition:
    """One tool: its name, its description for a model, its arguments model (and so its JSON
    Schema), its MCP annotations, and the service call it makes with the validated arguments
    (None values left out, so the service's defaults apply)."""

    name: str
    title: str
    description: str
    arguments: type[_Arguments]
    handler: Handler
    read_only: bool
    idempotent: bool
    destructive: bool = False
    # The method name in programs (`Memory.stats`) when it differs from the tool's name.
    short_name: str | None = None

    @property
    def method(self) -> str:
        """What a program calls: `Memory.<method>`."""
        return self.short_name or self.name

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, self-contained (no `$ref`) and without pydantic's
        generated titles, which only cost a model tokens."""
        generated = self.arguments.model_json_schema()
        return _clean_schema(generated, generated.get("$defs", {}))

    @property
    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations (`ToolAnnotations` field names). The memory is local: never
        an open world."""
        hints: dict[str, Any] = {"title": self.title, "readOnlyHint": self.read_only}
        if not self.read_only:
            hints["destructiveHint"] = self.destructive
        hints["idempotentHint"] = self.idempotent
        hints["openWorldHint"] = False
        return hints

    def describe(self) -> dict[str, Any]:
        """The tool as MCP's `tools/list` shows it."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": self.annotations,
        }


def _remember_many(service: MemoryService, arguments: dict[str, Any]) -> dict[str, Any]:
    results = service.remember_many(
        {name: value for name, value in item.items() if value is not None}
        for item in arguments["items"]
    )
    return {"results": [result.to_json() for result in results], "count": len(results)}


def _update(service: MemoryService, arguments: dict[str, Any]) -> UpdateResult:
    entry_id = arguments.pop("id")
    return service.update(entry_id, **arguments)


def _forget(service: MemoryService, arguments: dict[str, Any]) -> ForgetResult:
    entry_id = arguments.pop("id")
    return service.forget(entry_id, **arguments)


def _experiences(service: MemoryService, arguments: dict[str, Any]) -> ExperiencesResult:
    found = service.recall(
        arguments["task"],
        tags=[EXPERIENCE_TAG],
        limit=arguments["limit"],
        scope=arguments.get("scope"),
        body_chars=EXPERIENCE_BODY_CHARS,
    )
    ranked = rank_experiences(found.hits, service.tool_usage)
    recalled = RecallResult(ranked, found.total, found.note, found.compaction)
    return ExperiencesResult(recalled, experiences_text(ranked, arguments["budget"]))


TOOLS: tuple[ToolDefinition, ...] = (
    ToolDefinition(
        name="remember",
        title="Remember",
        description=(
            "Store one memory for later sessions; returns {id, action, scope, kind, title}. "
            f"{_QUALITY} A key already in use makes a new version (action updated; the old one "
            "stays in memory_history); an unkeyed knowledge or episodic entry with the same "
            "title is merged into the existing one (action merged)."
        ),
        arguments=RememberArguments,
        handler=lambda service, arguments: service.remember(**arguments),
        read_only=False,
        idempotent=False,
    ),
    ToolDefinition(
        name="remember_many",
        title="Remember many",
        description=(
            "Store several memories in one write (a host saving a conversation's turns, say); "
            f"returns {{results: [remember's result per item, in order], count}}. Up to "
            f"{MAX_BATCH_ITEMS} items, each with remember's arguments and rules; if one is "
            "invalid, none is stored and the error names it (items[3].kind). Episodic turns "
            "of one source.session are linked: each is found by the words of the two before it."
        ),
        arguments=RememberManyArguments,
        handler=_remember_many,
        read_only=False,
        idempotent=False,
    ),
    ToolDefinition(
        name="recall",
        title="Recall",
        description=(
            "Search long-term memory; returns {results: [{id, kind, key, title, body, tags, "
            "scope, score, relevance, event_time, ...}], count, total}, best first (total: the "
            "matches before the limit). Read relevance, not score: relevance (0 to 1, the same "
            "meaning in every call) is the share of your query's words, weighted by rarity, that "
            "the entry itself holds; 1 means all of them, below about 0.3 only common words or "
            "none (found through its session's neighbours), so treat such hits as weak or "
            "unrelated, or pass min_relevance to leave them out. score only orders one call's "
            "hits. Ask in words (dates such as "
            "'March 2026' favour entries of that time); narrow with kind, tags, since, until. "
            "Recall before asking the user something they may have said before. "
            f"{_RECALL_BOOKKEEPING}"
        ),
        arguments=RecallArguments,
        handler=lambda service, arguments: service.recall(**arguments),
        read_only=True,
        idempotent=True,
    ),
    ToolDefinition(
        name="update",
        title="Correct a memory",
        description=(
            "Correct an active entry in place: its id stays the same (update it again with the "
            "same id), and the text before is kept as an archived version; returns {id, action, "
            "previous_version, changed}. Given text without title, the title follows the text's first line; tags "
            f"replace the old tags. {_QUALITY}"
        ),
        arguments=UpdateArguments,
        handler=_update,
        read_only=False,
        idempotent=False,
    ),
    ToolDefinition(
        name="forget",
        title="Forget",
        description=(
            "Archive an entry that is wrong or no longer true: recall skips it, history keeps "
            "it; returns {id, action: archived | already_archived | purged, purged: [ids]}. "
            "With purge: true the entry and every version of its key are deleted from every "
            "index for good: use it only for what must not be kept at all (a stored secret, "
            "data the user asked to delete)."
        ),
        arguments=ForgetArguments,
        handler=_forget,
        read_only=False,
        idempotent=True,
        destructive=True,
    ),
    ToolDefinition(
        name="memory_stats",
        title="Memory statistics",
        description=(
            "Counts per readable scope: active, archived and superseded entries, by kind, by "
            "summary level, active entries per local day (by_day), ISO week (by_week) and month "
            "(by_month), newest first, and the room left under max_entries."
        ),
        arguments=ScopeArguments,
        handler=lambda service, arguments: service.stats(**arguments),
        read_only=True,
        idempotent=True,
        short_name="stats",
    ),
    ToolDefinition(
        name="memory_check",
        title="Check memory",
        description=(
            "Problems of the readable scopes and what to distil: {ok, scopes, findings: "
            "[{code, severity, scope, message, ids}], suggestions: [{signal, summary, ids, "
            "scope}]}; finding codes duplicate_title, over_limit, near_limit, stale_summary, "
            "orphan_reference, store (fix duplicates with update and forget); suggestion "
            "signals recurring_topic, reinforced_episode, undistilled_checkpoints (read the "
            "entries named, then remember the lasting lesson as knowledge or a keyed fact)."
        ),
        arguments=ScopeArguments,
        handler=lambda service, arguments: service.check(**arguments),
        read_only=True,
        idempotent=True,
        short_name="check",
    ),
    ToolDefinition(
        name="memory_browse",
        title="Browse memory by time",
        description=(
            "Entries grouped by local day, week, month or year, newest group first, one line "
            "each (no bodies; recall or memory_history for details); paging counts groups."
        ),
        arguments=BrowseArguments,
        handler=lambda service, arguments: service.browse(**arguments),
        read_only=True,
        idempotent=True,
        short_name="browse",
    ),
    ToolDefinition(
        name="memory_digest",
        title="Memory digest",
        description=(
            "The session-start digest: {text, bytes, entries, omitted}; text is a "
            "<memory-digest> block of one line per memory (keyed facts, summaries, recent "
            "entries) within the byte and line budget. It is a view: never remember it."
        ),
        arguments=DigestArguments,
        handler=lambda service, arguments: service.digest(**arguments),
        read_only=True,
        idempotent=True,
        short_name="digest",
    ),
    ToolDefinition(
        name="memory_history",
        title="History of a key",
        description=(
            "Every version stored under a key, newest first, each with status active, "
            "superseded or archived: {key, versions: [...]}."
        ),
        arguments=HistoryArguments,
        handler=lambda service, arguments: service.history(**arguments),
        read_only=True,
        idempotent=True,
        short_name="history",
    ),
    ToolDefinition(
        name="memory_checkpoint",
        title="Keep a compacted context",
        description=(
            "For agent hosts, when they have compacted a session's context: keeps the summary "
            "as a checkpoint (an episodic entry tagged compaction, once per session and "
            "summary) and returns {action: written | exists | discarded | disabled, session, "
            "id, notice, reason}; pass the notice to the agent. Off when memory.yml sets "
            "auto_sink: false."
        ),
        arguments=CheckpointArguments,
        handler=_checkpoint,
        read_only=False,
        idempotent=True,
        short_name="checkpoint",
    ),
    ToolDefinition(
        name="memory_experiences",
        title="Relevant experiences",
        description=(
            "Experiences that may help with a task: knowledge entries tagged experience (their "
            f"second tag says which: {', '.join(EXPERIENCE_KINDS)}), ranked against the task "
            "text, user-confirmed (important) and most reinforced first; returns {results, "
            "count} like recall, and `text`: one line per lesson (the lesson, its confidence "
            "and run count; no ids) within `budget` tokens, made for a prompt. Store one with "
            "remember, kind "
            "knowledge, tags [experience, <kind>]. "
            f"{_RECALL_BOOKKEEPING}"
        ),
        arguments=ExperiencesArguments,
        handler=_experiences,
        read_only=True,
        idempotent=True,
        short_name="experiences",
    ),
)
TOOLS_BY_NAME: Mapping[str, ToolDefinition] = {tool.name: tool for tool in TOOLS}


def call_tool(service: MemoryService, name: str, arguments: object) -> dict[str, Any]:
    """Validate `arguments` against the tool's schema and run it: the service's JSON result, or
    `{"error": {code, message, field}}` for an unknown tool, invalid arguments or a refusal of
    the service. Anything else raised is a bug and propagates."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        return _error(
            UNKNOWN_TOOL, f"unknown tool {name!r}; the tools are {', '.join(TOOLS_BY_NAME)}"
        )
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return _error(INVALID_ARGUMENT, "the arguments must be a JSON object")
    try:
        parsed = tool.arguments.model_validate(arguments)
    except ValidationError as error:
        return {"error": _validation_error(error, tool.arguments, arguments)}
    values = {name: value for name, value in parsed.model_dump().items() if value is not None}
    try:
        result = tool.handler(service, values)
    except MemoryServiceError as error:
        return {"error": error.to_dict()}
    return result.to_json() if isinstance(result, JsonResult) else result


def _error(code: str, message: str, field_name: str | None = None) -> dict[str, Any]:
    return {"error": MemoryServiceError(code, message, field_name).to_dict()}


def _validation_error(
    error: ValidationError, model: type[_Arguments], arguments: dict[str, Any]
) -> dict[str, Any]:
    """The first problem as one sentence naming the argument (`tags[2]`, `source.session`),
    with a count of the others, in the service's error shape."""
    problems = error.errors()
    first = problems[0]
    location = first["loc"]
    if len(location) == 2 and isinstance(arguments.get(str(location[0])), str):
        # A lone value given where one or a list is allowed: name the argument, not `[0]`.
        location = location[:1]
    where = _field_path(location)
    if first["type"] == "missing":
        message = f"{where} is required"
    elif first["type"] == "extra_forbidden":
        allowed = ", ".join(model.model_fields) if len(location) == 1 else None
        message = f"unknown argument {where}" + (
            f"; the arguments are {allowed}" if allowed else ""
        )
    else:
        message = f"{where}: {first['msg'].removeprefix('Value error, ')}"
    if len(problems) > 1:
        more = len(problems) - 1
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return MemoryServiceError(INVALID_ARGUMENT, message, where).to_dict()


def _field_path(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or "arguments"


def _clean_schema(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """Inline `$ref`s, drop generated titles and `default: null`, and turn `X or null` into
    `X`: an optional argument is one that may be left out."""
    reference = schema.get("$ref")
    if isinstance(reference, str):
        resolved = definitions[reference.rsplit("/", 1)[-1]]
        extra = {key: value for key, value in schema.items() if key != "$ref"}
        return _clean_schema({**resolved, **extra}, definitions)
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "$defs") or (key == "default" and value is None):
            continue
        if key == "properties":
            cleaned[key] = {
                name: _clean_schema(member, definitions) for name, member in value.items()
            }
        elif key == "items" and isinstance(value, dict):
            cleaned[key] = _clean_schema(value, definitions)
        elif key == "anyOf":
            options = [
                _clean_schema(option, definitions) for option in value if option != {"type": "null"}
            ]
            if len(options) == 1:
                cleaned.update(options[0])
            else:
                cleaned[key] = options
        else:
            cleaned[key] = value
    return cleaned
