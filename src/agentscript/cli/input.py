"""Where a run's input comes from: the `--input` / `--input-file` JSON, or answers typed at a prompt.

Nothing here runs a program; it only turns text into the input object the library expects.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentscript.cli.errors import CliError
from agentscript.runtime.bounded_input import MIB, UnusableInput, read_regular_text
from agentscript.runtime.errors import InputError
from agentscript.runtime.jsjson import parse

# An input object is data for one run; a file larger than this is a mistake.
MAX_INPUT_FILE_BYTES = 16 * MIB


def parse_input_object(text: str, label: str) -> dict[str, Any]:
    """The JSON object in `text`; `label` names the flag in the error (`--input must be …`)."""
    try:
        value = parse(text)
    except ValueError as problem:
        raise CliError(f"{label} is not valid JSON: {problem}") from None
    if not isinstance(value, dict):
        raise CliError(f"{label} must be a JSON object")
    return value


def read_input(input_json: str | None, input_file: str | None) -> dict[str, Any]:
    """The run's input object; `{}` when neither flag was given."""
    if input_json is not None:
        return parse_input_object(input_json, "--input")
    if input_file is None:
        return {}
    try:
        text = read_regular_text(Path(input_file), MAX_INPUT_FILE_BYTES, "--input-file")
    except UnusableInput as problem:
        raise CliError(str(problem)) from None
    return parse_input_object(text, "--input-file")


def answer_value(answer: str) -> Any:
    """A typed answer as a value: JSON when it parses (`42`, `true`, `["a"]`), else the text
    itself, so plain words need no quotes; a blank answer is the empty string."""
    if not answer.strip():
        return ""
    try:
        return parse(answer)
    except ValueError:
        return answer


class PromptedInput:
    """An input provider that asks for each missing entry field as `input.field: `.

    `ask` shows the prompt and returns the typed line (the built-in `input`, or the REPL's
    reader, so answers can also come from piped stdin).
    """

    def __init__(self, ask: Callable[[str], str]) -> None:
        self._ask = ask

    def read(self, name: str, path: str) -> Any:
        try:
            answer = self._ask(f"{path}: ")
        except EOFError:
            raise InputError(f"No value was given for '{path}'") from None
        return answer_value(answer)
