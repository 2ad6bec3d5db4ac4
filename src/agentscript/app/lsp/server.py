"""The language server: pygls wiring of the features, and debounced diagnostics.

Every request reads the document's latest analysis, made again when the text changed since.
Diagnostics are published at once when a document opens and `DIAGNOSTICS_DELAY` seconds after
the last change while typing, so a burst of keystrokes costs one analysis.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from agentscript import __version__
from agentscript.app.lsp import (
    completion,
    diagnostics,
    hover,
    navigation,
    outline,
    signatures,
)
from agentscript.app.lsp.analysis import Analysis, Workspace
from agentscript.app.lsp.formatting import format_edits
from agentscript.app.lsp.index import DocumentIndex
from agentscript.app.lsp.positions import LineIndex
from agentscript.app.lsp.semantic_tokens import TOKEN_TYPES, semantic_tokens
from agentscript.app.lsp.tool_methods import Method, ToolCatalog
from agentscript.runtime.bounded_input import UnusableInput, read_regular_text
from agentscript.runtime.loader import MAX_PROGRAM_BYTES

DIAGNOSTICS_DELAY = 0.075
_COMPLETION_KINDS = {
    "keyword": types.CompletionItemKind.Keyword,
    "variable": types.CompletionItemKind.Variable,
    "parameter": types.CompletionItemKind.Variable,
    "function": types.CompletionItemKind.Function,
    "agent": types.CompletionItemKind.Class,
    "import": types.CompletionItemKind.Module,
    "method": types.CompletionItemKind.Method,
    "field": types.CompletionItemKind.Field,
    "property": types.CompletionItemKind.Property,
    "type": types.CompletionItemKind.TypeParameter,
    "option": types.CompletionItemKind.Property,
    "value": types.CompletionItemKind.Value,
}


class AgentScriptServer(LanguageServer):
    """The server's state: the analysis of each open document (by URI, with the version it was
    made for), the indexes of imported files, and the pending diagnostics timers."""

    def __init__(self) -> None:
        super().__init__("agentscript", __version__)
        self.programs = Workspace(self.read_text)
        self.analyses: dict[str, tuple[int | None, Analysis]] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        # Whether the user allowed MCP servers to be started to list their tools, and what
        # they listed (initialization option `startMcpServers`).
        self.start_mcp_servers = False
        self.listed_tools: dict[tuple[str, str], tuple[Method, ...]] = {}

    def read_text(self, path: Path) -> str | None:
        """A file's text: the editor's buffer when it is open, else the file on disk when it
        is a regular file of the workspace (an import of `/etc/shadow`, a FIFO or `/dev/zero`
        is read as missing: an imported path comes from the program, which is untrusted)."""
        document = self.workspace.text_documents.get(from_fs_path(str(path)) or "")
        if document is not None:
            return str(document.source)
        if not self.in_workspace(path):
            return None
        try:
            return read_regular_text(path, MAX_PROGRAM_BYTES, "Program file")
        except UnusableInput:
            return None

    def in_workspace(self, path: Path) -> bool:
        """Whether `path` (symlinks resolved) lies in a folder the editor opened, or, with
        none, beside a document it opened."""
        roots = [Path(to_fs_path(folder.uri) or "") for folder in self.workspace.folders.values()]
        if not roots and self.workspace.root_path:
            roots = [Path(self.workspace.root_path)]
        if not roots:
            roots = [Path(to_fs_path(uri) or "").parent for uri in self.workspace.text_documents]
        real = path.resolve()
        return any(real.is_relative_to(root.resolve()) for root in roots if str(root))

    def analysis(self, uri: str) -> Analysis:
        document = self.workspace.get_text_document(uri)
        cached = self.analyses.get(uri)
        if (
            cached is not None
            and cached[0] == document.version
            and cached[1].text == document.source
        ):
            return cached[1]
        result = self.programs.analyze(document.source, to_fs_path(uri))
        self.analyses[uri] = (document.version, result)
        return result

    def publish(self, uri: str) -> None:
        self.pending.pop(uri, None)
        if uri not in self.workspace.text_documents:
            return
        analysis = self.analysis(uri)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri,
                diagnostics=diagnostics.to_lsp(analysis, uri),
                version=self.workspace.get_text_document(uri).version,
            )
        )

    def publish_later(self, uri: str, delay: float) -> None:
        scheduled = self.pending.pop(uri, None)
        if scheduled is not None:
            scheduled.cancel()
        self.pending[uri] = asyncio.get_running_loop().call_later(delay, self.publish, uri)

    def tools(self, analysis: Analysis) -> ToolCatalog:
        """The tools of this program, which look in its folder (as `run` does by default)."""
        folder = Path(analysis.path).parent if analysis.path is not None else None
        return ToolCatalog(folder, self.start_mcp_servers, self.listed_tools)

    def indexes(self, analysis: Analysis) -> list[DocumentIndex]:
        """The indexes references are searched in: this document, every open document, and the
        files this document's agent imports come from."""
        found = [analysis.index] if analysis.index is not None else []
        for uri in list(self.workspace.text_documents):
            other = self.analysis(uri).index
            if other is not None and other not in found:
                found.append(other)
        if analysis.index is not None:
            for symbol in analysis.index.imports.values():
                origin = symbol.target
                if origin is not None and origin.path is not None:
                    index = self.programs.file_index(origin.path, [])
                    if index is not None and all(i.path != index.path for i in found):
                        found.append(index)
        return found

    def location(self, place: navigation.Place, analysis: Analysis) -> types.Location | None:
        """An LSP location; offsets in another file are read against its current text."""
        path = place.path or analysis.path
        uri = from_fs_path(path) if path is not None else None
        if uri is None:
            return None
        if path is None or path == analysis.path:
            lines = analysis.lines
        else:
            lines = LineIndex(self.read_text(Path(path)) or "")
        return types.Location(uri=uri, range=lines.range(place.start, place.end))


def build_server() -> AgentScriptServer:
    server = AgentScriptServer()

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: AgentScriptServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict):
            ls.start_mcp_servers = options.get("startMcpServers") is True

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AgentScriptServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AgentScriptServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.publish_later(params.text_document.uri, DIAGNOSTICS_DELAY)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AgentScriptServer, params: types.DidSaveTextDocumentParams) -> None:
        # Another open program may import the saved one: check them all again.
        for uri in list(ls.workspace.text_documents):
            ls.analyses.pop(uri, None)
            ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AgentScriptServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.analyses.pop(uri, None)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: AgentScriptServer, params: types.HoverParams) -> types.Hover | None:
        analysis = ls.analysis(params.text_document.uri)
        offset = analysis.lines.offset(params.position)
        text = hover.hover_text(analysis, offset, ls.tools(analysis))
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def on_definition(
        ls: AgentScriptServer, params: types.DefinitionParams
    ) -> types.Location | None:
        analysis = ls.analysis(params.text_document.uri)
        offset = analysis.lines.offset(params.position)
        place = navigation.definition(analysis, offset, ls.tools(analysis))
        return ls.location(place, analysis) if place is not None else None

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def on_references(ls: AgentScriptServer, params: types.ReferenceParams) -> list[types.Location]:
        analysis = ls.analysis(params.text_document.uri)
        offset = analysis.lines.offset(params.position)
        tools = ls.tools(analysis)
        symbol = navigation.symbol_at(analysis, offset, tools)
        if symbol is None:
            return []
        places = navigation.references(
            symbol, ls.indexes(analysis), tools, params.context.include_declaration
        )
        return [
            location for place in places if (location := ls.location(place, analysis)) is not None
        ]

    @server.feature(
        types.TEXT_DOCUMENT_SIGNATURE_HELP,
        types.SignatureHelpOptions(trigger_characters=["(", ","]),
    )
    def on_signature_help(
        ls: AgentScriptServer, params: types.SignatureHelpParams
    ) -> types.SignatureHelp | None:
        analysis = ls.analysis(params.text_document.uri)
        found = signatures.signature_at(analysis, analysis.lines.offset(params.position))
        if found is None:
            return None
        return types.SignatureHelp(
            signatures=[
                types.SignatureInformation(
                    label=found.label,
                    parameters=[
                        types.ParameterInformation(label=name) for name in found.parameters
                    ],
                )
            ],
            active_signature=0,
            active_parameter=found.active,
        )

    @server.feature(types.TEXT_DOCUMENT_RENAME)
    def on_rename(ls: AgentScriptServer, params: types.RenameParams) -> types.WorkspaceEdit | None:
        if not navigation.is_name(params.new_name):
            raise ValueError(f"'{params.new_name}' is not a name (letters, digits, _ and -)")
        analysis = ls.analysis(params.text_document.uri)
        offset = analysis.lines.offset(params.position)
        tools = ls.tools(analysis)
        symbol = navigation.symbol_at(analysis, offset, tools)
        if symbol is None:
            return None
        changes: dict[str, list[types.TextEdit]] = {}
        for place in navigation.references(symbol, ls.indexes(analysis), tools, True):
            location = ls.location(place, analysis)
            # A rename edits the workspace's files only, never a file an import reached
            # outside it.
            if location is not None and ls.in_workspace(Path(to_fs_path(location.uri) or "")):
                edit = types.TextEdit(range=location.range, new_text=params.new_name)
                changes.setdefault(location.uri, []).append(edit)
        return types.WorkspaceEdit(changes=changes)

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["."])
    )
    def on_completion(
        ls: AgentScriptServer, params: types.CompletionParams
    ) -> types.CompletionList:
        analysis = ls.analysis(params.text_document.uri)
        offset = analysis.lines.offset(params.position)
        items = [
            types.CompletionItem(
                label=item.label,
                kind=_COMPLETION_KINDS.get(item.kind, types.CompletionItemKind.Text),
                detail=item.detail or None,
            )
            for item in completion.complete(analysis, offset, ls.tools(analysis))
        ]
        return types.CompletionList(is_incomplete=False, items=items)

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_symbols(
        ls: AgentScriptServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol]:
        return outline.document_symbols(ls.analysis(params.text_document.uri))

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    def on_folding(
        ls: AgentScriptServer, params: types.FoldingRangeParams
    ) -> list[types.FoldingRange]:
        return outline.folding_ranges(ls.analysis(params.text_document.uri))

    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    def on_formatting(
        ls: AgentScriptServer, params: types.DocumentFormattingParams
    ) -> list[types.TextEdit] | None:
        return format_edits(ls.analysis(params.text_document.uri))

    @server.feature(
        types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
        types.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=[]),
    )
    def on_semantic_tokens(
        ls: AgentScriptServer, params: types.SemanticTokensParams
    ) -> types.SemanticTokens:
        return types.SemanticTokens(data=semantic_tokens(ls.analysis(params.text_document.uri)))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def on_code_action(
        ls: AgentScriptServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        return diagnostics.quick_fixes(params.text_document.uri, list(params.context.diagnostics))

    return server


def serve_stdio() -> None:
    """Run the server on this process's stdin and stdout until the client says exit."""
    build_server().start_io()
