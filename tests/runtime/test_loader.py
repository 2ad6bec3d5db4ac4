"""The multi-file loader: imported agents merged in dependency order, relative imports resolved
against the file that wrote them, and the errors for missing, broken and circular imports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.lang.errors import ParseError
from agentscript.runtime.errors import LoadError

Run = Callable[..., Any]

PLANNER = """import llm Model from "openai://gpt-4.1-mini"
agent Planner {
  model Model
  role "Planner"
  description "Plans."
  main func(goal) { return { plan: goal } }
}
"""

APP = """import llm Model from "openai://gpt-4.1-mini"
import agent Planner from "./planner.as"
main agent App {
  main func() { return Planner("ship") }
}
"""


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_imported_agents_come_first(tmp_path: Path, run: Run) -> None:
    write_files(tmp_path, {"planner.as": PLANNER, "app.as": APP})
    program = agentscript.load(tmp_path / "app.as")
    assert [(agent.name, agent.is_main) for agent in program.agents] == [
        ("Planner", False),
        ("App", True),
    ]
    # Agent imports are resolved away; the shared llm import appears once.
    assert [(i.resource_kind, i.name) for i in program.imports] == [("llm", "Model")]
    assert run(program).value == {"plan": "ship"}


def test_recursive_imports_resolve_files_against_the_importing_file(
    tmp_path: Path, run: Run
) -> None:
    write_files(
        tmp_path,
        {
            "main.as": (
                'import agent Mid from "./lib/mid.as"\n'
                "main agent App { main func() { return Mid() } }\n"
            ),
            "lib/mid.as": (
                'import agent Leaf from "deep/leaf.as"\n'
                'import file Data from "./data.json"\n'
                "agent Mid { main func() { return [Data.name, Leaf()] } }\n"
            ),
            "lib/data.json": '{"name": "mid-data"}',
            "lib/deep/leaf.as": (
                'import file Notes from "notes.txt"\n'
                'import memory Lessons from "file://store/lessons.jsonl"\n'
                "main agent Leaf { main func() { return Notes } }\n"
            ),
            "lib/deep/notes.txt": "leaf notes",
        },
    )
    program = agentscript.load(tmp_path / "main.as")
    assert [(agent.name, agent.is_main) for agent in program.agents] == [
        ("Leaf", False),
        ("Mid", False),
        ("App", True),
    ]
    uris = {decl.name: decl.uri for decl in program.imports}
    assert uris["Notes"] == str((tmp_path / "lib/deep/notes.txt").resolve())
    assert uris["Data"] == str((tmp_path / "lib/data.json").resolve())
    assert uris["Lessons"] == f"file://{(tmp_path / 'lib/deep/store/lessons.jsonl').resolve()}"
    assert run(program).value == ["mid-data", "leaf notes"]


def test_an_agent_imported_twice_is_merged_once(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "main.as": (
                'import agent B from "./b.as"\nimport agent C from "./c.as"\n'
                "main agent App { main func() { return [B(), C()] } }\n"
            ),
            "b.as": 'import agent D from "./d.as"\nagent B { main func() { return D() } }\n',
            "c.as": 'import agent D from "file://./d.as"\nagent C { main func() { return D() } }\n',
            "d.as": "agent D { main func() { return 1 } }\n",
        },
    )
    program = agentscript.load(tmp_path / "main.as")
    assert [agent.name for agent in program.agents] == ["D", "B", "C", "App"]


def test_absolute_and_file_url_imports(tmp_path: Path) -> None:
    write_files(tmp_path, {"planner.as": PLANNER})
    absolute = tmp_path / "planner.as"
    for uri in (str(absolute), f"file://{absolute}"):
        program = agentscript.load_source(
            f'import agent Planner from "{uri}"\nmain agent App {{ main func() {{ return 1 }} }}'
        )
        assert [agent.name for agent in program.agents] == ["Planner", "App"]


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        ("agent", 'import agent Planner from "./planner.as"'),
        ("file", 'import file Notes from "notes.txt"'),
    ],
)
def test_relative_imports_need_a_source_path(kind: str, line: str) -> None:
    uri = line.split('"')[1]
    with pytest.raises(LoadError) as caught:
        agentscript.load_source(f"{line}\nmain agent App {{ main func() {{ return 1 }} }}")
    assert str(caught.value) == f"sourcePath is required to resolve relative {kind} import '{uri}'"


def test_base_dir_anchors_relative_imports_without_a_source_path(tmp_path: Path) -> None:
    write_files(tmp_path, {"planner.as": PLANNER})
    program = agentscript.load_source(APP, base_dir=tmp_path)
    assert [agent.name for agent in program.agents] == ["Planner", "App"]


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({}, "Program file not found: {target}"),
        (
            {"planner.as": PLANNER.replace("agent Planner", "agent Other")},
            "Imported agent 'Planner' was not found in ./planner.as",
        ),
        ({"planner.as": "agent Planner {\n  x = 1\n}"}, ""),
    ],
    ids=["missing-file", "missing-agent", "parse-error"],
)
def test_failing_import_names_the_file(tmp_path: Path, files: dict[str, str], reason: str) -> None:
    write_files(tmp_path, {"app.as": APP, **files})
    target = (tmp_path / "planner.as").resolve()
    with pytest.raises(LoadError) as caught:
        agentscript.load(tmp_path / "app.as")
    prefix = f"Failed to load agent import 'Planner' from {target}: "
    expected = reason.format(target=target) or (
        "Expected configuration declaration or function declaration at 2:3"
    )
    assert str(caught.value) == prefix + expected


def test_parse_error_in_the_imported_file_is_kept_as_the_cause(tmp_path: Path) -> None:
    write_files(tmp_path, {"app.as": APP, "planner.as": "agent Planner { %"})
    with pytest.raises(LoadError) as caught:
        agentscript.load(tmp_path / "app.as")
    assert isinstance(caught.value.__cause__, ParseError)


def test_parse_error_in_the_entry_file_is_a_parse_error(tmp_path: Path) -> None:
    write_files(tmp_path, {"app.as": "agent App {"})
    with pytest.raises(ParseError):
        agentscript.load(tmp_path / "app.as")


@pytest.mark.parametrize(
    ("files", "entry", "message"),
    [
        (
            {
                "self.as": 'import agent S from "./self.as"\nmain agent S { main func() { return 1 } }'
            },
            "self.as",
            "Circular agent import detected at ./self.as",
        ),
        (
            {
                "a.as": 'import agent B from "./b.as"\nmain agent A { main func() { return B() } }',
                "b.as": 'import agent A from "./a.as"\nagent B { main func() { return 1 } }',
            },
            "a.as",
            "Failed to load agent import 'B' from {b}: Circular agent import detected at ./a.as",
        ),
    ],
    ids=["self", "two-files"],
)
def test_circular_imports_are_detected_at_the_first_repeat(
    tmp_path: Path, files: dict[str, str], entry: str, message: str
) -> None:
    write_files(tmp_path, files)
    with pytest.raises(LoadError) as caught:
        agentscript.load(tmp_path / entry)
    assert str(caught.value) == message.format(b=(tmp_path / "b.as").resolve())


def test_missing_entry_file(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match=r"^Program file not found: "):
        agentscript.load(tmp_path / "absent.as")
