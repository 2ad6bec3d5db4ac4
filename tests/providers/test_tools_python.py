"""`python:` tools: the allow-list, calling sync and async functions with positional or keyword
arguments, type-hint validation, JSON-safe values, risk marks and the run's deadline."""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentscript.providers.tools.python import PythonTools
from agentscript.providers.tools.python_allow import AllowList, check_allowed
from agentscript.runtime.budgets import BudgetExceeded, CallDeadline
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

FIXTURE = Path(__file__).parents[1] / "fixtures" / "python_tools" / "text_tools.py"


class Workspace:
    """A temporary workspace holding a package of its own name with the fixture module as
    `PACKAGE.text`, allowed (or not) by its pyproject.toml."""

    def __init__(self, root: Path, package: str) -> None:
        self.root = root
        self.package = package
        self.uri = f"python:{package}.text"

    def allow(self, *modules: str) -> None:
        listed = ", ".join(f'"{module}"' for module in modules)
        (self.root / "pyproject.toml").write_text(
            f"[project]\nname = 'demo'\n\n[tool.agentscript]\npython_tools = [{listed}]\n"
        )

    @property
    def module(self) -> ModuleType:
        return sys.modules[f"{self.package}.text"]


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    package = "astools_" + "".join(c for c in tmp_path.name if c.isalnum())
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    shutil.copy(FIXTURE, tmp_path / package / "text.py")
    made = Workspace(tmp_path, package)
    made.allow(f"{package}.text")
    yield made
    loaded = sys.modules.get(f"{package}.text")
    if loaded is not None:
        loaded.RELEASE.set()
    for name in [name for name in sys.modules if name.split(".")[0] == package]:
        del sys.modules[name]


def call(
    workspace: Workspace, method: str, *args: Any, deadline: CallDeadline | None = None
) -> Any:
    request = ToolCall("Text", workspace.uri, method, list(args))
    if deadline is not None:
        request.deadline = deadline
    return PythonTools(workspace.root).call(request)


def failure(workspace: Workspace, method: str, *args: Any) -> str:
    with pytest.raises(ExecutionError) as raised:
        call(workspace, method, *args)
    return raised.value.bare_message


# ----------------------------------------------------------------------------- the allow-list


def test_a_module_not_in_the_allow_list_is_refused_without_importing_it(
    workspace: Workspace,
) -> None:
    workspace.allow("somethingelse")

    message = failure(workspace, "slugify", "Hello")

    assert message == (
        f"Python module '{workspace.package}.text' is not allowed: add it to "
        f"[tool.agentscript] python_tools in {workspace.root / 'pyproject.toml'}"
    )
    assert f"{workspace.package}.text" not in sys.modules


def test_the_allow_list_is_read_once_so_a_run_cannot_widen_it(workspace: Workspace) -> None:
    workspace.allow()
    tools = PythonTools(workspace.root)
    workspace.allow(f"{workspace.package}.text")

    with pytest.raises(ExecutionError, match="is not allowed"):
        tools.call(ToolCall("Text", workspace.uri, "slugify", ["a"]))


def test_allowing_a_package_does_not_allow_its_modules_nor_the_standard_library(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.agentscript]\npython_tools = ["mypkg"]\n')

    for uri in ("python:mypkg.text", "python:os", "python:subprocess"):
        with pytest.raises(ExecutionError, match="is not allowed"):
            check_allowed(uri, tmp_path)
    assert check_allowed("python:mypkg", tmp_path) == "mypkg"


def test_without_a_pyproject_nothing_is_allowed(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()

    assert AllowList.read(folder) == AllowList(None, frozenset())
    with pytest.raises(
        ExecutionError, match=re.escape("add it to [tool.agentscript] python_tools")
    ):
        check_allowed("python:json", folder)


def test_a_malformed_allow_list_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.agentscript]\npython_tools = "mypkg"\n')

    with pytest.raises(ExecutionError, match="python_tools must be a list of module names"):
        check_allowed("python:mypkg", tmp_path)


def test_a_uri_that_names_no_module_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExecutionError, match="does not name a Python module"):
        check_allowed("python:my-pkg/x", tmp_path)


def test_an_allowed_module_that_does_not_exist_is_an_error_at_the_call(
    workspace: Workspace,
) -> None:
    workspace.allow(f"{workspace.package}.missing")
    request = ToolCall("Gone", f"python:{workspace.package}.missing", "f", [])

    with pytest.raises(ExecutionError, match="Cannot import Python module"):
        PythonTools(workspace.root).call(request)


# ----------------------------------------------------------------------------- calls


def test_positional_and_keyword_calls(workspace: Workspace) -> None:
    assert call(workspace, "slugify", "Hello World") == "hello-world"
    assert call(workspace, "slugify", "Hello World", "+") == "hello+world"
    assert call(workspace, "slugify", {"text": "Hello World", "sep": "_"}) == "hello_world"


def test_async_functions_are_awaited(workspace: Workspace) -> None:
    assert call(workspace, "shout", "hey") == "HEY"


def test_models_and_dataclasses_cross_as_objects(workspace: Workspace) -> None:
    assert call(workspace, "box", {"corner": {"x": 2, "y": 3}}) == {"width": 2, "height": 3}


def test_only_public_functions_are_methods(workspace: Workspace) -> None:
    message = failure(workspace, "_private")

    assert message.startswith("Unknown Python tool function 'Text._private'. Available: ahang")
    assert "slugify" in message
    assert "Point" not in message


def test_arguments_are_checked_against_the_type_hints(workspace: Workspace) -> None:
    message = failure(workspace, "slugify", 42)

    assert message.startswith(
        "Text.slugify: parameter 'text' expects str, got 42 (int): Input should be a valid string"
    )
    nested = failure(workspace, "box", {"corner": {"x": "two", "y": 3}})
    assert nested.startswith("Text.box: parameter 'corner'['x'] expects Point, got")


def test_arguments_that_do_not_fit_the_signature_list_the_parameters(
    workspace: Workspace,
) -> None:
    message = failure(workspace, "slugify", "a", "b", "c")

    assert message == (
        "Text.slugify(text: 'str', sep: 'str' = '-') -> 'str': too many positional arguments"
    )


def test_return_values_are_checked_and_must_be_json(workspace: Workspace) -> None:
    assert failure(workspace, "wrong").startswith(
        "Text.wrong: the return value expects int, got 'nope' (str)"
    )
    assert failure(workspace, "opaque").startswith(
        "Text.opaque returned a value of type set, which cannot cross as JSON"
    )


def test_an_exception_becomes_an_error_with_its_message(workspace: Workspace) -> None:
    assert failure(workspace, "fail", "disk full") == "Text.fail raised ValueError: disk full"


def test_risk_comes_from_the_decorator_and_unmarked_functions_are_effectful(
    workspace: Workspace,
) -> None:
    tools = PythonTools(workspace.root)

    def risk(method: str) -> str:
        return tools.risk(ToolCall("Text", workspace.uri, method, []))

    assert risk("slugify") == "read"
    assert risk("shout") == "read"
    assert risk("record") == "effect"
    described = {entry["name"]: entry for entry in tools.describe(workspace.uri)}
    assert described["slugify"] == {
        "name": "slugify",
        "signature": "(text: str, sep: str = '-') -> str",
        "description": "Lower-case words joined by `sep`.",
        "risk": "read",
    }


def test_the_decorator_refuses_an_unknown_risk() -> None:
    import agentscript

    with pytest.raises(ValueError, match="risk must be one of read, effect, destructive"):
        agentscript.tool(risk="maybe")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- deadlines


@pytest.mark.parametrize("method", ["hang", "ahang"])
def test_a_hung_function_ends_at_the_runs_deadline(workspace: Workspace, method: str) -> None:
    deadline = CallDeadline(at=time.monotonic() + 0.2, max_seconds=0.2)

    with pytest.raises(BudgetExceeded):
        call(workspace, method, deadline=deadline)


def test_a_hung_function_ends_at_the_tools_own_timeout(workspace: Workspace) -> None:
    tools = PythonTools(workspace.root, timeout_seconds=0.2)

    with pytest.raises(
        ExecutionError, match=re.escape("Text.hang did not finish within 0.2 seconds")
    ):
        tools.call(ToolCall("Text", workspace.uri, "hang", []))


# ----------------------------------------------------------------------------- programs

PROGRAM = """
import llm M from "openai://m"
import tool Text from "python:PACKAGE.text"

agent Notes {
  model M
  role "note taker"
  description "Slugs and records titles."
  main func(input { title: string }) {
    slug = Text.slugify(input.title)
    loud = Text.shout(input.title)
    kept = Text.record(slug)
    { slug: slug, loud: loud, kept: kept }
  }
}
"""


def program(workspace: Workspace, source: str = PROGRAM) -> str:
    path = workspace.root / "notes.as"
    path.write_text(source.replace("PACKAGE", workspace.package))
    return str(path)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from agentscript.cli.main import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run(
    capsys: pytest.CaptureFixture[str],
    workspace: Workspace,
    *extra: str,
    source: str = PROGRAM,
    title: str = "Hello World",
) -> tuple[int, str, str]:
    return cli(
        capsys,
        "run",
        program(workspace, source),
        "--input",
        json.dumps({"title": title}),
        "--no-learn",
        "--quiet",
        *extra,
    )


def test_check_refuses_a_module_the_workspace_does_not_allow_without_importing_it(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    path = program(workspace)
    assert cli(capsys, "check", path)[0] == 0
    workspace.allow("os")

    code, out, err = cli(capsys, "check", path)

    assert code != 0
    assert f"Python module '{workspace.package}.text' is not allowed" in out + err
    assert f"{workspace.package}.text" not in sys.modules


def test_a_run_calls_sync_and_async_tools_and_asks_before_effectful_ones(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    code, out, err = run(capsys, workspace, "--mock", "--approve", "auto")

    assert code == 0, err
    assert json.loads(out) == {"slug": "hello-world", "loud": "HELLO WORLD", "kept": {"count": 1}}
    assert workspace.module.CALLS == ["hello-world"]

    code, out, err = run(capsys, workspace, "--mock", "--approve", "deny")

    assert code != 0
    assert "Text.record" in err
    assert "refused" in err.lower()
    assert workspace.module.CALLS == ["hello-world"]


def test_a_run_refuses_a_module_the_workspace_does_not_allow(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    workspace.allow()

    code, _, err = run(capsys, workspace, "--mock", "--approve", "auto")

    assert code != 0
    assert "is not allowed: add it to [tool.agentscript] python_tools" in err
    assert "Traceback" not in err


def test_a_tool_that_raises_is_a_located_error_without_a_traceback(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    source = PROGRAM.replace("Text.record(slug)", 'Text.fail("disk full")')

    code, _, err = run(capsys, workspace, "--mock", "--approve", "auto", source=source, title="a")

    assert code != 0
    assert "notes.as:12:" in err
    assert "Text.fail raised ValueError: disk full" in err
    assert "Traceback" not in err


def test_a_hung_tool_is_stopped_by_the_runs_deadline(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    source = PROGRAM.replace("Text.record(slug)", "Text.hang()")

    code, _, err = run(
        capsys,
        workspace,
        "--mock",
        "--approve",
        "auto",
        "--max-seconds",
        "0.5",
        source=source,
        title="a",
    )

    assert code != 0
    assert "Run budget exceeded: more than 0.5 seconds (--max-seconds)" in err
    assert "notes.as:12:" in err


def test_effectful_python_tools_are_refused_inside_parallel_for(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    source = PROGRAM.replace(
        "kept = Text.record(slug)",
        "kept = parallel for t in [slug] max 2 { Text.record(t) }",
    )

    code, out, err = cli(capsys, "check", program(workspace, source))

    assert code != 0
    assert "effectful operation 'Text.record' is not allowed inside parallel for" in out + err


def test_a_replayed_run_calls_no_python_function(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    code, recorded, err = run(capsys, workspace, "--mock", "--approve", "auto")
    assert code == 0, err
    assert workspace.module.CALLS == ["hello-world"]

    code, replayed, err = run(capsys, workspace, "--replay", "last", "--approve", "deny")

    assert code == 0, err
    assert replayed == recorded
    assert workspace.module.CALLS == ["hello-world"]


def test_agentscript_tools_lists_the_functions_with_signatures_and_risks(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    code, out, err = cli(capsys, "tools", program(workspace))

    assert code == 0, err
    assert "  slugify(text: str, sep: str = '-') -> str [read] - Lower-case words" in out
    assert "  record(note: str) -> dict[str, int] [effect]" in out


# ----------------------------------------------------------------------------- the editor


def test_the_language_server_completes_and_describes_functions_without_importing(
    workspace: Workspace,
) -> None:
    from agentscript.app.lsp import completion, hover
    from agentscript.app.lsp.analysis import Workspace as Documents
    from agentscript.app.lsp.tool_methods import ToolCatalog

    text = PROGRAM.replace("PACKAGE", workspace.package).replace(
        "    kept = Text.record(slug)", "    kept = Text.record(slug)\n    x = Text."
    )
    analysis = Documents(lambda path: None).analyze(text, str(workspace.root / "notes.as"))
    catalog = ToolCatalog(workspace.root)
    offset = text.index("x = Text.") + len("x = Text.")

    labels = [item.label for item in completion.complete(analysis, offset, catalog)]
    described = hover.hover_text(analysis, text.index("Text.slugify") + 6, catalog)

    assert {"slugify", "shout", "box", "record", "hang", "ahang"} <= set(labels)
    assert "_private" not in labels
    assert described is not None
    assert "`slugify(text: str, sep: str='-') -> str` [read] — Lower-case words" in described
    assert f"{workspace.package}.text" not in sys.modules

    workspace.allow()
    assert "slugify" not in [item.label for item in completion.complete(analysis, offset, catalog)]


def test_the_user_is_asked_before_an_unmarked_function_runs_and_not_before_a_read(
    workspace: Workspace,
) -> None:
    import agentscript
    from agentscript.app.configuration import RunConfig
    from agentscript.providers.tools.approvals import Answer, ApprovalRequest

    asked: list[tuple[str, str]] = []

    def ask(approval: ApprovalRequest) -> Answer:
        asked.append((approval.label, approval.risk))
        return "no"

    loaded = agentscript.load(program(workspace))
    config = RunConfig(
        model="mock", approve="ask", ask_user=ask, workspace=str(workspace.root), learn=False
    )

    with pytest.raises(agentscript.ExecutionError, match=re.escape("Text.record")):
        agentscript.run(loaded, {"title": "Hello World"}, config)

    assert asked == [("Text.record", "effect")]
    assert workspace.module.CALLS == []


def test_agentscript_tools_dry_imports_nothing(
    capsys: pytest.CaptureFixture[str], workspace: Workspace
) -> None:
    code, out, err = cli(capsys, "tools", program(workspace), "--dry")

    assert code == 0, err
    assert out.strip() == f"Text  python:{workspace.package}.text"
    assert f"{workspace.package}.text" not in sys.modules
