"""The token benchmark's harness: one scripted OpenAI-format server that counts what each client
sends, and the same four tasks in AgentScript, Pydantic AI and DSPy.

It runs in the peers' own virtual environment (benchmarks/tokens.py makes it), because Pydantic AI,
DSPy and tiktoken are never dependencies of the project. AgentScript runs as the user runs it: the
`agentscript run` command of the project's venv, pointed at the server by OPENAI_BASE_URL.

Every client gets its own path on the server (`/<framework>-<task>/v1`) and its own script of
answers, each written in the form its framework expects (JSON content for AgentScript, tool calls
for Pydantic AI, `[[ ## field ## ]]` sections for DSPy's ChatAdapter). What a request costs is
counted with tiktoken's cl100k_base over everything a model reads: message texts, tool calls'
names and arguments, tool definitions and the response schema (both as compact JSON, the same
for every client). Bytes are the whole request bodies as sent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NOTES = HERE / "notes"
QUESTION = "Which Python release added the match statement?"
LONG_QUESTION = "How do we fix the product codes that the report flags as failing?"
SYSTEM = "Payments API: a Python service behind a load balancer, talking to a PostgreSQL database."
TOPICS = ["caching", "retries", "timeouts"]
FACTS = {
    "sender": "Maria Lopez",
    "company": "Northwind Traders",
    "meeting_date": "2026-12-09",
    "items": [
        "12 LP-400 label printers with extended warranty",
        "4 LP-200 print heads",
        "2 pallets of thermal labels 100 x 150 mm",
        "1 barcode scanner docking station",
    ],
    "urgent": True,
    "reply_needed": True,
}
ANSWER = "Python 3.10 added the match statement (PEP 634)."
CITED = ["notes/python-3.10.md", "notes/pattern-matching.md"]
FIX = "Update QX-17 firmware to 2.3 or later; lower the ZR-4 cycle rate or fit heat sink HS-9."
FIX_CITED = ["notes/qx-17.md", "notes/zr-4.md"]
FINDINGS = {
    "caching": "Responses are not cached, so every read hits PostgreSQL.",
    "retries": "Retries have no backoff and can amplify an outage.",
    "timeouts": "Database calls have no timeout, so a slow query blocks a worker.",
}
SUMMARY = "Add caching and database timeouts. Give retries exponential backoff."


def long_report() -> str:
    """A 20 KB inspection report; only QX-17 and ZR-4 are flagged as failing."""
    units = ["AB-1", "CD-22", "EF-3", "GH-41", "JK-5", "LM-60", "NP-7", "QR-8", "ST-90", "UV-10"]
    paragraphs = []
    for number in range(1, 80):
        unit = units[number % len(units)]
        paragraphs.append(
            f"Section {number}. The inspection team checked unit {unit} on line {number % 7 + 1}. "
            f"Its readings stayed within tolerance during the {number % 5 + 2}-hour run, the "
            f"operators logged no alarms, and the maintenance record was complete and signed."
        )
    paragraphs.insert(23, "Finding: unit QX-17 failed its start-up check twice this week.")
    paragraphs.insert(61, "Finding: unit ZR-4 failed after overheating during the night shift.")
    text = "\n\n".join(paragraphs)
    return text[:20_000]


# ---------------------------------------------------------------------------- the server


@dataclass
class Session:
    """One client's script and what it sent."""

    answers: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    raw_bytes: list[int] = field(default_factory=list)


class CountingServer:
    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                name = self.path.strip("/").split("/")[0]
                reply = server.answer(name, body)
                data = json.dumps(reply).encode()
                self.send_response(200 if "error" not in reply else 400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._http.server_address[1]
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def base_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}/v1"

    def script(self, name: str, answers: list[dict[str, Any]]) -> None:
        self.sessions[name] = Session(list(answers))

    def answer(self, name: str, body: bytes) -> dict[str, Any]:
        request = json.loads(body)
        with self._lock:
            session = self.sessions[name]
            session.requests.append(request)
            session.raw_bytes.append(len(body))
            if not session.answers:
                return {"error": {"message": f"{name}: no scripted answer left"}}
            message = session.answers.pop(0)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return {
            "id": f"chatcmpl-{len(session.requests)}",
            "object": "chat.completion",
            "created": 1_790_000_000,
            "model": request.get("model", "gpt-4.1-mini"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": tokens_of(request),
                "completion_tokens": 20,
                "total_tokens": tokens_of(request) + 20,
            },
        }

    def close(self) -> None:
        self._http.shutdown()


_ENCODING: Any = None


def tokens_of(request: dict[str, Any]) -> int:
    """cl100k_base tokens of everything the model reads in one request."""
    global _ENCODING
    if _ENCODING is None:
        import tiktoken

        _ENCODING = tiktoken.get_encoding("cl100k_base")
    texts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(part.get("text", "") for part in content if isinstance(part, dict))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            texts.append(function.get("name", ""))
            texts.append(function.get("arguments", ""))
    # Schemas count in one canonical form (compact JSON) whoever sends them.
    for tool in request.get("tools") or []:
        texts.append(json.dumps(tool.get("function", tool), separators=(",", ":")))
    response_format = request.get("response_format")
    if isinstance(response_format, dict) and "json_schema" in response_format:
        schema = response_format["json_schema"].get("schema")
        texts.append(json.dumps(schema, separators=(",", ":")))
    return sum(len(_ENCODING.encode(text)) for text in texts)


# ---------------------------------------------------------------------------- answers


def content(value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value)
    return {"role": "assistant", "content": text}


def tool_call(name: str, arguments: dict[str, Any], number: int = 1) -> dict[str, Any]:
    call = {
        "id": f"call_{number}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def dspy_fields(**fields: Any) -> dict[str, Any]:
    """An answer in DSPy's ChatAdapter format."""
    parts = []
    for name, value in fields.items():
        text = value if isinstance(value, str) else json.dumps(value)
        parts.append(f"[[ ## {name} ## ]]\n{text}")
    parts.append("[[ ## completed ## ]]")
    return content("\n\n".join(parts))


def step(action: str, query: str = "", answer: str = "", cited: list[str] | None = None) -> Any:
    return {"action": action, "query": query, "answer": answer, "cited": cited or []}


SCRIPTS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("agentscript", "extraction"): [content(FACTS)],
    ("pydantic_ai", "extraction"): [tool_call("final_result", FACTS)],
    ("dspy", "extraction"): [dspy_fields(**FACTS)],
    ("agentscript", "tool_loop"): [
        content(step("search", "match statement")),
        content(step("search", "3.10")),
        content(step("finish", answer=ANSWER, cited=CITED)),
    ],
    ("pydantic_ai", "tool_loop"): [
        tool_call("search_notes", {"query": "match statement"}, 1),
        tool_call("search_notes", {"query": "3.10"}, 2),
        tool_call("final_result", {"answer": ANSWER, "cited": CITED}, 3),
    ],
    ("dspy", "tool_loop"): [
        dspy_fields(
            next_thought="Search the notes for the match statement.",
            next_tool_name="search_notes",
            next_tool_args={"query": "match statement"},
        ),
        dspy_fields(
            next_thought="Confirm the release.",
            next_tool_name="search_notes",
            next_tool_args={"query": "3.10"},
        ),
        dspy_fields(next_thought="I can answer.", next_tool_name="finish", next_tool_args={}),
        dspy_fields(reasoning="The notes say 3.10.", answer=ANSWER, cited=CITED),
    ],
    ("agentscript", "delegation"): [
        *[content({"finding": FINDINGS[topic]}) for topic in TOPICS],
        content({"summary": SUMMARY}),
    ],
    ("pydantic_ai", "delegation"): [
        *[tool_call("final_result", {"finding": FINDINGS[topic]}) for topic in TOPICS],
        tool_call("final_result", {"summary": SUMMARY}),
    ],
    ("dspy", "delegation"): [
        *[dspy_fields(finding=FINDINGS[topic]) for topic in TOPICS],
        dspy_fields(summary=SUMMARY),
    ],
    ("agentscript", "long_context"): [
        content({"codes": ["QX-17", "ZR-4"]}),
        content(step("search", "QX-17")),
        content(step("search", "ZR-4")),
        content(step("finish", answer=FIX, cited=FIX_CITED)),
    ],
    ("pydantic_ai", "long_context"): [
        tool_call("search_notes", {"query": "QX-17"}, 1),
        tool_call("search_notes", {"query": "ZR-4"}, 2),
        tool_call("final_result", {"answer": FIX, "cited": FIX_CITED}, 3),
    ],
    ("dspy", "long_context"): [
        dspy_fields(
            next_thought="The report flags QX-17.",
            next_tool_name="search_notes",
            next_tool_args={"query": "QX-17"},
        ),
        dspy_fields(
            next_thought="It also flags ZR-4.",
            next_tool_name="search_notes",
            next_tool_args={"query": "ZR-4"},
        ),
        dspy_fields(next_thought="I can answer.", next_tool_name="finish", next_tool_args={}),
        dspy_fields(reasoning="Both notes give fixes.", answer=FIX, cited=FIX_CITED),
    ],
}

EXPECTED: dict[str, Any] = {
    "extraction": FACTS,
    "tool_loop": {"answer": ANSWER, "cited": CITED},
    "delegation": {"summary": SUMMARY},
    "long_context": {"answer": FIX, "cited": FIX_CITED},
}
TASKS = list(EXPECTED)


def search_notes(query: str) -> list[dict[str, Any]]:
    """The notes search every framework gets: `sh://grep`'s substring search, first 5 lines."""
    matches: list[dict[str, Any]] = []
    for path in sorted(NOTES.iterdir()):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if query in line:
                matches.append({"path": f"notes/{path.name}", "line": number, "text": line})
                if len(matches) == 5:
                    return matches
    return matches


# ---------------------------------------------------------------------------- the three clients


def run_agentscript(task: str, base_url: str, agentscript: str) -> Any:
    inputs = {
        "extraction": {"email": (HERE / "email.txt").read_text()},
        "tool_loop": {"question": QUESTION},
        "delegation": {"system": SYSTEM, "topics": TOPICS},
        "long_context": {"question": LONG_QUESTION, "report": long_report()},
    }
    with tempfile.TemporaryDirectory() as home:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "sk-benchmark",
            "HOME": home,
        }
        done = subprocess.run(
            [
                agentscript,
                "run",
                str(HERE / f"{task}.as"),
                "--input",
                json.dumps(inputs[task]),
                "--quiet",
                "--no-journal",
                "--no-learn",
                "--approve",
                "auto",
                "--workspace",
                str(HERE),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"agentscript {task} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def run_pydantic_ai(task: str, base_url: str) -> Any:
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(
        "gpt-4.1-mini", provider=OpenAIProvider(base_url=base_url, api_key="sk-benchmark")
    )

    class Facts(BaseModel):
        sender: str
        company: str
        meeting_date: str
        items: list[str]
        urgent: bool
        reply_needed: bool

    class Cited(BaseModel):
        answer: str
        cited: list[str]

    class Finding(BaseModel):
        finding: str

    class Summary(BaseModel):
        summary: str

    if task == "extraction":
        agent = Agent(
            model,
            output_type=Facts,
            instructions="You are an email analyst. Extract the facts of one email "
            "without inventing anything.",
        )
        email = (HERE / "email.txt").read_text()
        return agent.run_sync(f"Extract the facts of this email.\n\n{email}").output.model_dump()
    if task in ("tool_loop", "long_context"):
        agent = Agent(
            model,
            output_type=Cited,
            instructions="You are a research assistant. Answer from the notes only "
            "and cite the files you used. Search at most three times.",
        )
        agent.tool_plain(search_notes)
        question = QUESTION if task == "tool_loop" else LONG_QUESTION
        report = "" if task == "tool_loop" else f"\n\nReport:\n{long_report()}"
        prompt = question + report
        return agent.run_sync(prompt).output.model_dump()
    worker = Agent(
        model,
        output_type=Finding,
        instructions="You are a reviewer. Review one engineering topic and state "
        "your finding in one sentence.",
    )
    lead = Agent(
        model,
        output_type=Summary,
        instructions="You are a tech lead. Summarise the findings of a review.",
    )
    findings = []
    for topic in TOPICS:
        result = worker.run_sync(f"Topic: {topic}\nSystem: {SYSTEM}")
        findings.append({"topic": topic, "finding": result.output.finding})
    prompt = f"Summarise the findings in two sentences.\n\n{json.dumps(findings)}"
    return lead.run_sync(prompt).output.model_dump()


def run_dspy(task: str, base_url: str) -> Any:
    import dspy

    lm = dspy.LM("openai/gpt-4.1-mini", api_base=base_url, api_key="sk-benchmark", cache=False)
    with dspy.context(lm=lm):
        if task == "extraction":

            class Extract(dspy.Signature):
                """Extract the facts of one email without inventing anything."""

                email: str = dspy.InputField()
                sender: str = dspy.OutputField()
                company: str = dspy.OutputField()
                meeting_date: str = dspy.OutputField()
                items: list[str] = dspy.OutputField()
                urgent: bool = dspy.OutputField()
                reply_needed: bool = dspy.OutputField()

            result = dspy.Predict(Extract)(email=(HERE / "email.txt").read_text())
            return {name: result.toDict()[name] for name in FACTS}
        if task in ("tool_loop", "long_context"):

            class Research(dspy.Signature):
                """Answer from the notes only and cite the files you used."""

                question: str = dspy.InputField()
                answer: str = dspy.OutputField()
                cited: list[str] = dspy.OutputField()

            class Audit(dspy.Signature):
                """Find the product codes the report flags and explain them from the notes."""

                question: str = dspy.InputField()
                report: str = dspy.InputField()
                answer: str = dspy.OutputField()
                cited: list[str] = dspy.OutputField()

            if task == "tool_loop":
                result = dspy.ReAct(Research, tools=[search_notes], max_iters=3)(question=QUESTION)
            else:
                result = dspy.ReAct(Audit, tools=[search_notes], max_iters=3)(
                    question=LONG_QUESTION, report=long_report()
                )
            return {"answer": result.answer, "cited": result.cited}

        class Review(dspy.Signature):
            """Review one engineering topic and state your finding in one sentence."""

            topic: str = dspy.InputField()
            system: str = dspy.InputField()
            finding: str = dspy.OutputField()

        class Summarise(dspy.Signature):
            """Summarise the findings of a review in two sentences."""

            findings: list[dict[str, str]] = dspy.InputField()
            summary: str = dspy.OutputField()

        review = dspy.Predict(Review)
        findings = [
            {"topic": topic, "finding": review(topic=topic, system=SYSTEM).finding}
            for topic in TOPICS
        ]
        return {"summary": dspy.Predict(Summarise)(findings=findings).summary}


# ---------------------------------------------------------------------------- the table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agentscript", required=True, help="the project's agentscript command")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    server = CountingServer()
    clients: dict[str, Callable[[str, str], Any]] = {
        "agentscript": lambda task, url: run_agentscript(task, url, args.agentscript),
        "pydantic_ai": run_pydantic_ai,
        "dspy": run_dspy,
    }
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        for task in TASKS:
            for framework, client in clients.items():
                name = f"{framework}-{task}"
                server.script(name, SCRIPTS[(framework, task)])
                value = client(task, server.base_url(name))
                session = server.sessions[name]
                figures.setdefault(task, {})[framework] = {
                    "tokens": sum(tokens_of(request) for request in session.requests),
                    "calls": len(session.requests),
                    "bytes": sum(session.raw_bytes),
                    "answer_ok": value == EXPECTED[task],
                }
    finally:
        server.close()
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print_table(figures)
    return 0


TARGETS = {  # AgentScript / Pydantic AI, and AgentScript / DSPy
    "extraction": (1.0, 0.7),
    "tool_loop": (1.0, 0.7),
    "delegation": (1.0, 0.7),
    "long_context": (0.5, 0.7),
}


def print_table(figures: dict[str, dict[str, dict[str, Any]]]) -> None:
    header = (
        f"{'task':<13} {'AgentScript':>18} {'Pydantic AI':>18} {'DSPy':>18} "
        f"{'AS/PAI':>7} {'target':>6} {'AS/DSPy':>7} {'target':>6}  answers"
    )
    print("tokens (cl100k_base) per task, with calls and request bytes; one scripted server")
    print(header)
    print("-" * len(header))
    for task, row in figures.items():
        cells = [
            f"{row[f]['tokens']:>6} ({row[f]['calls']}) {row[f]['bytes']:>6}B"
            for f in ("agentscript", "pydantic_ai", "dspy")
        ]
        ours = row["agentscript"]["tokens"]
        versus_pai = ours / row["pydantic_ai"]["tokens"]
        versus_dspy = ours / row["dspy"]["tokens"]
        target_pai, target_dspy = TARGETS[task]
        mark_pai = "ok" if versus_pai <= target_pai else "MISS"
        mark_dspy = "ok" if versus_dspy <= target_dspy else "MISS"
        answers = "same" if all(cell["answer_ok"] for cell in row.values()) else "DIFFER"
        print(
            f"{task:<13} {cells[0]:>18} {cells[1]:>18} {cells[2]:>18} "
            f"{versus_pai:>6.3f}x {'≤' + str(target_pai):>6} {versus_dspy:>6.3f}x "
            f"{'≤' + str(target_dspy):>6}  {answers} ({mark_pai}/{mark_dspy})"
        )


if __name__ == "__main__":
    sys.exit(main())
