"""Storage plumbing shared by every store: SQLite files (WAL, locking, crash-safe opening) and
PostgreSQL connections (server description, fork-safe pool)."""
