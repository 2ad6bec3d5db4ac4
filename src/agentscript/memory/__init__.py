"""The long-term memory service: typed entries in scopes, lexical recall, a session digest.

`MemoryService` is the API (remember, recall, update, forget, get, history, browse, stats,
check, digest, and the compaction hooks); `SqliteStore` the default `MemoryStore`. Writing never
calls a model; reading does only when memory.yml names one (lazy compaction, semantic
re-ranking), through `agentscript.app.memory_service`. See docs/memory-service.md.
"""

from agentscript.memory.config import MemoryConfig, load_config, parse_config
from agentscript.memory.entries import DIGEST_MARKER, GLOBAL_SCOPE, Entry, Source
from agentscript.memory.errors import MemoryServiceError
from agentscript.memory.recall import RecallTuning
from agentscript.memory.scopes import ScopePlan, route, workspace_id
from agentscript.memory.service import MemoryService, default_database_path
from agentscript.memory.sqlite_store import SqliteStore
from agentscript.memory.store import EntryFilter, FieldWeights, MemoryStore, StoreConflict
from agentscript.memory.text import DEFAULT_ANALYZER, Analyzer
from agentscript.memory.timeline import Clock, FixedClock, SystemClock

__all__ = [
    "DEFAULT_ANALYZER",
    "DIGEST_MARKER",
    "GLOBAL_SCOPE",
    "Analyzer",
    "Clock",
    "Entry",
    "EntryFilter",
    "FieldWeights",
    "FixedClock",
    "MemoryConfig",
    "MemoryService",
    "MemoryServiceError",
    "MemoryStore",
    "RecallTuning",
    "ScopePlan",
    "Source",
    "SqliteStore",
    "StoreConflict",
    "SystemClock",
    "default_database_path",
    "load_config",
    "parse_config",
    "route",
    "workspace_id",
]
