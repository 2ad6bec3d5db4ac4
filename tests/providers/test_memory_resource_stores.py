"""What each backend promises beyond the shared rules: locations, file format, crash leftovers,
schema, credentials, and SQL that no value can change."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentscript.app.memory_resources import repair
from agentscript.providers.memory.jsonl import repair_jsonl
from agentscript.providers.memory.locations import scrub_uri
from agentscript.providers.memory.router import MemoryRouter
from agentscript.providers.memory.store import MemoryStoreError
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import MemoryRequest

if TYPE_CHECKING:
    from memory_support import MemoryBackend

pytest_plugins = ["memory_support"]


def add(router: MemoryRouter, uri: str, record: Any) -> Any:
    return router.add(MemoryRequest("M", uri, "add", record))


def query(router: MemoryRouter, uri: str, argument: Any) -> Any:
    return router.query(MemoryRequest("M", uri, "query", argument))


# ---------------------------------------------------------------------- locations


def test_relative_paths_resolve_against_the_program_directory(tmp_path: Path) -> None:
    program_dir = tmp_path / "agents"
    router = MemoryRouter(tmp_path, program_dir)
    add(router, "file://./.agentscript/lessons.jsonl", {"text": "a"})
    add(router, "sqlite://data/memory.db#runs", {"text": "b"})
    add(router, "file://with%20space.jsonl", {"text": "c"})
    router.close()
    assert (program_dir / ".agentscript" / "lessons.jsonl").is_file()
    assert (program_dir / "data" / "memory.db").is_file()
    assert (program_dir / "with space.jsonl").is_file()


def test_without_a_program_directory_relative_paths_use_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    router = MemoryRouter(tmp_path)
    add(router, "file://notes.jsonl", {"text": "a"})
    router.close()
    assert (tmp_path / "notes.jsonl").is_file()


@pytest.mark.parametrize(
    "uri", ["file://../outside.jsonl", "sqlite://../outside.db#ns", "file:///etc/memory.jsonl"]
)
def test_paths_outside_the_workspace_root_are_refused(tmp_path: Path, uri: str) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    router = MemoryRouter(root, root)
    target = os.path.abspath(root / uri.split("://")[1].split("#")[0])
    expected = f"Memory path '{target}' is outside workspace root '{root}'"
    for call in (add, query):
        with pytest.raises(ExecutionError) as caught:
            call(router, uri, {})
        assert str(caught.value) == expected
    assert sorted(path.name for path in tmp_path.iterdir()) == ["workspace"]


def test_a_symlink_cannot_lead_outside_the_workspace_root(tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    router = MemoryRouter(root, root)
    with pytest.raises(ExecutionError, match="is outside workspace root"):
        add(router, "file://link/notes.jsonl", {"text": "escaped"})
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("uri", "scheme"), [("redis://host/0", "redis"), ("notes.jsonl", "notes.jsonl")]
)
def test_unknown_schemes_are_refused(tmp_path: Path, uri: str, scheme: str) -> None:
    router = MemoryRouter(tmp_path, tmp_path)
    with pytest.raises(ExecutionError, match=rf"^Unsupported memory URI scheme '{scheme}'$"):
        add(router, uri, {})


# ---------------------------------------------------------------------- JSONL


def test_each_add_appends_one_json_line(tmp_path: Path) -> None:
    router = MemoryRouter(tmp_path, tmp_path)
    first = add(router, "file://m.jsonl", {"kind": "lesson", "text": "ünï"})
    second = add(router, "file://m.jsonl", {"n": 1.5})
    lines = (tmp_path / "m.jsonl").read_text(encoding="utf-8").split("\n")
    assert lines[2:] == [""]
    assert [json.loads(line) for line in lines[:2]] == [first, second]
    assert lines[0] == (
        f'{{"id":"{first["id"]}","created_at":"{first["created_at"]}",'
        f'"updated_at":"{first["updated_at"]}","record":{{"kind":"lesson","text":"ünï"}}}}'
    )


def test_blank_lines_and_crlf_endings_are_read(tmp_path: Path) -> None:
    envelope = {"id": "a", "created_at": "x", "updated_at": "x", "record": {"text": "ok"}}
    (tmp_path / "m.jsonl").write_bytes(b"\r\n  \n" + json.dumps(envelope).encode() + b"\r\n\n")
    router = MemoryRouter(tmp_path, tmp_path)
    assert query(router, "file://m.jsonl", {}) == [envelope]


def test_a_bad_line_is_reported_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    router = MemoryRouter(tmp_path, tmp_path)
    add(router, "file://m.jsonl", {"text": "good"})
    with path.open("a") as file:
        file.write("\n{not json}\n")
    with pytest.raises(MemoryStoreError) as caught:
        query(router, "file://m.jsonl", {})
    assert str(caught.value).startswith(f"Invalid memory JSONL at {path}:3: ")


@pytest.mark.parametrize(
    "line",
    [
        '{"id": 1, "created_at": "x", "updated_at": "x", "record": {}}',
        '{"id": "a", "created_at": "x", "updated_at": "x", "record": []}',
        '{"id": "a", "created_at": "x", "record": {}}',
        '["not", "an", "object"]',
    ],
)
def test_a_line_that_is_not_an_envelope_is_reported(tmp_path: Path, line: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(line + "\n")
    router = MemoryRouter(tmp_path, tmp_path)
    with pytest.raises(MemoryStoreError, match=r"^Invalid memory JSONL envelope at .*m\.jsonl:1$"):
        query(router, "file://m.jsonl", {})


def test_a_torn_last_line_is_reported_never_dropped(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    router = MemoryRouter(tmp_path, tmp_path)
    add(router, "file://m.jsonl", {"text": "one"})
    add(router, "file://m.jsonl", {"text": "two"})
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 20])  # a crash in the middle of the second append
    with pytest.raises(MemoryStoreError, match=rf"^Invalid memory JSONL at {path}:2: "):
        query(router, "file://m.jsonl", {})


def test_an_add_after_a_torn_line_starts_on_a_fresh_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    router = MemoryRouter(tmp_path, tmp_path)
    add(router, "file://m.jsonl", {"text": "one"})
    with path.open("ab") as file:
        file.write(b'{"id":"torn","created_at":"2026-')
    third = add(router, "file://m.jsonl", {"text": "three"})
    lines = path.read_bytes().split(b"\n")
    assert lines[1] == b'{"id":"torn","created_at":"2026-'
    assert json.loads(lines[2]) == third
    with pytest.raises(MemoryStoreError, match=rf"^Invalid memory JSONL at {path}:2: "):
        query(router, "file://m.jsonl", {})


def test_repair_moves_unreadable_lines_aside_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    router = MemoryRouter(tmp_path, tmp_path)
    first = add(router, "file://m.jsonl", {"text": "one"})
    with path.open("ab") as file:
        file.write(b'{"id": 7}\n\xff\xfe bytes\n{"torn')
    second = add(router, "file://m.jsonl", {"text": "two"})
    report = repair_jsonl(path)
    assert (report.kept, report.moved, report.corrupt_path) == (
        2,
        (2, 3, 4),
        Path(f"{path}.corrupt"),
    )
    assert query(router, "file://m.jsonl", {}) == [second, first]
    moved = [json.loads(line) for line in Path(f"{path}.corrupt").read_text().splitlines()]
    assert [(entry["line"], entry["text"]) for entry in moved] == [
        (2, '{"id": 7}'),
        (3, "\\xff\\xfe bytes"),
        (4, '{"torn'),
    ]
    assert moved[0]["problem"] == f"Invalid memory JSONL envelope at {path}:2"
    assert moved[2]["problem"].startswith(f"Invalid memory JSONL at {path}:4: ")
    assert repair(f"file://{path}").moved == ()  # nothing left to move; the file is untouched


def test_repair_of_a_clean_or_missing_file_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    assert repair_jsonl(path).kept == 0
    assert not path.exists()
    router = MemoryRouter(tmp_path, tmp_path)
    add(router, "file://m.jsonl", {"text": "one"})
    before = path.stat()
    assert repair(str(path)).kept == 1
    assert path.stat().st_ino == before.st_ino
    assert not Path(f"{path}.corrupt").exists()


def test_repair_only_takes_jsonl_files(tmp_path: Path) -> None:
    with pytest.raises(
        ExecutionError, match=r"^Only JSONL memory files \(file://\) can be repaired$"
    ):
        repair(f"sqlite://{tmp_path}/m.db")


# ---------------------------------------------------------------------- SQLite


def test_sqlite_keeps_the_reference_schema_in_wal_mode(tmp_path: Path) -> None:
    router = MemoryRouter(tmp_path, tmp_path)
    add(router, "sqlite://m.db#lessons", {"kind": "lesson", "text": "t", "n": 1})
    router.close()
    with sqlite3.connect(tmp_path / "m.db") as connection:
        columns = [row[1:4] for row in connection.execute("PRAGMA table_info(memory_records)")]
        primary_key = [
            row[1] for row in connection.execute("PRAGMA table_info(memory_records)") if row[5]
        ]
        indexes = {
            row[1]: [column[2] for column in connection.execute(f"PRAGMA index_info({row[1]})")]
            for row in connection.execute("PRAGMA index_list(memory_records)")
        }
        stored = connection.execute("SELECT namespace, kind, text FROM memory_records").fetchall()
        journal = connection.execute("PRAGMA journal_mode").fetchone()
    assert columns[:7] == [
        ("namespace", "TEXT", 1),
        ("id", "TEXT", 1),
        ("created_at", "TEXT", 1),
        ("updated_at", "TEXT", 1),
        ("kind", "TEXT", 0),
        ("text", "TEXT", 0),
        ("record_json", "TEXT", 1),
    ]
    assert primary_key == ["namespace", "id"]
    assert indexes["memory_records_kind"] == ["namespace", "kind", "created_at", "seq"]
    assert stored == [("lessons", "lesson", "t")]
    assert journal == ("wal",)


def test_kind_and_text_columns_are_null_unless_strings(tmp_path: Path) -> None:
    router = MemoryRouter(tmp_path, tmp_path)
    add(router, "sqlite://m.db", {"kind": 3, "text": ["x"]})
    router.close()
    with sqlite3.connect(tmp_path / "m.db") as connection:
        row = connection.execute("SELECT namespace, kind, text FROM memory_records").fetchone()
    assert row == ("memory", None, None)


def test_a_database_of_the_first_release_is_upgraded_in_place(tmp_path: Path) -> None:
    """Rows of the same millisecond keep their insertion order (rowid) after the upgrade."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE memory_records (namespace TEXT NOT NULL, id TEXT NOT NULL, "
            "created_at TEXT NOT NULL, updated_at TEXT NOT NULL, kind TEXT, text TEXT, "
            "record_json TEXT NOT NULL, PRIMARY KEY (namespace, id))"
        )
        for identifier, text in [("b", "Second ÄRGER"), ("a", "First")]:
            connection.execute(
                "INSERT INTO memory_records VALUES ('memory', ?, ?, ?, 'lesson', ?, ?)",
                (identifier, OLD, OLD, text, json.dumps({"kind": "lesson", "text": text})),
            )
    connection.close()
    router = MemoryRouter(tmp_path, tmp_path)
    assert [e["id"] for e in query(router, "sqlite://old.db", {})] == ["a", "b"]
    assert [e["id"] for e in query(router, "sqlite://old.db", {"text": "ärger"})] == ["b"]
    newer = add(router, "sqlite://old.db", {"kind": "lesson", "text": "third"})
    assert [e["id"] for e in query(router, "sqlite://old.db", {"kind": "lesson"})] == [
        newer["id"],
        "a",
        "b",
    ]


def test_a_corrupt_sqlite_record_is_reported_by_id(tmp_path: Path) -> None:
    router = MemoryRouter(tmp_path, tmp_path)
    add(router, "sqlite://m.db", {"text": "fine"})
    with sqlite3.connect(tmp_path / "m.db") as connection:
        connection.execute("UPDATE memory_records SET id = 'x1', record_json = '{broken'")
    connection.close()
    with pytest.raises(MemoryStoreError, match=r"^Invalid sqlite memory record 'x1': "):
        query(router, "sqlite://m.db", {})


OLD = "2025-01-01T00:00:00.000Z"


# ---------------------------------------------------------------------- injection


INJECTIONS = [
    "'; DROP TABLE memory_records; --",
    '" OR 1=1 --',
    "%') OR ('1'='1",
    "x' UNION SELECT id, created_at, updated_at, record_json FROM memory_records --",
    "\\'; DELETE FROM memory_records; --",
]


@pytest.mark.parametrize("attack", INJECTIONS)
def test_sql_in_values_keys_and_namespaces_is_inert(backend: MemoryBackend, attack: str) -> None:
    for namespace in ("memory", attack):
        backend.add({"kind": "safe", "text": "kept"}, namespace=namespace)
        stored = backend.add({"kind": attack, "text": attack, attack: attack}, namespace=namespace)
        assert backend.query({"kind": attack}, namespace=namespace) == [stored]
        assert backend.query({"text": attack}, namespace=namespace) == [stored]
        assert backend.query({"where": {attack: attack}}, namespace=namespace) == [stored]
        assert backend.query({"kind": "safe", "text": attack}, namespace=namespace) == []
        assert len(backend.query({}, namespace=namespace)) == 2
    assert len(backend.query({"limit": 100}, namespace="other")) == 0
    assert len(backend.query({"limit": 100})) == 2


# ---------------------------------------------------------------------- PostgreSQL


def test_scrubbed_uris_hide_passwords_only() -> None:
    assert scrub_uri("postgresql://ann:s3cr%40t@db:5432/app?sslmode=require#team") == (
        "postgresql://ann:***@db:5432/app?sslmode=require#team"
    )
    assert scrub_uri("postgres://db/app?password=s3cret&application_name=x") == (
        "postgres://db/app?password=***&application_name=x"
    )
    assert scrub_uri("postgresql://ann@db/app#team") == "postgresql://ann@db/app#team"
    # A password with raw reserved characters is still hidden whole.
    assert scrub_uri("postgresql://ann:a/b@c#d?e@db/app#team") == "postgresql://ann:***@db/app#team"
    assert scrub_uri("file:///home/me/notes.jsonl") == "file:///home/me/notes.jsonl"
    assert scrub_uri("notes.jsonl") == "notes.jsonl"


def test_a_password_in_the_uri_connects_and_never_shows(
    postgres_cluster: Any, tmp_path: Path
) -> None:
    router = MemoryRouter(tmp_path, tmp_path)
    uri = postgres_cluster.tcp_uri("credentials")
    stored = add(router, uri, {"text": "over tcp"})
    assert query(router, uri, {"text": "TCP"}) == [stored]
    assert postgres_cluster.password not in repr(router)
    assert postgres_cluster.password not in repr(router._stores.__dict__)
    router.close()


@pytest.mark.parametrize("password", ["wrong-Secret-1", "p%40ss:w0rd/x"])
def test_connection_errors_never_show_the_password(
    postgres_cluster: Any, tmp_path: Path, password: str
) -> None:
    router = MemoryRouter(tmp_path, tmp_path)
    with pytest.raises(MemoryStoreError) as caught:
        query(router, postgres_cluster.tcp_uri("credentials", password), {})
    message = str(caught.value)
    assert "password authentication failed" in message
    assert message.startswith(
        f"PostgreSQL memory postgresql://postgres:***@127.0.0.1:{postgres_cluster.port}/postgres#credentials: "
    )
    for form in (password, "p@ss:w0rd/x", "wrong-Secret"):
        assert form not in message
    router.close()


def test_credentials_come_from_the_standard_environment(
    postgres_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSWORD", postgres_cluster.password)
    monkeypatch.setenv("PGPORT", str(postgres_cluster.port))
    monkeypatch.setenv("PGUSER", "postgres")
    router = MemoryRouter(tmp_path, tmp_path)
    stored = add(router, "postgresql://127.0.0.1/postgres#environment", {"text": "env"})
    assert query(router, "postgres://127.0.0.1/postgres#environment", {}) == [stored]
    router.close()


def test_without_psycopg_postgres_memory_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    router = MemoryRouter(tmp_path, tmp_path)
    with pytest.raises(MemoryStoreError, match=r"install agentscript\[postgres\]"):
        add(router, "postgresql://localhost/db#ns", {"text": "x"})
    assert query(router, "file://still-works.jsonl", {}) == []


def test_the_pool_reuses_connections_across_namespaces(
    open_backend: Callable[[str], MemoryBackend],
) -> None:
    backend = open_backend("postgres")
    with backend.postgres.connect() as admin:
        (started,) = admin.execute("SELECT now()").fetchone()
        for namespace in ("a", "b", "a", "c"):
            backend.add({"text": namespace}, namespace=namespace)
            backend.query({}, namespace=namespace)
        (opened,) = admin.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE application_name = 'agentscript' AND backend_start >= %s",
            (started,),
        ).fetchone()
    assert opened == 1
