"""A small FastAPI service that labels support tickets with an AgentScript agent.

It awaits the typed client generated from triage.as (triage_client/), so the event loop keeps
serving while the model answers, and every answer is a validated `TriageResult`.

    cd examples/python
    uvicorn service:app --port 8000                      # the program's real model
    TRIAGE_MOCK=triage.responses.json uvicorn service:app         # scripted answers, offline
    curl -s localhost:8000/triage -H 'content-type: application/json' -d '{"text": "I was charged twice"}'

TRIAGE_JOURNAL names the journal file (default: the workspace's, .agentscript/ here).
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from pydantic import BaseModel
from triage_client import TriageResult, atriage

import agentscript

HERE = Path(__file__).parent
app = FastAPI(title="Ticket triage")


class Ticket(BaseModel):
    text: str


def run_config() -> agentscript.RunConfig:
    """Per request: tools confined to this folder; scripted answers when TRIAGE_MOCK is set."""
    mock = os.environ.get("TRIAGE_MOCK")
    return agentscript.RunConfig(
        model="mock" if mock else "real",
        responses=mock or None,
        workspace=HERE,
        journal_path=os.environ.get("TRIAGE_JOURNAL"),
        max_calls=3,
        approve="deny",  # nobody answers a prompt in a service: effectful tools are refused
    )


@app.post("/triage")
async def triage(ticket: Ticket) -> TriageResult:
    return await atriage(text=ticket.text, config=run_config())
