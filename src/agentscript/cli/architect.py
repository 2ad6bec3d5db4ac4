"""`agentscript architect`: the original's AgentSpec command (0.1.21).

    agentscript architect --check SPEC.json          validate; print {ok, diagnostics}
    agentscript architect --spec SPEC.json OUT.as    build OUT.as (or --out OUT.as)

Parses the options, makes one call to `agentscript.app.architect.build` and renders it. Exit
codes as in the original: 0 when the spec is valid (and the program written), 1 when it is not
(the diagnostics go to stderr as JSON, under the failed stage's header); 2 when the command
cannot start (its options, or a spec file that cannot be read or is not a JSON object).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from agentscript.cli.errors import REPORTED_ERRORS, error_lines

USAGE_EXIT = 2
HEADERS = {
    "validate": "AgentSpec validation failed",
    "analyze": "Generated source analysis failed",
}


@click.command(name="architect")
@click.argument("arguments", nargs=-1, metavar="[OUTPUT.as]")
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
@click.option("--quiet", is_flag=True, help="Print nothing when it succeeds.")
@click.pass_context
def architect_command(
    ctx: click.Context,
    arguments: tuple[str, ...],
    spec: str | None,
    check: str | None,
    out: str | None,
    quiet: bool,
) -> None:
    """Validate an AgentSpec (--check SPEC.json), or compile one to a program that checks
    clean (--spec SPEC.json OUTPUT.as). See docs/tools.md#hostarchitect."""
    if check is not None:
        if spec is not None or arguments or out is not None:
            raise click.UsageError("Use architect --check <spec.json> without other arguments")
        ctx.exit(_check(Path(check), quiet))
    if spec is None:
        raise click.UsageError(
            "Usage: agentscript architect --spec <spec.json> <output.as> | --check <spec.json>"
            + ("; a program written from a request is not built yet" if arguments else "")
        )
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


def _failed(stage: str, diagnostics: list[dict[str, object]]) -> int:
    print(f"{HEADERS[stage]}:", file=sys.stderr)
    print(json.dumps(diagnostics, indent=2, ensure_ascii=False), file=sys.stderr)
    return 1


def _reported(error: BaseException) -> int:
    for line in error_lines(error):
        print(line, file=sys.stderr)
    return USAGE_EXIT
