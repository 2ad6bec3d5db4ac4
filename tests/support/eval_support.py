"""Support for the eval tests: the example classifier, its cases, and the answers of two local
"models" on the OpenAI wire: `good` labels by keywords, `weak` always answers `other`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from openai_wire import user_message

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "evals"
KEYWORDS = {
    "billing": ("charged", "invoice", "receipt", "refund", "discount"),
    "bug": ("error", "crash", "render", "no results", "rejects"),
    "account": ("log in", "delete my account", "email on my profile", "two-factor"),
    "feature": ("add a", "support exporting", "api", "integration"),
}


def example_copy(tmp_path: Path) -> Path:
    """The example folder copied into `tmp_path` (runs journal next to their program)."""
    target = tmp_path / "evals"
    shutil.copytree(EXAMPLE, target)
    return target


def ticket_of(body: dict[str, Any]) -> str:
    """The ticket in the prompt: headed `ticket:` (the compact layout real providers get) or
    `[ticket] input.ticket:` (the 0.1.0 layout)."""
    lines = user_message(body).split("\n")
    heading = next(line for line in lines if line.startswith(("ticket:", "[ticket]")))
    return lines[lines.index(heading) + 1].lower()


def classify(model: str, body: dict[str, Any]) -> str:
    """The two local models: `good` finds the label by keyword, anything else says other."""
    if "Grader" in json.dumps(body["messages"][0]):
        return json.dumps({"score": 1, "reason": "graded by the local judge"})
    label = "other"
    if model == "good":
        ticket = ticket_of(body)
        for name, words in KEYWORDS.items():
            if any(word in ticket for word in words):
                label = name
                break
    return json.dumps({"label": label, "reason": f"{model} decided"})


def write_cases(path: Path, count: int, expected: str = "other") -> Path:
    lines = [
        json.dumps(
            {"id": f"c{index:02d}", "input": {"ticket": f"ticket {index}"}, "expected": expected}
        )
        for index in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
