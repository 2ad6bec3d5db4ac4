"""Every feature of the language server answers on any text, however broken: examples with
random slices cut out or random text pasted in (a document being edited) never raise."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscript.app.lsp import completion, diagnostics, hover, navigation, outline, signatures
from agentscript.app.lsp.analysis import Workspace
from agentscript.app.lsp.formatting import format_edits
from agentscript.app.lsp.semantic_tokens import semantic_tokens
from agentscript.app.lsp.tool_methods import ToolCatalog

# The parser raises the recursion limit on first use, which Hypothesis warns about.
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    (path, path.read_text(encoding="utf-8"))
    for path in sorted([*ROOT.glob("examples/**/*.as"), *ROOT.glob("tutorials/**/*.as")])
]
PIECES = st.sampled_from(
    [
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        '"',
        "'",
        ".",
        ",",
        ":",
        "->",
        "<",
        "use ",
        "generate(",
        "import ",
        "agent ",
        "func ",
        "\n",
        "// x",
        "max ",
        "as ",
        "𝄞",
        "é",
        "\t",
        "-",
        "= ",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=st.sampled_from(SOURCES),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 0.2)),
    pasted=st.lists(PIECES, max_size=6).map("".join),
    cursor=st.floats(0, 1),
)
def test_every_feature_answers_on_an_edited_document(
    source: tuple[Path, str], cut: tuple[float, float], pasted: str, cursor: float
) -> None:
    path, original = source
    start = int(cut[0] * len(original))
    end = min(len(original), start + int(cut[1] * len(original)))
    text = original[:start] + pasted + original[end:]
    analysis = Workspace(lambda target: None).analyze(text, str(path))
    tools = ToolCatalog(None)
    offset = int(cursor * len(text))
    diagnostics.to_lsp(analysis, path.as_uri())
    hover.hover_text(analysis, offset, tools)
    completion.complete(analysis, offset, tools)
    signatures.signature_at(analysis, offset)
    navigation.definition(analysis, offset, tools)
    symbol = navigation.symbol_at(analysis, offset, tools)
    if symbol is not None and analysis.index is not None:
        navigation.references(symbol, [analysis.index], tools, declaration=True)
    outline.document_symbols(analysis)
    outline.folding_ranges(analysis)
    assert len(semantic_tokens(analysis)) % 5 == 0
    format_edits(analysis)
    position = analysis.lines.position(offset)
    assert analysis.lines.offset(position) == offset
