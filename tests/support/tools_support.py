"""Support for the host-tool tests: a workspace with files, and calls through the registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscript.providers.tools.files import FileTools
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.providers.tools.shell import ShellTools
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.ports import ToolCall


def make_tools(root: Path) -> ToolRegistry:
    workspace = Workspace(root)
    return ToolRegistry({"file": FileTools(workspace), "sh": ShellTools(workspace)})


def call(tools: ToolRegistry, uri: str, method: str, *args: Any, name: str = "T") -> Any:
    return tools.call(ToolCall(name, uri, method, list(args)))
