"""What `agentscript check` knows beyond the language: whether each tool import's scheme has a
tool provider and each llm import names a model provider, so a typo such as `ftp://x` or
`"gpt-4"` is reported before a run instead of at the first call."""

from __future__ import annotations

from pathlib import Path

from agentscript.lang import ast
from agentscript.lang.errors import Diagnostic
from agentscript.lang.suggest import did_you_mean
from agentscript.providers.llm.endpoints import PROTOCOLS, parse_llm_uri
from agentscript.providers.tools.npm_allow import check_allowed as check_npm_allowed
from agentscript.providers.tools.python_allow import check_allowed
from agentscript.providers.tools.tool_uris import (
    HOST_TOOLS,
    host_tool_of,
    scheme_of,
    supported_command,
)
from agentscript.runtime.errors import ExecutionError

# The schemes the host tool registry serves (composition.build_tools).
TOOL_SCHEMES = (
    "env", "file", "host", "http", "https", "mcp", "memory", "node", "npm", "python", "sh",
)  # fmt: skip


def import_diagnostics(program: ast.Program) -> list[Diagnostic]:
    """One error per tool or llm import no provider can serve, listing the known ones."""
    diagnostics: list[Diagnostic] = []
    for decl in program.imports:
        path = decl.source_path or program.source_path
        if decl.resource_kind == "tool":
            scheme = scheme_of(decl.uri)
            if scheme == "sh":
                try:
                    supported_command(decl.uri)
                except ExecutionError as problem:
                    diagnostics.append(
                        Diagnostic(
                            "UNSUPPORTED_SHELL_TOOL", problem.bare_message, decl.range, path=path
                        )
                    )
            elif scheme == "host" and host_tool_of(decl.uri) not in HOST_TOOLS:
                diagnostics.append(
                    Diagnostic(
                        "UNKNOWN_HOST_TOOL",
                        f"Tool '{decl.name}' names no host tool: {decl.uri}; host tools: "
                        + ", ".join(f"host://{known}" for known in HOST_TOOLS),
                        decl.range,
                        path=path,
                    )
                )
            elif scheme == "python":
                # The allow-list is read, never the module imported: checking runs no code.
                folder = Path(path).parent if path else Path.cwd()
                try:
                    check_allowed(decl.uri, folder)
                except ExecutionError as problem:
                    diagnostics.append(
                        Diagnostic(
                            "PYTHON_TOOL_NOT_ALLOWED", problem.bare_message, decl.range, path=path
                        )
                    )
            elif scheme in ("node", "npm"):
                # The registry is read, nothing imported or installed: checking runs no code.
                folder = Path(path).parent if path else Path.cwd()
                try:
                    check_npm_allowed(decl.uri, folder)
                except ExecutionError as problem:
                    diagnostics.append(
                        Diagnostic(
                            "NPM_TOOL_NOT_ALLOWED", problem.bare_message, decl.range, path=path
                        )
                    )
            elif scheme not in TOOL_SCHEMES:
                diagnostics.append(
                    Diagnostic(
                        "UNKNOWN_TOOL_SCHEME",
                        f"Tool '{decl.name}' uses the unknown scheme '{scheme}://'"
                        f"{did_you_mean(scheme, TOOL_SCHEMES)}; known schemes: "
                        + ", ".join(f"{known}://" for known in TOOL_SCHEMES),
                        decl.range,
                        path=path,
                    )
                )
        elif decl.resource_kind == "llm":
            try:
                parse_llm_uri(decl.uri)
            except ExecutionError as problem:
                diagnostics.append(
                    Diagnostic(
                        "UNKNOWN_MODEL_PROVIDER",
                        f"Model '{decl.name}' ({decl.uri}): {problem.bare_message}; write "
                        "PROVIDER://MODEL with a known provider: "
                        + ", ".join(f"{known}://" for known in PROTOCOLS)
                        + f" (e.g. openai://{decl.uri.split('://')[-1] or 'gpt-4.1-mini'})",
                        decl.range,
                        path=path,
                    )
                )
    return diagnostics
