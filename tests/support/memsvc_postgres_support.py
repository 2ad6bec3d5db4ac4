"""Processes for the PostgreSQL store tests, run as a script (the writers of the service tests
are in memsvc_support.py and take PostgreSQL URIs too):

    python memsvc_postgres_support.py hold URI ID   # insert ID in a transaction, then wait
    python memsvc_postgres_support.py fork URI      # use one store before and after a fork

`hold` prints `inserted <id>` once its insert ran inside a transaction that holds the
namespace's write lock, then blocks reading stdin until it is killed. `fork` inserts `parent-1`,
forks a child that inserts `child` through the same store object (so through the pool it
inherited), then inserts `parent-2` once the child has exited, and prints `child <exit code>`.
"""

from __future__ import annotations

import os
import sys

from agentscript.memory import Entry
from agentscript.memory.postgres_store import PostgresMemoryStore

STAMP = "2026-05-06T09:30:00.000Z"
SCOPE = "/hold/workspace"


def entry(identifier: str) -> Entry:
    return Entry(
        id=identifier,
        kind="knowledge",
        scope=SCOPE,
        title=f"Entry {identifier}",
        body=f"Written by the {identifier} process",
        created_at=STAMP,
        updated_at=STAMP,
        accessed_at=STAMP,
        event_time=STAMP,
        bucket="2026-05-06",
    )


def hold(uri: str, identifier: str) -> None:
    store = PostgresMemoryStore(uri)
    with store.transaction() as tx:
        tx.insert(entry(identifier))
        os.write(1, f"inserted {identifier}\n".encode())
        sys.stdin.readline()
        raise SystemExit("hold was told to go on instead of being killed")


def fork(uri: str) -> None:
    store = PostgresMemoryStore(uri)
    with store.transaction() as tx:
        tx.insert(entry("parent-1"))
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            with store.transaction() as tx:
                tx.insert(entry("child"))
            store.close()
        except BaseException as error:
            os.write(2, f"child failed: {error!r}\n".encode())
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    with store.transaction() as tx:
        tx.insert(entry("parent-2"))
    store.close()
    print(f"child {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "hold":
        hold(arguments[0], arguments[1])
    elif command == "fork":
        fork(arguments[0])
    else:
        sys.exit(f"unknown command {command!r}")
