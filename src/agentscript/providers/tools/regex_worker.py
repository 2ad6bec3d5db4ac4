"""Runs one regular-expression grep in its own process, so the caller can kill it on timeout.

Reads `{pattern, max, files: [[path, text], ...]}` as JSON on stdin and writes the matches
`[{path, line, text}, ...]` as JSON on stdout. Never imported by the library itself.
"""

from __future__ import annotations

import json
import re
import sys


def main() -> None:
    job = json.load(sys.stdin)
    pattern = re.compile(job["pattern"])
    limit = int(job["max"])
    matches: list[dict[str, object]] = []
    for path, text in job["files"]:
        for number, line in enumerate(re.split(r"\r?\n", text), start=1):
            if pattern.search(line):
                matches.append({"path": path, "line": number, "text": line})
                if len(matches) >= limit:
                    json.dump(matches, sys.stdout)
                    return
    json.dump(matches, sys.stdout)


if __name__ == "__main__":
    main()
