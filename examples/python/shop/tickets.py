"""Ticket helpers the triage agent calls as `python:shop.tickets` (allowed in pyproject.toml)."""

from __future__ import annotations

import agentscript


@agentscript.tool(risk="read")
def normalize(text: str) -> str:
    """The ticket on one line, without surrounding blanks, at most 2,000 characters."""
    return " ".join(text.split())[:2000]
