"""The shared store: one namespace of a PostgreSQL database (`postgresql://…#namespace`).

For memory shared by several machines. It keeps the SqliteStore's behaviour exactly, results
included, so a memory can move between the two without recall changing:

* Ranking is FTS5's BM25, computed in SQL with the same formula, constants and floating-point
  operations in the same order, over a postings table built from the same tokens FTS5 indexes
  (the Analyzer's terms, then FTS5's `ascii` tokenizer). PostgreSQL's own text search would
  stem, rank and tie differently, so it is not used. Like FTS5, the corpus statistics (entry
  count, average length, document frequencies) are those of the whole namespace.
* Every text column compares byte-wise (`COLLATE "C"`), as SQLite compares text, whatever the
  database's collation; ties are broken by id in the same order.
* Scope is a predicate of the index lookup itself (each posting carries a hash of its entry's
  scope) and again of the SQL that joins the entries.
* The active entries of each scope (`memory_scope_counts`) and the last episodic entry of each
  (scope, source session) (`memory_session_tails`, linking an entry to the one written before
  it) are kept as entries are written, like the term counts: collected over a transaction and
  written at its end, under the namespace's lock, so the cap on a scope is exact.
* Writers are serialised per namespace by a transaction-scoped advisory lock taken before the
  first read, in READ COMMITTED, so every statement after the lock sees what the previous writer
  committed; commits wait for the WAL flush (`synchronous_commit=on`). A killed client's
  transaction is rolled back by the server, which also releases its lock.

A namespace is a schema (default `agentscript_memory`), created with its tables on first use
under the namespace's advisory lock, so concurrent first users do not race. Credentials come
from the URI or libpq's standard sources (`PGUSER`, `PGPASSWORD`, `PGHOST`, `~/.pgpass`, ...);
a password is handed to libpq as a keyword of its own, and messages and reprs show the URI with
the password replaced. psycopg (the extra `agentscript[postgres]`) is imported on first use.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeGuard

from agentscript.memory.entries import Entry
from agentscript.memory.errors import INVALID_ARGUMENT, STORE_FAILURE, MemoryServiceError
from agentscript.memory.store import (
    ASCII_FOLD,
    BM25_B,
    BM25_K1,
    BM25_MIN_IDF,
    ENTRY_COLUMNS,
    INDEXED_FIELDS,
    LINKED_CONTEXT_TURNS,
    Dimension,
    EntryFilter,
    Match,
    Order,
    PendingTouches,
    ScopeCount,
    StoreConflict,
    TermStatistics,
    TextQuery,
    bodies_before,
    entry_from_row,
    entry_row,
    indexed_text,
    linked_context,
    matching_vectors,
    pack_vector,
    postings,
    scope_hash,
    stable_int64,
)
from agentscript.memory.text import DEFAULT_ANALYZER, Analyzer
from agentscript.memory.timeline import timestamp_microseconds
from agentscript.providers.storage.postgres_connections import (
    CONNECT_TIMEOUT_SECONDS,
    ConnectionPool,
    PostgresServer,
)
from agentscript.runtime.uris import SplitUri, scrub_uri

if TYPE_CHECKING:
    from psycopg import Connection

POSTGRES_SCHEMES = ("postgresql", "postgres")
DEFAULT_NAMESPACE = "agentscript_memory"
SCHEMA_VERSION = "2"
# Schema 1 lacked the scope counts and the session links; it is upgraded in place.
_UPGRADED_VERSIONS = ("1",)
# Rows fetched per round trip by export and verify, which stream whole namespaces.
STREAM_ROWS = 500


# A namespace becomes a schema name as written: lowercase letters, digits and underscores, at
# most 63 bytes (PostgreSQL's limit), never a system schema.
_NAMESPACE = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_SYSTEM_SCHEMA = re.compile(r"pg_.*|information_schema")


_COLUMNS = ENTRY_COLUMNS
_SELECTED = ", ".join(f"e.{name}" for name in _COLUMNS)


def _placeholder(name: str) -> str:
    """The parameter of a column in INSERT and UPDATE statements (JSON text becomes jsonb)."""
    return f"%({name})s::jsonb" if name == "source" else f"%({name})s"


_DIMENSIONS: dict[str, str] = {
    "scope": "e.scope",
    "kind": "e.kind",
    "level": "e.level",
    "archived": '(e.archived::text COLLATE "C")',
    "title_norm": "e.title_norm",
    "day": "e.day",
    "week": "e.week",
    "month": "e.month",
    "year": "e.year",
}
_ORDERS: dict[str, str] = {"updated": "updated_at", "event": "event_time", "created": "created_at"}

# The active entries of each scope, and the last episodic entry of each source session.
_COUNTS_AND_TAILS = (
    """CREATE TABLE IF NOT EXISTS {schema}.memory_scope_counts (
        scope text COLLATE "C" PRIMARY KEY,
        active bigint NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS {schema}.memory_session_tails (
        scope text COLLATE "C" NOT NULL,
        session text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        PRIMARY KEY (scope, session)
    )""",
)

# Only `{schema}` (the quoted, validated schema name) and, in _SEARCH, `{clause}` (written by
# _where, with every value a parameter) are formatted into SQL.
_SCHEMA = (
    """CREATE TABLE {schema}.memory_entries (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL,
        scope text COLLATE "C" NOT NULL,
        kind text COLLATE "C" NOT NULL,
        key text COLLATE "C",
        title text COLLATE "C" NOT NULL,
        title_norm text COLLATE "C" NOT NULL,
        body text COLLATE "C" NOT NULL,
        context text COLLATE "C" NOT NULL,
        tags text[] COLLATE "C" NOT NULL,
        created_at text COLLATE "C" NOT NULL,
        updated_at text COLLATE "C" NOT NULL,
        accessed_at text COLLATE "C" NOT NULL,
        event_time text COLLATE "C" NOT NULL,
        level text COLLATE "C",
        bucket text COLLATE "C" NOT NULL,
        day text COLLATE "C" NOT NULL,
        week text COLLATE "C" NOT NULL,
        month text COLLATE "C" NOT NULL,
        year text COLLATE "C" NOT NULL,
        archived smallint NOT NULL CHECK (archived IN (0, 1)),
        archive_reason text COLLATE "C",
        source jsonb NOT NULL,
        archive_ref text[] COLLATE "C" NOT NULL,
        reinforce_count bigint NOT NULL,
        superseded_by text COLLATE "C",
        session text COLLATE "C",
        tokens integer NOT NULL,
        previous_seq bigint,
        next_seq bigint,
        CONSTRAINT memory_entries_id UNIQUE (id)
    )""",
    "CREATE UNIQUE INDEX memory_entries_active_key ON {schema}.memory_entries (scope, key) "
    "WHERE key IS NOT NULL AND archived = 0",
    "CREATE UNIQUE INDEX memory_entries_active_summary ON {schema}.memory_entries "
    "(scope, level, bucket) WHERE kind = 'summary' AND archived = 0",
    "CREATE INDEX memory_entries_title ON {schema}.memory_entries (scope, kind, title_norm) "
    "WHERE archived = 0",
    "CREATE INDEX memory_entries_key ON {schema}.memory_entries (scope, key) WHERE key IS NOT NULL",
    "CREATE INDEX memory_entries_updated ON {schema}.memory_entries (scope, archived, updated_at)",
    "CREATE INDEX memory_entries_event ON {schema}.memory_entries (scope, event_time)",
    "CREATE INDEX memory_entries_day ON {schema}.memory_entries (scope, kind, day)",
    # One row per (term, entry): the term's occurrences in tags, title, key, body, context.
    # Postings are deleted before their entry; the foreign key makes forgetting it an error.
    """CREATE TABLE {schema}.memory_postings (
        term text COLLATE "C" NOT NULL,
        scope_hash bigint NOT NULL,
        seq bigint NOT NULL REFERENCES {schema}.memory_entries (seq),
        counts integer[] NOT NULL,
        PRIMARY KEY (term, scope_hash, seq)
    )""",
    "CREATE INDEX memory_postings_seq ON {schema}.memory_postings (seq)",
    # How many entries hold each term (FTS5 counts them for the IDF on every query; kept here
    # so a query reads one row per term). A term no entry holds has no row.
    """CREATE TABLE {schema}.memory_terms (
        term text COLLATE "C" PRIMARY KEY,
        documents bigint NOT NULL
    )""",
    # FTS5's totals: how many entries, and how many tokens they hold together.
    """CREATE TABLE {schema}.memory_stats (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        documents bigint NOT NULL,
        tokens bigint NOT NULL
    )""",
    "INSERT INTO {schema}.memory_stats (documents, tokens) VALUES (0, 0)",
    "CREATE TABLE {schema}.memory_meta (name text PRIMARY KEY, value text NOT NULL)",
    *_COUNTS_AND_TAILS,
    # f(t, e) of BM25 below: one addition per occurrence, in field order, as FTS5 adds them
    # (a loop is also three times faster than the same fold written as a SQL aggregate).
    """CREATE FUNCTION {schema}.memory_frequency(counts integer[], weights float8[])
    RETURNS float8 LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
    DECLARE
        total float8 := 0;
    BEGIN
        FOR field IN 1 .. cardinality(counts) LOOP
            FOR occurrence IN 1 .. counts[field] LOOP
                total := total + weights[field];
            END LOOP;
        END LOOP;
        RETURN total;
    END
    $$""",
)

# What schema 2 added, run to upgrade a namespace of schema 1.
_VERSION_2 = (
    "ALTER TABLE {schema}.memory_entries ADD COLUMN previous_seq bigint",
    "ALTER TABLE {schema}.memory_entries ADD COLUMN next_seq bigint",
    *_COUNTS_AND_TAILS,
)
# Links the episodic entries of each (scope, session) in the order they were written, and
# records each session's last one (an upgrade from schema 1).
_LINK_SESSIONS = (
    """UPDATE {schema}.memory_entries AS e SET previous_seq = l.previous_seq,
        next_seq = l.next_seq
    FROM (SELECT seq, lag(seq) OVER w AS previous_seq, lead(seq) OVER w AS next_seq
        FROM {schema}.memory_entries WHERE kind = 'episodic' AND session IS NOT NULL
        WINDOW w AS (PARTITION BY scope, session ORDER BY seq)) AS l
    WHERE e.seq = l.seq""",
    """INSERT INTO {schema}.memory_session_tails (scope, session, seq)
    SELECT scope, session, max(seq) FROM {schema}.memory_entries
    WHERE kind = 'episodic' AND session IS NOT NULL GROUP BY scope, session
    ON CONFLICT (scope, session) DO UPDATE SET seq = excluded.seq""",
)

# The vectors of semantic re-ranking (store.py), a cache that goes with its entry's row. Created
# with IF NOT EXISTS on every first use, so namespaces made before it existed gain it too.
_VECTORS = """CREATE TABLE IF NOT EXISTS {schema}.memory_vectors (
    seq bigint NOT NULL REFERENCES {schema}.memory_entries (seq) ON DELETE CASCADE,
    model text COLLATE "C" NOT NULL,
    digest text COLLATE "C" NOT NULL,
    vector bytea NOT NULL,
    PRIMARY KEY (seq, model)
)"""

_INSERT = f"""WITH entry AS (
    INSERT INTO {{schema}}.memory_entries ({", ".join(_COLUMNS)}, title_norm, day, week, month,
        year, session, tokens, previous_seq)
    VALUES ({", ".join(_placeholder(name) for name in _COLUMNS)}, %(title_norm)s, %(day)s, %(week)s,
        %(month)s, %(year)s, %(session)s, %(tokens)s, %(previous_seq)s)
    RETURNING seq
)
INSERT INTO {{schema}}.memory_postings (term, scope_hash, seq, counts)
SELECT p.term, %(scope_hash)s, entry.seq, ARRAY[p.tags, p.title, p.key, p.body, p.context]
FROM entry, unnest(%(terms)s::text[], %(in_tags)s::int[], %(in_title)s::int[],
    %(in_key)s::int[], %(in_body)s::int[], %(in_context)s::int[])
    AS p (term, tags, title, key, body, context)"""

# The postings of several entries in one statement (a rewritten entry, a rebuild).
_INDEX = """INSERT INTO {schema}.memory_postings (term, scope_hash, seq, counts)
SELECT p.term, p.scope_hash, p.seq, ARRAY[p.tags, p.title, p.key, p.body, p.context]
FROM unnest(%(terms)s::text[], %(scope_hashes)s::bigint[], %(seqs)s::bigint[],
    %(in_tags)s::int[], %(in_title)s::int[], %(in_key)s::int[], %(in_body)s::int[],
    %(in_context)s::int[]) AS p (term, scope_hash, seq, tags, title, key, body, context)"""

# BM25 exactly as FTS5 computes it, operation by operation (floating-point addition is not
# associative, so the same sums must be made in the same order):
#   idf(t)  = log((N - hits(t) + 0.5) / (hits(t) + 0.5)), or 1e-6 when not positive, where N
#             counts every entry and hits(t) the entries holding t, in all scopes;
#   f(t, e) = the field weight of each occurrence of t in e, added one occurrence at a time in
#             field order (tags, title, key, body, context): memory_frequency;
#   score   = the sum, in query order, of idf(t) * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D /
#             avgdl)), D being e's token count plus one for its scope term, avgdl the mean D.
# Terms an entry lacks add nothing, as they add 0.0 in FTS5. The CTEs are materialised so
# the plan stays right before the tables have statistics: IDFs first, one row per term; then
# the postings of the asked scopes joined with the entries, each frequency computed once.
_SEARCH = """WITH rarity AS MATERIALIZED (
    SELECT q.term, q.position,
        ln((((SELECT documents FROM {schema}.memory_stats) - hits.n)::float8 + 0.5::float8)
            / (hits.n::float8 + 0.5::float8)) AS idf
    FROM unnest(%(phrases)s::text[]) WITH ORDINALITY AS q (term, position)
    CROSS JOIN LATERAL (
        SELECT coalesce(max(t.documents), 0) AS n FROM {schema}.memory_terms AS t
        WHERE t.term = q.term
    ) AS hits
), hit AS MATERIALIZED (
    SELECT e.seq, e.id, e.session, e.bucket, e.accessed_at, e.tokens, r.position, r.idf,
        {schema}.memory_frequency(p.counts, %(weights)s::float8[]) AS frequency,
        CASE WHEN e.kind IN ('episodic', 'summary') THEN e.event_time ELSE e.updated_at END
            AS recency
    FROM rarity AS r
    JOIN {schema}.memory_postings AS p
        ON p.term = r.term AND p.scope_hash = ANY(%(scope_hashes)s::bigint[])
    JOIN {schema}.memory_entries AS e ON e.seq = p.seq
    WHERE {clause}
)
SELECT hit.id, sum(
        (CASE WHEN hit.idf > 0::float8 THEN hit.idf ELSE %(min_idf)s::float8 END)
        * ((hit.frequency * (%(k1)s::float8 + 1.0::float8))
            / (hit.frequency + %(k1)s::float8 * ((1.0::float8 - %(b)s::float8)
                + %(b)s::float8 * hit.tokens::float8 / (
                    SELECT tokens::float8 / NULLIF(documents, 0)::float8 FROM {schema}.memory_stats
                ))))
        ORDER BY hit.position
    ) AS score,
    hit.session, hit.recency, hit.bucket, hit.accessed_at, hit.seq
FROM hit
GROUP BY hit.seq, hit.id, hit.session, hit.recency, hit.bucket, hit.accessed_at
ORDER BY score DESC, hit.accessed_at DESC, hit.id
LIMIT %(limit)s"""
# The entries `search` ranks, counted (recall's total).
_COUNT_MATCHES = """SELECT count(DISTINCT e.seq)
FROM {schema}.memory_postings AS p
JOIN {schema}.memory_entries AS e ON e.seq = p.seq
WHERE p.term = ANY(%(phrases)s::text[]) AND p.scope_hash = ANY(%(scope_hashes)s::bigint[])
    AND {clause}"""


def is_postgres_uri(database: object) -> TypeGuard[str]:
    """Whether a `database` argument names a PostgreSQL database rather than a SQLite file."""
    return isinstance(database, str) and database.partition("://")[0] in POSTGRES_SCHEMES


def parse_uri(uri: str) -> tuple[PostgresServer, str]:
    """The database and the namespace a `postgresql://user:password@host:port/db#namespace`
    URI names; an invalid namespace is refused before anything connects."""
    parts = SplitUri.split(uri)
    shown = scrub_uri(uri)
    database = PostgresServer.of(parts, shown)
    namespace = parts.fragment if parts.has_fragment else DEFAULT_NAMESPACE
    if not _NAMESPACE.fullmatch(namespace) or _SYSTEM_SCHEMA.fullmatch(namespace):
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"memory database {shown}: the namespace after # must be 1-63 lowercase letters, "
            "digits or underscores, not starting with a digit or pg_ (it names a schema)",
            "database",
        )
    return database, namespace


def driver() -> ModuleType:
    """psycopg, or an error that says how to install it."""
    try:
        import psycopg
    except ImportError:
        raise MemoryServiceError(
            STORE_FAILURE,
            "a PostgreSQL memory database needs psycopg: install agentscript[postgres]",
        ) from None
    return psycopg


def _connect(database: PostgresServer) -> Connection:
    """A connection of the service's pool: read committed, every commit flushed, no JIT."""
    psycopg = driver()
    connection: Connection = psycopg.connect(
        database.conninfo,
        user=database.user,
        password=database.password,
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        application_name="agentscript-memory",
        client_encoding="UTF8",
    )
    try:
        # Each statement of a write sees the latest commit (see the module docstring), and
        # an acknowledged commit has been flushed, whatever the server's defaults.
        connection.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
        connection.execute("SET synchronous_commit TO on")
        # Statements here are short: compiling them (JIT) would cost more than it saves.
        connection.execute("SET jit TO off")
    except BaseException:
        connection.close()
        raise
    return connection


class _Pools:
    """One pool per database URI for the whole process, closed when its last store closes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools: dict[PostgresServer, tuple[ConnectionPool, int]] = {}

    def acquire(self, database: PostgresServer) -> ConnectionPool:
        with self._lock:
            pool, users = self._pools.get(database, (None, 0))
            if pool is None:
                pool = ConnectionPool(partial(_connect, database), database.display)
            self._pools[database] = (pool, users + 1)
            return pool

    def release(self, database: PostgresServer) -> None:
        with self._lock:
            pool, users = self._pools[database]
            if users > 1:
                self._pools[database] = (pool, users - 1)
                return
            del self._pools[database]
        pool.close()


_POOLS = _Pools()


class PostgresMemoryStore:
    """A MemoryStore over one namespace of a PostgreSQL database, through the process's pool
    for that database. Safe to share between threads; usable again after `close`."""

    def __init__(self, uri: str, analyzer: Analyzer = DEFAULT_ANALYZER) -> None:
        self.database, self.namespace = parse_uri(uri)
        self.analyzer = analyzer
        self._schema = '"' + self.namespace + '"'
        self._lock_key = stable_int64(f"agentscript.memory:{self.namespace}")
        self._pool: ConnectionPool | None = None
        self._pool_lock = threading.Lock()
        self._ready = False
        self._ready_lock = threading.Lock()
        self._touches = PendingTouches()
        self._touches_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PostgresMemoryStore({self.database.display!r})"

    # ----------------------------------------------------------------------------- reads

    def select(
        self,
        where: EntryFilter,
        *,
        order: Order = "updated",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Entry]:
        with self._connection() as connection:
            entries = _select(connection, self._schema, where, order, descending, limit, offset)
        with self._touches_lock:
            return [self._touches.overlay(entry) for entry in entries]

    def count(self, where: EntryFilter) -> int:
        with self._connection() as connection:
            return _count(connection, self._schema, where)

    def tally(
        self, where: EntryFilter, by: tuple[Dimension, ...], *, min_count: int = 1
    ) -> list[tuple[tuple[str | None, ...], int]]:
        with self._connection() as connection:
            return _tally(connection, self._schema, where, by, min_count)

    def search(self, query: TextQuery, where: EntryFilter, limit: int) -> list[Match]:
        terms = [term for term in query.terms if term.isalnum()]
        if not terms or limit <= 0:
            return []
        clause, parameters = _where(where)
        # A term of letters and digits is one FTS5 token, folded as the index folds it.
        parameters |= {
            "phrases": [term.translate(ASCII_FOLD) for term in dict.fromkeys(terms)],
            "scope_hashes": [scope_hash(scope) for scope in where.scopes],
            "weights": list(query.weights.as_tuple()),
            "k1": BM25_K1,
            "b": BM25_B,
            "min_idf": BM25_MIN_IDF,
            "limit": limit,
        }
        statement = _SEARCH.format(schema=self._schema, clause=clause)
        with self._connection() as connection:
            rows = connection.execute(statement, parameters).fetchall()
        with self._touches_lock:
            return [
                Match(
                    identifier,
                    float(score),
                    session,
                    timestamp_microseconds(recency),
                    bucket,
                    self._touches.accessed(identifier, accessed),
                    seq,
                )
                for identifier, score, session, recency, bucket, accessed, seq in rows
            ]

    def entries_at(self, where: EntryFilter, matches: Sequence[Match]) -> list[Entry]:
        """By id: the entries table's primary key here, so a look-up by seq would gain
        nothing."""
        return self.select(replace(where, ids=tuple(match.id for match in matches)))

    def count_matches(self, query: TextQuery, where: EntryFilter) -> int:
        terms = [term for term in query.terms if term.isalnum()]
        if not terms:
            return 0
        clause, parameters = _where(where)
        parameters |= {
            "phrases": [term.translate(ASCII_FOLD) for term in dict.fromkeys(terms)],
            "scope_hashes": [scope_hash(scope) for scope in where.scopes],
        }
        statement = _COUNT_MATCHES.format(schema=self._schema, clause=clause)
        with self._connection() as connection:
            row = connection.execute(statement, parameters).fetchone()
        return int(row[0]) if row else 0

    def term_documents(self, terms: Sequence[str]) -> TermStatistics:
        wanted = list(dict.fromkeys(terms))
        with self._connection() as connection:
            total = connection.execute(
                f"SELECT documents FROM {self._schema}.memory_stats"
            ).fetchone()
            rows = connection.execute(
                f"SELECT term, documents FROM {self._schema}.memory_terms "
                "WHERE term = ANY(%s::text[])",
                [[term.translate(ASCII_FOLD) for term in wanted]],
            ).fetchall()
        counts = {term: int(documents) for term, documents in rows}
        holding = {term: counts.get(term.translate(ASCII_FOLD), 0) for term in wanted}
        return TermStatistics(int(total[0]) if total else 0, holding)

    def scopes(self) -> list[ScopeCount]:
        with self._connection() as connection:
            rows = connection.execute(
                "SELECT scope, count(*) FILTER (WHERE archived = 0), "
                f"count(*) FILTER (WHERE archived = 1) FROM {self._schema}.memory_entries "
                "GROUP BY scope ORDER BY scope"
            ).fetchall()
        return [ScopeCount(scope, int(active), int(archived)) for scope, active, archived in rows]

    def export(self, scopes: tuple[str, ...]) -> Iterator[Entry]:
        """Stream through a server-side cursor: one statement, so one snapshot, fetched a batch
        at a time on a connection of its own, which the export holds until it ends."""
        clause, parameters = _where(EntryFilter(scopes=scopes, archived=None))
        statement = (
            f"SELECT {_SELECTED} FROM {self._schema}.memory_entries AS e WHERE {clause} "
            "ORDER BY e.seq"
        )
        with (
            self._connection() as connection,
            connection.transaction(),
            connection.cursor(name="agentscript_memory_export") as cursor,
        ):
            cursor.itersize = STREAM_ROWS
            cursor.execute(statement, parameters)
            for row in cursor:
                with self._touches_lock:
                    entry = self._touches.overlay(entry_from_row(row))
                yield entry

    def verify(self) -> list[str]:
        """Compare the totals and the term counts with the postings and the table, and every
        entry's postings and length with what the analyser makes of it now, in one snapshot."""
        problems: list[str] = []
        repair = "(PostgresMemoryStore.rebuild_index rebuilds it from the entries)"
        with self._connection() as connection, connection.transaction():
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            totals = connection.execute(
                f"SELECT s.documents, s.tokens, e.documents, e.tokens "
                f"FROM {self._schema}.memory_stats AS s, (SELECT count(*) AS documents, "
                f"coalesce(sum(tokens), 0) AS tokens FROM {self._schema}.memory_entries) AS e"
            ).fetchone()
            if totals is None or totals[:2] != totals[2:]:
                problems.append(
                    f"the text index totals (entries, tokens) are {totals and totals[:2]}, "
                    f"the table's {totals and totals[2:]} {repair}"
                )
            miscounted = connection.execute(
                "SELECT count(*) FROM (SELECT term, count(*) AS n FROM "
                f"{self._schema}.memory_postings GROUP BY term) AS p "
                f"FULL JOIN {self._schema}.memory_terms AS t USING (term) "
                "WHERE p.n IS DISTINCT FROM t.documents"
            ).fetchone()
            if miscounted and miscounted[0]:
                problems.append(
                    f"{miscounted[0]} of the text index's term counts disagree with its "
                    f"postings {repair}"
                )
            wrong = 0
            # The session chains, for the linked context of episodic entries (store.py).
            chain: dict[int, tuple[int | None, str]] = {
                int(seq): (before, body)
                for seq, before, body in connection.execute(
                    f"SELECT seq, previous_seq, body FROM {self._schema}.memory_entries "
                    "WHERE kind = 'episodic' AND session IS NOT NULL"
                )
            }
            with connection.cursor(name="agentscript_memory_verify") as cursor:
                cursor.itersize = STREAM_ROWS
                cursor.execute(
                    f"SELECT {_SELECTED}, e.tokens, e.previous_seq, "
                    "array_agg(p.term ORDER BY p.term) FILTER (WHERE p.seq IS NOT NULL), "
                    "array_agg(p.scope_hash ORDER BY p.term) FILTER (WHERE p.seq IS NOT NULL), "
                    "array_agg(p.counts ORDER BY p.term) FILTER (WHERE p.seq IS NOT NULL) "
                    f"FROM {self._schema}.memory_entries AS e "
                    f"LEFT JOIN {self._schema}.memory_postings AS p ON p.seq = e.seq "
                    "GROUP BY e.seq ORDER BY e.seq"
                )
                for row in cursor:
                    entry = entry_from_row(row[: len(_COLUMNS)])
                    length, before, terms, hashes, counts = row[len(_COLUMNS) :]
                    context = linked_context(entry, bodies_before(before, chain))
                    expected, expected_length = postings(
                        entry.evolve(context=context), self.analyzer
                    )
                    stored = dict(zip(terms or [], counts or [], strict=True))
                    own = scope_hash(entry.scope)
                    if (
                        length != expected_length
                        or stored != expected
                        or any(hashed != own for hashed in hashes or [])
                    ):
                        wrong += 1
            if wrong:
                problems.append(f"{wrong} entries disagree with the text index {repair}")
        return problems

    # ---------------------------------------------------------------------------- writes

    @contextmanager
    def transaction(self) -> Iterator[_Transaction]:
        with self._touches_lock:
            pending = self._touches.drain()
        try:
            with self._connection() as connection, connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", [self._lock_key])
                self._write_touches(connection, pending)
                writes = _Transaction(connection, self._schema, self.analyzer)
                yield writes
                writes.totals.apply(connection, self._schema)
        except BaseException:
            with self._touches_lock:
                self._touches.restore(pending)
            raise

    def touch(self, scopes: tuple[str, ...], ids: tuple[str, ...], moment: str) -> None:
        if not ids:
            return
        EntryFilter(scopes=scopes)  # the same scope check as every read
        with self._touches_lock:
            self._touches.record(scopes, ids, moment)
            pending = self._touches.drain() if self._touches.due() else {}
        self._flush_touches(pending)

    def _flush_touches(self, pending: dict[tuple[tuple[str, ...], str], list[str]]) -> None:
        if pending:
            with self._bookkeeping() as connection:
                self._write_touches(connection, pending)

    def _write_touches(
        self, connection: Connection, pending: dict[tuple[tuple[str, ...], str], list[str]]
    ) -> None:
        for (scopes, moment), ids in pending.items():
            connection.execute(
                f"UPDATE {self._schema}.memory_entries SET accessed_at = %s "
                "WHERE scope = ANY(%s::text[]) AND id = ANY(%s::text[]) AND accessed_at < %s",
                [moment, list(scopes), ids, moment],
            )

    def vectors(
        self, scopes: tuple[str, ...], model: str, digests: Mapping[str, str]
    ) -> dict[str, tuple[float, ...]]:
        if not digests:
            return {}
        EntryFilter(scopes=scopes)
        with self._connection() as connection:
            rows = connection.execute(
                f"SELECT e.id, v.digest, v.vector FROM {self._schema}.memory_vectors AS v "
                f"JOIN {self._schema}.memory_entries AS e ON e.seq = v.seq "
                "WHERE v.model = %s AND e.scope = ANY(%s::text[]) AND e.id = ANY(%s::text[])",
                [model, list(scopes), list(digests)],
            ).fetchall()
        return matching_vectors(rows, digests)

    def save_vectors(
        self,
        scopes: tuple[str, ...],
        model: str,
        vectors: Mapping[str, tuple[str, Sequence[float]]],
    ) -> None:
        if not vectors:
            return
        EntryFilter(scopes=scopes)
        with self._bookkeeping() as connection, connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {self._schema}.memory_vectors (seq, model, digest, vector) "
                f"SELECT seq, %s, %s, %s FROM {self._schema}.memory_entries "
                "WHERE id = %s AND scope = ANY(%s::text[]) "
                "ON CONFLICT (seq, model) DO UPDATE "
                "SET digest = EXCLUDED.digest, vector = EXCLUDED.vector",
                [
                    [model, digest, pack_vector(vector), identifier, list(scopes)]
                    for identifier, (digest, vector) in vectors.items()
                ],
            )

    def rebuild_index(self) -> None:
        """Re-create the postings and totals from the entries: the index is derived data, so
        this is always safe, and it repairs an index that `verify` reports as damaged."""
        with self._connection() as connection, connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", [self._lock_key])
            _rebuild(connection, self._schema, self.analyzer)

    def scrub(self) -> None:
        """Make the space of deleted rows reusable at once (VACUUM of the namespace's tables)
        instead of when autovacuum comes by. PostgreSQL keeps the bytes of dead rows in its
        files until the space is reused; `VACUUM FULL`, which rewrites the tables under an
        exclusive lock, is the administrator's call, not a purge's."""
        with self._connection() as connection:
            connection.autocommit = True
            try:
                tables = connection.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s", [self._schema]
                ).fetchall()
                for (table,) in tables:
                    connection.execute(f'VACUUM {self._schema}."{table}"')
            finally:
                connection.autocommit = False

    def close(self) -> None:
        with self._touches_lock:
            pending = self._touches.drain()
        if pending:
            self._flush_touches(pending)
        with self._pool_lock:
            if self._pool is not None:
                self._pool = None
                _POOLS.release(self.database)

    # --------------------------------------------------------------------------- plumbing

    @contextmanager
    def _bookkeeping(self) -> Iterator[Connection]:
        """A write under the namespace's lock that is acknowledged before its WAL is flushed:
        lost in a crash, never torn."""
        with self._connection() as connection, connection.transaction():
            connection.execute("SET LOCAL synchronous_commit TO off")
            connection.execute("SELECT pg_advisory_xact_lock(%s)", [self._lock_key])
            yield connection

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled connection to a prepared namespace; driver errors become scrubbed
        MemoryServiceErrors naming the database by its display URI."""
        psycopg = driver()
        with self._pool_lock:
            if self._pool is None:
                self._pool = _POOLS.acquire(self.database)
            pool = self._pool
        try:
            with pool.connection() as connection:
                self._prepare(connection)
                yield connection
        except psycopg.Error as error:
            message = self.database.scrub(str(error).strip())
            raise MemoryServiceError(
                STORE_FAILURE, f"memory database {self.database.display}: {message}"
            ) from None

    def _prepare(self, connection: Connection) -> None:
        """Create the namespace on first use, check its schema version, and rebuild the index
        when it was built by another analyser: once per store, under the namespace's lock, so
        concurrent first users (in any process) create it once."""
        with self._ready_lock:
            if self._ready:
                return
            encoding = connection.info.parameter_status("server_encoding")
            if encoding != "UTF8":
                raise MemoryServiceError(
                    STORE_FAILURE,
                    f"memory database {self.database.display} is encoded {encoding}; "
                    "the memory service needs a UTF8 database",
                )
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", [self._lock_key])
                # A schema created beforehand (by an administrator, for a user who may not
                # create schemas) is used as it is.
                schema, tables = connection.execute(
                    "SELECT to_regnamespace(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL",
                    [self._schema, f"{self._schema}.memory_meta"],
                ).fetchone() or (False, False)
                if not schema:
                    connection.execute(f"CREATE SCHEMA {self._schema}")
                if not tables:
                    for statement in _SCHEMA:
                        connection.execute(statement.format(schema=self._schema))
                meta: dict[str, str] = dict(
                    connection.execute(
                        f"SELECT name, value FROM {self._schema}.memory_meta"
                    ).fetchall()
                )
                if meta.get("schema") in _UPGRADED_VERSIONS:
                    for statement in (*_VERSION_2, *_LINK_SESSIONS):
                        connection.execute(statement.format(schema=self._schema))
                    _recount(connection, self._schema)
                    connection.execute(
                        f"UPDATE {self._schema}.memory_meta SET value = %s WHERE name = 'schema'",
                        [SCHEMA_VERSION],
                    )
                    meta["schema"] = SCHEMA_VERSION
                if meta.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
                    raise MemoryServiceError(
                        STORE_FAILURE,
                        f"memory database {self.database.display} has memory schema "
                        f"{meta['schema']}; this version reads schema {SCHEMA_VERSION}",
                    )
                if meta.get("analyzer") != self.analyzer.signature:
                    _rebuild(connection, self._schema, self.analyzer)
                connection.execute(_VECTORS.format(schema=self._schema))
            self._ready = True


class _Transaction:
    """The StoreTransaction of a PostgresMemoryStore: one connection, inside a transaction
    that holds the namespace's write lock. Each write runs in a savepoint, so a StoreConflict
    undoes that write alone and the transaction goes on, as in SQLite. What the writes change
    in the BM25 totals is collected and applied when the transaction ends."""

    def __init__(self, connection: Connection, schema: str, analyzer: Analyzer) -> None:
        self._connection = connection
        self._schema = schema
        self._analyzer = analyzer
        self.totals = _Totals()

    def select(
        self,
        where: EntryFilter,
        *,
        order: Order = "updated",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Entry]:
        return _select(self._connection, self._schema, where, order, descending, limit, offset)

    def count(self, where: EntryFilter) -> int:
        return _count(self._connection, self._schema, where)

    def tally(
        self, where: EntryFilter, by: tuple[Dimension, ...], *, min_count: int = 1
    ) -> list[tuple[tuple[str | None, ...], int]]:
        return _tally(self._connection, self._schema, where, by, min_count)

    def active_entries(self, scope: str) -> int:
        row = self._connection.execute(
            f"SELECT active FROM {self._schema}.memory_scope_counts WHERE scope = %s", [scope]
        ).fetchone()
        return (int(row[0]) if row else 0) + self.totals.active[scope]

    def active_with_key(self, scope: str, key: str) -> Entry | None:
        found = self.select(EntryFilter(scopes=(scope,), key=key), limit=1)
        return found[0] if found else None

    def insert(self, entry: Entry) -> None:
        # An archived entry (the old version an update keeps) is no turn of its session: it
        # joins no chain, so its text is never a later turn's linked context.
        linked = entry.kind == "episodic" and not entry.archived
        session = entry.source.session if linked else None
        tail = None
        if session is not None:
            found = self._connection.execute(
                f"SELECT seq FROM {self._schema}.memory_session_tails "
                "WHERE scope = %s AND session = %s",
                [entry.scope, session],
            ).fetchone()
            tail = int(found[0]) if found else None
        counts, length = self._postings(entry, tail)
        parameters = {
            **entry_row(entry, list),
            **_posting_columns(counts),
            "tokens": length,
            "scope_hash": scope_hash(entry.scope),
            "previous_seq": tail,
        }
        with self._conflicts(entry):
            self._connection.execute(_INSERT.format(schema=self._schema), parameters)
        self.totals.change(1, length, added=counts)
        self.totals.count(entry.scope, 0 if entry.archived else 1)
        if session is not None:
            self._link(entry, session, tail)

    def _link(self, entry: Entry, session: str, tail: int | None) -> None:
        """Make a new episodic entry its session's last, after `tail`."""
        seq = self._connection.execute(
            f"SELECT seq FROM {self._schema}.memory_entries WHERE id = %s AND scope = %s",
            [entry.id, entry.scope],
        ).fetchone()
        if seq is None:
            return
        if tail is not None:
            self._connection.execute(
                f"UPDATE {self._schema}.memory_entries SET next_seq = %s "
                "WHERE scope = %s AND seq = %s",
                [seq[0], entry.scope, tail],
            )
        self._connection.execute(
            f"INSERT INTO {self._schema}.memory_session_tails (scope, session, seq) "
            "VALUES (%s, %s, %s) ON CONFLICT (scope, session) DO UPDATE SET seq = excluded.seq",
            [entry.scope, session, seq[0]],
        )

    def _postings(self, entry: Entry, before: int | None) -> tuple[dict[str, list[int]], int]:
        """`postings` of an entry whose session predecessor is `before`, with its linked
        context (store.py)."""
        bodies: list[str] = []
        if not entry.context and entry.kind == "episodic":
            while before is not None and len(bodies) < LINKED_CONTEXT_TURNS:
                row = self._connection.execute(
                    f"SELECT previous_seq, body FROM {self._schema}.memory_entries "
                    "WHERE scope = %s AND seq = %s",
                    [entry.scope, before],
                ).fetchone()
                if row is None:
                    break
                before, body = row
                bodies.append(body)
        return postings(entry.evolve(context=linked_context(entry, bodies)), self._analyzer)

    def _later(self, scope: str, seq: int) -> list[int]:
        """The LINKED_CONTEXT_TURNS entries after `seq` in its session: their linked context
        holds its body."""
        found: list[int] = []
        current: int | None = seq
        while current is not None and len(found) < LINKED_CONTEXT_TURNS:
            row = self._connection.execute(
                f"SELECT next_seq FROM {self._schema}.memory_entries WHERE scope = %s AND seq = %s",
                [scope, current],
            ).fetchone()
            current = int(row[0]) if row and row[0] is not None else None
            if current is not None:
                found.append(current)
        return found

    def _reindex(self, scope: str, seq: int) -> None:
        """Index an entry again (its linked context changed)."""
        row = self._connection.execute(
            f"SELECT e.tokens, e.previous_seq, {_SELECTED} FROM {self._schema}.memory_entries "
            "AS e WHERE e.scope = %s AND e.seq = %s",
            [scope, seq],
        ).fetchone()
        if row is None:
            return
        previous_length, before, entry = int(row[0]), row[1], entry_from_row(row[2:])
        counts, length = self._postings(entry, before)
        hashed = scope_hash(scope)
        removed = _unindex(self._connection, self._schema, hashed, [seq])
        _index(self._connection, self._schema, [(seq, hashed, counts)])
        self._connection.execute(
            f"UPDATE {self._schema}.memory_entries SET tokens = %s WHERE scope = %s AND seq = %s",
            [length, scope, seq],
        )
        self.totals.change(0, length - previous_length, added=counts, removed=removed)

    def replace(self, entry: Entry) -> None:
        found = self._connection.execute(
            f"SELECT e.seq, e.tokens, e.previous_seq, {_SELECTED} "
            f"FROM {self._schema}.memory_entries AS e WHERE e.id = %s AND e.scope = %s",
            [entry.id, entry.scope],
        ).fetchone()
        if found is None:
            raise StoreConflict(f"entry {entry.id} does not exist in scope {entry.scope}")
        seq, previous_length, before = int(found[0]), int(found[1]), found[2]
        previous = entry_from_row(found[3:])
        values = entry_row(entry, list)
        assignments = ", ".join(
            f"{name} = {_placeholder(name)}" for name in values if name not in ("id", "scope")
        )
        reindex = indexed_text(previous) != indexed_text(entry)
        counts, length = self._postings(entry, before) if reindex else ({}, previous_length)
        hashed = scope_hash(entry.scope)
        removed: list[str] = []
        with self._conflicts(entry):
            self._connection.execute(
                f"UPDATE {self._schema}.memory_entries SET {assignments}, tokens = %(tokens)s "
                "WHERE seq = %(seq)s AND scope = %(scope)s",
                {**values, "tokens": length, "seq": seq},
            )
            if reindex:
                removed = _unindex(self._connection, self._schema, hashed, [seq])
                _index(self._connection, self._schema, [(seq, hashed, counts)])
                self._connection.execute(
                    f"DELETE FROM {self._schema}.memory_vectors WHERE seq IN (SELECT seq FROM "
                    f"{self._schema}.memory_entries WHERE seq = %s AND scope = %s)",
                    [seq, entry.scope],
                )
        self.totals.change(0, length - previous_length, added=counts, removed=removed)
        self.totals.count(entry.scope, int(previous.archived) - int(entry.archived))
        if reindex and previous.body != entry.body:
            for later in self._later(entry.scope, seq):
                self._reindex(entry.scope, later)

    def delete(self, scope: str, ids: tuple[str, ...]) -> int:
        if not ids:
            return 0
        doomed = self._connection.execute(
            f"SELECT seq, tokens, archived FROM {self._schema}.memory_entries "
            "WHERE scope = %s AND id = ANY(%s::text[])",
            [scope, list(ids)],
        ).fetchall()
        if not doomed:
            return 0
        seqs = [seq for seq, _, _ in doomed]
        removed = _unindex(self._connection, self._schema, scope_hash(scope), seqs)
        later = {other for seq in seqs for other in self._later(scope, seq)} - set(seqs)
        for seq in seqs:
            self._unlink(scope, seq)
        self._connection.execute(
            f"DELETE FROM {self._schema}.memory_entries WHERE scope = %s AND seq = ANY(%s)",
            [scope, seqs],
        )
        self.totals.change(-len(doomed), -sum(tokens for _, tokens, _ in doomed), removed=removed)
        self.totals.count(scope, -sum(1 for _, _, archived in doomed if not archived))
        for seq in sorted(later):
            self._reindex(scope, seq)
        return len(doomed)

    def _unlink(self, scope: str, seq: int) -> None:
        """Take an entry out of its session's chain, joining its neighbours to each other."""
        row = self._connection.execute(
            f"SELECT previous_seq, next_seq, session FROM {self._schema}.memory_entries "
            "WHERE scope = %s AND seq = %s",
            [scope, seq],
        ).fetchone()
        if row is None:
            return
        previous, following, session = row
        entries = f"{self._schema}.memory_entries"
        if previous is not None:
            self._connection.execute(
                f"UPDATE {entries} SET next_seq = %s WHERE scope = %s AND seq = %s",
                [following, scope, previous],
            )
        if following is not None:
            self._connection.execute(
                f"UPDATE {entries} SET previous_seq = %s WHERE scope = %s AND seq = %s",
                [previous, scope, following],
            )
        tails = f"{self._schema}.memory_session_tails"
        if session is not None and previous is None:
            self._connection.execute(
                f"DELETE FROM {tails} WHERE scope = %s AND session = %s AND seq = %s",
                [scope, session, seq],
            )
        elif session is not None:
            self._connection.execute(
                f"UPDATE {tails} SET seq = %s WHERE scope = %s AND session = %s AND seq = %s",
                [previous, scope, session, seq],
            )

    @contextmanager
    def _conflicts(self, entry: Entry) -> Iterator[None]:
        """Run a write in a savepoint; a unique violation becomes a StoreConflict."""
        unique_violation = driver().errors.UniqueViolation
        try:
            with self._connection.transaction():
                yield
        except unique_violation as error:
            constraint = error.diag.constraint_name
            if constraint == "memory_entries_active_key":
                message = f"scope {entry.scope} already has an active entry with key {entry.key!r}"
            elif constraint == "memory_entries_active_summary":
                message = (
                    f"scope {entry.scope} already has an active {entry.level} summary for "
                    f"bucket {entry.bucket}"
                )
            elif constraint == "memory_entries_id":
                message = f"an entry with id {entry.id} already exists"
            else:
                raise
            raise StoreConflict(message) from None


# ------------------------------------------------------------------------------- helpers


def _posting_columns(counts: dict[str, list[int]]) -> dict[str, list[Any]]:
    """Postings as the parallel arrays the insert statements unnest."""
    columns: dict[str, list[Any]] = {"terms": list(counts)}
    for position, name in enumerate(INDEXED_FIELDS):
        columns[f"in_{name}"] = [per_field[position] for per_field in counts.values()]
    return columns


class _Totals:
    """Changes to the numbers BM25 reads (entries, tokens, entries per term), collected over a
    transaction and written once at its end: a row updated many times in one transaction
    makes each update slower than the last, which would make a large import quadratic."""

    def __init__(self) -> None:
        self.documents = 0
        self.tokens = 0
        self.terms: Counter[str] = Counter()
        # Change in the active entries of each scope.
        self.active: Counter[str] = Counter()

    def count(self, scope: str, change: int) -> None:
        self.active[scope] += change

    def change(
        self,
        documents: int,
        tokens: int,
        *,
        added: Iterable[str] = (),
        removed: Iterable[str] = (),
    ) -> None:
        self.documents += documents
        self.tokens += tokens
        for term in added:
            self.terms[term] += 1
        for term in removed:
            self.terms[term] -= 1

    def apply(self, connection: Connection, schema: str) -> None:
        """Write the changes; a term no entry holds any more is deleted, so a purged word
        leaves no trace in the index."""
        changed = {term: delta for term, delta in self.terms.items() if delta}
        if changed:
            connection.execute(
                f"INSERT INTO {schema}.memory_terms AS t (term, documents) "
                "SELECT * FROM unnest(%s::text[], %s::bigint[]) "
                "ON CONFLICT (term) DO UPDATE SET documents = t.documents + excluded.documents",
                [list(changed), list(changed.values())],
            )
            fewer = [term for term, delta in changed.items() if delta < 0]
            if fewer:
                connection.execute(
                    f"DELETE FROM {schema}.memory_terms "
                    "WHERE term = ANY(%s::text[]) AND documents = 0",
                    [fewer],
                )
        if self.documents or self.tokens:
            connection.execute(
                f"UPDATE {schema}.memory_stats "
                "SET documents = documents + %s, tokens = tokens + %s",
                [self.documents, self.tokens],
            )
        counted = {scope: change for scope, change in self.active.items() if change}
        if counted:
            connection.execute(
                f"INSERT INTO {schema}.memory_scope_counts AS c (scope, active) "
                "SELECT * FROM unnest(%s::text[], %s::bigint[]) "
                "ON CONFLICT (scope) DO UPDATE SET active = c.active + excluded.active",
                [list(counted), list(counted.values())],
            )


def _index(
    connection: Connection,
    schema: str,
    entries: Sequence[tuple[int, int, dict[str, list[int]]]],
) -> None:
    """Add the postings of (seq, scope hash, counts) triples in one statement."""
    merged: dict[str, list[Any]] = {"terms": [], "scope_hashes": [], "seqs": []}
    merged |= {f"in_{name}": [] for name in INDEXED_FIELDS}
    for seq, hashed, counts in entries:
        for name, values in _posting_columns(counts).items():
            merged[name].extend(values)
        merged["scope_hashes"].extend([hashed] * len(counts))
        merged["seqs"].extend([seq] * len(counts))
    if merged["terms"]:
        connection.execute(_INDEX.format(schema=schema), merged)


def _unindex(connection: Connection, schema: str, hashed: int, seqs: list[int]) -> list[str]:
    """Delete the postings of these entries (of one scope); returns their terms."""
    rows = connection.execute(
        f"DELETE FROM {schema}.memory_postings "
        "WHERE seq = ANY(%s::bigint[]) AND scope_hash = %s RETURNING term",
        [seqs, hashed],
    ).fetchall()
    return [term for (term,) in rows]


def _rebuild(connection: Connection, schema: str, analyzer: Analyzer) -> None:
    """Index every entry again with `analyzer` and record its signature (inside a write)."""
    connection.execute(f"DELETE FROM {schema}.memory_postings")
    connection.execute(f"DELETE FROM {schema}.memory_terms")
    connection.execute(f"UPDATE {schema}.memory_stats SET documents = 0, tokens = 0")
    rows = connection.execute(
        f"SELECT e.seq, e.previous_seq, {_SELECTED} FROM {schema}.memory_entries AS e "
        "ORDER BY e.seq"
    ).fetchall()
    entries = [(int(row[0]), row[1], entry_from_row(row[2:])) for row in rows]
    chain = {seq: (before, entry.body) for seq, before, entry in entries}
    indexed: list[tuple[int, int, dict[str, list[int]]]] = []
    lengths: list[int] = []
    totals = _Totals()
    for seq, before, entry in entries:
        context = linked_context(entry, bodies_before(before, chain))
        counts, length = postings(entry.evolve(context=context), analyzer)
        indexed.append((seq, scope_hash(entry.scope), counts))
        lengths.append(length)
        totals.change(1, length, added=counts)
    for start in range(0, len(indexed), STREAM_ROWS):
        _index(connection, schema, indexed[start : start + STREAM_ROWS])
    connection.execute(
        f"UPDATE {schema}.memory_entries AS e SET tokens = v.tokens "
        "FROM unnest(%s::bigint[], %s::int[]) AS v (seq, tokens) WHERE e.seq = v.seq",
        [[seq for seq, _, _ in indexed], lengths],
    )
    totals.apply(connection, schema)
    _recount(connection, schema)
    connection.execute(
        f"INSERT INTO {schema}.memory_meta (name, value) VALUES (%s, %s), (%s, %s) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        ["schema", SCHEMA_VERSION, "analyzer", analyzer.signature],
    )


def _recount(connection: Connection, schema: str) -> None:
    """Count the active entries of every scope again (derived data, like the index)."""
    connection.execute(f"DELETE FROM {schema}.memory_scope_counts")
    connection.execute(
        f"INSERT INTO {schema}.memory_scope_counts (scope, active) "
        f"SELECT scope, count(*) FROM {schema}.memory_entries WHERE archived = 0 GROUP BY scope"
    )


def _where(where: EntryFilter) -> tuple[str, dict[str, Any]]:
    """The SQL condition of a filter over `e`, with named parameters; the scope predicate
    always comes first."""
    clauses = ["e.scope = ANY(%(w_scopes)s::text[])"]
    parameters: dict[str, Any] = {"w_scopes": list(where.scopes)}
    if where.ids is not None:
        clauses.append("e.id = ANY(%(w_ids)s::text[])" if where.ids else "FALSE")
        parameters["w_ids"] = list(where.ids)
    if where.kinds is not None:
        clauses.append("e.kind = ANY(%(w_kinds)s::text[])" if where.kinds else "FALSE")
        parameters["w_kinds"] = list(where.kinds)
    if where.levels is not None:
        named = [level for level in where.levels if level is not None]
        options = ["e.level = ANY(%(w_levels)s::text[])"] if named else []
        if None in where.levels:
            options.append("e.level IS NULL")
        clauses.append(f"({' OR '.join(options)})" if options else "FALSE")
        parameters["w_levels"] = named
    if where.tags:
        clauses.append("e.tags @> %(w_tags)s::text[]")
        parameters["w_tags"] = list(where.tags)
    if where.key is not None:
        clauses.append("e.key = %(w_key)s")
        parameters["w_key"] = where.key
    if where.keyed is not None:
        clauses.append(f"e.key IS {'NOT ' if where.keyed else ''}NULL")
    if where.keys is not None:
        clauses.append("e.key = ANY(%(w_keys)s::text[])" if where.keys else "FALSE")
        parameters["w_keys"] = list(where.keys)
    if where.title_norm is not None:
        clauses.append("e.title_norm = %(w_title_norm)s")
        parameters["w_title_norm"] = where.title_norm
    if where.title_norms is not None:
        clauses.append(
            "e.title_norm = ANY(%(w_title_norms)s::text[])" if where.title_norms else "FALSE"
        )
        parameters["w_title_norms"] = list(where.title_norms)
    if where.since is not None:
        clauses.append("e.event_time >= %(w_since)s")
        parameters["w_since"] = where.since
    if where.until is not None:
        clauses.append("e.event_time < %(w_until)s")
        parameters["w_until"] = where.until
    if where.bucket is not None:
        level, key = where.bucket
        clauses.append(f"{_DIMENSIONS[level]} = %(w_bucket)s")
        parameters["w_bucket"] = key
    if where.archived is not None:
        clauses.append("e.archived = %(w_archived)s")
        parameters["w_archived"] = int(where.archived)
    # Only named placeholders for the values: a literal percent sign cannot appear.
    return " AND ".join(clauses), parameters


def _select(
    connection: Connection,
    schema: str,
    where: EntryFilter,
    order: Order,
    descending: bool,
    limit: int | None,
    offset: int,
) -> list[Entry]:
    clause, parameters = _where(where)
    direction = "DESC" if descending else "ASC"
    # SQLite reads a negative LIMIT as none and a negative OFFSET as zero; so does this.
    parameters |= {
        "limit": None if limit is None or limit < 0 else limit,
        "offset": max(offset, 0),
    }
    rows = connection.execute(
        f"SELECT {_SELECTED} FROM {schema}.memory_entries AS e WHERE {clause} "
        f"ORDER BY e.{_ORDERS[order]} {direction}, e.id {direction} "
        "LIMIT %(limit)s OFFSET %(offset)s",
        parameters,
    ).fetchall()
    return [entry_from_row(row) for row in rows]


def _count(connection: Connection, schema: str, where: EntryFilter) -> int:
    clause, parameters = _where(where)
    row = connection.execute(
        f"SELECT count(*) FROM {schema}.memory_entries AS e WHERE {clause}", parameters
    ).fetchone()
    return int(row[0]) if row else 0


def _tally(
    connection: Connection,
    schema: str,
    where: EntryFilter,
    by: tuple[Dimension, ...],
    min_count: int,
) -> list[tuple[tuple[str | None, ...], int]]:
    clause, parameters = _where(where)
    columns = ", ".join(_DIMENSIONS[dimension] for dimension in by)
    # SQLite sorts NULL below every value, so NULL groups come last when sorting descending.
    ordering = ", ".join(f"{index + 1} DESC NULLS LAST" for index in range(len(by)))
    rows = connection.execute(
        f"SELECT {columns}, count(*) FROM {schema}.memory_entries AS e WHERE {clause} "
        f"GROUP BY {columns} HAVING count(*) >= %(min_count)s ORDER BY {ordering}",
        {**parameters, "min_count": min_count},
    ).fetchall()
    return [(tuple(row[:-1]), int(row[-1])) for row in rows]
