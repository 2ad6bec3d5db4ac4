"""The AgentScript language server: editor features over the parser, checker and formatter.

`analysis` turns one document into what every feature reads (the program as far as it parsed,
its diagnostics, an index of names); each feature is a small module over that; `server` wires
them to pygls. Nothing here runs a program or starts a tool.
"""
