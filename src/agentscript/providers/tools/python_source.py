"""A Python tool module's functions read from its source, without importing it.

The editor completes and describes `python:` tool methods while the user types; importing the
module would run its code on every keystroke's behalf. So the module's file is found by path
(the environment's sys.path, then the workspace, as the run searches) and parsed; what a
dynamic module builds at import time is not seen (compiled and namespace-only modules list
nothing). The allow-list applies here too: a module the workspace does not allow lists nothing.
"""

from __future__ import annotations

import ast as python_ast
import sys
from dataclasses import dataclass
from pathlib import Path

from agentscript.providers.tools.python_allow import check_allowed
from agentscript.runtime.errors import ExecutionError

MAX_SOURCE_BYTES = 2_000_000


@dataclass(frozen=True, slots=True)
class SourceFunction:
    name: str
    signature: str
    description: str
    risk: str


def module_file(module: str, workspace: Path) -> Path | None:
    """The module's source file: `a/b.py` or `a/b/__init__.py` under the first folder of
    sys.path (then the workspace) that has one."""
    parts = module.split(".")
    for folder in [*sys.path, str(workspace)]:
        if not folder:
            continue
        base = Path(folder).joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def source_functions(uri: str, workspace: Path) -> list[SourceFunction]:
    """The public functions of the module a `python:` URI names, as its source declares them;
    empty when the module is not allowed, not found or not readable Python."""
    try:
        module = check_allowed(uri, workspace)
    except ExecutionError:
        return []
    path = module_file(module, workspace)
    if path is None or path.stat().st_size > MAX_SOURCE_BYTES:
        return []
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return []
    exported = _declared_all(tree)
    found: list[SourceFunction] = []
    for node in tree.body:
        if not isinstance(node, python_ast.FunctionDef | python_ast.AsyncFunctionDef):
            continue
        public = node.name in exported if exported is not None else not node.name.startswith("_")
        if public:
            found.append(_described(node))
    return found


def _declared_all(tree: python_ast.Module) -> set[str] | None:
    for node in tree.body:
        if (
            isinstance(node, python_ast.Assign)
            and any(isinstance(t, python_ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, python_ast.List | python_ast.Tuple)
        ):
            return {
                item.value
                for item in node.value.elts
                if isinstance(item, python_ast.Constant) and isinstance(item.value, str)
            }
    return None


def _described(node: python_ast.FunctionDef | python_ast.AsyncFunctionDef) -> SourceFunction:
    signature = f"({python_ast.unparse(node.args)})"
    if node.returns is not None:
        signature += f" -> {python_ast.unparse(node.returns)}"
    if isinstance(node, python_ast.AsyncFunctionDef):
        signature = "async " + signature
    return SourceFunction(
        node.name, signature, python_ast.get_docstring(node) or "", _marked_risk(node)
    )


def _marked_risk(node: python_ast.FunctionDef | python_ast.AsyncFunctionDef) -> str:
    """The risk of an `@agentscript.tool(risk="…")` or `@tool(risk="…")` decorator; "effect"."""
    for decorator in node.decorator_list:
        if not isinstance(decorator, python_ast.Call):
            continue
        function = decorator.func
        name = (
            function.attr
            if isinstance(function, python_ast.Attribute)
            else (function.id if isinstance(function, python_ast.Name) else "")
        )
        if name != "tool":
            continue
        for keyword in decorator.keywords:
            value = keyword.value
            if (
                keyword.arg == "risk"
                and isinstance(value, python_ast.Constant)
                and value.value in ("read", "effect", "destructive")
            ):
                return str(value.value)
    return "effect"
