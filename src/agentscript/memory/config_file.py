"""Reading memory.yml: YAML, then strict validation with pydantic, then the plain settings.

Strict means an unknown key at any depth is an error (a typo must never be silently ignored),
`"3000"` is not a number, and ranges are enforced; every message names the file and the field.

The seed's spelling of the file (dsh-agent-memory's memory.yml, §2.3 of its specification) is
accepted too: `inject:` is read as `digest:` and a top-level `weekly_template` as
`timeline.week_template`. Each alias used leaves a note that `memory check` reports, so a user
learns today's name without the file ever failing; a file giving both spellings of one setting
is an error, since which one wins would be a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentscript.memory.config import (
    DEFAULT_CACHE_BYTES,
    DEFAULT_CONFIG,
    ArchiveMode,
    DigestConfig,
    MemoryConfig,
    RecallConfig,
    ScopeMode,
    TimelineConfig,
)
from agentscript.memory.entries import DEFAULT_MAX_ENTRY_BYTES, REMEMBERED_KINDS, Kind
from agentscript.memory.errors import INVALID_CONFIG, MemoryServiceError
from agentscript.providers.llm.endpoints import check_embedding_uri, parse_llm_uri
from agentscript.runtime.errors import ExecutionError

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
_PositiveInt = Annotated[int, Field(gt=0)]


class _Timeline(BaseModel):
    model_config = _STRICT
    day: bool = True
    week: bool = True
    month: bool = True
    year: bool = True
    model: str | None = None
    week_template: Annotated[str, Field(max_length=4000)] | None = None
    archive: ArchiveMode = "keep"

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        # The same check a program's `import llm` gets, so a typo fails when the file is read.
        return _checked_uri(value, parse_llm_uri)


class _Digest(BaseModel):
    model_config = _STRICT
    enabled: bool = True
    max_bytes: Annotated[int, Field(ge=256, le=1_000_000)] = 3000
    max_entries: Annotated[int, Field(ge=1, le=1000)] = 20


class _Recall(BaseModel):
    model_config = _STRICT
    embeddings: str | None = None
    semantic_weight: Annotated[float, Field(gt=0, le=4)] = 1.0
    semantic_pool: Annotated[int, Field(ge=2, le=200)] = 50
    cache_bytes: Annotated[int, Field(ge=0, le=2**40)] = DEFAULT_CACHE_BYTES

    @field_validator("semantic_weight", mode="before")
    @classmethod
    def _weight(cls, value: Any) -> Any:
        # Strict mode refuses an int for a float; `semantic_weight: 1` is still a number.
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("embeddings")
    @classmethod
    def _embeddings(cls, value: str | None) -> str | None:
        return _checked_uri(value, check_embedding_uri)


def _checked_uri(value: str | None, check: Callable[[str], object]) -> str | None:
    """`value` if `check` accepts it; its ExecutionError becomes the ValueError pydantic
    reports with the field's name."""
    if value is not None:
        try:
            check(value)
        except ExecutionError as error:
            raise ValueError(str(error)) from None
    return value


class _File(BaseModel):
    model_config = _STRICT
    scope: ScopeMode = "workspace"
    layers: tuple[Kind, ...] = REMEMBERED_KINDS
    timeline: _Timeline = _Timeline()
    digest: _Digest = _Digest()
    recall: _Recall = _Recall()
    max_entries: _PositiveInt = 2000
    max_entry_bytes: Annotated[int, Field(ge=1024, le=10_000_000)] = DEFAULT_MAX_ENTRY_BYTES
    auto_sink: bool = True

    @field_validator("layers", mode="before")
    @classmethod
    def _layers(cls, value: Any) -> Any:
        # YAML gives a list; strict mode wants a tuple. Only the container is converted.
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple):
            for item in value:
                if item not in REMEMBERED_KINDS:
                    raise ValueError(
                        f"{item!r} is not a layer; layers are {', '.join(REMEMBERED_KINDS)} "
                        "(summaries are written by compaction only)"
                    )
            if len(set(value)) != len(value):
                raise ValueError("lists a layer twice")
        return value

    def settings(self, notes: tuple[str, ...] = ()) -> MemoryConfig:
        timeline = self.timeline.model_dump()
        # An empty template is the seed's "no template: the default outline".
        timeline["week_template"] = timeline["week_template"] or None
        return MemoryConfig(
            scope=self.scope,
            layers=self.layers,
            timeline=TimelineConfig(**timeline),
            digest=DigestConfig(**self.digest.model_dump()),
            recall=RecallConfig(**self.recall.model_dump()),
            max_entries=self.max_entries,
            max_entry_bytes=self.max_entry_bytes,
            auto_sink=self.auto_sink,
            notes=notes,
        )


# The seed's keys: (where it puts the setting, where ours is, the note `memory check` shows).
_SEED_ALIASES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("inject",), ("digest",)),
    (("weekly_template",), ("timeline", "week_template")),
)


def _with_seed_aliases(document: dict[str, Any], origin: str) -> tuple[dict[str, Any], list[str]]:
    """`document` with the seed's keys moved to today's, and a note per key moved."""
    moved = dict(document)
    notes = []
    for (seed_key,), target in _SEED_ALIASES:
        if seed_key not in moved:
            continue
        *parents, leaf = target
        section = moved
        for name in parents:
            inner = section.get(name)
            if inner is None:
                inner = {}
            if not isinstance(inner, dict):
                break  # the section itself is wrong: validation says so
            section[name] = inner = dict(inner)
            section = inner
        else:
            if leaf in section:
                raise MemoryServiceError(
                    INVALID_CONFIG,
                    f"{origin}: {seed_key}: sets {'.'.join(target)} a second time; keep one",
                    seed_key,
                )
            section[leaf] = moved.pop(seed_key)
            notes.append(
                f"{origin}: `{seed_key}` is the seed's name of `{'.'.join(target)}`, read as it"
            )
    return moved, notes


def parse_config_text(text: str, origin: str) -> MemoryConfig:
    """Parse and validate the text of a memory.yml; `origin` names it in messages."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise MemoryServiceError(
            INVALID_CONFIG, f"{origin}: invalid YAML{where}: {problem}"
        ) from error
    if document is None:
        return DEFAULT_CONFIG
    if not isinstance(document, dict):
        raise MemoryServiceError(
            INVALID_CONFIG,
            f"{origin}: the top level must be a mapping of settings, not a "
            f"{type(document).__name__}",
        )
    document, notes = _with_seed_aliases(document, origin)
    try:
        return _File.model_validate(document).settings(tuple(notes))
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        message = (
            "unknown setting"
            if first["type"] == "extra_forbidden"
            else first["msg"].removeprefix("Value error, ")
        )
        more = len(error.errors()) - 1
        suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise MemoryServiceError(
            INVALID_CONFIG, f"{origin}: {field}: {message}{suffix}", field
        ) from error
