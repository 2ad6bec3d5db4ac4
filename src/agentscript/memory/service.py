"""MemoryService: every memory operation a tool, a CLI or a program can ask for.

The service owns the rules (routing to scopes, supersede / merge / create, limits, what a digest
shows) and returns JSON-able dicts, so an MCP server or a CLI only parses arguments and prints
results. It never calls a model itself: compaction, which needs one, builds on
`compaction_sources`, `pending_buckets` and `write_summary` below, and runs before reads through
the `before_read` hook (compaction.py installs it); recall hands its candidates to `semantic`,
a SemanticRanker, when one is installed (agentscript.app.memory_service does it from memory.yml). Writes never
reach a model. It never speaks SQL: storage is a MemoryStore.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

from agentscript.memory.config import MemoryConfig, load_config
from agentscript.memory.entries import (
    GLOBAL_SCOPE,
    KINDS,
    MERGING_KINDS,
    REMEMBERED_KINDS,
    Entry,
    Kind,
    Source,
    check_size,
    clean_key,
    clean_line,
    clean_tags,
    clean_text,
    clean_title,
    is_extractive,
    merge_tags,
    new_id,
    require_kind,
    require_level,
    require_unicode,
    title_from_text,
)
from agentscript.memory.errors import (
    CONFLICT,
    CONTAINS_SECRET,
    DISABLED_KIND,
    INVALID_ARGUMENT,
    NOT_FOUND,
    SCOPE_FULL,
    MemoryServiceError,
)
from agentscript.memory.existing import AskedEach, Existing, KnownForBatch
from agentscript.memory.experience_text import ToolUsage
from agentscript.memory.postgres_store import PostgresMemoryStore, is_postgres_uri
from agentscript.memory.recall import RecallTuning, rank
from agentscript.memory.relevance import relevance, term_weights
from agentscript.memory.results import (
    BrowseGroup,
    BrowseResult,
    CheckFinding,
    CheckResult,
    DigestResult,
    DistilSuggestion,
    EntryResult,
    EntryVersion,
    ForgetResult,
    HistoryResult,
    RecallHit,
    RecallResult,
    RememberResult,
    ScopeStats,
    StatsResult,
    UpdateResult,
    read_report,
)
from agentscript.memory.scopes import ScopePlan, parse_scope, route, workspace_id
from agentscript.memory.semantic import SemanticRanker
from agentscript.memory.sqlite_store import SqliteStore
from agentscript.memory.store import EntryFilter, MemoryStore, StoreReader, StoreTransaction
from agentscript.memory.suggestions import distil_suggestions
from agentscript.memory.text import DEFAULT_ANALYZER, Analyzer
from agentscript.memory.timehints import time_windows
from agentscript.memory.timeline import (
    CHILD_LEVEL,
    LEVELS,
    Clock,
    Level,
    SystemClock,
    bucket_bounds,
    bucket_label,
    bucket_level,
    bucket_of,
    format_timestamp,
    local_day,
    parse_timestamp,
    require_bucket,
    resolve_moment,
)
from agentscript.providers.tools.env import environment_secrets
from agentscript.runtime.secrets import SecretSet

MAX_RECALL_LIMIT = 200
# Items of one remember_many: one transaction stays short enough not to stall other writers.
MAX_BATCH_ITEMS = 1000
DEFAULT_RECALL_LIMIT = 10
# How many explicit scope arguments a service keeps resolved (see `scopes_for`).
MAX_PARSED_SCOPES = 256
DEFAULT_BODY_CHARS = 500
MAX_PAGE_SIZE = 200
DIGEST_HEADER = '<memory-digest scope="{scope}">'
DIGEST_PREAMBLE = (
    "Long-term memory, recalled for this session. Details: recall or memory_browse. "
    "This digest is a view: never store it as a memory."
)
DIGEST_FOOTER = "</memory-digest>"
# Heads the digest's last section: run memories and experiences, which runs wrote themselves.
DIGEST_LEARNED_HEADING = "Learned from runs (not remembered by you):"
REASON_SUPERSEDED = "superseded"
REASON_FORGOTTEN = "forgotten"
# Entries with this tag open the digest: what an agent is waiting for the user to do
# (`learn.profile.sync_needs_you` keeps one such fact per agent).
ATTENTION_TAG = "needs-you"
# A global fact with this tag is the user's explicit pin: the digest shows it before the others.
PIN_TAG = "pinned"
TimeArgument = str | datetime | date | None
# Called with the scopes a read is about to read, before it reads them; returns a report to
# attach to the read's result (under `compaction`, with an optional `note`), or None. Lazy
# compaction (compaction.py) installs one; it must never raise, so a read never fails for it.
ReadHook = Callable[[tuple[str, ...]], dict[str, Any] | None]


def default_database_path() -> Path:
    """`$AGENTSCRIPT_MEMORY_DB`, else `~/.agentscript/memory.db`."""
    configured = os.environ.get("AGENTSCRIPT_MEMORY_DB")
    return Path(configured) if configured else Path.home() / ".agentscript" / "memory.db"


class MemoryService:
    """The long-term memory of one workspace (or of none: then only `global` is used).

    `workspace` is the directory of the current project: its id is the workspace scope and its
    `.agentscript/memory.yml` the configuration (unless `config` is given). Thread-safe as far
    as the store is; open one per process.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        workspace: str | Path | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        tuning: RecallTuning | None = None,
        semantic: SemanticRanker | None = None,
    ) -> None:
        self.store = store
        self.workspace = workspace_id(workspace) if workspace is not None else None
        self.config = (
            config
            if config is not None
            else load_config(Path(workspace) if workspace is not None else None)
        )
        self.clock: Clock = clock or SystemClock()
        self.tuning = tuning or RecallTuning()
        # Re-ranking by an embedding model (semantic.py); None: lexical ranking only.
        self.semantic = semantic
        self.before_read: ReadHook | None = None
        # How much the workspace's runs use each tool (the task graph's tool links, wired in by
        # the application), so `experiences` can rank lessons about tools in use higher.
        self.tool_usage: ToolUsage | None = None
        # What else to release with the store (e.g. the model client lazy compaction uses).
        self.on_close: list[Callable[[], None]] = []
        # Secrets no memory may contain: those of this process's environment (by the
        # secret-name rule), and a run's redaction set when a program uses the service.
        self.secret_sets: list[SecretSet] = [SecretSet(environment_secrets(os.environ))]
        # Explicit scope arguments and the scope each names, resolved once per service (as the
        # workspace is): resolving a path asks the file system about every directory in it.
        self._parsed_scopes: dict[str, str] = {}

    @classmethod
    def open(
        cls,
        workspace: str | Path | None = None,
        *,
        database: str | Path | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        tuning: RecallTuning | None = None,
    ) -> MemoryService:
        """A service over the store `database` names: a PostgreSQL URI
        (`postgresql://user@host/db#namespace`, see postgres_store.py) or a SQLite file
        (default: default_database_path())."""
        if config is None:
            config = load_config(Path(workspace) if workspace is not None else None)
        store: MemoryStore
        if is_postgres_uri(database):
            store = PostgresMemoryStore(database, analyzer)
        else:
            store = SqliteStore(
                database or default_database_path(),
                analyzer,
                cache_bytes=config.recall.cache_bytes,
            )
        return cls(store, workspace=workspace, config=config, clock=clock, tuning=tuning)

    def close(self) -> None:
        """Release what was added (a compaction worker first, which may still write), then
        close the store."""
        try:
            for release in self.on_close:
                release()
            self.on_close.clear()
        finally:
            self.store.close()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def scopes_for(self, scope: str | None = None) -> ScopePlan:
        """The scopes a call with this `scope` argument reads and writes."""
        explicit = None
        if scope is not None:
            explicit = self._parsed_scopes.get(scope) if isinstance(scope, str) else None
            if explicit is None:
                explicit = parse_scope(scope)
                if len(self._parsed_scopes) >= MAX_PARSED_SCOPES:
                    self._parsed_scopes.clear()
                self._parsed_scopes[scope] = explicit
        return route(self.config.scope, self.workspace, explicit)

    # ------------------------------------------------------------------------- writing

    def remember(
        self,
        text: str,
        *,
        kind: str = "knowledge",
        key: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        scope: str | None = None,
        event_time: TimeArgument = None,
        source: Source | dict[str, Any] | None = None,
        context: str | None = None,
    ) -> RememberResult:
        """Store a memory without calling any model; returns `{id, action, scope, kind, title}`.

        `action` is `created`; `updated` when an active entry of the scope had the same `key`
        (it is archived with `superseded_by`, kept for `history`); or `merged` when the new
        text was folded into an existing entry: a knowledge or episodic entry of the same kind
        whose normalised title matches (tags united, body appended, reinforce_count + 1), or a
        keyed entry whose value is unchanged (reinforced, no new version). `text` is the body;
        the title is its first line unless given; `context` is searchable text that is not the
        memory itself (the surrounding conversation), weighted below the body. Without one,
        an episodic entry with a `source.session` is indexed with the two entries written
        before it in that session as its context (store.py, LINKED_CONTEXT_TURNS).
        """
        candidate = self._candidate(
            text,
            kind=kind,
            key=key,
            title=title,
            tags=tags,
            scope=scope,
            event_time=event_time,
            source=source,
            context=context,
        )
        with self.store.transaction() as tx:
            return self._store_candidate(tx, candidate, AskedEach(tx))

    def remember_many(self, items: Iterable[Mapping[str, Any]]) -> list[RememberResult]:
        """Remember several memories in one transaction: one `remember` result per item, in
        order.

        Each item is a mapping of `remember`'s arguments (`text` and the keywords), at most
        MAX_BATCH_ITEMS of them. Every item is checked before anything is written, and the
        batch is written whole or not at all: an invalid item, or a scope that fills up, fails
        the call with the item's position in the error's field (`items[3].kind`) and stores
        none of them. Later items see earlier ones, so a batch merges and supersedes exactly
        as the same remembers one by one would.
        """
        if isinstance(items, Mapping | str | bytes) or not isinstance(items, Iterable):
            raise MemoryServiceError(INVALID_ARGUMENT, "items must be a list of objects", "items")
        candidates = []
        plans: dict[str | None, ScopePlan] = {}
        for position, item in enumerate(items):
            if position >= MAX_BATCH_ITEMS:
                raise MemoryServiceError(
                    INVALID_ARGUMENT,
                    f"a batch holds at most {MAX_BATCH_ITEMS} items; split it",
                    "items",
                )
            with _item_errors(position):
                arguments = _remember_arguments(item)
                scope = arguments.pop("scope", None)
                if isinstance(scope, str | None):
                    plan = plans.get(scope) or plans.setdefault(scope, self.scopes_for(scope))
                else:
                    plan = self.scopes_for(scope)  # refused, naming the field
                candidates.append(self._candidate(**arguments, plan=plan))
        with self.store.transaction() as tx:
            existing = KnownForBatch(tx, candidates)
            results = []
            for position, candidate in enumerate(candidates):
                with _item_errors(position):
                    results.append(self._store_candidate(tx, candidate, existing))
        return results

    def _candidate(
        self,
        text: str,
        *,
        kind: str = "knowledge",
        key: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        scope: str | None = None,
        event_time: TimeArgument = None,
        source: Source | dict[str, Any] | None = None,
        context: str | None = None,
        plan: ScopePlan | None = None,
    ) -> Entry:
        """The entry a remember would store, checked (kind, size, secrets) before any store
        is touched. `plan`: the scopes of `scope`, already resolved (a batch resolves each
        distinct scope once)."""
        entry_kind = require_kind(kind, REMEMBERED_KINDS)
        if entry_kind not in self.config.layers:
            raise MemoryServiceError(
                DISABLED_KIND,
                f"kind {entry_kind!r} is not enabled: memory.yml layers are "
                f"{', '.join(self.config.layers) or '(none)'}",
                "kind",
            )
        body = clean_text(text, "text", required=True)
        if plan is None:
            plan = self.scopes_for(scope)
        now = format_timestamp(self.clock.now())
        event = self._event_time(event_time)
        candidate = Entry(
            id=new_id(),
            kind=entry_kind,
            scope=plan.write,
            title=clean_title(title) if title is not None else title_from_text(body),
            body=body,
            key=clean_key(key),
            tags=clean_tags(tags),
            context=clean_text(context, "context"),
            created_at=now,
            updated_at=now,
            accessed_at=now,
            event_time=format_timestamp(event),
            bucket=bucket_of("day", local_day(event, self.clock)),
            source=Source.from_value(source),
        )
        check_size(candidate, self.config.max_entry_bytes)
        self.refuse_secrets_in(candidate)
        return candidate

    def _store_candidate(
        self, tx: StoreTransaction, candidate: Entry, existing: Existing
    ) -> RememberResult:
        """Supersede, merge or create (see `remember`) inside the caller's transaction,
        deciding on what `existing` finds."""
        now = candidate.created_at
        if candidate.key is not None:
            entry, action = self._remember_keyed(tx, candidate, now, existing)
        else:
            entry, action = self._remember_unkeyed(tx, candidate, now, existing)
        return RememberResult(entry.id, action, entry.scope, entry.kind, entry.title)

    def _remember_keyed(
        self, tx: StoreTransaction, candidate: Entry, now: str, existing: Existing
    ) -> tuple[Entry, str]:
        current = existing.keyed(candidate.scope, candidate.key or "")
        if current is None:
            self._require_room(tx, candidate.scope)
            return _written(tx.insert, candidate, existing), "created"
        if _same_value(current, candidate):
            reinforced = current.evolve(
                reinforce_count=current.reinforce_count + 1,
                updated_at=now,
                tags=merge_tags(current.tags, candidate.tags),
            )
            return _written(tx.replace, reinforced, existing), "merged"
        # Archive first: the store allows one active entry per key.
        _written(
            tx.replace,
            current.evolve(
                archived=True, archive_reason=REASON_SUPERSEDED, superseded_by=candidate.id
            ),
            existing,
        )
        return _written(tx.insert, candidate, existing), "updated"

    def _remember_unkeyed(
        self, tx: StoreTransaction, candidate: Entry, now: str, existing: Existing
    ) -> tuple[Entry, str]:
        twin = None
        if candidate.kind in MERGING_KINDS:
            twin = existing.twin(candidate.scope, candidate.kind, candidate.title_norm)
        if twin is None:
            self._require_room(tx, candidate.scope)
            return _written(tx.insert, candidate, existing), "created"
        body = twin.body if candidate.body in twin.body else f"{twin.body}\n\n{candidate.body}"
        context = twin.context
        if candidate.context and candidate.context not in context:
            context = f"{context}\n\n{candidate.context}".strip()
        merged = twin.evolve(
            title=candidate.title,
            body=body,
            context=context,
            tags=merge_tags(twin.tags, candidate.tags),
            reinforce_count=twin.reinforce_count + 1,
            updated_at=now,
        )
        check_size(merged, self.config.max_entry_bytes)
        return _written(tx.replace, merged, existing), "merged"

    def refuse_secrets_in(self, entry: Entry) -> None:
        """Refuse an entry (an imported one) that holds a known secret, as `remember` would."""
        self._refuse_secrets(
            text=entry.body,
            title=entry.title,
            key=entry.key,
            tags=entry.tags,
            context=entry.context,
        )

    def _refuse_secrets(self, **fields: Any) -> None:
        """Refuse a write whose fields contain a known secret: credentials are never
        remembered, and a memory outlives the run that could have redacted it. The fields
        are searched together first (every write is, and nearly none holds a secret), apart
        only to name the one that does: joined by NUL, which no field holds."""
        texts = _texts_of(fields.values())
        if texts is not None and not any(
            known.found_in("\0".join(texts)) for known in self.secret_sets
        ):
            return
        for field, value in fields.items():
            if value is not None and any(known.found_in(value) for known in self.secret_sets):
                raise MemoryServiceError(
                    CONTAINS_SECRET,
                    f"{field} contains a secret (a provider key, an allowed environment secret "
                    "or a password from a URI): credentials are never remembered; leave it out "
                    "and note where it is kept instead",
                    field,
                )

    def _require_room(self, tx: StoreTransaction, scope: str) -> None:
        active = tx.active_entries(scope)
        if active >= self.config.max_entries:
            raise MemoryServiceError(
                SCOPE_FULL,
                f"scope {scope} holds {active:,} active entries; the limit is "
                f"{self.config.max_entries:,} (max_entries in memory.yml): forget or update "
                "entries, or let compaction summarise them",
                "max_entries",
            )

    def update(
        self,
        entry_id: str,
        *,
        text: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        context: str | None = None,
        event_time: TimeArgument = None,
        scope: str | None = None,
    ) -> UpdateResult:
        """Correct an active entry in place; returns `{id, action: "updated", previous_version,
        changed}`.

        The id stays the entry's (the seed's contract: a caller may update the id it recalled
        again and again). Nothing is lost either: the text before the correction is kept as an
        archived version under a new id, `previous_version`, with `superseded_by` pointing to
        the entry, so `history` and `get` still show it. Given `text` without `title`, the
        title follows the text's first line; `tags` replace the old tags. An update that
        changes nothing returns `changed: false` and keeps no version.
        """
        if (
            text is None
            and title is None
            and tags is None
            and context is None
            and (event_time is None)
        ):
            raise MemoryServiceError(
                INVALID_ARGUMENT, "update needs text, title, tags, context or event_time"
            )
        plan = self.scopes_for(scope)
        changes: dict[str, Any] = {}
        if text is not None:
            changes["body"] = clean_text(text, "text", required=True)
            changes["title"] = title_from_text(changes["body"])
        if title is not None:
            changes["title"] = clean_title(title)
        if tags is not None:
            changes["tags"] = clean_tags(tags)
        if context is not None:
            changes["context"] = clean_text(context, "context")
        if event_time is not None:
            event = self._event_time(event_time)
            changes["event_time"] = format_timestamp(event)
            changes["bucket"] = bucket_of("day", local_day(event, self.clock))
        self._refuse_secrets(
            text=changes.get("body"),
            title=changes.get("title"),
            tags=changes.get("tags"),
            context=changes.get("context"),
        )
        now = format_timestamp(self.clock.now())
        with self.store.transaction() as tx:
            current = self._get(tx, plan, entry_id)
            if current.archived:
                raise MemoryServiceError(
                    CONFLICT,
                    f"entry {entry_id} is archived"
                    + (f" (superseded by {current.superseded_by})" if current.superseded_by else "")
                    + ": update the active entry, or remember it again",
                    "id",
                )
            if current.kind == "summary":
                raise MemoryServiceError(
                    INVALID_ARGUMENT,
                    "summaries belong to compaction; forget it and let compaction rebuild it",
                    "id",
                )
            revised = current.evolve(**changes)
            if revised == current:
                return UpdateResult(current.id, previous_version=None, changed=False)
            check_size(revised, self.config.max_entry_bytes)
            kept = current.evolve(
                id=new_id(),
                archived=True,
                archive_reason=REASON_SUPERSEDED,
                superseded_by=current.id,
            )
            # The versions before this one now follow the kept copy, so history stays a chain.
            earlier = EntryFilter(
                scopes=(current.scope,),
                archived=True,
                key=current.key,
                keyed=current.key is not None,
            )
            for older in tx.select(earlier):
                if older.superseded_by == current.id:
                    tx.replace(older.evolve(superseded_by=kept.id))
            tx.replace(revised.evolve(updated_at=now, accessed_at=now))
            tx.insert(kept)
        return UpdateResult(current.id, previous_version=kept.id, changed=True)

    def forget(
        self,
        entry_id: str,
        *,
        reason: str | None = None,
        purge: bool = False,
        scope: str | None = None,
    ) -> ForgetResult:
        """Archive an entry (recall skips it; `include_archived`, `get` and `history` still
        show it); returns `{id, action: "archived" | "already_archived" | "purged", purged}`.

        With `purge`, the entry is deleted from the table and the text index instead, together
        with every other version of its key and every text it had before an update (a purged
        value must not survive as history), and so is every summary that drew on them, up the
        levels (`summaries_removed`): the summaries' other sources become active again
        (`restored`), so compaction writes the summaries anew without the purged text.
        Forgetting a summary likewise restores its sources (the summary is archived), so the
        bucket is compacted again rather than hidden.
        `archived` is True when the entry is no longer active.
        """
        why = clean_line(reason, "reason", 200) or REASON_FORGOTTEN
        plan = self.scopes_for(scope)
        if purge:
            return self._purge(plan, entry_id)
        with self.store.transaction() as tx:
            current = self._get(tx, plan, entry_id)
            if current.archived:
                return ForgetResult(current.id, "already_archived")
            tx.replace(current.evolve(archived=True, archive_reason=why))
            restored = []
            if current.kind == "summary":
                restored = _restore_sources(tx, current.scope, [current], set())
        return ForgetResult(
            current.id, "archived", restored=restored if current.kind == "summary" else None
        )

    def _purge(self, plan: ScopePlan, entry_id: str) -> ForgetResult:
        """`forget(purge=True)`: see there. The store scrubs its files once it is done."""
        with self.store.transaction() as tx:
            current = self._get(tx, plan, entry_id)
            doomed = [current.id]
            if current.key is not None:
                versions = tx.select(
                    EntryFilter(scopes=(current.scope,), key=current.key, archived=None)
                )
                doomed.extend(entry.id for entry in versions if entry.id != current.id)
            doomed.extend(_earlier_versions(tx, current.scope, set(doomed)))
            tainted = _summaries_drawing_on(tx, current.scope, set(doomed))
            tx.delete(current.scope, tuple(doomed + [entry.id for entry in tainted]))
            restored = _restore_sources(tx, current.scope, tainted, set(doomed))
        self.store.scrub()
        return ForgetResult(
            current.id,
            "purged",
            sorted(doomed),
            summaries_removed=sorted(entry.id for entry in tainted),
            restored=restored,
        )

    # ------------------------------------------------------------------------- reading

    def get(self, entry_id: str, *, scope: str | None = None) -> EntryResult:
        """One entry, every field, archived or not, if it is in a scope this call may read."""
        return EntryResult(self._get(self.store, self.scopes_for(scope), entry_id))

    def recall(
        self,
        query: str = "",
        *,
        kind: str | Iterable[str] | None = None,
        tags: Sequence[str] | None = None,
        since: TimeArgument = None,
        until: TimeArgument = None,
        scope: str | None = None,
        level: str | Iterable[str] | None = None,
        include_archived: bool = False,
        limit: int = DEFAULT_RECALL_LIMIT,
        body_chars: int = DEFAULT_BODY_CHARS,
        min_relevance: float = 0.0,
    ) -> RecallResult:
        """Ranked search; returns `{results: [...], count, total}`, each result with its
        `score`, `level` and the `scope` it came from, bodies cut at `body_chars`; `total` is
        how many entries matched before the limit.

        With words, entries must contain at least one of the query's terms and are ranked by
        BM25 (see recall.py), then re-ranked by the embedding model when one is configured
        (semantic.py; `note` says when it was skipped, and `score` is then the fused rank
        score); without words, the most recently updated entries come first (score 0).
        Filters narrow before ranking: `kind` and `level` (one or several), `tags` (all of
        them), `since`/`until` on event_time (dates and bucket keys are local, `until` is
        inclusive), `scope`. Equal scores are ordered by accessed_at, the most recently
        recalled first, then by id. In mode `global-first`, every global hit comes before the
        first workspace hit. Recalled entries get their accessed_at set.

        Each hit carries `relevance`, the share of the query's weight its own fields hold (0 to
        1, the same meaning in every call: relevance.py); hits below `min_relevance` are left
        out (0: every match, as ranked).
        """
        plan = self.scopes_for(scope)
        groups = [
            self._filter(
                scopes,
                kind=kind,
                tags=tags,
                since=since,
                until=until,
                level=level,
                include_archived=include_archived,
            )
            for scopes in plan.ranked_groups()
        ]
        count = _bounded_int(limit, "limit", 1, MAX_RECALL_LIMIT)
        cut = _bounded_int(body_chars, "body_chars", 0, 1_000_000)
        floor = _share(min_relevance, "min_relevance")
        if not isinstance(query, str):
            raise MemoryServiceError(INVALID_ARGUMENT, "query must be a string", "query")
        require_unicode(query, "query")
        compaction = self._before_read(plan.read)
        terms = self.store.analyzer.unique_terms(query)
        now = self.clock.now()
        note = None
        hits: list[tuple[Entry, float]] = []
        total = 0
        for where in groups:
            if terms:
                ranking = rank(
                    self.store,
                    terms,
                    where,
                    count,
                    self.tuning,
                    now,
                    time_windows(query),
                    query=query,
                    semantic=self.semantic,
                )
                hits.extend((item.entry, item.score) for item in ranking.results)
                total += ranking.total
                note = note or ranking.note
            elif query.strip():
                note = "the query has no searchable words (only stopwords or symbols)"
            else:
                hits.extend((entry, 0.0) for entry in self.store.select(where, limit=count))
                total += self.store.count(where)
        weighed = self._weighed(hits, terms, floor)[:count]
        if weighed:
            chosen = tuple(entry.id for entry, _, _ in weighed)
            self.store.touch(plan.read, chosen, format_timestamp(now))
        note, compaction = read_report(compaction, note)
        hits_found = [RecallHit.of(entry, score, share, cut) for entry, score, share in weighed]
        return RecallResult(hits_found, total, note, compaction)

    def _weighed(
        self, hits: list[tuple[Entry, float]], terms: list[str], floor: float
    ) -> list[tuple[Entry, float, float | None]]:
        """The hits with their relevance to `terms` (None without terms), those below
        `floor` left out."""
        if not terms:
            return [(entry, score, None) for entry, score in hits]
        weights = term_weights(terms, self.store.term_documents(terms))
        weighed = [
            (entry, score, relevance(entry, weights, self.store.analyzer)) for entry, score in hits
        ]
        return [hit for hit in weighed if (hit[2] or 0.0) >= floor]

    def history(self, key: str, *, scope: str | None = None) -> HistoryResult:
        """Every version ever stored under `key` in the readable scopes, newest first, each
        with `status`: active, superseded or archived."""
        normal = clean_key(key)
        plan = self.scopes_for(scope)
        versions = self.store.select(
            EntryFilter(scopes=plan.read, key=normal, archived=None), order="created"
        )
        return HistoryResult(
            normal,
            [EntryVersion(entry, _status(entry)) for entry in _by_succession(versions)],
        )

    def browse(
        self,
        *,
        by: str = "day",
        kind: str | Iterable[str] | None = None,
        tags: Sequence[str] | None = None,
        since: TimeArgument = None,
        until: TimeArgument = None,
        level: str | Iterable[str] | None = None,
        scope: str | None = None,
        include_archived: bool = False,
        page: int = 1,
        page_size: int = 20,
        per_group: int = 50,
    ) -> BrowseResult:
        """Entries grouped by local time bucket (`by`: day, week, month or year), newest group
        first, entries in a group newest first; paging counts groups. A summary sits in the
        bucket holding its own bucket's first day (a week summary is in its week, and in the
        month its Monday falls in)."""
        unit = require_level(by, "by")
        plan = self.scopes_for(scope)
        where = self._filter(
            plan.read,
            kind=kind,
            tags=tags,
            since=since,
            until=until,
            level=level,
            include_archived=include_archived,
        )
        number = _bounded_int(page, "page", 1, 1_000_000)
        size = _bounded_int(page_size, "page_size", 1, MAX_PAGE_SIZE)
        shown = _bounded_int(per_group, "per_group", 1, 1000)
        compaction = self._before_read(plan.read)
        groups = self.store.tally(where, (unit,))
        selected = groups[(number - 1) * size : number * size]
        listed = []
        for (bucket,), total in selected:
            key = cast(str, bucket)
            members = self.store.select(
                replace(where, bucket=(unit, key)), order="event", limit=shown
            )
            listed.append(
                BrowseGroup(
                    key, unit, bucket_label(key), total, [_summary_line(e) for e in members]
                )
            )
        note, report = read_report(compaction)
        return BrowseResult(
            by=unit,
            page=number,
            page_size=size,
            total_groups=len(groups),
            total_entries=sum(total for _, total in groups),
            groups=listed,
            note=note,
            compaction=report,
        )

    def stats(self, *, scope: str | None = None) -> StatsResult:
        """Counts per readable scope: active and archived entries, by kind, by summary level,
        superseded versions, active entries per local day, ISO week and month (newest first;
        a summary counts in the buckets of its first day), and the room under max_entries."""
        plan = self.scopes_for(scope)
        compaction = self._before_read(plan.read)
        scopes = []
        for name in plan.read:
            everything = EntryFilter(scopes=(name,), archived=None)
            rows = self.store.tally(everything, ("kind", "level", "archived"))
            by_kind = {kind: 0 for kind in KINDS}
            by_level = {level: 0 for level in LEVELS}
            active = archived = 0
            for (kind, level, is_archived), total in rows:
                if is_archived == "1":
                    archived += total
                    continue
                active += total
                by_kind[cast(Kind, kind)] += total
                if level is not None:
                    by_level[cast(Level, level)] += total
            superseded = sum(
                1
                for entry in self.store.select(
                    EntryFilter(scopes=(name,), archived=True, keyed=True)
                )
                if entry.superseded_by
            )
            buckets = {
                unit: {
                    cast(str, bucket): total
                    for (bucket,), total in self.store.tally(EntryFilter(scopes=(name,)), (unit,))
                }
                for unit in ("day", "week", "month")
            }
            scopes.append(
                ScopeStats(
                    scope=name,
                    active=active,
                    archived=archived,
                    superseded=superseded,
                    by_kind={str(kind): total for kind, total in by_kind.items()},
                    by_level={str(level): total for level, total in by_level.items()},
                    by_day=buckets["day"],
                    by_week=buckets["week"],
                    by_month=buckets["month"],
                    max_entries=self.config.max_entries,
                )
            )
        note, report = read_report(compaction)
        return StatsResult(self.workspace, scopes, note=note, compaction=report)

    def check(self, *, scope: str | None = None) -> CheckResult:
        """Real problems of the readable scopes, as `{ok, findings: [{code, severity, scope,
        message, ids}]}`: duplicate titles, scopes over (or within 10 % of) max_entries, stale
        summaries (a source changed or came back after the summary was written), orphan
        references (archive_ref or superseded_by naming an entry that is gone), and the
        store's own integrity problems. `suggestions` (`[{signal, summary, ids, scope}]`,
        suggestions.py) say what to distil into lasting knowledge; they are not problems, so
        they leave `ok` as it is. `notes` says what memory.yml spells the seed's way (accepted,
        but today's name is the one documented)."""
        plan = self.scopes_for(scope)
        findings = [
            CheckFinding("store", "error", None, problem, []) for problem in self.store.verify()
        ]
        suggestions: list[DistilSuggestion] = []
        for name in plan.read:
            findings.extend(self._check_scope(name))
            for suggestion in distil_suggestions(self.store.select(EntryFilter(scopes=(name,)))):
                suggestions.append(DistilSuggestion(**suggestion, scope=name))
        return CheckResult(list(plan.read), findings, suggestions, list(self.config.notes))

    def _check_scope(self, scope: str) -> list[CheckFinding]:
        findings: list[CheckFinding] = []

        def finding(code: str, severity: str, message: str, ids: Iterable[str]) -> None:
            findings.append(CheckFinding(code, severity, scope, message, sorted(ids)))

        active = EntryFilter(scopes=(scope,), kinds=("fact", "knowledge", "episodic"))
        for (kind, title_norm), total in self.store.tally(
            active, ("kind", "title_norm"), min_count=2
        ):
            twins = self.store.select(
                EntryFilter(
                    scopes=(scope,), kinds=(cast(Kind, kind),), title_norm=cast(str, title_norm)
                )
            )
            finding(
                "duplicate_title",
                "warning",
                f"{total} active {kind} entries are titled {twins[0].title!r}: update one "
                "and forget the others, or give them keys",
                (entry.id for entry in twins),
            )
        count = self.store.count(EntryFilter(scopes=(scope,)))
        limit = self.config.max_entries
        if count > limit:
            finding(
                "over_limit",
                "error",
                f"{count:,} active entries, over max_entries {limit:,}: new entries are refused",
                (),
            )
        elif count >= limit * 0.9:
            finding(
                "near_limit", "warning", f"{count:,} active entries of max_entries {limit:,}", ()
            )
        summaries = self.store.select(EntryFilter(scopes=(scope,), kinds=("summary",)))
        for summary in summaries:
            sources = {
                entry.id: entry
                for entry in self.store.select(
                    EntryFilter(scopes=(scope,), ids=summary.archive_ref, archived=None)
                )
            }
            missing = [
                identifier for identifier in summary.archive_ref if identifier not in sources
            ]
            if missing and self.config.timeline.archive == "keep":
                finding(
                    "orphan_reference",
                    "warning",
                    f"summary {summary.id} ({summary.level} {summary.bucket}) lists "
                    f"{len(missing)} source(s) that no longer exist",
                    [summary.id, *missing],
                )
            changed = [
                entry.id
                for entry in sources.values()
                if entry.updated_at > summary.created_at or entry.active
            ]
            if changed:
                finding(
                    "stale_summary",
                    "warning",
                    f"summary {summary.id} ({summary.level} {summary.bucket}) is older than "
                    f"{len(changed)} of its sources (changed or restored since): rebuild it",
                    [summary.id, *changed],
                )
        replaced = [
            entry
            for entry in self.store.select(EntryFilter(scopes=(scope,), archived=True))
            if entry.superseded_by
        ]
        successors = {
            entry.id
            for entry in self.store.select(
                EntryFilter(
                    scopes=(scope,),
                    ids=tuple(entry.superseded_by or "" for entry in replaced),
                    archived=None,
                )
            )
        }
        for entry in replaced:
            if entry.superseded_by not in successors:
                finding(
                    "orphan_reference",
                    "warning",
                    f"entry {entry.id} is superseded by {entry.superseded_by}, which no "
                    "longer exists",
                    [entry.id],
                )
        return findings

    def digest(
        self,
        *,
        max_bytes: int | None = None,
        max_entries: int | None = None,
        scope: str | None = None,
    ) -> DigestResult:
        """The session-start digest: `{text, bytes, entries, omitted}`.

        The resident layer first: entries tagged ATTENTION_TAG (what an agent needs the user
        for), then every global fact in the order of `_pin_rank` (pinned, confirmed, recently
        used), within half of each budget, so many facts never crowd out the workspace; global
        facts left out are counted on the last line, which says how to list them; then the outline:
        summaries (newest bucket first), then other recent entries (newest first). One line
        each (titles and tags, never bodies), cut whole lines at `max_entries` lines and
        `max_bytes` UTF-8 bytes including the wrapper (memory.yml `digest:`, the seed's
        `inject:`), with a last line saying how many were left out. The same memory gives the same text,
        so hosts can cache it; the wrapper carries the marker `remember` refuses. Empty text
        when nothing is stored, or when memory.yml disables the digest and the call gives no
        budget of its own (an explicit budget is an explicit request).
        """
        budget_bytes = _bounded_int(
            max_bytes if max_bytes is not None else self.config.digest.max_bytes,
            "max_bytes",
            256,
            10_000_000,
        )
        budget_entries = _bounded_int(
            max_entries if max_entries is not None else self.config.digest.max_entries,
            "max_entries",
            1,
            10_000,
        )
        if not self.config.digest.enabled and max_bytes is None and max_entries is None:
            return DigestResult("", 0, 0, 0)
        plan = self.scopes_for(scope)
        compaction = self._before_read(plan.read)
        attention, facts, outline = self._digest_lines(plan, budget_entries + 1)
        header = [DIGEST_HEADER.format(scope=plan.write), DIGEST_PREAMBLE]
        # The resident layer (attention, then global facts) within its share, so many facts
        # never push the workspace's summaries and recent work out; then the outline.
        wrapper = len("\n".join([*header, DIGEST_FOOTER]).encode("utf-8"))
        share = wrapper + max(budget_bytes - wrapper, 0) // 2
        resident = [*attention, *facts.lines]
        chosen = _fitting(
            header,
            [],
            resident,
            lambda taken: (
                len(resident) - taken + len(outline),
                facts.left_out(taken - len(attention)),
            ),
            budget_entries // 2 or 1,
            share,
        )
        skipped = len(resident) - len(chosen)
        facts_left = facts.left_out(len(chosen) - len(attention))
        chosen = _fitting(
            header,
            chosen,
            outline,
            lambda taken: (len(outline) - taken + skipped, facts_left),
            budget_entries,
            budget_bytes,
        )
        lines = [*resident, *outline]
        if chosen and chosen[-1] == DIGEST_LEARNED_HEADING:
            chosen.pop()  # a heading without its section
        note, compaction = read_report(compaction)
        if not chosen:
            return DigestResult("", 0, 0, len(lines), note, compaction)
        shown_entries = sum(line != DIGEST_LEARNED_HEADING for line in chosen)
        omitted = self._digest_total(plan) - shown_entries
        body = [*header, *chosen]
        if omitted > 0:
            body.append(_omitted_line(omitted, facts_left))
        text = "\n".join([*body, DIGEST_FOOTER])
        size = len(text.encode("utf-8"))
        return DigestResult(text, size, shown_entries, max(omitted, 0), note, compaction)

    def _digest_lines(
        self, plan: ScopePlan, wanted: int
    ) -> tuple[list[str], _DigestFacts, list[str]]:
        """The resident layer (attention, then global facts) and the outline (summaries, then
        recent entries not shown already), each at most `wanted` lines."""
        attention = self.store.select(
            EntryFilter(scopes=plan.read, tags=(ATTENTION_TAG,)), limit=wanted
        )
        pinned = {entry.id for entry in attention}
        facts = []
        if GLOBAL_SCOPE in plan.read:
            # Every global fact is read (a scope holds at most max_entries) and ranked, so the
            # ones that matter most are the ones a budget keeps.
            facts = self.store.select(EntryFilter(scopes=(GLOBAL_SCOPE,), kinds=("fact",)))
            facts = [entry for entry in facts if entry.id not in pinned]
            facts.sort(key=_pin_rank)
        summaries = self.store.select(
            EntryFilter(scopes=plan.read, kinds=("summary",)), order="event", limit=wanted
        )
        # Global facts belong to the resident layer only, shown there or not at all.
        others = tuple(kind for kind in REMEMBERED_KINDS if kind != "fact")
        local = tuple(name for name in plan.read if name != GLOBAL_SCOPE)
        candidates = self.store.select(
            EntryFilter(scopes=plan.read, kinds=others), limit=wanted + len(pinned)
        )
        if local:
            candidates += self.store.select(
                EntryFilter(scopes=local, kinds=("fact",)), limit=wanted + len(pinned)
            )
        candidates.sort(key=lambda entry: (entry.updated_at, entry.id), reverse=True)
        recent = [entry for entry in candidates if entry.id not in pinned]
        fact_lines = [
            f"- {entry.key}: {entry.title}" if entry.key else f"- {entry.title}"
            for entry in facts[:wanted]
        ]
        outline = [f"- [{entry.level} summary {entry.bucket}] {entry.title}" for entry in summaries]
        outline += [self._digest_line(entry) for entry in recent if not entry.learned]
        outline = outline[:wanted]
        # What runs learned on their own comes last, in its own section.
        learned = [self._digest_line(entry) for entry in recent if entry.learned]
        if learned and len(outline) < wanted:
            outline += [DIGEST_LEARNED_HEADING, *learned[: wanted - len(outline)]]
        attention_lines = [f"- {entry.title}" for entry in attention]
        return attention_lines, _DigestFacts(fact_lines, len(facts)), outline

    def _digest_line(self, entry: Entry) -> str:
        day = local_day(parse_timestamp(entry.event_time), self.clock).isoformat()
        where = " (global)" if entry.scope == GLOBAL_SCOPE and self.workspace else ""
        tags = "".join(f" #{tag.replace(' ', '-')}" for tag in entry.tags)
        label = f"{entry.kind} {entry.key}" if entry.key else entry.kind
        return f"- [{label}, {day}]{where} {entry.title}{tags}"

    def _digest_total(self, plan: ScopePlan) -> int:
        return self.store.count(EntryFilter(scopes=plan.read, kinds=KINDS))

    # ---------------------------------------------------------------------- compaction

    def compaction_sources(self, scope: str, level: str, bucket: str) -> list[Entry]:
        """The active entries a `level` summary of `bucket` in `scope` would summarise, oldest
        first: episodic entries of the day for a day summary, day summaries of the week for a
        week summary, week summaries for a month, month summaries for a year."""
        where = self._sources_filter(scope, level, bucket)
        return self.store.select(where, order="event", descending=False)

    def pending_buckets(self, scope: str, level: str) -> list[dict[str, Any]]:
        """The `level` buckets of `scope` that have ended (by this service's clock) and hold
        active sources, oldest first, as `{bucket, sources, summary_id}`; summary_id is the
        active summary already written for the bucket (its sources arrived later), if any."""
        unit = require_level(level)
        name = parse_scope(scope)
        child = CHILD_LEVEL[unit]
        sources = EntryFilter(
            scopes=(name,),
            kinds=("episodic",) if child is None else ("summary",),
            levels=(child,),
        )
        now = self.clock.now()
        summaries = {
            entry.bucket: entry.id
            for entry in self.store.select(
                EntryFilter(scopes=(name,), kinds=("summary",), levels=(unit,))
            )
        }
        pending = []
        for (bucket,), total in reversed(self.store.tally(sources, (unit,))):
            key = cast(str, bucket)
            if bucket_bounds(key, self.clock)[1] <= now:
                pending.append({"bucket": key, "sources": total, "summary_id": summaries.get(key)})
        return pending

    def write_summary(
        self,
        scope: str,
        level: str,
        bucket: str,
        *,
        title: str,
        body: str,
        source_ids: Iterable[str],
        tags: Sequence[str] | None = None,
        source: Source | dict[str, Any] | None = None,
        replaces: str | None = None,
    ) -> dict[str, Any]:
        """Store a summary and archive its sources in one transaction; returns `{id, action:
        "created", archived: [ids]}`.

        With memory.yml `timeline.archive: delete` the sources are deleted instead of archived.
        Every source must still be an active source of (scope, level, bucket), else nothing
        is written and a `conflict` error says which changed (list them again and retry). A
        bucket has at most one active summary: to rebuild one (late sources arrived), pass
        its id as `replaces`; it is archived and listed in the new summary's archive_ref.
        """
        self._refuse_secrets(title=title, body=body, tags=tags)
        where = self._sources_filter(scope, level, bucket)
        unit = cast(Level, where.bucket[0] if where.bucket else level)
        wanted = tuple(dict.fromkeys(source_ids))
        if not wanted:
            raise MemoryServiceError(INVALID_ARGUMENT, "a summary needs sources", "source_ids")
        now_moment = self.clock.now()
        now = format_timestamp(now_moment)
        start, _ = bucket_bounds(bucket, self.clock)
        with self.store.transaction() as tx:
            found = {entry.id: entry for entry in tx.select(replace(where, ids=wanted))}
            gone = [identifier for identifier in wanted if identifier not in found]
            if gone:
                raise MemoryServiceError(
                    CONFLICT,
                    f"{len(gone)} source(s) are no longer active sources of the {unit} "
                    f"summary of {bucket}: {', '.join(gone[:5])}",
                    "source_ids",
                )
            current = _first(
                tx.select(
                    EntryFilter(
                        scopes=where.scopes,
                        kinds=("summary",),
                        levels=(unit,),
                        bucket=(unit, bucket),
                    )
                )
            )
            if current is not None and current.id != replaces:
                raise MemoryServiceError(
                    CONFLICT,
                    f"bucket {bucket} already has the {unit} summary {current.id}; pass "
                    "replaces to rebuild it",
                    "replaces",
                )
            if current is None and replaces is not None:
                raise MemoryServiceError(
                    CONFLICT, f"{replaces} is not the active {unit} summary of {bucket}", "replaces"
                )
            summary_tags: tuple[str, ...] = ()
            if tags is not None:
                summary_tags = clean_tags(tags)
            else:
                for identifier in wanted:
                    summary_tags = merge_tags(summary_tags, found[identifier].tags)
            retired = [found[identifier] for identifier in wanted]
            if current is not None:
                retired.append(current)
            summary = Entry(
                id=new_id(),
                kind="summary",
                scope=where.scopes[0],
                title=clean_title(title),
                body=clean_text(body, "body", required=True),
                tags=summary_tags,
                created_at=now,
                updated_at=now,
                accessed_at=now,
                event_time=format_timestamp(start),
                level=unit,
                bucket=bucket,
                source=Source.from_value(source),
                archive_ref=tuple(entry.id for entry in retired),
            )
            check_size(summary, self.config.max_entry_bytes)
            if self.config.timeline.archive == "delete":
                # memory.yml `timeline.archive: delete`: the summary is all that remains; its
                # archive_ref still says what it replaced.
                tx.delete(summary.scope, tuple(entry.id for entry in retired))
            else:
                for entry in retired:
                    tx.replace(
                        entry.evolve(archived=True, archive_reason=f"summarised in {summary.id}")
                    )
            tx.insert(summary)
        retired_as = "deleted" if self.config.timeline.archive == "delete" else "archived"
        return {"id": summary.id, "action": "created", retired_as: list(summary.archive_ref)}

    def summary_sources(self, summary_id: str, scope: str) -> list[Entry]:
        """The entries a summary replaced (its archive_ref) that still exist, oldest first,
        without the earlier summary of the same bucket it may have rebuilt."""
        name = parse_scope(scope)
        found = self.store.select(EntryFilter(scopes=(name,), ids=(summary_id,), archived=None))
        if not found:
            return []
        summary = found[0]
        sources = self.store.select(
            EntryFilter(scopes=(name,), ids=summary.archive_ref, archived=None),
            order="event",
            descending=False,
        )
        return [entry for entry in sources if entry.level != summary.level]

    def rewrite_summary(
        self,
        summary_id: str,
        scope: str,
        *,
        title: str,
        body: str,
        reason: str,
        only_if_extractive: bool = False,
    ) -> None:
        """Give an active summary new text in place (same id, same sources): how a model
        upgrades an extractive summary. A `conflict` when the summary is no longer active,
        or, with `only_if_extractive`, no longer extractive (another worker upgraded it)."""
        name = parse_scope(scope)
        now = format_timestamp(self.clock.now())
        with self.store.transaction() as tx:
            current = _first(tx.select(EntryFilter(scopes=(name,), ids=(summary_id,))))
            if current is None or current.kind != "summary":
                raise MemoryServiceError(
                    CONFLICT, f"{summary_id} is not an active summary", "summary_id"
                )
            if only_if_extractive and not is_extractive(current):
                raise MemoryServiceError(
                    CONFLICT, f"summary {summary_id} was rewritten already", "summary_id"
                )
            rewritten = current.evolve(
                title=clean_title(title),
                body=clean_text(body, "body", required=True),
                updated_at=now,
                source=Source(reason=reason),
            )
            check_size(rewritten, self.config.max_entry_bytes)
            tx.replace(rewritten)

    def _sources_filter(self, scope: str, level: str, bucket: str) -> EntryFilter:
        unit = require_level(level)
        require_bucket(bucket, unit)
        child = CHILD_LEVEL[unit]
        return EntryFilter(
            scopes=(parse_scope(scope),),
            kinds=("episodic",) if child is None else ("summary",),
            levels=(child,),
            bucket=(unit, bucket),
        )

    # ------------------------------------------------------------------------- helpers

    def _before_read(self, scopes: tuple[str, ...]) -> dict[str, Any] | None:
        """Run the read hook (lazy compaction) so the read sees the summaries it wrote."""
        return self.before_read(scopes) if self.before_read is not None else None

    def _event_time(self, value: TimeArgument) -> datetime:
        if value is None:
            return self.clock.now()
        if isinstance(value, str) and bucket_level(value.strip()) not in (None, "day"):
            raise MemoryServiceError(
                INVALID_ARGUMENT,
                "event_time must be a moment or a day, not a week, month or year",
                "event_time",
            )
        return resolve_moment(value, self.clock, field="event_time")

    def _get(self, reader: StoreReader, plan: ScopePlan, entry_id: str) -> Entry:
        if not isinstance(entry_id, str) or not entry_id.strip():
            raise MemoryServiceError(INVALID_ARGUMENT, "id must be a non-empty string", "id")
        found = _first(
            reader.select(EntryFilter(scopes=plan.read, ids=(entry_id.strip(),), archived=None))
        )
        if found is None:
            raise MemoryServiceError(
                NOT_FOUND,
                f"no entry {entry_id!r} in scope {' or '.join(plan.read)}",
                "id",
            )
        return found

    def _filter(
        self,
        scopes: tuple[str, ...],
        *,
        kind: str | Iterable[str] | None,
        tags: Sequence[str] | None,
        since: TimeArgument,
        until: TimeArgument,
        level: str | Iterable[str] | None,
        include_archived: bool,
    ) -> EntryFilter:
        kinds = (
            None
            if kind is None
            else tuple(require_kind(item, KINDS) for item in _one_or_many(kind, "kind"))
        )
        levels = (
            None
            if level is None
            else tuple(require_level(item) for item in _one_or_many(level, "level"))
        )
        if not isinstance(include_archived, bool):
            raise MemoryServiceError(
                INVALID_ARGUMENT, "include_archived must be true or false", "include_archived"
            )
        return EntryFilter(
            scopes=scopes,
            kinds=kinds,
            levels=cast("tuple[Level | None, ...] | None", levels),
            tags=clean_tags(tags),
            since=None
            if since is None
            else format_timestamp(resolve_moment(since, self.clock, field="since")),
            until=None
            if until is None
            else format_timestamp(resolve_moment(until, self.clock, field="until", end=True)),
            archived=None if include_archived else False,
        )


# ----------------------------------------------------------------------------- functions


def _summaries_drawing_on(tx: StoreReader, scope: str, gone: set[str]) -> list[Entry]:
    """Every summary of `scope`, active or archived, whose text drew on an entry of `gone`:
    directly (it lists one in archive_ref) or through a summary that did, up the levels."""
    summaries = tx.select(EntryFilter(scopes=(scope,), kinds=("summary",), archived=None))
    tainted: dict[str, Entry] = {}
    reached = set(gone)
    grew = True
    while grew:
        grew = False
        for summary in summaries:
            if summary.id not in tainted and reached.intersection(summary.archive_ref):
                tainted[summary.id] = summary
                reached.add(summary.id)
                grew = True
    return list(tainted.values())


def _earlier_versions(tx: StoreReader, scope: str, ids: set[str]) -> list[str]:
    """The archived unkeyed versions that `ids` replaced, and the ones those replaced, and so
    on: an unkeyed entry's text before an update, which a purge must take along (a keyed
    entry's versions share its key)."""
    archived = tx.select(EntryFilter(scopes=(scope,), archived=True, keyed=False))
    found: list[str] = []
    reached = set(ids)
    grown = True
    while grown:
        grown = False
        for entry in archived:
            if entry.superseded_by in reached and entry.id not in reached:
                reached.add(entry.id)
                found.append(entry.id)
                grown = True
    return found


def _restore_sources(
    tx: StoreTransaction, scope: str, summaries: list[Entry], gone: set[str]
) -> list[str]:
    """Make active again the sources these summaries archived (not those in `gone`, nor
    other summaries among them), so compaction summarises their buckets anew; a keyed source
    whose key has an active entry meanwhile stays archived. The ids restored, sorted."""
    removed = {summary.id for summary in summaries}
    wanted = {
        identifier
        for summary in summaries
        for identifier in summary.archive_ref
        if identifier not in gone and identifier not in removed
    }
    if not wanted:
        return []
    reasons = {f"summarised in {summary.id}" for summary in summaries}
    restored = []
    for entry in tx.select(EntryFilter(scopes=(scope,), ids=tuple(wanted), archived=True)):
        if entry.archive_reason not in reasons:
            continue  # archived for another reason since: forgotten, superseded
        if entry.key is not None and tx.count(EntryFilter(scopes=(scope,), key=entry.key)):
            continue
        tx.replace(entry.evolve(archived=False, archive_reason=None))
        restored.append(entry.id)
    return sorted(restored)


_REMEMBER_ARGUMENTS = frozenset(
    ("text", "kind", "key", "title", "tags", "scope", "event_time", "source", "context")
)


def _texts_of(values: Iterable[object]) -> list[str] | None:
    """The texts of these field values (a text, or a list of texts; None for no value), or
    None when one is something else."""
    texts: list[str] = []
    for value in values:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            texts.extend(value)
        elif value is not None:
            return None
    return texts


def _remember_arguments(item: object) -> dict[str, Any]:
    """One item of a remember_many as remember's arguments, refused when it is not an
    object of them with a `text`."""
    if not isinstance(item, Mapping):
        raise MemoryServiceError(INVALID_ARGUMENT, "each item must be an object")
    unknown = sorted(set(item) - _REMEMBER_ARGUMENTS)
    if unknown:
        raise MemoryServiceError(INVALID_ARGUMENT, f"unknown argument {unknown[0]!r}", unknown[0])
    if "text" not in item:
        raise MemoryServiceError(INVALID_ARGUMENT, "text is required", "text")
    return dict(item)


@contextmanager
def _item_errors(position: int) -> Iterator[None]:
    """Errors about one item of a batch, with the item's position in front of the field."""
    try:
        yield
    except MemoryServiceError as error:
        where = f"items[{position}]" + (f".{error.field}" if error.field else "")
        raise MemoryServiceError(error.code, f"{where}: {error.message}", where) from error


def _written(write: Callable[[Entry], None], entry: Entry, existing: Existing) -> Entry:
    """`entry`, once written (inserted or replaced) and made known to `existing`."""
    write(entry)
    existing.written(entry)
    return entry


def _first(entries: list[Entry]) -> Entry | None:
    return entries[0] if entries else None


def _same_value(current: Entry, candidate: Entry) -> bool:
    return (current.kind, current.title, current.body, current.context) == (
        candidate.kind,
        candidate.title,
        candidate.body,
        candidate.context,
    )


def _by_succession(versions: list[Entry]) -> list[Entry]:
    """Versions newest first, each followed by the one it replaced, so two versions written in
    the same millisecond still come out in the order of their `superseded_by` links. The input
    is newest first by created_at; chain heads keep that order, the active one first."""
    known = {entry.id for entry in versions}
    replaced = {entry.superseded_by: entry for entry in versions if entry.superseded_by in known}
    ordered: list[Entry] = []
    for head in sorted(versions, key=lambda entry: entry.archived):
        if head.superseded_by in known:
            continue
        current: Entry | None = head
        while current is not None and current not in ordered:
            ordered.append(current)
            current = replaced.get(current.id)
    return ordered


def _status(entry: Entry) -> Literal["active", "superseded", "archived"]:
    if entry.active:
        return "active"
    return "superseded" if entry.superseded_by else "archived"


def _summary_line(entry: Entry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "kind": entry.kind,
        "key": entry.key,
        "title": entry.title,
        "tags": list(entry.tags),
        "scope": entry.scope,
        "level": entry.level,
        "bucket": entry.bucket,
        "event_time": entry.event_time,
        "archived": entry.archived,
    }


@dataclass(frozen=True)
class _DigestFacts:
    """The digest lines of the global facts, best first (at most the digest's line budget),
    and how many global facts there are in all."""

    lines: list[str]
    total: int

    def left_out(self, shown: int) -> int:
        """How many global facts a digest showing the first `shown` lines leaves out."""
        return self.total - max(shown, 0)


def _pin_rank(entry: Entry) -> tuple[Any, ...]:
    """The order of global facts in the digest, most important first: what the user pinned
    (PIN_TAG), then what was confirmed most often (remembered again: `reinforce_count`), then
    what was used most recently (recalled or updated: `accessed_at`), then the newest. Never
    the key's spelling: `pref10` has no claim over an unkeyed "The user lives in Berlin"."""
    return (
        PIN_TAG not in entry.tags,
        -entry.reinforce_count,
        -parse_timestamp(entry.accessed_at).timestamp(),
        -parse_timestamp(entry.updated_at).timestamp(),
        entry.title,  # ties (remembered in the same instant) in a stable order
        entry.id,
    )


def _fitting(
    header: list[str],
    chosen: list[str],
    lines: list[str],
    left_out: Callable[[int], tuple[int, int]],
    entries: int,
    size: int,
) -> list[str]:
    """`chosen` and the first of `lines` that fit in `entries` lines and `size` UTF-8 bytes
    of digest text, counting the "N more" line that would close it: `left_out(k)` says how
    many entries, and how many global facts among them, a digest taking k of `lines` leaves
    out."""
    taken = list(chosen)
    for index, line in enumerate(lines):
        left, facts = left_out(index + 1)
        tail = [_omitted_line(left, facts)] if left else []
        trial = "\n".join([*header, *taken, line, *tail, DIGEST_FOOTER])
        if len(taken) >= entries or len(trial.encode("utf-8")) > size:
            break
        taken.append(line)
    return taken


def _omitted_line(count: int, facts: int = 0) -> str:
    if facts <= 0:
        return f"({count} more not shown: use recall or memory_browse)"
    of_them = "1 of them a global fact" if facts == 1 else f"{facts} of them global facts"
    return (
        f"({count} more not shown, {of_them}: use recall or memory_browse; "
        'memory_browse {"scope": "global", "kind": "fact"} lists every global fact)'
    )


def _one_or_many(value: str | Iterable[str], field: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return list(value)
    raise MemoryServiceError(INVALID_ARGUMENT, f"{field} must be a string or a list", field)


def _share(value: object, field: str) -> float:
    """A number from 0 to 1 (a relevance), or the argument error naming `field`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise MemoryServiceError(INVALID_ARGUMENT, f"{field} must be a number from 0 to 1", field)
    return float(value)


def _bounded_int(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise MemoryServiceError(
            INVALID_ARGUMENT, f"{field} must be an integer from {low} to {high}", field
        )
    return value
