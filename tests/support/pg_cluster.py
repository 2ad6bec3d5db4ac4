"""A throwaway PostgreSQL cluster for the memory tests and benchmark, from the installed binaries.

`shared_cluster()` runs initdb in a temporary directory and starts `postgres` on a free port of
127.0.0.1 (password authentication) and on a Unix socket in that directory (trust), once per
process; it is stopped and deleted at exit, and it shuts itself down if this process dies.
As root the server runs as the `postgres` user (created if missing), since PostgreSQL refuses
to run as root. `unavailable_reason()` says why no cluster can be started: no server binaries.
"""

from __future__ import annotations

import atexit
import ctypes
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

SUPERUSER = "postgres"
SERVER_ACCOUNT = "postgres"
START_TIMEOUT_SECONDS = 60.0
_PR_SET_PDEATHSIG = 1


@dataclass
class PgCluster:
    """A running server: where it listens and how to reach it."""

    directory: Path
    port: int
    password: str
    process: subprocess.Popen[bytes]

    @property
    def socket_dir(self) -> Path:
        return self.directory / "socket"

    def socket_uri(self, namespace: str, database: str = "postgres") -> str:
        """A memory URI over the Unix socket, where no password is needed."""
        return (
            f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}&port={self.port}"
            f"#{namespace}"
        )

    def tcp_uri(self, namespace: str, password: str | None = None) -> str:
        """A memory URI over TCP; `password` (default: the right one) goes into the URI."""
        secret = self.password if password is None else password
        credentials = f"{SUPERUSER}:{secret}" if secret else SUPERUSER
        return f"postgresql://{credentials}@127.0.0.1:{self.port}/postgres#{namespace}"

    def connect(self) -> psycopg.Connection:
        import psycopg

        return psycopg.connect(
            host=str(self.socket_dir), port=self.port, user=SUPERUSER, dbname="postgres"
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def binaries() -> Path | None:
    """The directory holding `initdb` and `postgres`, if PostgreSQL is installed."""
    candidates = [os.path.dirname(path) for path in filter(None, [shutil.which("initdb")])]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        directory = Path(candidate)
        if (directory / "initdb").exists() and (directory / "postgres").exists():
            return directory
    return None


def unavailable_reason() -> str | None:
    if binaries() is None:
        return "PostgreSQL server binaries (initdb, postgres) are not installed"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'agentscript[postgres]')"
    return None


_shared: PgCluster | None = None


def shared_cluster(durable: bool = False) -> PgCluster:
    """The process's cluster, started on first use. `durable=False` turns off the server's
    fsync: tests kill clients, not the server, and run much faster without it."""
    global _shared
    if _shared is None:
        _shared = start_cluster(durable)
        atexit.register(_shared.stop)
    return _shared


def start_cluster(durable: bool) -> PgCluster:
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError(unavailable_reason())
    account = _server_account()
    directory = Path(tempfile.mkdtemp(prefix="agentscript-pg-"))
    (directory / "socket").mkdir()
    password = secrets.token_urlsafe(16)
    (directory / "password").write_text(password + "\n")
    if account is not None:
        for path in (directory, directory / "socket", directory / "password"):
            os.chown(path, account.pw_uid, account.pw_gid)
    run_as = (
        {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []} if account else {}
    )
    subprocess.run(
        [
            str(bin_dir / "initdb"),
            "--pgdata",
            str(directory / "data"),
            "--username",
            SUPERUSER,
            "--pwfile",
            str(directory / "password"),
            "--auth-host",
            "scram-sha-256",
            "--auth-local",
            "trust",
            "--encoding",
            "UTF8",
            "--locale",
            "C",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        **run_as,  # type: ignore[arg-type]
    )
    port = _free_port()
    settings = {
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": str(directory / "socket"),
        "max_connections": "60",
        "fsync": "on" if durable else "off",
        "full_page_writes": "on" if durable else "off",
    }
    options = [part for key, value in settings.items() for part in ("-c", f"{key}={value}")]
    log = open(directory / "server.log", "wb")  # noqa: SIM115 - the server keeps writing to it
    process = subprocess.Popen(
        [str(bin_dir / "postgres"), "-D", str(directory / "data"), "-p", str(port), *options],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
        **run_as,  # type: ignore[arg-type]
    )
    log.close()
    cluster = PgCluster(directory, port, password, process)
    _wait_until_ready(cluster)
    return cluster


def _server_account() -> pwd.struct_passwd | None:
    """Who runs the server: nobody special unless we are root, then `postgres`."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_ACCOUNT)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home", SERVER_ACCOUNT],
            check=True,
        )
        return pwd.getpwnam(SERVER_ACCOUNT)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """Runs in the server's process before exec: if the test process dies, the kernel sends the
    server SIGQUIT (immediate shutdown), so no cluster outlives its tests."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGQUIT)


def _wait_until_ready(cluster: PgCluster) -> None:
    import psycopg

    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        if cluster.process.poll() is not None:
            log = (cluster.directory / "server.log").read_text(errors="replace")
            raise RuntimeError(f"PostgreSQL did not start:\n{log}")
        try:
            cluster.connect().close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                cluster.stop()
                raise
            time.sleep(0.05)
