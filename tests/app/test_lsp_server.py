"""The language server end to end: `agentscript lsp` in a subprocess, driven over stdio by a
real LSP client (pytest-lsp), on programs in a temporary folder."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from agentscript.lang import ParseError, parse_program

WORKER = """\
agent Worker {
    model Model
    role "careful worker"
    description "Does one task and reports back."

    main func(task) {
        use task
        return generate({ input: "Do the task." }) -> { output string }
    }

    func review(task) {
        return { task: task }
    }
}

import llm Model from "openai://gpt-4.1-mini"
"""

MAIN = """\
import llm Model from "openai://gpt-4.1-mini"
import tool Search from "sh://grep"
import agent Worker from "./worker.as"
import file Notes from "./notes.md"

main agent Boss {
    model Model
    role "boss"
    description "Hands tasks out."

    main func(input { goal string, tasks list[string] }) {
        use input.goal < 2k as the goal
        found = Search.run({ path: ".", pattern: input.goal })
        step = generate({ input: "Plan.", attempts: 2 }) -> { action string, query string }
        result = Worker(step.query)
        checked = Worker.review(result)
        return { goal: inptu.goal, step: step.action, checked: checked, notes: Notes }
    }
}
"""


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "agentscript", "lsp"])
)
async def client(lsp_client: LanguageClient, tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "worker.as").write_text(WORKER, encoding="utf-8")
    (tmp_path / "notes.md").write_text("# notes\n", encoding="utf-8")
    (tmp_path / "main.as").write_text(MAIN, encoding="utf-8")
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=from_fs_path(str(tmp_path)),
        )
    )
    yield
    await lsp_client.shutdown_session()


def _uri(folder: Path, name: str) -> str:
    return from_fs_path(str(folder / name)) or ""


def _open(client: LanguageClient, folder: Path, name: str, text: str) -> str:
    uri = _uri(folder, name)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="agentscript", version=1, text=text
            )
        )
    )
    return uri


def _position(text: str, needle: str, shift: int = 0) -> types.Position:
    offset = text.index(needle) + shift
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def _diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics.get(uri, []))


@pytest.mark.asyncio
async def test_an_error_is_published_with_its_code_and_range_and_cleared_when_fixed(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path, "main.as", MAIN)
    found = await _diagnostics(client, uri)
    assert [d.code for d in found] == ["UNKNOWN_IDENTIFIER"]
    (problem,) = found
    assert problem.source == "agentscript"
    start = _position(MAIN, "inptu.goal")
    assert problem.range.start == start
    assert problem.range.end == types.Position(line=start.line, character=start.character + 5)
    assert "did you mean 'input'" in problem.message

    fixed = MAIN.replace("inptu.goal", "input.goal")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    assert await _diagnostics(client, uri) == []


@pytest.mark.asyncio
async def test_a_burst_of_changes_is_checked_once_at_its_end(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path, "main.as", MAIN)
    await _diagnostics(client, uri)
    for version in range(2, 7):
        text = MAIN.replace("inptu", "inpu" if version < 6 else "input")
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
    published: list[int | None] = []
    while 6 not in published:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        published.append(params.version)
    assert published == [6]  # the edits 2-5 came within the debounce delay of each other
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_did_you_mean_is_offered_as_a_quick_fix(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path, "main.as", MAIN)
    (problem,) = await _diagnostics(client, uri)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=problem.range,
            context=types.CodeActionContext(diagnostics=[problem]),
        )
    )
    assert actions is not None
    (action,) = [a for a in actions if isinstance(a, types.CodeAction)]
    assert action.title == "Change to 'input'"
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes[uri]
    assert edit.new_text == "input" and edit.range == problem.range


@pytest.mark.asyncio
async def test_a_parse_error_has_its_position_and_the_outline_survives(
    client: LanguageClient, tmp_path: Path
) -> None:
    broken = MAIN.replace("checked = Worker.review(result)", "checked = Worker.review(result")
    uri = _open(client, tmp_path, "main.as", broken)
    (problem,) = await _diagnostics(client, uri)
    with pytest.raises(ParseError) as expected:
        parse_program(broken)
    assert problem.code == "PARSE_ERROR"
    assert problem.message == expected.value.bare_message
    where = expected.value.position
    assert problem.range.start == types.Position(line=where.line - 1, character=where.column - 1)
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert symbols is not None
    names = [symbol.name for symbol in symbols]
    assert names == ["Model", "Search", "Worker", "Notes", "Boss"]
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(broken, "step.action", 1),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "(variable) step: { action string, query string }" in hover.contents.value


async def _hover(client: LanguageClient, uri: str, text: str, needle: str, shift: int = 1) -> str:
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(text, needle, shift),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


@pytest.mark.asyncio
async def test_hover_tells_shapes_budgets_tools_and_imported_agents(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path, "main.as", MAIN)
    await _diagnostics(client, uri)
    assert "(param) input: { goal string, tasks list[string] }" in await _hover(
        client, uri, MAIN, "input.goal <"
    )
    use = await _hover(client, uri, MAIN, "use input.goal", 0)
    assert "budget: 2k (2000 characters at most)" in use and "label: the goal" in use
    tool = await _hover(client, uri, MAIN, "Search.run")
    assert 'import tool Search from "sh://grep"' in tool and "`run`" in tool
    agent = await _hover(client, uri, MAIN, "Worker(step")
    assert "**role**: careful worker" in agent
    assert "**description**: Does one task and reports back." in agent
    assert "input: `main func(task)`" in agent and "declared in `worker.as`" in agent
    assert "(field) step.action" in await _hover(client, uri, MAIN, "action,", 0)
    generate = await _hover(client, uri, MAIN, "generate({", 2)
    assert "answer checked against `{ action string, query string }`, up to 2 attempts" in generate


@pytest.mark.asyncio
async def test_definition_and_references_cross_files(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path, "main.as", MAIN)
    await _diagnostics(client, uri)
    worker_uri = _uri(tmp_path, "worker.as")
    found = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(MAIN, "Worker.review", 1),
        )
    )
    assert isinstance(found, types.Location)
    assert found.uri == worker_uri
    assert found.range.start == _position(WORKER, "Worker {")
    review = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(MAIN, "review(result)", 1),
        )
    )
    assert isinstance(review, types.Location) and review.uri == worker_uri
    assert review.range.start == _position(WORKER, "review(task)")
    notes = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(MAIN, "Notes }", 1),
        )
    )
    assert isinstance(notes, types.Location) and notes.uri == _uri(tmp_path, "notes.md")

    references = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(MAIN, "review(result)", 1),
            context=types.ReferenceContext(include_declaration=True),
        )
    )
    assert references is not None
    assert sorted((r.uri.rsplit("/", 1)[1], r.range.start.line) for r in references) == [
        ("main.as", _position(MAIN, "review(result)").line),
        ("worker.as", _position(WORKER, "review(task)").line),
    ]


@pytest.mark.asyncio
async def test_rename_changes_every_reference_across_files(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path, "main.as", MAIN)
    await _diagnostics(client, uri)
    edit = await client.text_document_rename_async(
        types.RenameParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(MAIN, "review(result)", 1),
            new_name="inspect",
        )
    )
    assert edit is not None and edit.changes is not None
    worker_uri = _uri(tmp_path, "worker.as")
    assert sorted(edit.changes) == sorted([uri, worker_uri])
    (in_main,) = edit.changes[uri]
    assert in_main.range.start == _position(MAIN, "review(result)")
    (in_worker,) = edit.changes[worker_uri]
    assert in_worker.range.start == _position(WORKER, "review(task)")
    assert in_worker.new_text == "inspect"
    with pytest.raises(Exception, match="is not a name"):
        await client.text_document_rename_async(
            types.RenameParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=_position(MAIN, "step.query", 1),
                new_name="two words",
            )
        )
    local = await client.text_document_rename_async(
        types.RenameParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(MAIN, "step.query", 1),
            new_name="plan",
        )
    )
    assert local is not None and local.changes is not None
    assert len(local.changes[uri]) == MAIN.count("step.") + 1  # the assignment and every use


@pytest.mark.asyncio
async def test_signature_help_inside_a_call(client: LanguageClient, tmp_path: Path) -> None:
    typing = MAIN.replace(
        "        return { goal", "        more = Worker.review(step, \n        return { goal"
    )
    uri = _open(client, tmp_path, "main.as", typing)
    await _diagnostics(client, uri)
    help = await client.text_document_signature_help_async(
        types.SignatureHelpParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(typing, "Worker.review(step, ", len("Worker.review(step, ")),
        )
    )
    assert help is not None
    assert [s.label for s in help.signatures] == ["Worker.review(task)"]
    assert help.active_parameter == 0  # one parameter: the last stays active
    call = await client.text_document_signature_help_async(
        types.SignatureHelpParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(typing, "Worker(step.query", len("Worker(")),
        )
    )
    assert call is not None and call.signatures[0].label == "Worker(task)"


async def _labels(client: LanguageClient, uri: str, text: str, needle: str) -> list[str]:
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(text, needle, len(needle)),
        )
    )
    assert isinstance(result, types.CompletionList)
    return [item.label for item in result.items]


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("x = step.", ["action", "query"]),
        ("y = Worker.", ["review"]),
        ("z = input.", ["goal", "tasks"]),
        ("n = input.tasks.", ["length", "summary", "add"]),
        ("f = Search.", ["run"]),
        ('z = generate({ input: "x", att', ["input", "attempts", "limit", "max_output"]),
        ('z = generate({ input: "x" }) -> { a str', ["boolean", "json", "list", "number"]),
    ],
)
@pytest.mark.asyncio
async def test_completion_offers_members_options_and_shape_types(
    client: LanguageClient, tmp_path: Path, typed: str, expected: list[str]
) -> None:
    typing = MAIN.replace("        return { goal", f"        {typed}\n        return {{ goal")
    uri = _open(client, tmp_path, "main.as", typing)
    await _diagnostics(client, uri)
    labels = await _labels(client, uri, typing, typed)
    assert set(expected) <= set(labels), labels
    assert "use" not in labels  # members, options and types only, not every keyword


@pytest.mark.asyncio
async def test_completion_offers_keywords_and_the_names_in_scope(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = _open(client, tmp_path, "main.as", MAIN)
    await _diagnostics(client, uri)
    names = await _labels(client, uri, MAIN, "        checked")
    assert {"step", "found", "result", "input", "Worker", "Search", "generate", "use"} <= set(names)
    assert "checked" not in names  # not yet assigned where the cursor is


@pytest.mark.asyncio
async def test_formatting_lays_out_the_program(client: LanguageClient, tmp_path: Path) -> None:
    messy = 'import llm Model from "openai://x"\nagent A {\n  model   Model\n}\n'
    uri = _open(client, tmp_path, "messy.as", messy)
    await _diagnostics(client, uri)
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            options=types.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )
    assert edits is not None
    (edit,) = edits
    assert edit.new_text == 'import llm Model from "openai://x"\nagent A {\n    model Model\n}\n'


@pytest.mark.asyncio
async def test_semantic_tokens_and_folding(client: LanguageClient, tmp_path: Path) -> None:
    uri = _open(client, tmp_path, "main.as", MAIN)
    await _diagnostics(client, uri)
    tokens = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert tokens is not None and len(tokens.data) % 5 == 0 and len(tokens.data) > 100
    folds = await client.text_document_folding_range_async(
        types.FoldingRangeParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert folds is not None
    boss = _position(MAIN, "main agent Boss").line
    assert any(fold.start_line == boss for fold in folds)


@pytest.mark.asyncio
async def test_imports_outside_the_workspace_are_not_read_and_a_rename_stays_inside(
    client: LanguageClient, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "worker.as").write_text(WORKER, encoding="utf-8")
    escaping = os.path.relpath(outside / "worker.as", tmp_path)
    text = MAIN.replace('"./worker.as"', json.dumps(escaping))
    uri = _open(client, tmp_path, "main.as", text)
    found = await _diagnostics(client, uri)
    # The outside file is not read: its agent is unknown here, as a missing file's would be.
    assert "UNKNOWN_IDENTIFIER" in [d.code for d in found]
    edit = await client.text_document_rename_async(
        types.RenameParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(text, "step.query", 1),
            new_name="plan",
        )
    )
    assert edit is not None and edit.changes is not None
    assert sorted(edit.changes) == [uri]


@pytest.mark.asyncio
async def test_an_import_of_a_fifo_or_a_device_does_not_hang_the_server(
    client: LanguageClient, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "pipe.as")
    (tmp_path / "zero.as").symlink_to("/dev/zero")
    text = MAIN.replace('"./worker.as"', '"./pipe.as"').replace(
        'import file Notes from "./notes.md"', 'import agent Zero from "./zero.as"'
    )
    uri = _open(client, tmp_path, "main.as", text)
    found = await _diagnostics(client, uri)
    assert found  # answered: the imports are reported, the server is not stuck reading them
