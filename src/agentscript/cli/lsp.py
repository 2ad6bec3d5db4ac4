"""`agentscript lsp`: the language server over stdio, for editors (VS Code, Neovim, …)."""

from __future__ import annotations

import click


@click.command(name="lsp")
@click.option(
    "--stdio", is_flag=True, help="Speak LSP over stdin/stdout (the default; editors pass it)."
)
def lsp_command(stdio: bool) -> None:
    """Start the AgentScript language server on stdin and stdout."""
    from agentscript.app.lsp.server import serve_stdio

    serve_stdio()
