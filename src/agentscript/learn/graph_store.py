"""Where the task graph is kept: nodes, edges and tool links, behind one Protocol.

The SQLite store shares the journal's file (`runs.db`) but has its own tables and connection.
Weight updates are read-modify-write inside one write transaction with the maths handed in by
the graph, so two processes strengthening the same node never lose an update. What spans
several calls (deciding whether a lesson is new, then storing it) takes one of the store's
named cross-process locks (`lock`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from agentscript.learn.graph import Edge, EdgeType, Node, NodeType, ToolLink
from agentscript.learn.journal_store import JournalError, dumps, prepare_schema
from agentscript.learn.locks import file_lock
from agentscript.providers.storage.sqlite_files import SqliteFile

EdgeKey = tuple[str, str, str]
WeightStep = Callable[[float, float], tuple[float, float]]
LinkStep = Callable[[ToolLink | None, str, str, float], ToolLink]


class GraphStore(Protocol):
    def transaction(self) -> AbstractContextManager[None]:
        """Make every write in the body of a `with` one transaction (one commit)."""
        ...

    def add(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> tuple[set[str], set[EdgeKey]]:
        """Insert what is not there yet; answer the ids of the nodes and edges inserted. Every
        edge with a run id belongs to that run (a key is never shared between runs)."""
        ...

    def node(self, node_id: str) -> Node | None: ...

    def nodes(self, node_type: NodeType | None, run_id: str | None) -> list[Node]:
        """Ordered by run id (run ids sort by start time), then `seq`; shared nodes last."""
        ...

    def edges(
        self,
        *,
        source: str | None = None,
        target: str | None = None,
        edge_type: EdgeType | None = None,
        run_id: str | None = None,
    ) -> list[Edge]: ...

    def set_metadata(self, node_id: str, metadata: Mapping[str, Any]) -> None:
        """Merge keys into a node's metadata."""
        ...

    def update_node_weights(self, steps: Mapping[str, WeightStep]) -> None:
        """Apply each step to (weight, weight_at) of its node, atomically."""
        ...

    def record_tool_pairs(
        self, run_id: str, pairs: Sequence[tuple[str, str, float]], step: LinkStep
    ) -> int:
        """Strengthen each pair's link once per run (a pair already recorded for the run is
        skipped); answer how many links were strengthened."""
        ...

    def tool_links(self, tool: str | None) -> list[ToolLink]: ...

    def node_weights(self) -> Iterator[tuple[str, str, float, float]]:
        """(node_id, node_type, weight, weight_at) of every node."""
        ...

    def edge_weights(self) -> Iterator[tuple[EdgeKey, float, float, float | None]]:
        """(key, weight, weight_at, half_life) of every edge."""
        ...

    def remove(
        self, node_ids: Sequence[str], edges: Sequence[EdgeKey], links: Sequence[tuple[str, str]]
    ) -> int:
        """Remove nodes with every edge touching them, the edges and the links given; answer
        how many edges went."""
        ...

    def claim_upkeep(self, name: str, now: float, every: float) -> bool:
        """Whether upkeep `name` is due (never ran, or `every` seconds have passed); a due
        claim records `now` atomically, so one process among many does it."""
        ...

    def lock(
        self, name: str, *, timeout: float, stale_after: float
    ) -> AbstractContextManager[None]:
        """Hold the cross-process lock `name` of this store for the body of a `with`: one
        holder at a time among every process that uses the same store. Raises LockTimeout
        after `timeout` seconds; a holder older than `stale_after` seconds counts as crashed."""
        ...

    def close(self) -> None: ...


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS graph_nodes (
        node_id TEXT PRIMARY KEY,
        node_type TEXT NOT NULL,
        run_id TEXT,
        seq INTEGER NOT NULL,
        label TEXT NOT NULL,
        created_at REAL NOT NULL,
        weight REAL NOT NULL,
        weight_at REAL NOT NULL,
        metadata_json TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS graph_nodes_type ON graph_nodes (node_type, run_id, seq)",
    "CREATE INDEX IF NOT EXISTS graph_nodes_run ON graph_nodes (run_id, seq)",
    """CREATE TABLE IF NOT EXISTS graph_edges (
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        edge_type TEXT NOT NULL,
        run_id TEXT,
        created_at REAL NOT NULL,
        weight REAL NOT NULL,
        weight_at REAL NOT NULL,
        half_life REAL,
        metadata_json TEXT NOT NULL,
        PRIMARY KEY (source, target, edge_type)
    )""",
    "CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges (target, edge_type)",
    "CREATE INDEX IF NOT EXISTS graph_edges_run ON graph_edges (run_id)",
    """CREATE TABLE IF NOT EXISTS tool_links (
        first TEXT NOT NULL,
        second TEXT NOT NULL,
        weight REAL NOT NULL,
        weight_at REAL NOT NULL,
        activations INTEGER NOT NULL,
        PRIMARY KEY (first, second)
    )""",
    # When each periodic upkeep (decay and pruning) last ran, so it runs once per period.
    """CREATE TABLE IF NOT EXISTS graph_upkeep (
        name TEXT PRIMARY KEY,
        at REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS tool_pair_runs (
        run_id TEXT NOT NULL,
        first TEXT NOT NULL,
        second TEXT NOT NULL,
        PRIMARY KEY (run_id, first, second)
    )""",
)

_NODE_COLUMNS = (
    "node_id, node_type, run_id, seq, label, created_at, weight, weight_at, metadata_json"
)
_EDGE_COLUMNS = (
    "source, target, edge_type, run_id, created_at, weight, weight_at, half_life, metadata_json"
)


class SqliteGraphStore:
    """A GraphStore in the journal's SQLite file; reading never creates the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = SqliteFile(
            self.path,
            prepare_schema(_SCHEMA),
            lambda error: JournalError(f"Task graph {self.path}: {error}"),
            synchronous="NORMAL",
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._file.writing():
            yield

    def add(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> tuple[set[str], set[EdgeKey]]:
        with self._file.writing() as connection:
            known_nodes = _existing(
                connection,
                "SELECT node_id FROM graph_nodes WHERE node_id IN ({})",
                [node.node_id for node in nodes],
            )
            new_nodes = {node.node_id: node for node in nodes if node.node_id not in known_nodes}
            connection.executemany(
                f"INSERT INTO graph_nodes ({_NODE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                [_node_row(node) for node in new_nodes.values()],
            )
            known_edges: set[EdgeKey] = set()
            for run_id in sorted({edge.run_id for edge in edges if edge.run_id is not None}):
                known_edges.update(
                    connection.execute(
                        "SELECT source, target, edge_type FROM graph_edges WHERE run_id = ?",
                        (run_id,),
                    ).fetchall()
                )
            new_edges = {edge.key: edge for edge in edges if edge.key not in known_edges}
            connection.executemany(
                f"INSERT INTO graph_edges ({_EDGE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                [_edge_row(edge) for edge in new_edges.values()],
            )
        return set(new_nodes), set(new_edges)

    def node(self, node_id: str) -> Node | None:
        with self._file.reading() as connection:
            if connection is None:
                return None
            row = connection.execute(
                f"SELECT {_NODE_COLUMNS} FROM graph_nodes WHERE node_id = ?", (node_id,)
            ).fetchone()
        return _node(row) if row is not None else None

    def nodes(self, node_type: NodeType | None, run_id: str | None) -> list[Node]:
        conditions: list[str] = []
        parameters: list[Any] = []
        if node_type is not None:
            conditions.append("node_type = ?")
            parameters.append(node_type.value)
        if run_id is not None:
            conditions.append("run_id = ?")
            parameters.append(run_id)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        with self._file.reading() as connection:
            if connection is None:
                return []
            rows = connection.execute(
                f"SELECT {_NODE_COLUMNS} FROM graph_nodes{where} "
                "ORDER BY run_id IS NULL, run_id, seq, node_id",
                parameters,
            ).fetchall()
        return [_node(row) for row in rows]

    def edges(
        self,
        *,
        source: str | None = None,
        target: str | None = None,
        edge_type: EdgeType | None = None,
        run_id: str | None = None,
    ) -> list[Edge]:
        conditions: list[str] = []
        parameters: list[Any] = []
        for column, value in (("source", source), ("target", target), ("run_id", run_id)):
            if value is not None:
                conditions.append(f"{column} = ?")
                parameters.append(value)
        if edge_type is not None:
            conditions.append("edge_type = ?")
            parameters.append(edge_type.value)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        with self._file.reading() as connection:
            if connection is None:
                return []
            rows = connection.execute(
                f"SELECT {_EDGE_COLUMNS} FROM graph_edges{where} "
                "ORDER BY created_at, source, target, edge_type",
                parameters,
            ).fetchall()
        return [_edge(row) for row in rows]

    def claim_upkeep(self, name: str, now: float, every: float) -> bool:
        with self._file.writing() as connection:
            row = connection.execute(
                "SELECT at FROM graph_upkeep WHERE name = ?", (name,)
            ).fetchone()
            if row is not None and now - float(row[0]) < every:
                return False
            connection.execute(
                "INSERT INTO graph_upkeep (name, at) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET at = excluded.at",
                (name, now),
            )
            return True

    def set_metadata(self, node_id: str, metadata: Mapping[str, Any]) -> None:
        with self._file.writing() as connection:
            row = connection.execute(
                "SELECT metadata_json FROM graph_nodes WHERE node_id = ?", (node_id,)
            ).fetchone()
            if row is None:
                return
            merged = {**json.loads(row[0]), **metadata}
            connection.execute(
                "UPDATE graph_nodes SET metadata_json = ? WHERE node_id = ?",
                (dumps(merged), node_id),
            )

    def update_node_weights(self, steps: Mapping[str, WeightStep]) -> None:
        with self._file.writing() as connection:
            for node_id, step in steps.items():
                row = connection.execute(
                    "SELECT weight, weight_at FROM graph_nodes WHERE node_id = ?", (node_id,)
                ).fetchone()
                if row is None:
                    continue
                weight, weight_at = step(row[0], row[1])
                connection.execute(
                    "UPDATE graph_nodes SET weight = ?, weight_at = ? WHERE node_id = ?",
                    (weight, weight_at, node_id),
                )

    def record_tool_pairs(
        self, run_id: str, pairs: Sequence[tuple[str, str, float]], step: LinkStep
    ) -> int:
        strengthened = 0
        with self._file.writing() as connection:
            for first, second, at in pairs:
                inserted = connection.execute(
                    "INSERT OR IGNORE INTO tool_pair_runs (run_id, first, second) VALUES (?,?,?)",
                    (run_id, first, second),
                ).rowcount
                if not inserted:
                    continue
                row = connection.execute(
                    "SELECT first, second, weight, weight_at, activations FROM tool_links "
                    "WHERE first = ? AND second = ?",
                    (first, second),
                ).fetchone()
                link = step(ToolLink(*row) if row is not None else None, first, second, at)
                connection.execute(
                    "INSERT OR REPLACE INTO tool_links (first, second, weight, weight_at, "
                    "activations) VALUES (?,?,?,?,?)",
                    (link.first, link.second, link.weight, link.weight_at, link.activations),
                )
                strengthened += 1
        return strengthened

    def tool_links(self, tool: str | None) -> list[ToolLink]:
        with self._file.reading() as connection:
            if connection is None:
                return []
            query = "SELECT first, second, weight, weight_at, activations FROM tool_links"
            if tool is None:
                rows = connection.execute(query + " ORDER BY first, second").fetchall()
            else:
                rows = connection.execute(
                    query + " WHERE first = ? OR second = ? ORDER BY first, second", (tool, tool)
                ).fetchall()
        return [ToolLink(*row) for row in rows]

    def node_weights(self) -> Iterator[tuple[str, str, float, float]]:
        with self._file.reading() as connection:
            if connection is None:
                return
            rows = connection.execute(
                "SELECT node_id, node_type, weight, weight_at FROM graph_nodes"
            ).fetchall()
        yield from rows

    def edge_weights(self) -> Iterator[tuple[EdgeKey, float, float, float | None]]:
        with self._file.reading() as connection:
            if connection is None:
                return
            rows = connection.execute(
                "SELECT source, target, edge_type, weight, weight_at, half_life FROM graph_edges "
                "WHERE half_life IS NOT NULL"
            ).fetchall()
        for source, target, edge_type, weight, weight_at, half_life in rows:
            yield (source, target, edge_type), weight, weight_at, half_life

    def remove(
        self, node_ids: Sequence[str], edges: Sequence[EdgeKey], links: Sequence[tuple[str, str]]
    ) -> int:
        if not (node_ids or edges or links):
            return 0
        with self._file.writing() as connection:
            before = connection.total_changes
            connection.executemany(
                "DELETE FROM graph_edges WHERE source = ? AND target = ? AND edge_type = ?", edges
            )
            for node_id in node_ids:
                connection.execute(
                    "DELETE FROM graph_edges WHERE source = ? OR target = ?", (node_id, node_id)
                )
            removed_edges = connection.total_changes - before
            connection.executemany(
                "DELETE FROM graph_nodes WHERE node_id = ?", [(node_id,) for node_id in node_ids]
            )
            connection.executemany("DELETE FROM tool_links WHERE first = ? AND second = ?", links)
        return removed_edges

    def lock(
        self, name: str, *, timeout: float, stale_after: float
    ) -> AbstractContextManager[None]:
        """A lock file beside the database (`runs.db.<name>.lock`), see learn/locks.py."""
        path = self.path.with_name(f"{self.path.name}.{name}.lock")
        return file_lock(path, timeout=timeout, stale_after=stale_after)

    def close(self) -> None:
        self._file.close()


def _existing(connection: sqlite3.Connection, query: str, keys: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        rows = connection.execute(query.format(",".join("?" * len(chunk))), chunk)
        found.update(str(row[0]) for row in rows)
    return found


def _node_row(node: Node) -> tuple[Any, ...]:
    return (
        node.node_id,
        node.node_type.value,
        node.run_id,
        node.seq,
        node.label,
        node.created_at,
        node.weight,
        node.weight_at,
        dumps(node.metadata),
    )


def _node(row: tuple[Any, ...]) -> Node:
    node_id, node_type, run_id, seq, label, created_at, weight, weight_at, metadata_json = row
    return Node(
        node_id,
        NodeType(node_type),
        run_id,
        seq,
        label,
        created_at,
        weight,
        weight_at,
        json.loads(metadata_json),
    )


def _edge_row(edge: Edge) -> tuple[Any, ...]:
    return (
        edge.source,
        edge.target,
        edge.edge_type.value,
        edge.run_id,
        edge.created_at,
        edge.weight,
        edge.weight_at,
        edge.half_life,
        dumps(edge.metadata),
    )


def _edge(row: tuple[Any, ...]) -> Edge:
    source, target, edge_type, run_id, created_at, weight, weight_at, half_life, metadata = row
    return Edge(
        source,
        target,
        EdgeType(edge_type),
        run_id,
        created_at,
        weight,
        weight_at,
        half_life,
        json.loads(metadata),
    )
