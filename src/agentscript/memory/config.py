"""`.agentscript/memory.yml`: how the memory service behaves in one workspace.

A missing file, an empty one or one with only comments means the defaults; a missing field means
its default. Anything else that is wrong is an error naming the file and the field: a YAML syntax
error, a top level that is not a mapping, an unknown key at any depth (a typo must never be
silently ignored), a wrong type (`"3000"` is not a number) or a value out of range.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentscript.memory.entries import DEFAULT_MAX_ENTRY_BYTES, REMEMBERED_KINDS, Kind
from agentscript.memory.errors import INVALID_CONFIG, MemoryServiceError
from agentscript.memory.timeline import LEVELS, Level
from agentscript.providers.llm.endpoints import parse_llm_uri
from agentscript.runtime.errors import ExecutionError

CONFIG_RELATIVE_PATH = Path(".agentscript") / "memory.yml"
ScopeMode = Literal["workspace", "global-first", "global"]

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
PositiveInt = Annotated[int, Field(gt=0)]


class TimelineConfig(BaseModel):
    """Which summary levels compaction builds: day from episodic entries, week from days, …;
    `model`, the LLM URI that writes the summaries (none: compaction is off until one is set);
    `week_template`, an optional outline every week summary follows."""

    model_config = _STRICT
    day: bool = True
    week: bool = True
    month: bool = True
    year: bool = True
    model: str | None = None
    week_template: Annotated[str, Field(max_length=4000)] | None = None

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        # The same check a program's `import llm` gets, so a typo fails when the file is read.
        if value is not None:
            try:
                parse_llm_uri(value)
            except ExecutionError as error:
                raise ValueError(str(error)) from None
        return value

    @property
    def levels(self) -> tuple[Level, ...]:
        return tuple(level for level in LEVELS if getattr(self, level))


class DigestConfig(BaseModel):
    """The session-start digest: on or off, and its hard budget (UTF-8 bytes and lines)."""

    model_config = _STRICT
    enabled: bool = True
    max_bytes: Annotated[int, Field(ge=256, le=1_000_000)] = 3000
    max_entries: Annotated[int, Field(ge=1, le=1000)] = 20


class MemoryConfig(BaseModel):
    """The whole file. `layers` are the kinds `remember` accepts (summaries are compaction's);
    `max_entries` caps the active entries of one scope; `max_entry_bytes` caps one entry."""

    model_config = _STRICT
    scope: ScopeMode = "workspace"
    layers: tuple[Kind, ...] = REMEMBERED_KINDS
    timeline: TimelineConfig = TimelineConfig()
    digest: DigestConfig = DigestConfig()
    max_entries: PositiveInt = 2000
    max_entry_bytes: Annotated[int, Field(ge=1024, le=10_000_000)] = DEFAULT_MAX_ENTRY_BYTES

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


DEFAULT_CONFIG = MemoryConfig()


def config_path(workspace: Path) -> Path:
    return workspace / CONFIG_RELATIVE_PATH


def load_config(workspace: Path | None) -> MemoryConfig:
    """The configuration of a workspace: its memory.yml, or the defaults when it has none."""
    if workspace is None:
        return DEFAULT_CONFIG
    path = config_path(workspace)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return DEFAULT_CONFIG
    except (OSError, UnicodeDecodeError) as error:
        raise MemoryServiceError(INVALID_CONFIG, f"{path}: cannot be read: {error}") from error
    return parse_config(text, str(path))


def parse_config(text: str, origin: str = "memory.yml") -> MemoryConfig:
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
    try:
        return MemoryConfig.model_validate(document)
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
