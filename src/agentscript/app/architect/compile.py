"""`compileSpec`: a valid AgentSpec lowered to AgentScript source, as the original lowers it
(docs/tools.md shows the shapes): imports, one main agent, `main func(input {…})`, the locals
as tool calls, the model context as `use` lines, then for ReAct a scratch list and a
`loop until done max N` of reason → act → observe, and a final shaped `generate`.

Deterministic: the same spec gives the same text. Strings are written with the lexer's escapes
(the original writes JSON strings, whose `\\b` or `\\u0001` this lexer would not read back).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentscript.app.architect.diagnostics import passed
from agentscript.app.architect.spec import (
    AgentSpec,
    ContextEntry,
    Generation,
    Local,
    Output,
    ReactBlock,
)
from agentscript.app.architect.validate import spec_diagnostics, typed_spec
from agentscript.app.optimize.prompt_sites import string_literal

INDENT = "    "


def compile_spec(draft: dict[str, Any]) -> dict[str, Any]:
    """`{ok: true, source}`, or `{ok: false, code: "validation_required", diagnostics}`."""
    diagnostics = spec_diagnostics(draft)
    if not passed(diagnostics):
        return {"ok": False, "code": "validation_required", "diagnostics": diagnostics}
    return {"ok": True, "source": source_of(typed_spec(draft))}


def source_of(spec: AgentSpec) -> str:
    body = [line for local in spec.locals for line in [*_local(local), ""]]
    body += [_use(entry) for entry in spec.model_context]
    body.append("")
    if spec.react is not None:
        body += [*_react_loop(spec.react), ""]
    body += _generate("return generate({", spec.generation, spec.output)
    lines = [
        f"import llm {spec.model.import_name} from {string_literal(spec.model.uri)}",
        *(f"import tool {tool.import_name} from {string_literal(tool.uri)}" for tool in spec.tools),
        "",
        f"main agent {spec.agent.name} {{",
        f"    model {spec.model.import_name}",
        f"    role {string_literal(spec.agent.role)}",
        f"    description {string_literal(spec.agent.description)}",
        "",
        "    main func(input {",
        *(f"        {name}: {field.type}" for name, field in spec.inputs.items()),
        "    }) {",
        *(_indented(line, 2) for line in body),
        "    }",
        "}",
        "",
    ]
    return "\n".join(lines)


def _local(local: Local) -> list[str]:
    call = local.source
    return _call(f"{local.name} = {call.tool}.{call.method}({{", call.args, thought=False)


def _use(entry: ContextEntry) -> str:
    budget = f" max {entry.max}" if entry.max else ""
    return f"use {_expression(entry.source)}{budget} as {string_literal(entry.label)}"


def _react_loop(react: ReactBlock) -> list[str]:
    act = react.act
    step = [
        *_generate("thought = generate({", react.reason, react.reason.output),
        "",
        *_call(f"obs = {act.tool}.{act.method}({{", act.args, thought=True),
        "scratch.add(obs)",
        f"done = {react.stop_when}",
    ]
    return [
        "scratch = []",
        f"use scratch.summary max {react.scratch.max} as {string_literal(react.scratch.label)}",
        "done = false",
        "",
        f"loop until done max {react.max_iterations} {{",
        *(_indented(line, 1) for line in step),
        "}",
    ]


def _generate(opening: str, generation: Generation, output: Output) -> list[str]:
    options = [f"input: {string_literal(generation.input)}"]
    if generation.max_output is not None:
        options.append(f"max_output: {generation.max_output}")
    return [
        opening,
        *_listed(options),
        "}) -> {",
        *(f"{INDENT}{name}: {field.type}" for name, field in output.fields.items()),
        "}",
    ]


def _call(opening: str, args: dict[str, str], thought: bool) -> list[str]:
    """A tool call with its arguments; `thought.X` is the reasoning's field only inside the
    ReAct loop (`thought`), a string like any other before it."""
    written = (f"{name}: {_expression(value, thought)}" for name, value in args.items())
    return [opening, *_listed(written), "})"]


def _listed(items: Iterable[str]) -> list[str]:
    """Object properties one a line, a comma after each but the last."""
    written = list(items)
    return [
        f"{INDENT}{item}{',' if n < len(written) - 1 else ''}" for n, item in enumerate(written)
    ]


def _expression(value: str, thought: bool = False) -> str:
    """An argument or context expression: `input.X` (and in the loop `thought.X`) as written,
    `local.X` as the local's name, anything else as a string literal."""
    if value.startswith("input.") or (thought and value.startswith("thought.")):
        return value
    if value.startswith("local."):
        return value[len("local.") :]
    return string_literal(value)


def _indented(line: str, depth: int) -> str:
    return INDENT * depth + line if line else ""
