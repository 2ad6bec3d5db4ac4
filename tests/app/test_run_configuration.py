"""The CLI builds the run configuration directly: every `run` option that is not about input,
output or the run's mode is named like the RunConfig field it sets."""

from __future__ import annotations

from dataclasses import fields

from agentscript.app.configuration import RunConfig
from agentscript.cli.app import run_command

# Options the command turns into something else than a field of the same name.
NOT_FIELDS = {
    "file",
    "input_json",
    "input_file",
    "responses",
    "dry_run",
    "trace",
    "trace_file",
    "as_json",
    "verbose",
    "quiet",
    "stream",
    "no_journal",
    "reflect",
    # Set in the run's environment as AGENTSCRIPT_LLM_TIMEOUT_MS (cli/options.timeout_environ).
    "timeout",
}


def test_every_other_run_option_is_a_run_config_field() -> None:
    options = {param.name for param in run_command.params}
    assert options >= NOT_FIELDS
    config_fields = {field.name for field in fields(RunConfig)}
    assert options - NOT_FIELDS <= config_fields
    assert {"workspace", "max_tokens", "variants", "env_allow", "memory_db"} <= options
