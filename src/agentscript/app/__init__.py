"""The application layer: the one composition root, where every feature is put together.

`configuration` says how to run a program, `composition` builds its providers, and each use
case has one module: `run`, `programs` (load, check, list models and tools), `learning` (the
learner after a run), `reflect`, `feedback`, `compact`, `autonomy`, `memory_transfer`
(export and import of the memory service) and `memory_service` (the memory.yml-configured
service). `workspace` opens a workspace's journal, memory, profiles and ledger once. The CLI
and the Python API (`agentscript.api`) call these; nothing below this layer imports it.
"""
