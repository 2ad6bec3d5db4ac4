"""Whose fault a failed run was: the task's, or the environment's and the operator's.

A lesson learned from a run is read before the next run of the same task, so it must be about
the task: how a tool is called, which file to find first, which field a model gets wrong. A run
that failed because a key was missing, a provider was down or rate limited, the user's own
`--max-*` budget ran out, an approval was denied (by the user, a policy, `--approve deny`, a
missing terminal or read-only autonomy) or the run was interrupted says nothing about the task:
the same program with the key set, the provider up or the approval given would have gone on.
Those failures become one operator note on the run (shown by `runs show`), never a lesson.

The classes are recognised from the run's failure reason, which the runtime words itself (see
providers/llm/endpoints.py and transport.py, runtime/budgets.py, providers/tools/approvals.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EnvironmentCause:
    """A failure the task is not to blame for: its name, how to recognise it, and the note the
    operator reads (what to change outside the program)."""

    name: str
    pattern: re.Pattern[str]
    note: str


def _cause(name: str, pattern: str, note: str) -> EnvironmentCause:
    return EnvironmentCause(name, re.compile(pattern, re.I), note)


# First match wins; an approval refusal comes before the HTTP classes because its wording can
# name a URL.
ENVIRONMENT_CAUSES: tuple[EnvironmentCause, ...] = (
    _cause(
        "interrupted",
        r"^interrupted\b|KeyboardInterrupt|\bInterrupted\b",
        "the run was interrupted before it finished; run it again",
    ),
    _cause(
        "approval",
        r"was refused|needs approval|not allowed in autonomous runs|was not started: "
        r"|asking is not allowed",
        "an approval was denied; allow the call (an approval policy or --approve) if the task "
        "needs it",
    ),
    _cause(
        "missing_key",
        r"\b[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET)\b[^.]*\bis required\b|\bis required for \w+:// models",
        "a credential is missing; set it in the environment before running again",
    ),
    _cause(
        "budget",
        r"Run budget exceeded",
        "the run's own budget (--max-calls, --max-tokens, --max-seconds) ran out; raise it if the "
        "task needs more",
    ),
    _cause(
        "rate_limited",
        r"\((?:429)\)|\bHTTP 429\b|\bstatus 429\b|rate.?limit",
        "the provider rate-limited the run; wait or lower the request rate",
    ),
    _cause(
        "provider_down",
        r"\((?:5\d\d)\)|\bHTTP 5\d\d\b|\bstatus 5\d\d\b|LLM provider '[^']*' request (?:failed: |timed out)"
        r"|connection (?:refused|reset)|name or service not known|temporarily unavailable",
        "the provider or service was unreachable or failing; run again when it is back",
    ),
)


def environment_cause(reason: str) -> EnvironmentCause | None:
    """The environment or operator cause of a failure reason, or None when the task may be to
    blame (and a lesson may be learned)."""
    return next((cause for cause in ENVIRONMENT_CAUSES if cause.pattern.search(reason)), None)


def operator_note(cause: EnvironmentCause) -> str:
    """The one line `runs show` prints for a run that failed for an environment reason."""
    return f"not learned from ({cause.name}): {cause.note}"
