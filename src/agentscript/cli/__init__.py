"""The `agentscript` command and its REPL: a thin client of the library API.

Each command parses its options, makes one `agentscript.app` call and renders the result.
"""
