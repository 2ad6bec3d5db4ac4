"""A real model answers this code: the local llama-server with SmolLM2-135M (make local-model).

These tests assert behaviour a real model must get through, never the quality of its answers:
a value of the declared shape, token counts equal to the server's, streaming, record and replay
with the server gone, an eval. The program closes its label to three values and asks for
temperature 0: the server then constrains the answer to the schema (a free string let a 135M
model repeat itself past the output limit on another machine) and samples the same way each run.
Skipped with one summary line where the model is not built;
required under CI=true (.ci/run builds it).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.runtime.trace import TraceSink
from timings import without_timings
from usage_proxy import UsageProxy

pytestmark = pytest.mark.real_model

TRIAGE = """import llm Model from "openai://smollm2"

main agent Triage {
    model Model
    role "support triage"
    description "Sorts tickets."

    main func(input { ticket: string }) {
        use input.ticket as "ticket"
        generate({
            input: "Label the ticket as billing, bug or other.",
            max_output: 60,
            temperature: 0
        }) -> {
            label: "billing" | "bug" | "other"
            urgent: boolean
        }
    }
}
"""

TICKET = {"ticket": "I was charged twice for my March invoice."}


@pytest.fixture
def triage(tmp_path: Path) -> Path:
    program = tmp_path / "triage.as"
    program.write_text(TRIAGE, encoding="utf-8")
    return program


def run(program: Path, **options: Any) -> agentscript.RunResult:
    return agentscript.run(program, TICKET, agentscript.RunConfig(journal=False, **options))


def test_the_real_model_answers_in_the_declared_shape(on_local_model: str, triage: Path) -> None:
    value = run(triage).value
    assert set(value) == {"label", "urgent"}
    assert value["label"] in {"billing", "bug", "other"} and isinstance(value["urgent"], bool)


def test_the_tokens_a_run_reports_are_the_servers_own_count(
    on_local_model: str, triage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with UsageProxy(on_local_model) as proxy:
        monkeypatch.setenv("OPENAI_BASE_URL", proxy.url)
        result = run(triage)
    assert proxy.usages, "the server reported no usage"
    assert result.usage["input_tokens"] == sum(u["prompt_tokens"] for u in proxy.usages)
    assert result.usage["output_tokens"] == sum(u["completion_tokens"] for u in proxy.usages)
    assert result.usage["calls"] == len(proxy.usages)


class Deltas(TraceSink):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def text_delta(self, text: str) -> None:
        self.texts.append(text)


def test_an_answer_streams_in_pieces_and_is_checked_whole(
    on_local_model: str, triage: Path
) -> None:
    deltas = Deltas()
    value = run(triage, stream=True, trace_sinks=[deltas]).value
    assert len(deltas.texts) >= 2
    assert json.loads("".join(deltas.texts)) == value


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_recorded_run_replays_with_the_server_gone(
    on_local_model: str, triage: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = tmp_path / "session.jsonl"
    recorded = run(triage, record=str(recording))
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    replayed = run(triage, replay=str(recording))
    assert replayed.value == recorded.value
    assert without_timings(replayed.trace) == without_timings(recorded.trace)


def test_an_eval_runs_on_the_real_model(on_local_model: str, triage: Path, tmp_path: Path) -> None:
    from agentscript.app.evals.runner import EvalConfig, evaluate

    cases = [
        {"id": "a", "input": TICKET, "expected": "billing"},
        {"id": "b", "input": {"ticket": "The export button throws an error."}, "expected": "bug"},
        {"id": "c", "input": {"ticket": "Where is your office?"}, "expected": "other"},
    ]
    report = evaluate(triage, cases, EvalConfig(field="label", journal_path=tmp_path / "j.db"))
    assert report.summary().n == 3 and report.not_run == 0
    # Whatever the model answered: a value, or what it did wrong, located at the generate.
    for row in report.rows:
        assert row.error is None or "triage.as:10:" in row.error, row.error
    assert report.spent["calls"] >= 3 and report.spent["input_tokens"] > 0
