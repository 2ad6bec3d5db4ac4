"""Writers killed at random moments: the crash tests of every store drive them this way.

A zygote is a support module run as a script with `zygote`: on each `go` it forks a writer and
prints `started <pid>`; the writer prints `id <id>` after each write it was told succeeded; on
`kill` the zygote SIGKILLs it and prints `ended <pid> <exit code>`. Any other line is a failure.
Forking from one process that imported everything once keeps each writer's start cheap, so the
kills land inside writes rather than inside imports.
"""

from __future__ import annotations

import random
import subprocess
import time


def kill_writers(
    command: list[str], *, kills: int, seed: int, latest_kill_seconds: float, timeout: float
) -> tuple[list[str], list[int]]:
    """Start the zygote `command`, have it start `kills` writers one after the other and kill
    each after a random moment of at most `latest_kill_seconds`; return the ids the writers
    acknowledged and the exit code of each writer."""
    zygote = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert zygote.stdin is not None and zygote.stdout is not None
    moments = random.Random(seed)
    acknowledged: list[str] = []
    outcomes: list[int] = []
    try:
        for _ in range(kills):
            zygote.stdin.write("go\n")
            zygote.stdin.flush()
            pid = int(_read_until(zygote, "started", acknowledged)[0])
            time.sleep(moments.uniform(0, latest_kill_seconds))
            if not acknowledged:
                # On a loaded machine a writer may not finish one write in the chosen moment;
                # let the first one get a write through, so the test always tests something.
                _read_until(zygote, "id", acknowledged)
            zygote.stdin.write("kill\n")
            zygote.stdin.flush()
            ended_pid, code = _read_until(zygote, "ended", acknowledged)
            assert int(ended_pid) == pid
            outcomes.append(int(code))
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=timeout)
        # Closed now rather than when collected: a long test session runs out of descriptors
        # below 1024, which select()-based helpers (browser.py) need.
        for pipe in (zygote.stdout, zygote.stderr):
            if pipe is not None:
                pipe.close()
    return acknowledged, outcomes


def _read_until(zygote: subprocess.Popen[str], marker: str, acknowledged: list[str]) -> list[str]:
    """Collect `id` lines until the `marker` line (or, for the marker `id`, until the next `id`
    line); return the marker's fields."""
    assert zygote.stdout is not None
    while True:
        line = zygote.stdout.readline()
        if not line:
            raise AssertionError(
                f"the zygote stopped: {zygote.stderr.read() if zygote.stderr else ''}"
            )
        kind, _, rest = line.strip().partition(" ")
        if kind == "id":
            acknowledged.append(rest)
            if marker == "id":
                return [rest]
        elif kind == marker:
            return rest.split(" ")
        else:
            raise AssertionError(f"writer failed: {line}")
