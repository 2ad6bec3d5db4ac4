"""The one error the application layer raises of its own."""

from __future__ import annotations


class AppError(Exception):
    """A request that cannot be carried out as asked: a workspace that is not a directory,
    options that do not go together, a file in the wrong format. Clients report its message
    as it is (the CLI: one line on stderr, exit code 1)."""
