"""Benchmarks never write into the user's long-term memory.

A benchmark that runs programs imports this module first: it points AGENTSCRIPT_MEMORY_DB (the
default memory database of every run and of the memory service) at a file in a temporary folder
for the rest of the process, and removes the folder at exit. Live-model runs leave their run
memory even with learning off (memory.yml `auto_sink`), so without it a benchmark's thousands of
runs would land in ~/.agentscript/memory.db.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

FOLDER = tempfile.mkdtemp(prefix="agentscript-bench-memory-")
os.environ["AGENTSCRIPT_MEMORY_DB"] = os.path.join(FOLDER, "memory.db")
atexit.register(shutil.rmtree, FOLDER, ignore_errors=True)
