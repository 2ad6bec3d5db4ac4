"""The memory tools for models (agentscript.memory.tools): schemas, annotations, argument
validation, and every tool's behaviour through `call_tool` on a real service."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from agentscript.memory import FixedClock, MemoryService
from agentscript.memory.tools import TOOLS, TOOLS_BY_NAME, call_tool

pytest_plugins = ["memsvc_support"]

READ_ONLY = {
    "recall",
    "memory_stats",
    "memory_check",
    "memory_browse",
    "memory_digest",
    "memory_history",
    "memory_experiences",
}


def ok(memory: MemoryService, name: str, arguments: Any = None) -> dict[str, Any]:
    result = call_tool(memory, name, arguments)
    assert "error" not in result, result
    return result


def refusal(memory: MemoryService, name: str, arguments: Any) -> dict[str, Any]:
    result = call_tool(memory, name, arguments)
    assert set(result) == {"error"}, result
    error: dict[str, Any] = result["error"]
    return error


def walk(schema: Any) -> list[tuple[str, Any]]:
    """Every (key, value) pair of a schema that is schema syntax (not a property name)."""
    pairs: list[tuple[str, Any]] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties":
                for member in value.values():
                    pairs.extend(walk(member))
                continue
            pairs.append((key, value))
            pairs.extend(walk(value))
    elif isinstance(schema, list):
        for item in schema:
            pairs.extend(walk(item))
    return pairs


# ------------------------------------------------------------------------- definitions


def test_the_tools_are_the_issues_seven_and_four_more() -> None:
    assert [tool.name for tool in TOOLS] == [
        "remember",
        "remember_many",
        "recall",
        "update",
        "forget",
        "memory_stats",
        "memory_check",
        "memory_browse",
        "memory_digest",
        "memory_history",
        "memory_checkpoint",
        "memory_experiences",
    ]


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_each_schema_is_a_closed_self_contained_object(tool: Any) -> None:
    schema = tool.input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    keys = [key for key, _ in walk(schema)]
    assert "$ref" not in keys and "$defs" not in keys and "title" not in keys
    assert all(member.get("description") for member in schema["properties"].values())
    assert tool.description and tool.title
    described = tool.describe()
    assert described["inputSchema"] == schema
    assert described["annotations"]["openWorldHint"] is False


def test_schemas_say_what_is_required_and_what_each_argument_takes() -> None:
    remember = TOOLS_BY_NAME["remember"].input_schema
    assert remember["required"] == ["text"]
    assert remember["properties"]["kind"]["enum"] == ["fact", "knowledge", "episodic"]
    assert remember["properties"]["kind"]["default"] == "knowledge"
    assert remember["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Tags, such as deploy or experience",
    }
    source = remember["properties"]["source"]
    assert source["type"] == "object" and source["additionalProperties"] is False
    assert set(source["properties"]) == {"session", "run", "reason"}
    # An optional argument is one that may be left out, not one that may be null.
    assert remember["properties"]["key"]["type"] == "string"
    recall = TOOLS_BY_NAME["recall"].input_schema
    assert "required" not in recall
    assert recall["properties"]["limit"] | {"description": ""} == {
        "type": "integer",
        "minimum": 1,
        "maximum": 200,
        "default": 10,
        "description": "",
    }
    one, many = recall["properties"]["kind"]["anyOf"]
    assert one["enum"] == ["fact", "knowledge", "episodic", "summary"]
    assert many == {"type": "array", "items": one}
    forget = TOOLS_BY_NAME["forget"].input_schema
    assert forget["required"] == ["id"]
    assert forget["properties"]["purge"]["type"] == "boolean"
    assert forget["properties"]["purge"]["default"] is False
    assert TOOLS_BY_NAME["memory_experiences"].input_schema["required"] == ["task"]
    assert TOOLS_BY_NAME["memory_history"].input_schema["required"] == ["key"]


def test_annotations_mark_reads_and_the_destructive_forget() -> None:
    for tool in TOOLS:
        hints = tool.annotations
        assert hints["readOnlyHint"] is (tool.name in READ_ONLY), tool.name
        if tool.name in READ_ONLY:
            assert hints["idempotentHint"] is True
            assert "destructiveHint" not in hints
    assert TOOLS_BY_NAME["forget"].annotations == {
        "title": "Forget",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    for name in ("remember", "update"):
        hints = TOOLS_BY_NAME[name].annotations
        assert hints["destructiveHint"] is False and hints["idempotentHint"] is False


def test_descriptions_carry_the_quality_protocol_and_the_bookkeeping_caveat() -> None:
    remember = TOOLS_BY_NAME["remember"].description
    for phrase in ("facts", "reusable knowledge", "episodes with their outcome"):
        assert phrase in remember
    for phrase in ("temporary state", "read again from files", "credentials"):
        assert phrase in remember
    for name in ("recall", "memory_experiences"):
        assert "Read-only for your purposes" in TOOLS_BY_NAME[name].description
        assert "accessed_at" in TOOLS_BY_NAME[name].description
    assert "purge" in TOOLS_BY_NAME["forget"].description


# -------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("name", "arguments", "message", "field"),
    [
        ("remember", {}, "text is required", "text"),
        ("remember", {"text": 3}, "text: Input should be a valid string", "text"),
        (
            "remember",
            {"text": "x", "kind": "summary"},
            "kind: Input should be 'fact', 'knowledge' or 'episodic'",
            "kind",
        ),
        (
            "remember",
            {"text": "x", "colour": "red"},
            "unknown argument colour; the arguments are text, kind, key, title, tags, scope, "
            "event_time, context, source",
            "colour",
        ),
        (
            "remember",
            {"text": "x", "source": {"session": "s", "user": "u"}},
            "unknown argument source.user",
            "source.user",
        ),
        (
            "remember",
            {"text": "x", "source": {"session": 7}},
            "source.session: Input should be a valid string",
            "source.session",
        ),
        (
            "remember",
            {"text": "x", "tags": ["ok", 2]},
            "tags[1]: Input should be a valid string",
            "tags[1]",
        ),
        ("remember", {"text": "x", "tags": "deploy"}, "tags: Input should be a valid list", "tags"),
        (
            "recall",
            {"limit": 500},
            "limit: Input should be less than or equal to 200",
            "limit",
        ),
        ("recall", {"limit": 0}, "limit: Input should be greater than or equal to 1", "limit"),
        ("recall", {"limit": True}, "limit: Input should be a valid integer", "limit"),
        ("recall", {"limit": "5"}, "limit: Input should be a valid integer", "limit"),
        ("recall", {"limit": 2.5}, "limit: Input should be a valid integer", "limit"),
        (
            "recall",
            {"kind": "facts"},
            "kind: Input should be 'fact', 'knowledge', 'episodic' or 'summary'",
            "kind",
        ),
        (
            "recall",
            {"kind": ["fact", "note"]},
            "kind[1]: Input should be 'fact', 'knowledge', 'episodic' or 'summary'",
            "kind[1]",
        ),
        (
            "recall",
            {"include_archived": "yes"},
            "include_archived: Input should be a valid boolean",
            "include_archived",
        ),
        (
            "recall",
            {"limit": 0, "query": 1},
            "query: Input should be a valid string (and 1 more problem)",
            "query",
        ),
        ("forget", {}, "id is required", "id"),
        ("forget", {"id": "x", "purge": 1}, "purge: Input should be a valid boolean", "purge"),
        ("update", {"text": "x"}, "id is required", "id"),
        (
            "memory_browse",
            {"by": "hour"},
            "by: Input should be 'day', 'week', 'month' or 'year'",
            "by",
        ),
        (
            "memory_digest",
            {"max_bytes": 10},
            "max_bytes: Input should be greater than or equal to 256",
            "max_bytes",
        ),
        ("memory_history", {}, "key is required", "key"),
        ("memory_experiences", {"limit": 3}, "task is required", "task"),
        ("memory_stats", {"scope": ["global"]}, "scope: Input should be a valid string", "scope"),
    ],
)
def test_invalid_arguments_are_refused_naming_the_field(
    memory: MemoryService, name: str, arguments: dict[str, Any], message: str, field: str
) -> None:
    assert refusal(memory, name, arguments) == {
        "code": "invalid_argument",
        "message": message,
        "field": field,
    }


def test_arguments_must_be_an_object_and_the_tool_must_exist(memory: MemoryService) -> None:
    assert refusal(memory, "recall", ["deploy"]) == {
        "code": "invalid_argument",
        "message": "the arguments must be a JSON object",
    }
    error = refusal(memory, "memorize", {})
    assert error["code"] == "unknown_tool"
    assert error["message"].startswith(
        "unknown tool 'memorize'; the tools are remember, remember_many, recall"
    )
    # No arguments at all is the empty object.
    assert ok(memory, "memory_stats", None)["active"] == 0


def test_a_whole_number_written_as_a_float_is_an_integer(memory: MemoryService) -> None:
    for index in range(3):
        ok(memory, "remember", {"text": f"Note {index}"})
    assert ok(memory, "recall", {"limit": 2.0})["count"] == 2


def test_refusals_of_the_service_come_back_as_error_objects(memory: MemoryService) -> None:
    assert refusal(memory, "forget", {"id": "missing"}) == {
        "code": "not_found",
        "message": f"no entry 'missing' in scope {memory.workspace} or global",
        "field": "id",
    }
    assert refusal(memory, "remember", {"text": "  "}) == {
        "code": "invalid_argument",
        "message": "text must not be empty",
        "field": "text",
    }
    ok(memory, "remember", {"text": "Builds run on Fridays"})
    digest = ok(memory, "memory_digest", {})["text"]
    assert refusal(memory, "remember", {"text": digest})["code"] == "digest_feedback"
    assert refusal(memory, "recall", {"since": "someday"})["field"] == "since"
    assert refusal(memory, "update", {"id": "missing"})["message"] == (
        "update needs text, title, tags, context or event_time"
    )
    assert refusal(memory, "update", {"id": "missing", "title": "x"})["code"] == "not_found"


# --------------------------------------------------------------------------- behaviour


def test_remember_recall_update_history_and_forget(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    created = ok(
        memory,
        "remember",
        {
            "text": "Deploy with `make release`; run `make check` first",
            "tags": ["Deploy"],
            "source": {"session": "s-1", "reason": "learned the hard way"},
        },
    )
    assert created["action"] == "created" and created["scope"] == memory.workspace
    fact = ok(
        memory,
        "remember",
        {"text": "User prefers short answers", "kind": "fact", "key": "style", "scope": "global"},
    )
    assert fact["scope"] == "global"

    found = ok(memory, "recall", {"query": "how do we deploy?", "kind": "knowledge"})
    assert [item["id"] for item in found["results"]] == [created["id"]]
    assert found["results"][0]["tags"] == ["deploy"]
    assert found["results"][0]["source"] == {"session": "s-1", "reason": "learned the hard way"}
    assert ok(memory, "recall", {"query": "deploy", "kind": ["fact"]})["count"] == 0

    memory_clock.advance(timedelta(minutes=5))
    revised = ok(memory, "update", {"id": fact["id"], "text": "User prefers detailed answers"})
    assert revised["id"] == fact["id"] and revised["changed"] is True
    versions = ok(memory, "memory_history", {"key": "style", "scope": "global"})["versions"]
    assert [(v["id"], v["status"]) for v in versions] == [
        (fact["id"], "active"),
        (revised["previous_version"], "superseded"),
    ]
    again = ok(memory, "update", {"id": fact["id"], "text": "User prefers terse answers"})
    assert again["id"] == fact["id"]

    forgotten = ok(memory, "forget", {"id": created["id"], "reason": "moved to CI"})
    assert forgotten == {"id": created["id"], "action": "archived", "archived": True, "purged": []}
    assert ok(memory, "forget", {"id": created["id"]})["action"] == "already_archived"
    assert ok(memory, "recall", {"query": "deploy"})["count"] == 0
    archived = ok(memory, "recall", {"query": "deploy", "include_archived": True})
    assert archived["results"][0]["archived"] is True


def test_forget_with_purge_deletes_every_version_of_the_key(memory: MemoryService) -> None:
    first = ok(memory, "remember", {"text": "token is abc", "kind": "fact", "key": "secret"})
    second = ok(memory, "remember", {"text": "token is def", "kind": "fact", "key": "secret"})
    purged = ok(memory, "forget", {"id": second["id"], "purge": True})
    assert purged["action"] == "purged"
    assert purged["purged"] == sorted([first["id"], second["id"]])
    assert ok(memory, "memory_history", {"key": "secret"})["versions"] == []
    assert ok(memory, "recall", {"query": "token", "include_archived": True})["count"] == 0
    assert refusal(memory, "forget", {"id": first["id"]})["code"] == "not_found"


def test_recall_is_read_only_apart_from_accessed_at(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    created = ok(memory, "remember", {"text": "Cache keys include the locale"})
    before = memory.get(created["id"])
    memory_clock.advance(timedelta(hours=1))
    ok(memory, "recall", {"query": "cache locale"})
    after = memory.get(created["id"])
    assert after["accessed_at"] > before["accessed_at"]
    assert {k: v for k, v in after.items() if k != "accessed_at"} == {
        k: v for k, v in before.items() if k != "accessed_at"
    }


def test_stats_check_and_browse(memory: MemoryService) -> None:
    ok(memory, "remember", {"text": "Deploy steps", "kind": "fact"})
    ok(memory, "remember", {"text": "Deploy steps", "kind": "fact"})
    ok(
        memory,
        "remember",
        {"text": "Rolled back 2.3", "kind": "episodic", "event_time": "2026-05-04"},
    )
    stats = ok(memory, "memory_stats", {})
    assert stats["active"] == 3
    assert stats["scopes"][0]["by_kind"] == {"fact": 2, "knowledge": 0, "episodic": 1, "summary": 0}
    assert [
        scope["scope"] for scope in ok(memory, "memory_stats", {"scope": "global"})["scopes"]
    ] == ["global"]
    check = ok(memory, "memory_check", {})
    assert check["ok"] is False
    assert [finding["code"] for finding in check["findings"]] == ["duplicate_title"]
    browse = ok(memory, "memory_browse", {"by": "month"})
    assert browse["total_groups"] == 1 and browse["total_entries"] == 3
    days = ok(memory, "memory_browse", {"by": "day", "page_size": 1})
    assert days["total_groups"] == 2
    assert [group["bucket"] for group in days["groups"]] == ["2026-05-06"]


def test_digest_honours_its_budget(memory: MemoryService) -> None:
    for index in range(30):
        ok(memory, "remember", {"text": f"Lesson number {index} about the build system"})
    digest = ok(memory, "memory_digest", {"max_bytes": 400})
    assert digest["bytes"] <= 400
    assert digest["text"].startswith("<memory-digest")
    assert digest["omitted"] == 30 - digest["entries"]
    assert ok(memory, "memory_digest", {"max_entries": 2})["entries"] == 2


def test_experiences_are_recalls_of_entries_tagged_experience(memory: MemoryService) -> None:
    for index in range(7):
        ok(
            memory,
            "remember",
            {
                "text": f"Deploy attempt {index}: run the migrations before the release",
                "tags": ["experience", "procedure"],
            },
        )
    ok(memory, "remember", {"text": "Deploy notes without the tag: release on Fridays"})
    found = ok(memory, "memory_experiences", {"task": "deploy the release"})
    assert found["count"] == 5
    assert all("experience" in item["tags"] for item in found["results"])
    assert ok(memory, "memory_experiences", {"task": "deploy", "limit": 2})["count"] == 2
    assert ok(memory, "memory_experiences", {"task": "", "limit": 10})["count"] == 7
