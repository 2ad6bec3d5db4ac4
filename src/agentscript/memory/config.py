"""`.agentscript/memory.yml`: how the memory service behaves in one workspace.

A missing file, an empty one or one with only comments means the defaults; a missing field means
its default. Anything else that is wrong is an error naming the file and the field (see
`config_file`, which reads the text). The settings themselves are plain frozen dataclasses, so a
run that only opens the service with its defaults never imports the YAML or validation libraries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentscript.memory.entries import DEFAULT_MAX_ENTRY_BYTES, REMEMBERED_KINDS, Kind
from agentscript.memory.errors import INVALID_CONFIG, MemoryServiceError
from agentscript.memory.timeline import LEVELS, Level

CONFIG_RELATIVE_PATH = Path(".agentscript") / "memory.yml"
ScopeMode = Literal["workspace", "global-first", "global"]
ArchiveMode = Literal["keep", "delete"]


@dataclass(frozen=True)
class TimelineConfig:
    """Which summary levels compaction builds: day from episodic entries, week from days, …;
    `model`, the LLM URI that writes the summaries (none: compaction is off until one is set);
    `week_template`, an optional outline every week summary follows; `archive`, what becomes of
    the entries a summary replaces: `keep` them archived (recall with include_archived finds them,
    forgetting the summary brings them back) or `delete` them once the summary is stored."""

    day: bool = True
    week: bool = True
    month: bool = True
    year: bool = True
    model: str | None = None
    week_template: str | None = None
    archive: ArchiveMode = "keep"

    @property
    def levels(self) -> tuple[Level, ...]:
        return tuple(level for level in LEVELS if getattr(self, level))


@dataclass(frozen=True)
class DigestConfig:
    """The session-start digest: on or off, and its hard budget (UTF-8 bytes and lines)."""

    enabled: bool = True
    max_bytes: int = 3000
    max_entries: int = 20


# What the SQLite store keeps of its text index's decoded postings between recalls, in bytes
# (16 a posting): a long-running server (`memory serve`) stays within it whatever it is asked.
DEFAULT_CACHE_BYTES = 2 * 2**20


@dataclass(frozen=True)
class RecallConfig:
    """Semantic re-ranking (semantic.py): `embeddings`, the model URI (openai:// or ollama://;
    none: lexical ranking only), the `semantic_weight` of its ranking in the fusion and how
    many of the best lexical candidates it re-ranks (`semantic_pool`); `cache_bytes`, the
    bound of the SQLite store's cache of decoded postings (sqlite_postings.PostingsReader)."""

    embeddings: str | None = None
    semantic_weight: float = 1.0
    semantic_pool: int = 50
    cache_bytes: int = DEFAULT_CACHE_BYTES


@dataclass(frozen=True)
class MemoryConfig:
    """The whole file. `layers` are the kinds `remember` accepts (summaries are compaction's);
    `max_entries` caps the active entries of one scope; `max_entry_bytes` caps one entry;
    `auto_sink`, whether a run's end and a context compaction are written to memory by
    themselves; `notes`, what the file said in the seed's spelling (read as today's keys), for
    `memory check` to report."""

    scope: ScopeMode = "workspace"
    layers: tuple[Kind, ...] = REMEMBERED_KINDS
    timeline: TimelineConfig = field(default_factory=TimelineConfig)
    digest: DigestConfig = field(default_factory=DigestConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    max_entries: int = 2000
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES
    auto_sink: bool = True
    notes: tuple[str, ...] = ()


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
    from agentscript.memory.config_file import parse_config_text

    return parse_config_text(text, origin)
