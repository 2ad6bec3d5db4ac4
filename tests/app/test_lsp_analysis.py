"""The language server's analysis, feature by feature, without the protocol: recovery of a
document being typed, the index, tool methods from configuration, diagnostics' extras."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentscript.app.lsp import completion, diagnostics, hover, navigation, outline
from agentscript.app.lsp.analysis import Analysis, Workspace
from agentscript.app.lsp.recovery import parse_with_recovery
from agentscript.app.lsp.semantic_tokens import TOKEN_TYPES, semantic_tokens
from agentscript.app.lsp.tool_methods import ToolCatalog

PROGRAM = """\
import llm Model from "openai://gpt-4.1-mini"
import tool Notes from "mcp://notes"
import tool Memory from "memory://"
import memory Facts from "sqlite://facts.db"

main agent Helper {
    model Model
    role "helper"
    description "Helps."

    main func(input { question string }) {
        hits = Notes.call({ tool: "search", args: {} })
        use one of { short: hits max 1k  none: empty } as notes
        Facts.add(input.question)
        return hits
    }
}
"""


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _analyse(text: str, path: Path) -> Analysis:
    return Workspace(_read).analyze(text, str(path))


def test_a_half_typed_line_still_leaves_the_rest_indexed() -> None:
    text = PROGRAM.replace("        return hits", "        x = Facts.query(\n        return hits")
    outcome = parse_with_recovery(text, None)
    assert outcome.error is not None and outcome.program is not None
    assert outcome.program.agents[0].name == "Helper"
    assert len(outcome.parsed_text) == len(text)  # offsets unchanged


def test_an_unclosed_block_at_the_end_is_closed_for_the_outline(tmp_path: Path) -> None:
    text = PROGRAM.rstrip().removesuffix("}")
    analysis = _analyse(text, tmp_path / "open.as")
    assert [d.code for d in analysis.diagnostics] == ["PARSE_ERROR"]
    assert [symbol.name for symbol in outline.document_symbols(analysis)][-1] == "Helper"


def test_mcp_methods_come_from_the_config_file_without_starting_the_server(
    tmp_path: Path,
) -> None:
    started = tmp_path / "started"
    (tmp_path / "agentscript.mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {
                        "command": sys.executable,
                        "args": ["-c", f"open({str(started)!r}, 'w')"],
                        "autoApprove": ["search", "get"],
                    }
                }
            }
        ),
        encoding="utf-8",
    )
    text = PROGRAM.replace("        return hits", "        x = Notes.\n        return hits")
    analysis = _analyse(text, tmp_path / "main.as")
    offset = text.index("x = Notes.") + len("x = Notes.")
    labels = [item.label for item in completion.complete(analysis, offset, ToolCatalog(tmp_path))]
    assert labels == ["call", "search", "get"]
    described = hover.hover_text(analysis, text.index("Notes.call") + 1, ToolCatalog(tmp_path))
    assert described is not None and f"runs `{sys.executable} -c" in described
    assert not started.exists()


def test_memory_service_methods_are_offered(tmp_path: Path) -> None:
    text = PROGRAM.replace("        return hits", "        m = Memory.\n        return hits")
    analysis = _analyse(text, tmp_path / "main.as")
    offset = text.index("m = Memory.") + len("m = Memory.")
    labels = [item.label for item in completion.complete(analysis, offset, ToolCatalog(tmp_path))]
    assert {"remember", "recall", "forget", "stats"} <= set(labels)
    resource = text.index("Facts.add") + len("Facts.")
    analysis = _analyse(text, tmp_path / "main.as")
    assert hover.hover_text(analysis, resource + 1, ToolCatalog(tmp_path)) is not None


def test_use_one_of_hover_lists_the_candidates(tmp_path: Path) -> None:
    analysis = _analyse(PROGRAM, tmp_path / "main.as")
    text = hover.hover_text(analysis, PROGRAM.index("use one of"), ToolCatalog(tmp_path))
    assert text is not None and "candidates: `short`, `none`" in text


def test_a_duplicate_points_at_the_first_declaration(tmp_path: Path) -> None:
    text = PROGRAM.replace(
        'import tool Memory from "memory://"', 'import tool Notes from "sh://grep"'
    ).replace("Memory", "Notes")
    analysis = _analyse(text, tmp_path / "main.as")
    uri = (tmp_path / "main.as").as_uri()
    (duplicate,) = [d for d in diagnostics.to_lsp(analysis, uri) if d.code == "DUPLICATE_IMPORT"]
    assert duplicate.related_information is not None
    (first,) = duplicate.related_information
    assert first.location.range.start.line == 1 and first.location.uri == uri


def test_references_of_a_local_stay_in_its_function(tmp_path: Path) -> None:
    analysis = _analyse(PROGRAM, tmp_path / "main.as")
    assert analysis.index is not None
    symbol = navigation.symbol_at(analysis, PROGRAM.index("hits ="), ToolCatalog(tmp_path))
    assert symbol is not None and symbol.kind == "local"
    places = navigation.references(
        symbol, [analysis.index], ToolCatalog(tmp_path), declaration=True
    )
    assert [PROGRAM[p.start : p.end] for p in places] == ["hits", "hits", "hits"]


def test_semantic_tokens_colour_names_by_what_they_name(tmp_path: Path) -> None:
    analysis = _analyse(PROGRAM, tmp_path / "main.as")
    data = semantic_tokens(analysis)
    line = character = 0
    kinds: dict[str, str] = {}
    lines = PROGRAM.split("\n")
    for at in range(0, len(data), 5):
        delta_line, delta_start, length, kind, _ = data[at : at + 5]
        line += delta_line
        character = character + delta_start if delta_line == 0 else delta_start
        kinds.setdefault(lines[line][character : character + length], TOKEN_TYPES[kind])
    assert kinds["Helper"] == "class"
    assert kinds["input"] == "parameter"
    assert kinds["hits"] == "variable"
    assert kinds["call"] == "method"
    assert kinds['"helper"'] == "string"
    assert kinds["string"] == "type"


def test_mcp_servers_list_their_tools_once_when_the_user_allows_it() -> None:
    tutorial = Path(__file__).resolve().parents[2] / "tutorials" / "mcp"
    text = (tutorial / "mcp.as").read_text(encoding="utf-8")
    analysis = _analyse(text, tutorial / "mcp.as")
    offset = text.index("note = Notes.get") + len("note = Notes.")
    offline = [item.label for item in completion.complete(analysis, offset, ToolCatalog(tutorial))]
    assert offline == ["call"]
    allowed = ToolCatalog(tutorial, start_mcp_servers=True)
    labels = [item.label for item in completion.complete(analysis, offset, allowed)]
    assert {"call", "search", "get"} <= set(labels)
    assert list(allowed.listed) == [(str(tutorial), "mcp://notes")]


def test_an_agent_import_that_cannot_load_is_reported_on_its_import(tmp_path: Path) -> None:
    text = 'import agent Missing from "./missing.as"\nmain agent A {\n    main func() {\n        return Missing(1)\n    }\n}\n'
    analysis = _analyse(text, tmp_path / "main.as")
    (problem,) = [d for d in analysis.diagnostics if d.code == "IMPORT_ERROR"]
    assert "missing.as" in problem.message
    assert problem.range.start.line == 1 and problem.range.end.line == 1


def test_hover_on_a_file_import_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes\n", encoding="utf-8")
    text = 'import file Notes from "./notes.md"\nimport file Gone from "./gone.md"\n'
    analysis = _analyse(text, tmp_path / "main.as")
    found = hover.hover_text(analysis, text.index("Notes"), ToolCatalog(tmp_path))
    assert found is not None and f"`{tmp_path / 'notes.md'}`, read" in found
    gone = hover.hover_text(analysis, text.index("Gone"), ToolCatalog(tmp_path))
    assert gone is not None and "(not found)" in gone


def test_a_wrong_argument_count_points_at_the_declaration(tmp_path: Path) -> None:
    text = (
        "main agent A {\n    func twice(a, b) {\n        return a\n    }\n"
        "    main func() {\n        return twice(1)\n    }\n}\n"
    )
    analysis = _analyse(text, tmp_path / "main.as")
    uri = (tmp_path / "main.as").as_uri()
    (problem,) = diagnostics.to_lsp(analysis, uri)
    assert problem.code == "INVALID_ARGUMENT_COUNT"
    assert problem.related_information is not None
    (declared,) = problem.related_information
    assert declared.location.range.start.line == 1
    assert declared.message == "'A.twice' is declared here with 2 parameter(s)"


def test_import_uris_are_completed_with_the_configured_mcp_servers(tmp_path: Path) -> None:
    (tmp_path / "agentscript.mcp.json").write_text(
        json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}}), encoding="utf-8"
    )
    text = 'import tool Search from "'
    analysis = _analyse(text, tmp_path / "main.as")
    labels = [
        item.label for item in completion.complete(analysis, len(text), ToolCatalog(tmp_path))
    ]
    assert {"sh://grep", "file://workspace", "env://process", "mcp://github"} <= set(labels)
    model = 'import llm Model from "'
    analysis = _analyse(model, tmp_path / "main.as")
    labels = [
        item.label for item in completion.complete(analysis, len(model), ToolCatalog(tmp_path))
    ]
    assert "openai://gpt-4.1-mini" in labels


def test_nothing_is_completed_inside_a_string_or_a_comment(tmp_path: Path) -> None:
    text = PROGRAM.replace('role "helper"', 'role "helper. a.')
    analysis = _analyse(text, tmp_path / "main.as")
    offset = text.index('"helper. a.') + len('"helper. a.')
    assert completion.complete(analysis, offset, ToolCatalog(tmp_path)) == []


def _fix(analysis: Analysis, uri: str, code: str) -> tuple[str, str]:
    """The misspelled text a diagnostic's preferred quick fix replaces, and with what."""
    (problem,) = [d for d in diagnostics.to_lsp(analysis, uri) if d.code == code]
    (action, *_) = diagnostics.quick_fixes(uri, [problem])
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes[uri]
    start = analysis.lines.offset(edit.range.start)
    end = analysis.lines.offset(edit.range.end)
    return analysis.text[start:end], edit.new_text


def test_quick_fixes_replace_only_the_misspelled_part(tmp_path: Path) -> None:
    text = (
        'import llm Model from "openai://gpt-4.1-mini"\n'
        'import memory Facts from "sqlite://facts.db"\n'
        "main agent A {\n"
        '    model Model\n    role "r"\n    description "d"\n'
        "    func review(x) {\n        return x\n    }\n"
        "    main func() {\n"
        "        a = A.reviw(1)\n"
        "        b = Facts.qeury(1)\n"
        '        c = generate({ input: "x", atempts: 2 })\n'
        "        return a\n    }\n}\n"
    )
    analysis = _analyse(text, tmp_path / "main.as")
    uri = (tmp_path / "main.as").as_uri()
    assert _fix(analysis, uri, "UNKNOWN_FUNCTION") == ("reviw", "review")
    assert _fix(analysis, uri, "UNKNOWN_MEMORY_METHOD") == ("qeury", "query")
    assert _fix(analysis, uri, "UNKNOWN_GENERATE_OPTION") == ("atempts", "attempts")


def test_a_config_file_nested_too_deep_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "agentscript.mcp.json").write_text("[" * 100_000 + "]" * 100_000)
    text = 'import tool Notes from "mcp://notes"\nimport tool Search from "'
    analysis = _analyse(text, tmp_path / "main.as")
    labels = [
        item.label for item in completion.complete(analysis, len(text), ToolCatalog(tmp_path))
    ]
    assert "sh://grep" in labels and not any(label.startswith("mcp://") for label in labels)


def test_a_server_that_never_answers_costs_a_completion_its_short_start_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from agentscript.app.lsp import tool_methods

    (tmp_path / "agentscript.mcp.json").write_text(
        json.dumps(
            {
                "servers": {
                    "hangs": {
                        "command": sys.executable,
                        "args": ["-c", "import time; time.sleep(60)"],
                    }
                }
            }
        )
    )
    monkeypatch.setattr(tool_methods, "LIST_START_SECONDS", 0.5)
    catalog = ToolCatalog(tmp_path, start_mcp_servers=True)
    # The default start bound is 20 s: with it, this call would wait that long (the test's
    # own bound is what the suite's timeout would show); with the editor's, half a second.
    assert [method.name for method in catalog.methods("mcp://hangs")] == ["call"]
    assert catalog.listed == {(str(tmp_path), "mcp://hangs"): ()}


SHAPED = """import llm Model from "openai://gpt-4.1-mini"
agent A {
  model Model
  role "r"
  description "d"
  main func(input { q string }) {
    step = think(input.q)
    use step.action
  }
  func think(q) {
    use q
    generate({ input: "x" }) -> { thought, action, query }
  }
}
"""


def test_fields_and_hover_follow_the_checkers_types_through_a_call(tmp_path: Path) -> None:
    """The value a function returns, as the checker infers it, drives completion after
    `step.` and the hover on `step` (one implementation: lang/shape_types.py)."""
    analysis = _analyse(SHAPED, tmp_path / "shaped.as")
    offset = SHAPED.index("step.action") + len("step.")
    labels = [item.label for item in completion.complete(analysis, offset, ToolCatalog(tmp_path))]
    assert labels == ["thought", "action", "query"]
    shown = hover.hover_text(analysis, SHAPED.index("step ="), ToolCatalog(tmp_path))
    assert shown is not None
    assert "step: { thought string, action string, query string }" in shown
