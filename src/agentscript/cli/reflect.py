"""`agentscript reflect RUN` and `agentscript profile summary AGENT`, and `run --reflect`.

`reflect` opens the workspace's journal and the long-term memory, picks the model (`--model
URI`, `--mock [FILE]`, else the model the run itself used), calls
`agentscript.learn.reflection.reflect` and prints what changed; a reflection that got no usable
answer exits 1. `profile summary` prints an agent's profile card: a rich panel at a terminal,
plain lines when piped.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.errors import CliError
from agentscript.cli.render import to_json

if TYPE_CHECKING:
    from agentscript.cli.actions import RunOptions
    from agentscript.composition import RunConfig
    from agentscript.learn.journal_store import JournalEntry
    from agentscript.learn.reflection import ReflectionReport
    from agentscript.runtime.ports import Closeable, LlmProvider, RunJournal

# What `--mock` without a file answers: a reflection that changes nothing, to try the command.
OFFLINE_ANSWER = '{"summary": "Reflected offline with the mock model.", "operations": []}'


@click.command(name="reflect")
@click.argument("run")
@click.option(
    "--workspace",
    metavar="DIR",
    help="Whose journal to read (default: the workspace root around the current folder).",
)
@click.option("--model", metavar="URI", help="The model that reflects (default: the run's own).")
@click.option(
    "--mock",
    "responses",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[FILE]",
    help="Reflect with the mock model: scripted answers from FILE (under the key "
    "`Reflection`), or alone an answer that changes nothing.",
)
@click.option("--agent", metavar="NAME", help="Whose profile changes (default: the entry agent).")
@click.option(
    "--db",
    metavar="PATH",
    help="The memory database (default: $AGENTSCRIPT_MEMORY_DB, else ~/.agentscript/memory.db).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the reflection record as JSON.")
@click.pass_context
def reflect_command(
    ctx: click.Context,
    run: str,
    workspace: str | None,
    model: str | None,
    responses: str | None,
    agent: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Let RUN's agent reflect on it: the model proposes changes to its memory and profile.

    Each change is validated and applied on its own; a bad one is reported and skipped. The
    record goes to <workspace>/.agentscript/reflections/<id>.json, and an answer that is not
    usable JSON even when asked twice to <id>.error.json.
    """

    def act() -> int:
        if model is not None and responses is not None:
            raise CliError("Use either --model or --mock, not both")
        from agentscript.learn.journal import journal_folder

        root = journal_folder(workspace)
        if not root.is_dir():
            raise CliError(f"Workspace {root} is not a directory")
        report = reflect_on_run(root, run, model, responses, agent, db)
        print(to_json(report.to_json()) if as_json else report.describe())
        _warn_underreflect(report)
        return 1 if report.outcome == "error" else 0

    ctx.exit(reporting_errors(act))


def reflect_on_run(
    workspace: Path,
    reference: str,
    model: str | None,
    responses: str | None,
    agent: str | None,
    database: str | Path | None,
) -> ReflectionReport:
    """Open the journal at `workspace` and the memory, choose the model, reflect."""
    from agentscript.learn.journal import Journal
    from agentscript.learn.reflection import reflect
    from agentscript.memory.service import MemoryService

    journal = Journal.for_workspace(workspace)
    owned: list[Closeable] = []
    try:
        found = journal.resolve(reference)
        llm, uri = reflection_model(model, responses, journal.store.entries(found.run_id), owned)
        root = found.workspace or workspace
        with MemoryService.open(root, database=database) as service:
            return reflect(
                journal,
                found.run_id,
                llm,
                service=service,
                model=uri,
                agent=agent,
                workspace=root,
            )
    finally:
        for provider in reversed(owned):
            provider.close()
        journal.close()


def reflection_model(
    model: str | None,
    responses: str | None,
    entries: list[JournalEntry],
    owned: list[Closeable],
) -> tuple[LlmProvider, str | None]:
    """The provider and model URI a reflection uses: the mock (`responses` "" answers
    OFFLINE_ANSWER, a path answers from that script), `model`, else the run's own model."""
    from agentscript.composition import RunConfig, build_llm
    from agentscript.learn.run_memory import program_model
    from agentscript.providers.llm.endpoints import parse_llm_uri
    from agentscript.providers.llm.mock import ScriptedLlm
    from agentscript.runtime.errors import ExecutionError

    if responses == "":
        return ScriptedLlm({"Reflection": [OFFLINE_ANSWER]}, "--mock"), None
    if responses is not None:
        return build_llm(RunConfig(model="mock", responses=responses), owned), None
    uri = model or program_model(entries)
    if uri is None:
        raise CliError("The run used no model: name one with --model URI, or use --mock")
    try:
        parse_llm_uri(uri)
    except ExecutionError as problem:
        raise CliError(f"--model {uri}: {problem}") from None
    return build_llm(RunConfig(model="real"), owned), uri


def reflect_after_run(
    options: RunOptions, config: RunConfig, program_path: str | None, journal: RunJournal | None
) -> None:
    """`run --reflect`: reflect on the run that just ended with the model it used (the mock
    with the same answers file, whose `Reflection` answers are the reflection's). What
    happens is reported on stderr; a reflection never changes the run's exit code."""
    from agentscript.composition import workspace_root

    if journal is None:
        return
    if options.replay is not None:
        print(
            "warning: reflection skipped: a replayed run has no model to reflect with "
            f"(use agentscript reflect {journal.run_id} --model URI)",
            file=sys.stderr,
        )
        return
    responses = (options.responses or "") if options.model == "mock" else None
    workspace = workspace_root(config, program_path)
    try:
        report = reflect_on_run(workspace, journal.run_id, None, responses, None, options.memory_db)
    except Exception as problem:  # the run is over and its result printed: only report
        print(f"warning: reflection failed: {problem}", file=sys.stderr)
        return
    print(report.describe(), file=sys.stderr)
    _warn_underreflect(report)


def _warn_underreflect(report: ReflectionReport) -> None:
    if report.underreflect:
        print(
            f"warning: underreflect: run {report.run_id} was substantial but its reflection "
            "proposed no change",
            file=sys.stderr,
        )


@click.group(name="profile")
def profile_group() -> None:
    """Agents' profiles: mood, wants, opinions and journal (<workspace>/.agentscript/profiles)."""


@profile_group.command(name="summary")
@click.argument("agent")
@click.option(
    "--workspace", metavar="DIR", default=".", show_default=True, help="Whose profiles to read."
)
@click.pass_context
def summary_command(ctx: click.Context, agent: str, workspace: str) -> None:
    """AGENT's profile on one screen: what it needs from you, mood, wants, beliefs, notes."""

    def show() -> int:
        from agentscript.learn.profile import ProfileStore, summary_card

        store = ProfileStore(Path(workspace))
        if not store.path(agent).is_file():
            known = ", ".join(store.agents()) or "none"
            raise CliError(f"No profile for {agent} in {workspace} (profiles here: {known})")
        lines = summary_card(store.load(agent), store.history(agent), time.time())
        if sys.stdout.isatty():
            from rich.console import Console
            from rich.panel import Panel
            from rich.text import Text

            body = Text("\n".join(lines[1:]))
            Console().print(Panel(body, title=Text(lines[0]), title_align="left", expand=False))
        else:
            print("\n".join(lines))
        return 0

    ctx.exit(reporting_errors(show))
