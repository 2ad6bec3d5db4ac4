"""The REPL (reference §6.2): build a program one pasted agent at a time, then check and run it.

The session is text (import lines and agent sources) handed to the library whenever it is used;
the REPL never interprets programs itself. prompt_toolkit is loaded only at a real terminal.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from agentscript.app import programs
from agentscript.app.configuration import RunConfig
from agentscript.app.run import run
from agentscript.cli import render
from agentscript.cli.errors import REPORTED_ERRORS, CliError, error_lines
from agentscript.cli.input import PromptedInput, parse_input_object
from agentscript.lang import ast
from agentscript.lang.parser import parse_program
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.loader import read_source

BANNER = "AgentScript REPL\nPaste one complete agent or use :help."

HELP = """\
Paste one complete agent (agent Name { ... }) to add it, or to replace the agent of that name.
Import lines (import llm M from "...") may be pasted too.

  :import <stmt>    add an import; the word 'import' is optional
  :load <file.as>   add the imports and agents of a file (its imports resolve next to it)
  :agents           list the agents; * marks the main agent
  :main <Name>      make Name the main agent
  :show             print the program built so far
  :parse            print the program's syntax tree as JSON
  :check            check the program
  :run [json]       run the main agent (mock model) with an optional input object
  :trace [pretty]   print the trace of the last run
  :reset            forget all imports and agents
  :help             show this help
  :exit, :quit      leave the REPL"""

ONE_AGENT = "REPL accepts one complete agent declaration at a time."

_AGENT_START = re.compile(r"\s*(?:main\s+)?agent\b")
_MAIN_AGENT = re.compile(r"(\s*)main\s+agent\b")
_ANONYMOUS_MAIN_AGENT = re.compile(r"(\s*)main\s+agent(\s*)\{")
_AGENT = re.compile(r"(\s*)agent\b")
# `main agent {…}` is named __main_agent (reference §2.2); demoting it must keep that name.
_ANONYMOUS_NAME = "__main_agent"


class ReplSession:
    """The state of one REPL: imports and agents so far, the last trace, a paste in progress.

    `ask` reads one answer line after showing a prompt; the program's missing inputs are asked
    through it, so piped sessions answer them from the following input lines.
    """

    def __init__(self, ask: Callable[[str], str], stdout: TextIO, stderr: TextIO) -> None:
        self._ask = ask
        self._out = stdout
        self._err = stderr
        self.imports: list[str] = []
        self.agents: dict[str, str] = {}  # name -> source text, in the order they were added
        self.base_dir: Path | None = None  # where relative imports resolve; None: the cwd
        self.last_trace: list[dict[str, Any]] | None = None
        self.pending: list[str] = []
        self._commands: dict[str, Callable[[str], None]] = {
            ":help": self._help,
            ":import": self._import,
            ":load": self._load,
            ":agents": self._list_agents,
            ":main": self._make_main,
            ":show": self._show,
            ":parse": self._parse,
            ":check": self._check,
            ":run": self._run,
            ":trace": self._trace,
            ":reset": self._reset,
        }

    @property
    def prompt(self) -> str:
        return ". " if self.pending else "> "

    def greet(self) -> None:
        self._say(BANNER)

    def feed(self, line: str) -> bool:
        """Handle one input line; False when the user asked to leave."""
        text = line.strip()
        if self.pending and text.startswith(":"):
            # No agent line starts with ':'; this is a command, so the paste was left unfinished.
            self.discard_paste()
        if self.pending:
            self.pending.append(line)
            self._finish_paste_if_complete()
            return True
        if not text or text.startswith("//"):
            return True
        if text.startswith(":"):
            name, _, argument = text.partition(" ")
            if name in (":exit", ":quit"):
                return False
            self._guarded(self._command, name, argument.strip())
        elif text.startswith("import "):
            self._guarded(self._import, text)
        elif _AGENT_START.match(line):
            self.pending = [line]
            self._finish_paste_if_complete()
        else:
            self._complain(ONE_AGENT)
        return True

    def discard_paste(self) -> None:
        """Forget a half-pasted agent (Ctrl-C, or input ending in the middle of one)."""
        if self.pending:
            self._complain("Discarded an incomplete agent declaration.")
        self.pending = []

    # ------------------------------------------------------------------ pasted agents

    def _finish_paste_if_complete(self) -> None:
        text = "\n".join(self.pending)
        depth, opened = _brace_depth(text)
        if opened and depth <= 0:
            self.pending = []
            self._guarded(self._add_pasted_agent, text)

    def _add_pasted_agent(self, text: str) -> None:
        program = parse_program(text)
        if program.imports or len(program.agents) != 1:
            raise CliError(ONE_AGENT)
        name = program.agents[0].name
        replaced = name in self.agents
        self._put_agent(name, text.strip(), program.agents[0].is_main)
        self._say(f"{'replaced' if replaced else 'added'} agent {name}")

    def _put_agent(self, name: str, text: str, is_main: bool) -> None:
        if is_main:
            # One main agent per program: the newest one wins, as in 0.1.0.
            for other, source in self.agents.items():
                if other != name:
                    self.agents[other] = _demoted(source)
        self.agents[name] = text

    # ------------------------------------------------------------------ commands

    def _command(self, name: str, argument: str) -> None:
        command = self._commands.get(name)
        if command is None:
            raise CliError(f"Unknown command '{name}'. Use :help.")
        command(argument)

    def _help(self, argument: str) -> None:
        self._say(HELP)

    def _import(self, argument: str) -> None:
        if not argument:
            raise CliError("Usage: :import <import statement>")
        statement = argument if argument.startswith("import ") else f"import {argument}"
        parsed = parse_program(statement)
        if len(parsed.imports) != 1 or parsed.agents:
            raise CliError("Expected one import statement")
        # Loading resolves an agent import now, so a wrong path is reported at once.
        programs.load_source(statement, base_dir=self._base_dir())
        if statement not in self.imports:
            self.imports.append(statement)
        self._say("imported")

    def _load(self, argument: str) -> None:
        if not argument:
            raise CliError("Usage: :load <file.as>")
        path = Path(argument).absolute()
        source = read_source(path)
        parsed = parse_program(source, str(path))
        self.base_dir = path.parent
        for decl in parsed.imports:
            statement = source[decl.range.start_offset : decl.range.end_offset]
            if statement not in self.imports:
                self.imports.append(statement)
        for agent in parsed.agents:
            text = source[agent.range.start_offset : agent.range.end_offset]
            self._put_agent(agent.name, text, agent.is_main)
        self._say(f"loaded {len(parsed.agents)} agent(s)")

    def _list_agents(self, argument: str) -> None:
        if not self.agents:
            self._say("(no agents)")
        for name, source in self.agents.items():
            self._say(f"{'*' if _MAIN_AGENT.match(source) else ' '} {name}")

    def _make_main(self, argument: str) -> None:
        if not argument:
            raise CliError("Usage: :main <AgentName>")
        source = self.agents.get(argument)
        if source is None:
            raise CliError(f"Unknown agent '{argument}'")
        promoted = source if _MAIN_AGENT.match(source) else _AGENT.sub(r"\1main agent", source, 1)
        self._put_agent(argument, promoted, is_main=True)
        self._say(f"main agent {argument}")

    def _show(self, argument: str) -> None:
        self._say(self._source().rstrip("\n") or "(empty program)")

    def _parse(self, argument: str) -> None:
        self._say(render.to_json(self._program().to_json()))

    def _check(self, argument: str) -> None:
        diagnostics = programs.check(self._program())
        for diagnostic in diagnostics:
            self._complain(diagnostic.format())
        if not any(diagnostic.severity == "error" for diagnostic in diagnostics):
            self._say("ok")

    def _run(self, argument: str) -> None:
        input_value = parse_input_object(argument, ":run input") if argument else {}
        if not self.agents:
            raise CliError("No agents to run. Paste an agent or use :load.")
        # REPL experiments are not journaled: they are drafts, not runs of a program.
        config = RunConfig(
            model="mock",
            input_provider=PromptedInput(self._ask),
            debug_stream=self._err,
            journal=False,
        )
        try:
            result = run(self._program(), input_value, config)
        except AgentScriptError as error:
            if error.trace is not None:
                self.last_trace = error.trace
            raise
        self.last_trace = result.trace
        self._say(render.run_output(result.value, result.trace))

    def _trace(self, argument: str) -> None:
        if argument not in ("", "pretty"):
            raise CliError("Usage: :trace [pretty]")
        if self.last_trace is None:
            self._say("(no trace yet; use :run)")
        elif argument == "pretty":
            self._out.flush()
            render.print_trace(self.last_trace, self._out)
        else:
            self._say(render.to_json(self.last_trace))

    def _reset(self, argument: str) -> None:
        self.imports = []
        self.agents = {}
        self.base_dir = None
        self.last_trace = None
        self._say("reset")

    # ------------------------------------------------------------------ helpers

    def _source(self) -> str:
        parts = ["\n".join(self.imports)] if self.imports else []
        parts.extend(self.agents.values())
        return "\n\n".join(parts) + "\n" if parts else ""

    def _base_dir(self) -> Path:
        return self.base_dir or Path.cwd()

    def _program(self) -> ast.Program:
        # Locations in errors refer to the session text that :show prints, so no file is named.
        return programs.load_source(self._source(), base_dir=self._base_dir())

    def _guarded(self, action: Callable[..., None], *args: str) -> None:
        """Run one command or paste; an error is printed and the session goes on."""
        try:
            action(*args)
        except REPORTED_ERRORS as error:
            for line in error_lines(error):
                self._complain(line)
        except KeyboardInterrupt:
            self._complain("Interrupted")

    def _say(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    def _complain(self, text: str) -> None:
        print(text, file=self._err, flush=True)


def _demoted(source: str) -> str:
    if _ANONYMOUS_MAIN_AGENT.match(source):
        return _ANONYMOUS_MAIN_AGENT.sub(rf"\1agent {_ANONYMOUS_NAME}\2{{", source, 1)
    return _MAIN_AGENT.sub(r"\1agent", source, 1)


def _brace_depth(text: str) -> tuple[int, bool]:
    """How many `{` are still open in `text`, and whether any was opened at all.

    Braces inside string literals and `//` comments do not count, so a paste ends where the
    agent really ends.
    """
    depth = 0
    opened = False
    quote: str | None = None
    index = 0
    while index < len(text):
        char = text[index]
        if quote is not None:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif text.startswith("//", index):
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
        elif char == "{":
            depth += 1
            opened = True
        elif char == "}":
            depth -= 1
        index += 1
    return depth, opened


def run_repl() -> int:
    """Start the REPL on this process's terminal, or on piped stdin (no prompts, no editing)."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return _run_at_terminal()
    return run_lines(sys.stdin, sys.stdout, sys.stderr)


def run_lines(lines: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    """The REPL over a stream of lines; input answers are read from the same stream."""

    def read_answer(prompt: str) -> str:
        line = lines.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    session = ReplSession(read_answer, stdout, stderr)
    session.greet()
    while line := lines.readline():
        if not session.feed(line.rstrip("\r\n")):
            return 0
    session.discard_paste()
    return 0


def _run_at_terminal() -> int:
    from prompt_toolkit import PromptSession

    lines: PromptSession[str] = PromptSession()
    answers: PromptSession[str] = PromptSession()
    session = ReplSession(answers.prompt, sys.stdout, sys.stderr)
    session.greet()
    while True:
        try:
            text = lines.prompt(session.prompt)
        except KeyboardInterrupt:
            session.discard_paste()
            continue
        except EOFError:
            return 0
        # A bracketed paste arrives as one multi-line answer; treat it line by line.
        for line in text.split("\n"):
            if not session.feed(line):
                return 0
