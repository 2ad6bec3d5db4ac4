"""The application layer: the one composition root, where every feature is put together.

`configuration` says how to run a program and `composition` builds its providers; each use
case has one module: `run` and `programs` (load, check, list models and tools), `learning`
(what a run learns, and when), `reflect`, `feedback`, `compact`, `autonomy`, `undo`,
`memory_transfer` (export and import of the memory service), `memory_resources` (the
language's memory resources), `memory_service` (the memory.yml-configured service) and
`evals` (the eval command).
`workspace` opens a workspace's journal, memory, profiles and ledger once. The CLI and the
Python API (`agentscript.api`) call these; nothing below this layer imports it
(docs/architecture.md).
"""
