"""Memory resource backends for `import memory`.

`router.MemoryRouter` is the provider a run uses; it sends each call to a store by URI scheme:
`jsonl` (file://), `sqlite` (sqlite://) or `postgres` (postgresql://). `rules` holds the
semantics they share, `commands` the library side of the `agentscript memory` commands, and
`mock` the in-process provider of offline runs.
"""
