"""Structured output on a real model, and what repair adds: the local SmolLM2-135M behind
llama-server (`make local-model`).

A fixed set of structured prompts (benchmarks/data/real_model_prompts.json: a text, an
instruction, a shape) runs as AgentScript programs, each generate with `attempts: 3`,
`max_output: 160` and `temperature: 0` (so a second attempt differs from the first only by
the repair message), in two modes:

- constrained: the default compact layout; the shape goes to the server as `response_format`
  json_schema, which llama-server enforces with a grammar;
- unconstrained: the 0.1.0 layout (the shape printed in the prompt), with `response_format`
  taken out of each request by a proxy, as a server that ignores schemas would;
- compact-ignored: the default compact layout sent to such a server: the first prompt has no
  shape at all, so only the repair message (which ends with the answer's form) can tell it.

For each mode: how many prompts were valid at the first attempt and within the attempts, how
many failed because the answer was cut off at `max_output` (a cut-off answer is not repaired:
the same limit would cut it off again), the mean attempts used, the model calls, seconds and
tokens per call (as the server counted them), and the errors the failed attempts gave. The
load average is printed beside the figures: the machine is shared, so the seconds are noisy;
the valid counts much less so (temperature 0, though two requests at once on the server's two
slots can change an answer).

    python benchmarks/real_model.py [--quick] [--json] [--max-output 160] [--modes a,b]
        [--url http://127.0.0.1:PORT/v1]

Without --url it starts the local server itself (and stops it at the end). Never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests" / "support")]

import agentscript  # noqa: E402
import local_model  # noqa: E402
import private_memory  # noqa: E402, F401  (the user's memory stays out of reach)
from agentscript.runtime.errors import AgentScriptError  # noqa: E402
from agentscript.runtime.trace import TraceEvent, TraceSink  # noqa: E402
from usage_proxy import UsageProxy, without_response_format  # noqa: E402

PROMPTS = Path(__file__).parent / "data" / "real_model_prompts.json"
QUICK = 3
ATTEMPTS = 3
MAX_OUTPUT = 160
# A CPU model may take a minute on a long answer; the benchmark measures, it does not time out.
REQUEST_TIMEOUT_MS = "600000"

PROGRAM = """import llm Model from "openai://{model}"

main agent Extractor {{
    model Model
    role "data extractor"
    description "Turns a short text into the requested JSON, inventing nothing."

    main func(input {{ text string }}) {{
        use input.text as "text"
        generate({{ input: {instruction}, attempts: {attempts}, max_output: {max_output}, temperature: 0 }}) -> {{
{shape}
        }}
    }}
}}
"""


@dataclass(frozen=True)
class Mode:
    name: str
    layout: str | None
    schema_to_server: bool


MODES = (
    Mode("constrained", None, True),
    Mode("unconstrained", "0.1.0", False),
    Mode("compact-ignored", None, False),
)


@dataclass
class Outcome:
    """One prompt in one mode."""

    prompt: str
    valid: bool
    attempts: int
    errors: list[str]
    calls: int
    seconds: float
    input_tokens: int
    output_tokens: int

    @property
    def first_try(self) -> bool:
        return self.valid and self.attempts == 1


@dataclass
class ModeReport:
    mode: Mode
    outcomes: list[Outcome] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        outcomes = self.outcomes
        calls = sum(o.calls for o in outcomes) or 1
        return {
            "prompts": len(outcomes),
            "first_try_valid": sum(o.first_try for o in outcomes),
            "after_repair_valid": sum(o.valid for o in outcomes),
            "mean_attempts": round(sum(o.attempts for o in outcomes) / max(len(outcomes), 1), 2),
            # Failed because the last answer hit max_output (not repaired: it would again).
            "cut_off": sum(not o.valid and "cut off" in (o.errors or [""])[-1] for o in outcomes),
            "calls": sum(o.calls for o in outcomes),
            "seconds": round(sum(o.seconds for o in outcomes), 1),
            "seconds_per_call": round(sum(o.seconds for o in outcomes) / calls, 2),
            "input_tokens_per_call": round(sum(o.input_tokens for o in outcomes) / calls, 1),
            "output_tokens_per_call": round(sum(o.output_tokens for o in outcomes) / calls, 1),
        }


class GenerateEvents(TraceSink):
    """Keeps the finished `generate` events of a run (ok or failed)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def event(self, event: TraceEvent) -> None:
        if event.kind == "generate":
            self.events.append(event.data)


def program_text(prompt: dict[str, Any], max_output: int = MAX_OUTPUT) -> str:
    shape = "\n".join(" " * 12 + line for line in prompt["shape"].splitlines())
    return PROGRAM.format(
        model=local_model.MODEL_NAME,
        instruction=json.dumps(prompt["instruction"]),
        attempts=ATTEMPTS,
        max_output=max_output,
        shape=shape,
    )


def run_prompt(
    prompt: dict[str, Any], mode: Mode, proxy: UsageProxy, folder: Path, max_output: int
) -> Outcome:
    program = folder / f"{prompt['id']}.as"
    program.write_text(program_text(prompt, max_output), encoding="utf-8")
    environ = {
        **os.environ,
        "OPENAI_BASE_URL": proxy.url,
        "AGENTSCRIPT_LLM_TIMEOUT_MS": REQUEST_TIMEOUT_MS,
    }
    environ.pop("OPENAI_API_KEY", None)
    sink = GenerateEvents()
    config = agentscript.RunConfig(
        journal=False,
        learn=False,
        run_memory=False,
        environ=environ,
        prompt_layout=mode.layout,
        trace_sinks=[sink],
    )
    before = len(proxy.exchanges)
    started = time.monotonic()
    valid = True
    try:
        agentscript.run(program, {"text": prompt["text"]}, config)
    except AgentScriptError:
        valid = False
    seconds = time.monotonic() - started
    exchanges = proxy.exchanges[before:]
    usages = [usage for exchange in exchanges for usage in exchange.usages]
    event = sink.events[-1] if sink.events else {}
    return Outcome(
        prompt=prompt["id"],
        valid=valid,
        attempts=int(event.get("attempts", 0)),
        errors=list(event.get("errors", [])),
        calls=len(exchanges),
        seconds=seconds,
        input_tokens=sum(int(u.get("prompt_tokens", 0)) for u in usages),
        output_tokens=sum(int(u.get("completion_tokens", 0)) for u in usages),
    )


def measure(
    url: str, prompts: list[dict[str, Any]], modes: list[Mode], folder: Path, max_output: int
) -> list[ModeReport]:
    reports = []
    for mode in modes:
        rewrite = None if mode.schema_to_server else without_response_format
        report = ModeReport(mode)
        with UsageProxy(url, rewrite) as proxy:
            for prompt in prompts:
                outcome = run_prompt(prompt, mode, proxy, folder, max_output)
                report.outcomes.append(outcome)
                print(f"  {mode.name:15} {_line(outcome)}", file=sys.stderr, flush=True)
        reports.append(report)
    return reports


def _line(outcome: Outcome) -> str:
    verdict = "valid" if outcome.valid else "INVALID"
    line = f"{outcome.prompt:10} {verdict:7} attempts {outcome.attempts}  {outcome.seconds:5.1f} s"
    if outcome.errors:
        line += "  errors: " + " | ".join(_short(error) for error in outcome.errors)
    return line


def _short(text: str, limit: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary(reports: list[ModeReport], seconds: float, max_output: int) -> dict[str, Any]:
    by_mode = {report.mode.name: report.summary() for report in reports}
    empty = ModeReport(MODES[0]).summary()
    constrained = by_mode.get("constrained", empty)
    unconstrained = by_mode.get("unconstrained", empty)
    ignored = by_mode.get("compact-ignored", empty)
    prompts = max(mode["prompts"] for mode in by_mode.values())
    return {
        "model": local_model.MODEL_FILE,
        "prompts": prompts,
        "attempts": ATTEMPTS,
        "max_output": max_output,
        "constrained_first_try_valid": _rate(constrained["first_try_valid"], prompts),
        "constrained_valid": _rate(constrained["after_repair_valid"], prompts),
        "unconstrained_first_try_valid": _rate(unconstrained["first_try_valid"], prompts),
        "unconstrained_after_repair_valid": _rate(unconstrained["after_repair_valid"], prompts),
        "mean_attempts": unconstrained["mean_attempts"],
        "compact_ignored_first_try_valid": _rate(ignored["first_try_valid"], prompts),
        "compact_ignored_after_repair_valid": _rate(ignored["after_repair_valid"], prompts),
        "calls": sum(mode["calls"] for mode in by_mode.values()),
        "seconds": round(seconds, 1),
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "cpus": os.cpu_count(),
        "modes": by_mode,
        "errors": {
            report.mode.name: {o.prompt: o.errors for o in report.outcomes if o.errors}
            for report in reports
        },
    }


def _rate(count: int, total: int) -> float:
    return round(count / total, 3) if total else 0.0


def print_table(result: dict[str, Any]) -> None:
    rows = [
        (
            "mode",
            "first try",
            "after repair",
            "cut off",
            "attempts",
            "calls",
            "s/call",
            "in tok",
            "out tok",
        )
    ]
    for name, mode in result["modes"].items():
        prompts = mode["prompts"]
        rows.append(
            (
                name,
                f"{mode['first_try_valid']}/{prompts}",
                f"{mode['after_repair_valid']}/{prompts}",
                str(mode["cut_off"]),
                f"{mode['mean_attempts']:.2f}",
                str(mode["calls"]),
                f"{mode['seconds_per_call']:.1f}",
                f"{mode['input_tokens_per_call']:.0f}",
                f"{mode['output_tokens_per_call']:.0f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))
    load = ", ".join(f"{value:.2f}" for value in result["load_average"])
    print(
        f"{result['model']}, {result['prompts']} prompts, attempts {result['attempts']}, "
        f"max_output {result['max_output']}: {result['calls']} calls in {result['seconds']} s; "
        f"load average {load} on {result['cpus']} CPUs"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK} prompts only")
    parser.add_argument("--json", action="store_true", help="print a JSON summary object")
    parser.add_argument("--url", help="an already running server's base URL (…/v1)")
    parser.add_argument(
        "--max-output", type=int, default=MAX_OUTPUT, help="each generate's max_output (tokens)"
    )
    parser.add_argument(
        "--modes",
        default=",".join(mode.name for mode in MODES),
        help="which modes to run, comma-separated (default: all)",
    )
    options = parser.parse_args()
    modes = [mode for mode in MODES if mode.name in options.modes.split(",")]
    prompts = json.loads(PROMPTS.read_text(encoding="utf-8"))
    if options.quick:
        prompts = prompts[:QUICK]
    if options.url is None and local_model.local_model_missing() is not None:
        print(f"{local_model.local_model_missing()}: run make local-model", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        url = options.url or stack.enter_context(local_model.serve())
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="real-model-")))
        started = time.monotonic()
        reports = measure(url, prompts, modes, folder, options.max_output)
        result = summary(reports, time.monotonic() - started, options.max_output)
    if options.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
