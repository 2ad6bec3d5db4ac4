"""The layering of src/agentscript, checked from the source: every import statement (module
level, inside functions, under TYPE_CHECKING) points down the order

    lang < runtime < providers (llm, tools, memory, storage) < memory < learn < app < cli

`agentscript.api` (the Python API, re-exported from app) and the package root sit with `app`;
`agentscript.__main__` with `cli`. A strict order leaves no room for a cycle between packages.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import agentscript

SOURCE = Path(__file__).resolve().parent.parent / "src" / "agentscript"
LAYERS = ("lang", "runtime", "providers", "memory", "learn", "app", "cli")
# Top-level modules that are not packages, and the layer each one belongs to: the Python API
# and the package root sit with app; the entry point, the pytest plugin and its helpers are
# clients of the API, like the CLI.
MODULE_LAYERS = {
    "api": "app",
    "__init__": "app",
    "__main__": "cli",
    "pytest_plugin": "cli",
    "testing": "cli",
}
# Names of the package root anybody may import (`from agentscript import __version__`).
ROOT_CONSTANTS = frozenset({"__version__"})
# Names the package root re-exports from app (`agentscript.run`, `agentscript.RunConfig`).
ROOT_EXPORTS = frozenset(agentscript.__all__) - ROOT_CONSTANTS


@dataclass(frozen=True, slots=True)
class Import:
    module: str  # the importing module, e.g. agentscript.learn.autonomy
    target: str  # the imported module, e.g. agentscript.app.run
    line: int

    def describe(self) -> str:
        path = self.module.replace(".", "/")
        return f"src/{path}.py:{self.line} imports {self.target}"


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str | None:
    """The layer of `agentscript.x.y`, or None for modules outside the package."""
    parts = module.split(".")
    if parts[0] != "agentscript":
        return None
    if len(parts) == 1:
        return MODULE_LAYERS["__init__"]
    if parts[1] in LAYERS:
        return parts[1]
    if parts[1] in MODULE_LAYERS:
        return MODULE_LAYERS[parts[1]]
    # `from agentscript import RunConfig`: a name the package root exports (from app), or a
    # new top-level module this test must be told about first.
    return MODULE_LAYERS["__init__"] if parts[1] in ROOT_EXPORTS else "unknown"


def imports_of(path: Path) -> list[Import]:
    """Every import in the file, relative ones resolved; `from agentscript import name` counts
    as an import of `agentscript.name` (a submodule, or the root for its constants)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if base == "agentscript":
                names = [alias.name for alias in node.names if alias.name not in ROOT_CONSTANTS]
                found += [Import(module, f"agentscript.{name}", node.lineno) for name in names]
            else:
                found.append(Import(module, base, node.lineno))
    return found


def all_imports() -> list[Import]:
    return [found for path in sorted(SOURCE.rglob("*.py")) for found in imports_of(path)]


def upward(found: Import) -> bool:
    source, target = layer_of(found.module), layer_of(found.target)
    if source is None or target is None:
        return False
    if "unknown" in (source, target):
        return True  # a new top-level module must be given a layer here first
    return LAYERS.index(target) > LAYERS.index(source)


def test_every_import_points_down_the_layers() -> None:
    wrong = [found.describe() for found in all_imports() if upward(found)]
    assert wrong == [], "imports against lang < runtime < providers < memory < learn < app < cli"


def test_the_check_sees_function_level_and_type_checking_imports() -> None:
    """The scan is what the layering rests on: a lazy or a type-only import counts too."""
    sample = SOURCE / "learn" / "journal.py"
    targets = {found.target for found in imports_of(sample)}
    assert "agentscript.learn.execution_trace" in targets  # module level
    lazy = SOURCE / "app" / "composition.py"
    assert "agentscript.app.learning" in {found.target for found in imports_of(lazy)}
    assert "agentscript.learn.journal" in {found.target for found in imports_of(lazy)}


@pytest.mark.parametrize(
    ("module", "target", "expected"),
    [
        ("agentscript.learn.autonomy", "agentscript.app.run", True),
        ("agentscript.learn.autonomy", "agentscript.api", True),
        ("agentscript.memory.tools", "agentscript.cli.render", True),
        ("agentscript.providers.storage.sqlite_files", "agentscript.memory.store", True),
        ("agentscript.app.run", "agentscript.learn.journal", False),
        ("agentscript.cli.actions", "agentscript.app.run", False),
        ("agentscript.lang.parser", "agentscript.lang.ast", False),
        ("agentscript.runtime.loader", "json", False),
        ("agentscript.lang.parser", "agentscript.newthing", True),
        ("agentscript.learn.experiences", "agentscript.RunConfig", True),
        ("agentscript.app.evals.runner", "agentscript.RunConfig", False),
    ],
)
def test_upward_judges_pairs(module: str, target: str, expected: bool) -> None:
    assert upward(Import(module, target, 1)) is expected


def test_every_package_is_a_layer() -> None:
    packages = {path.name for path in SOURCE.iterdir() if any(path.glob("*.py"))}
    assert packages == set(LAYERS)
    modules = {path.stem for path in SOURCE.glob("*.py")}
    assert modules == set(MODULE_LAYERS)


# What a thin client never touches itself: stores, their files and the service objects it
# would have to open and close (agentscript.app opens them: Workspace, open_memory_service).
STORE_NAMES = frozenset(
    {
        "MemoryService",
        "SqliteStore",
        "PostgresStore",
        "Journal",
        "SqliteJournalStore",
        "ProfileStore",
        "Ledger",
        "open_memory_service",
    }
)
STORE_MODULES = ("sqlite3", "psycopg", "agentscript.providers.storage")


def runtime_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every import not under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(child) for child in ast.walk(node)}
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
    return found


def test_the_cli_opens_no_store_itself() -> None:
    wrong = [
        f"src/agentscript/cli/{path.name}:{line} imports {module} {name}".rstrip()
        for path in sorted((SOURCE / "cli").glob("*.py"))
        for line, module, name in runtime_imports(path)
        if name in STORE_NAMES or module.startswith(STORE_MODULES)
    ]
    assert wrong == []


def test_the_store_check_sees_a_store_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from agentscript.memory import MemoryService\n"
        "def f():\n    from agentscript.learn.journal import Journal\n",
        encoding="utf-8",
    )
    assert runtime_imports(sample) == [
        (1, "typing", "TYPE_CHECKING"),
        (5, "agentscript.learn.journal", "Journal"),
    ]
