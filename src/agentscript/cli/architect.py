"""`agentscript architect`: the original's AgentSpec command (0.1.21).

    agentscript architect --check SPEC.json          validate; print {ok, diagnostics}
    agentscript architect --spec SPEC.json OUT.as    build OUT.as (or --out OUT.as)
    agentscript architect "REQUEST" OUT.as [--model URI] [--mock [FILE]]
                                                     a model designs the spec, then as --spec

Parses the options, makes one call to `agentscript.app.architect.build` and renders it. Exit
codes as in the original: 0 when the spec is valid (and the program written), 1 when it is not
(the diagnostics go to stderr as JSON, under the failed stage's header) or the model's design
did not check clean, or its run failed; 2 when the command cannot start (its options, or a spec
file that cannot be read or is not a JSON object).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from agentscript.cli.errors import REPORTED_ERRORS, error_lines
from agentscript.cli.options import mock_option
from agentscript.runtime.errors import AgentScriptError

USAGE_EXIT = 2
HEADERS = {
    "validate": "AgentSpec validation failed",
    "analyze": "Generated source analysis failed",
}


@click.command(name="architect")
@click.argument("arguments", nargs=-1, metavar="[REQUEST] [OUTPUT.as]")
@click.option(
    "--spec",
    "spec",
    metavar="SPEC.json",
    help="Build the program this AgentSpec describes (written to OUTPUT or --out).",
)
@click.option(
    "--check",
    "check",
    metavar="SPEC.json",
    help="Only validate this AgentSpec.",
)
@click.option("--out", "out", metavar="OUTPUT.as", help="Where the program goes.")
@click.option(
    "--model",
    "model",
    metavar="URI",
    callback=lambda ctx, param, value: _model_uri(value),
    help="With a request: the model that designs the agent and that it uses "
    "(default ollama://localhost:11434/qwen3.6).",
)
@mock_option("With a request: design with the mock model (scripted answers from FILE).")
@click.option("--quiet", is_flag=True, help="Print nothing when it succeeds.")
@click.pass_context
def architect_command(
    ctx: click.Context,
    arguments: tuple[str, ...],
    spec: str | None,
    check: str | None,
    out: str | None,
    model: str | None,
    responses: str | None,
    quiet: bool,
) -> None:
    """Validate an AgentSpec (--check SPEC.json), compile one to a program that checks clean
    (--spec SPEC.json OUTPUT.as), or have a model design one ("REQUEST" OUTPUT.as).
    See docs/tools.md#hostarchitect."""
    if check is not None:
        if spec is not None or arguments or out is not None:
            raise click.UsageError("Use architect --check <spec.json> without other arguments")
        ctx.exit(_check(Path(check), quiet))
    if spec is None:
        if len(arguments) != 2 or out is not None:
            raise click.UsageError(
                'Usage: agentscript architect "request" <output.as> | --spec <spec.json> '
                "<output.as> | --check <spec.json>"
            )
        ctx.exit(_design(arguments[0], Path(arguments[1]), model, responses, quiet))
    outputs = [*arguments, *([out] if out is not None else [])]
    if len(outputs) != 1:
        raise click.UsageError("Name the program to write once: <output.as> or --out <output.as>")
    ctx.exit(_build(Path(spec), Path(outputs[0]), quiet))


def _check(path: Path, quiet: bool) -> int:
    from agentscript.app.architect.build import check_spec_file

    try:
        result = check_spec_file(path)
    except REPORTED_ERRORS as error:
        return _reported(error)
    if not result["ok"]:
        return _failed("validate", result["diagnostics"])
    if not quiet:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


def _build(path: Path, output: Path, quiet: bool) -> int:
    from agentscript.app.architect.build import build_spec_file

    try:
        built = build_spec_file(path, output)
    except REPORTED_ERRORS as error:
        return _reported(error)
    if built.stage is not None:
        return _failed(built.stage, built.diagnostics)
    if not quiet:
        print(json.dumps({"ok": True, "output": str(built.output)}, indent=2))
    return 0


def _model_uri(value: str | None) -> str | None:
    """`--model`'s URI, checked as the providers read it (NAME=URI has no meaning here)."""
    from agentscript.app.model_choice import parse_model_option

    if value is None:
        return None
    try:
        named = parse_model_option(value).name is not None
    except AgentScriptError as error:
        raise click.BadParameter(str(error)) from None
    if named:
        raise click.BadParameter(f"takes one model URI, got '{value}'")
    return value


def _design(
    request: str, output: Path, model: str | None, responses: str | None, quiet: bool
) -> int:
    from agentscript.app.architect.build import DEFAULT_MODEL, design_from_request

    try:
        designed = design_from_request(request, output, model or DEFAULT_MODEL, responses)
    except AgentScriptError as error:
        for line in error_lines(error):
            print(line, file=sys.stderr)
        return 1
    except REPORTED_ERRORS as error:
        return _reported(error)
    shown = json.dumps(designed.value, indent=2, ensure_ascii=False)
    if designed.output is None:
        print("Architect request did not produce analyzable source:", file=sys.stderr)
        print(shown, file=sys.stderr)
        return 1
    if not quiet:
        answer = {"ok": True, "output": str(designed.output), "value": designed.value}
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    return 0


def _failed(stage: str, diagnostics: list[dict[str, object]]) -> int:
    print(f"{HEADERS[stage]}:", file=sys.stderr)
    print(json.dumps(diagnostics, indent=2, ensure_ascii=False), file=sys.stderr)
    return 1


def _reported(error: BaseException) -> int:
    for line in error_lines(error):
        print(line, file=sys.stderr)
    return USAGE_EXIT
