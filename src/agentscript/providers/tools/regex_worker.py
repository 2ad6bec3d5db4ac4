"""Runs one regular-expression grep in its own process, so the caller can kill it at any time.

Reads `{pattern, max, files: [[path, text], ...]}` as JSON on stdin. Writes JSON lines on
stdout: `{"progress": [file index, line number]}` as each file starts and at most every
PROGRESS_SECONDS within a file, so the caller can tell a slow search (progress keeps coming)
from a pattern stuck backtracking on one line (progress stops); then one last line: `{"matches": [...],
"truncated": bool}`, `{"invalid": "<why the pattern is refused>"}` or `{"error": "<message>"}`.
It never prints a traceback. Never imported by the library itself.
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any

from agentscript.providers.tools.output_caps import Collector

PROGRESS_SECONDS = 0.05
_LINES = re.compile(r"\r?\n")


def search(job: dict[str, Any]) -> dict[str, Any]:
    pattern = re.compile(job["pattern"])
    found = Collector(int(job["max"]))
    reported = time.monotonic()
    for index, (path, text) in enumerate(job["files"]):
        for number, line in enumerate(_LINES.split(text), start=1):
            now = time.monotonic()
            if number == 1 or now - reported >= PROGRESS_SECONDS:
                # Each file's start, so a pattern stuck at once is placed in the right file.
                _write({"progress": [index, number]})
                reported = now
            if pattern.search(line) is None:
                continue
            shown = found.cut_line(line)
            if not found.add({"path": path, "line": number, "text": shown}, path + shown):
                return {"matches": found.items, "truncated": found.truncated}
    return {"matches": found.items, "truncated": found.truncated}


def _write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    try:
        answer = search(json.load(sys.stdin))
    except re.error as error:
        answer = {"invalid": str(error)}
    except (RecursionError, OverflowError):
        # The caller compiled it under a higher recursion limit; this process cannot.
        answer = {"invalid": "it is nested too deeply to compile"}
    except (ValueError, KeyError, TypeError) as error:
        answer = {"error": f"{type(error).__name__}: {error}"}
    except MemoryError:
        answer = {"error": "the search ran out of memory"}
    _write(answer)


if __name__ == "__main__":
    main()
