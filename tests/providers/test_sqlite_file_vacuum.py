"""sqlite_files.connect's incremental auto-vacuum: chosen for a new file, taken by an existing
one at its next VACUUM, and never a write of its own when the file has it already (a reader
that opens a file must not commit)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agentscript.providers.storage.sqlite_files import connect

INCREMENTAL = 2


def auto_vacuum(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA auto_vacuum").fetchone()[0])


def test_a_new_file_is_made_with_incremental_auto_vacuum(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    connection = connect(path, incremental_vacuum=True)
    try:
        connection.execute("CREATE TABLE t (x)")
        assert auto_vacuum(connection) == INCREMENTAL
    finally:
        connection.close()


def test_opening_a_file_that_has_it_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "kept.db"
    first = connect(path, incremental_vacuum=True)
    first.execute("CREATE TABLE t (x)")
    first.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    try:
        second = connect(path, incremental_vacuum=True)
        try:
            assert auto_vacuum(second) == INCREMENTAL
            assert Path(f"{path}-wal").stat().st_size == 0
        finally:
            second.close()
    finally:
        first.close()


def test_an_existing_file_takes_it_at_its_next_vacuum(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = connect(path)
    old.execute("CREATE TABLE t (x)")
    old.close()
    connection = connect(path, incremental_vacuum=True)
    try:
        assert auto_vacuum(connection) == 0
        connection.execute("VACUUM")
        assert auto_vacuum(connection) == INCREMENTAL
    finally:
        connection.close()
