"""Eval cases: one JSON object per line, `{"input": {...}, "expected": ..., "id"?, "tags"?}`.

A case without an id is named by a digest of its input and expected value, so the id stays the
same when lines are added, removed or reordered (results files resume by id).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentscript.runtime.bounded_input import USER_FILE_LIMIT, UnusableInput, read_regular_text
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.jsjson import parse

CASE_FIELDS = frozenset({"input", "expected", "id", "tags"})


class CaseError(AgentScriptError):
    """A case file or case object that cannot be used; the message says where and why."""


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    input: Any
    expected: Any
    tags: tuple[str, ...] = ()


def load_cases(path: str | Path) -> list[Case]:
    """Read a JSONL file of cases; blank lines are skipped. Errors name `file:line`."""
    file = Path(path)
    try:
        text = read_regular_text(file, USER_FILE_LIMIT, "Cases")
    except UnusableInput as problem:
        raise CaseError(str(problem)) from None
    items: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{file}:{number}"
        try:
            items.append((where, parse(line)))
        except json.JSONDecodeError as problem:
            raise CaseError(f"{where}: not a JSON object ({problem.msg})") from None
        except ValueError as problem:
            raise CaseError(f"{where}: {problem}") from None
    if not items:
        raise CaseError(f"{file}: no cases (one JSON object per line)")
    return _build(items)


def cases_from(items: Iterable[Case | Mapping[str, Any]]) -> list[Case]:
    """Cases from Python objects: Case instances or mappings in the file's format."""
    numbered: list[tuple[str, Any]] = []
    for index, item in enumerate(items):
        numbered.append((f"case {index + 1}", item))
    if not numbered:
        raise CaseError("No cases to evaluate")
    return _build(numbered)


def _build(items: list[tuple[str, Any]]) -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for where, item in items:
        case = item if isinstance(item, Case) else _case(where, item)
        if case.id in seen:
            raise CaseError(f"{where}: duplicate case id {case.id!r} (first at {seen[case.id]})")
        seen[case.id] = where
        cases.append(case)
    return cases


def _case(where: str, item: Any) -> Case:
    if not isinstance(item, Mapping):
        raise CaseError(f"{where}: a case must be a JSON object, got {type(item).__name__}")
    unknown = sorted(set(item) - CASE_FIELDS)
    if unknown:
        raise CaseError(
            f"{where}: unknown field {unknown[0]!r} (a case has input, expected, id, tags)"
        )
    if "input" not in item:
        raise CaseError(f"{where}: a case needs an 'input'")
    if "expected" not in item:
        raise CaseError(f"{where}: a case needs an 'expected' value (null is allowed)")
    case_id = item.get("id")
    if case_id is None:
        case_id = _digest_id(item["input"], item["expected"])
    elif not isinstance(case_id, str) or not case_id.strip():
        raise CaseError(f"{where}: 'id' must be a non-empty string, got {case_id!r}")
    tags = item.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise CaseError(f"{where}: 'tags' must be a list of strings, got {tags!r}")
    return Case(case_id, item["input"], item["expected"], tuple(tags))


def _digest_id(input_value: Any, expected: Any) -> str:
    canonical = json.dumps([input_value, expected], sort_keys=True, ensure_ascii=False)
    return "case-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:10]
