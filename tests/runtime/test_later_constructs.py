"""The later language constructs: `parallel for`, `use one of`, agent-level `use`."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.cli.main import main
from agentscript.lang.checker import check_program
from agentscript.lang.errors import ParseError
from agentscript.runtime.ports import GenerateRequest, GenerateResponse

HEADER = """import llm M from "openai://m"
agent A {
  model M
  role "r"
  description "d"
"""


def program(
    body: str, *, agent_lines: str = "", functions: str = "", params: str = "input { xs: list }"
) -> str:
    return HEADER + agent_lines + f"  main func({params}) {{\n{body}\n  }}\n{functions}}}\n"


class SlowEcho:
    """A model that answers each generate with its instruction after a pause, and measures how
    many calls were in flight at once."""

    def __init__(self, pause: float = 0.05, fail_on: frozenset[str] = frozenset()) -> None:
        self.pause = pause
        self.fail_on = fail_on
        self.active = 0
        self.peak = 0
        self.requests: list[GenerateRequest] = []
        self._lock = threading.Lock()

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        with self._lock:
            self.requests.append(request)
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            time.sleep(self.pause)
            if request.instruction in self.fail_on:
                raise agentscript.ExecutionError(f"cannot handle {request.instruction}")
            shape = request.return_shape
            fields = [field.name for field in shape.fields] if shape else []
            return GenerateResponse(value={name: request.instruction for name in fields})
        finally:
            with self._lock:
                self.active -= 1


def run(source: str, input_value: Any, model: Any = None, **config: Any) -> agentscript.RunResult:
    return agentscript.run(
        agentscript.load_source(source),
        input_value,
        RunConfig(model=model or SlowEcho(0), **config),
    )


PARALLEL = program(
    """    out = parallel for x in input.xs max 10 {
      r = generate({ input: x }) -> { echo }
      r.echo
    }
    return out"""
)


def test_results_keep_input_order_whatever_finishes_first() -> None:
    class Reversed(SlowEcho):
        def generate(self, request: GenerateRequest) -> GenerateResponse:
            time.sleep(0.01 * (5 - int(request.instruction)))
            return GenerateResponse(value={"echo": request.instruction})

    result = run(PARALLEL, {"xs": ["1", "2", "3", "4"]}, Reversed())
    assert result.value == ["1", "2", "3", "4"]


@pytest.mark.parametrize("concurrency", [1, 2, 4])
def test_the_concurrency_bound_is_honoured(concurrency: int) -> None:
    model = SlowEcho(pause=0.05)
    run(PARALLEL, {"xs": [str(n) for n in range(8)]}, model, concurrency=concurrency)
    assert model.peak == concurrency


def test_only_the_first_max_items_run() -> None:
    source = PARALLEL.replace("max 10", "max 2")
    result = run(source, {"xs": ["a", "b", "c"]})
    assert result.value == ["a", "b"]


def test_failures_are_aggregated_after_every_iteration_settled() -> None:
    model = SlowEcho(pause=0.01, fail_on=frozenset({"b", "d"}))
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(PARALLEL, {"xs": ["a", "b", "c", "d"]}, model)
    message = str(caught.value)
    assert message.startswith("parallel for failed: [1] cannot handle b at 8:")
    assert "; [3] cannot handle d at 8:" in message
    assert len(model.requests) == 4
    event = next(e for e in caught.value.trace or [] if e["kind"] == "parallel_for")
    assert [iteration["ok"] for iteration in event["data"]["iterations"]] == [
        True,
        False,
        True,
        False,
    ]


def test_trace_is_one_event_with_per_iteration_traces_and_a_pretty_form() -> None:
    result = run(PARALLEL, {"xs": ["a", "b"]}, concurrency=2)
    [event] = [e for e in result.trace if e["kind"] == "parallel_for"]
    data = event["data"]
    assert (
        data["item"],
        data["source"],
        data["max_items"],
        data["items"],
        data["concurrency"],
    ) == (
        "x",
        "input.xs",
        10,
        2,
        2,
    )
    assert [i["result"] for i in data["iterations"]] == ["a", "b"]
    assert [e["kind"] for e in data["iterations"][0]["trace"]] == ["generate"]
    assert agentscript.format_trace(result.trace).splitlines() == [
        "- parallel for x (2 items, concurrency 2)",
        "  - iteration [0] ok",
        "    - generate a",
        "  - iteration [1] ok",
        "    - generate b",
    ]


def test_sinks_see_iteration_events_as_they_happen(sink: Any) -> None:
    run(PARALLEL, {"xs": ["a", "b", "c"]}, trace_sinks=[sink], concurrency=3)
    kinds = [kind for callback, kind, _ in sink.calls if callback == "event"]
    assert kinds.count("generate") == 3
    assert kinds[-1] == "parallel_for"


def test_run_budgets_hold_across_iterations() -> None:
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(PARALLEL, {"xs": ["a", "b", "c", "d"]}, max_calls=2, concurrency=1)
    assert "parallel for failed:" in str(caught.value)
    assert "Run budget exceeded: 2 model calls used" in str(caught.value)


def test_approvals_hold_inside_iterations(tmp_path: Path) -> None:
    source = """
import tool File from "file://workspace"
agent Writer { func save(name) { return File.write({ path: name, content: "x" }) } }
main agent A {
  main func() {
    parallel for name in ["a.txt", "b.txt"] max 2 { Writer.save(name) }
  }
}
"""
    path = tmp_path / "w.as"
    path.write_text(source)
    with pytest.raises(agentscript.ExecutionError) as caught:
        agentscript.run(agentscript.load(path), {}, RunConfig(model="mock", approve="deny"))
    assert str(caught.value).count("File.write was refused (--approve deny)") == 2
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()
    result = agentscript.run(agentscript.load(path), {}, RunConfig(model="mock", approve="auto"))
    assert len(result.value) == 2
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (
            "total = 0\n    parallel for x in input.xs max 2 { total = x\n x }",
            "PARALLEL_FOR_OUTER_ASSIGNMENT",
            "parallel for body cannot assign to outer variable 'total'",
        ),
        (
            "seen = []\n    parallel for x in input.xs max 2 { seen.add(x)\n x }",
            "PARALLEL_FOR_OUTER_MUTATION",
            "parallel for body cannot mutate outer variable 'seen'",
        ),
        (
            "box = { items: [] }\n    parallel for x in input.xs max 2 { box.items.add(x)\n x }",
            "PARALLEL_FOR_OUTER_MUTATION",
            "parallel for body cannot mutate outer variable 'box'",
        ),
        (
            "parallel for x in input.xs max 2 { File.write({ path: x, content: x }) }",
            "PARALLEL_FOR_EFFECTFUL_CALL",
            "effectful operation 'File.write' is not allowed inside parallel for",
        ),
        (
            "parallel for x in input.xs max 2 { Log.add({ x: x }) }",
            "PARALLEL_FOR_EFFECTFUL_CALL",
            "effectful operation 'Log.add' is not allowed inside parallel for",
        ),
        (
            "parallel for x in input.xs max 2 { Api.post({ url: x }) }",
            "PARALLEL_FOR_EFFECTFUL_CALL",
            "effectful operation 'Api.post' is not allowed inside parallel for",
        ),
        (
            "parallel for x in input.xs max 2 { y = x }",
            "PARALLEL_FOR_MISSING_VALUE",
            "parallel for body must end with a value expression",
        ),
    ],
)
def test_parallel_for_diagnostics(body: str, code: str, message: str) -> None:
    imports = (
        'import tool File from "file://workspace"\nimport memory Log from "file://log.jsonl"\n'
        'import tool Api from "https://api.example.com"\n'
    )
    diagnostics = check_program(agentscript.load_source(imports + program("    " + body)))
    assert [(d.code, d.message) for d in diagnostics] == [(code, message)]


def test_reads_and_local_variables_are_fine_inside_parallel_for() -> None:
    imports = 'import tool File from "file://workspace"\nimport tool Grep from "sh://grep"\n'
    body = """    limit = 3
    parallel for x in input.xs max 2 {
      local = [x]
      local.add(limit)
      File.read({ path: x })
      Grep.run({ path: ".", pattern: x })
      local
    }"""
    assert check_program(agentscript.load_source(imports + program(body))) == []


def test_parallel_for_source_must_be_a_list() -> None:
    with pytest.raises(agentscript.ExecutionError, match="parallel for source must be a list"):
        run(program("    parallel for x in input.xs max 2 { x }", params="input"), {"xs": "abc"})


# ----------------------------------------------------------------------------- use one of

ONE_OF = program(
    """    use one of {
      terse: "Keep it short." selected
      detailed: input.notes max 1k
      none: empty
    } as style
    generate({ input: "Write." }) -> { text }""",
    params="input { notes: string }",
)


def prompt_of(source: str, **config: Any) -> str:
    model = SlowEcho(0)
    run(source, {"notes": "Long notes."}, model, **config)
    return model.requests[0].built.final_user_message


def test_selected_beats_first_and_a_runtime_hint_beats_selected() -> None:
    assert '[style] "Keep it short.":\nKeep it short.' in prompt_of(ONE_OF)
    hinted = prompt_of(ONE_OF, variants={"<source>#A.__main[style]": "detailed"})
    assert "[style] input.notes:\nLong notes." in hinted
    first = ONE_OF.replace(" selected", "")
    assert "Keep it short." in prompt_of(first)


def test_an_empty_pick_adds_nothing_and_names_never_reach_the_model() -> None:
    message = prompt_of(ONE_OF, variants={"<source>#A.__main[style]": "none"})
    assert message.startswith("Instruction:\nWrite.")
    for name in ("terse", "detailed", "none"):
        assert name not in prompt_of(ONE_OF)


def test_use_event_records_the_variant() -> None:
    result = run(ONE_OF, {"notes": "n"}, variants={"<source>#A.__main[style]": "detailed"})
    [use] = [e["data"] for e in result.trace if e["kind"] == "use"]
    assert use["label"] == "style"
    assert use["variant"] == {
        "site_id": "<source>#A.__main[style]",
        "picked": "detailed",
        "available": ["terse", "detailed", "none"],
        "reason": "trial",
        "empty": False,
    }


def test_site_ids_name_the_file_and_leave_out_the_function_at_agent_level(tmp_path: Path) -> None:
    source = program(
        '    generate({ input: "x" }) -> { t }',
        agent_lines='  use one of {\n    a: "A"\n    b: "B"\n  } as tone\n',
        params="",
    )
    path = tmp_path / "tone.as"
    path.write_text(source)
    result = agentscript.run(agentscript.load(path), {}, RunConfig(model="mock"))
    [use] = [e["data"] for e in result.trace if e["kind"] == "use"]
    assert use["variant"]["site_id"] == "tone.as#A[tone]"
    assert use["variant"]["reason"] == "first"


def test_an_unknown_hint_is_an_error_listing_the_candidates() -> None:
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(ONE_OF, {"notes": "n"}, variants={"<source>#A.__main[style]": "loud"})
    assert "Unknown variant 'loud' for use one of site '<source>#A.__main[style]'" in str(
        caught.value
    )
    assert "(candidates: terse, detailed, none)" in str(caught.value)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ('{ a: "A" } as x', "use one of requires at least two candidates"),
        (
            '{ a: "A" selected\n b: "B" selected } as x',
            "use one of can mark only one candidate as selected",
        ),
        ('{ a: "A"\n b: "B" }', "use one of requires a label: as <label>"),
        ('{ a: "A"\n a: "B" } as x', "Duplicate candidate 'a' in use one of"),
    ],
)
def test_use_one_of_parse_errors(block: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        agentscript.load_source(program(f"    use one of {block}\n    1", params=""))


# ----------------------------------------------------------------------------- agent-level use

AGENT_LEVEL = """import llm M from "openai://m"
import file Rules from "./rules.md"
agent Writer {
  model M
  role "writer"
  description "Writes."
  use Rules max 12 as rules
  main func() { return [draft(), polish()] }
  func draft() { generate({ input: "Draft." }) -> { text } }
  func polish() { generate({ input: "Polish." }) -> { text } }
}
"""


def test_agent_level_use_reaches_every_function_of_the_agent(tmp_path: Path) -> None:
    (tmp_path / "rules.md").write_text("Use short sentences always.")
    path = tmp_path / "writer.as"
    path.write_text(AGENT_LEVEL)
    model = SlowEcho(0)
    result = agentscript.run(agentscript.load(path), {}, RunConfig(model=model))
    assert len(model.requests) == 2
    for request in model.requests:
        assert request.built.final_user_message.startswith(
            "Context:\n[rules] Rules:\nUse short se\n"
        )
    assert [e["data"]["source"] for e in result.trace if e["kind"] == "use"] == ["Rules"] * 3


def test_agent_level_use_of_a_resource_is_a_diagnostic() -> None:
    source = AGENT_LEVEL.replace("use Rules max 12 as rules", "use M")
    diagnostics = check_program(agentscript.load_source(source, base_dir="/"))
    assert [d.code for d in diagnostics] == ["INVALID_USE_RESOURCE"]


def test_cli_takes_concurrency_and_variants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.as"
    path.write_text(ONE_OF)
    code = main(
        [
            "run",
            str(path),
            "--dry-run",
            "--input",
            '{"notes": "Long notes."}',
            "--quiet",
            "--variant",
            "one.as#A.__main[style]=detailed",
            "--concurrency",
            "2",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0
    assert "[style] input.notes:\nLong notes." in err
    code = main(["run", str(path), "--dry-run", "--variant", "nonsense"])
    assert code == 1
    assert "--variant expects SITE=NAME, got 'nonsense'" in capsys.readouterr().err
