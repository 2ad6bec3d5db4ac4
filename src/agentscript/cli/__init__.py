"""The `agentscript` command and its REPL: a thin client of the library API.

Each module parses, calls `agentscript.api`, or renders; none of them interprets programs.
"""
