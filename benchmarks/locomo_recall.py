"""How well `MemoryService.recall` finds the evidence of LoCoMo questions, and how fast it is.

Each conversation of the LoCoMo dev file becomes one scope of episodic entries, one per turn
(event_time = the session's date, source.session = the session, key = the turn's id so a
re-ingest updates instead of duplicating). Every question of categories 1-4 is asked through
`recall`, and the evidence turns it cites are looked for in the results: turn-level and
session-level recall_all@k, recall_any@k (k = 1, 5, 10) and MRR, per category, next to a plain
BM25 baseline computed in the same run (standard library only: k1 1.2, b 0.75, lowercase
alphanumeric tokens, no stemming, one conversation per corpus, the raw turn text), without and
with the small stop list of the reference measurement. Session rankings are the order in which
sessions first appear among the ranked turns; one more baseline ranks whole sessions (each
session's turns as one document, with the stop list), the way the reference measured its
session-level floor.
Nothing here reads answers or evidence before scoring, and nothing is tuned per question.

It runs twice: with the benchmark's explicit context (each turn remembered with a dated title,
the speaker as a tag and the two turns around it as `context`), and as a host writes through the
MCP server (`Speaker: text`, kind, key, event_time, source.session; no title, tags or context),
where the service's linked context stands in for the missing one. Speed at scale, in one scope
of up to 100,000 entries, is benchmarks/memory_scale.py's. Prints tables; never asserts. The data set is evaluation data only: it is read from
`../shared/benchmarks/locomo/` (or --data) and never copied into the repository.

    .venv/bin/python benchmarks/locomo_recall.py [--data PATH] [--ablations]
        [--embeddings URI [--semantic-weight 1.0]]

With --embeddings, one more row re-ranks with that embedding model (memory/semantic.py), the
model being reached as memory.yml's `recall.embeddings` would be (OPENAI_*/OLLAMA_* variables).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentscript.memory import (
    DEFAULT_ANALYZER,
    Analyzer,
    FixedClock,
    MemoryConfig,
    MemoryService,
    RecallTuning,
)
from agentscript.memory.semantic import SemanticRanker
from agentscript.providers.llm.embeddings import HttpEmbedder

ROOT = Path(__file__).resolve().parents[1]
# `shared/` sits next to the checkout, or next to the folder of worktrees holding it.
DEFAULT_DATA = next(
    (
        folder / "shared" / "benchmarks" / "locomo" / "locomo-dev.json"
        for folder in ROOT.parents
        if (folder / "shared" / "benchmarks" / "locomo").is_dir()
    ),
    ROOT.parent / "shared" / "benchmarks" / "locomo" / "locomo-dev.json",
)
KS = (1, 5, 10)
# Enough results to rank sessions: a conversation has about 27 of them.
RESULTS_PER_QUESTION = 50
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# (system, metric) → the least it must reach; session recall_all@5 has no floor ("as high as
# you can": about 0.83 is this method's ceiling without a model in the loop).
TARGETS = {
    ("as a host writes", "turn recall_all@10"): 0.67,
    ("explicit context", "turn recall_all@10"): 0.715,
}
_TURN_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")
_BASELINE_TOKEN = re.compile(r"[a-z0-9]+")


# --------------------------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class Turn:
    turn_id: str
    session: int
    speaker: str
    text: str
    caption: str
    when: datetime


@dataclass(slots=True)
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[tuple[str, int, frozenset[str]]]


def load(path: Path) -> list[Conversation]:
    """The conversations and their category 1-4 questions. Evidence ids are only repaired in
    form (`D:11:26` → `D11:26`, `D8:6; D9:17` → two ids); ids naming no turn stay misses."""
    conversations = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        talk = sample["conversation"]
        turns = []
        for name, value in talk.items():
            match = _SESSION.fullmatch(name)
            if not match:
                continue
            when = datetime.strptime(talk[f"{name}_date_time"], "%I:%M %p on %d %B, %Y")
            for turn in value:
                turns.append(
                    Turn(
                        turn["dia_id"],
                        int(match[1]),
                        turn["speaker"],
                        turn["text"],
                        turn.get("blip_caption") or "",
                        when.replace(tzinfo=UTC),
                    )
                )
        turns.sort(key=lambda turn: _turn_order(turn.turn_id))
        questions = [
            (
                qa["question"],
                int(qa["category"]),
                frozenset(
                    f"D{match[1]}:{match[2]}"
                    for evidence in qa.get("evidence", [])
                    for match in _TURN_ID.finditer(evidence)
                ),
            )
            for qa in sample["qa"]
            if int(qa["category"]) in CATEGORIES
        ]
        conversations.append(Conversation(sample["sample_id"], turns, questions))
    return conversations


def _turn_order(turn_id: str) -> tuple[int, int]:
    match = _TURN_ID.fullmatch(turn_id)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def session_of(turn_id: str) -> str:
    return turn_id.split(":")[0]


# ------------------------------------------------------------------------------ ingest


@dataclass(frozen=True, slots=True)
class Ingest:
    """How turns become entries; each switch is one recall idea the ablation can turn off."""

    # Title `Speaker, 8 May 2023` rather than the turn's own first line.
    dated_titles: bool = True
    speaker_tags: bool = True
    captions: bool = True
    # Turns of the same session before and after a turn that form its context field.
    before: int = 2
    after: int = 2
    # The text starts with `Speaker: `, as a chat transcript names who said what.
    speaker_prefix: bool = False
    # source.session is given: the service links a session's turns (their linked context).
    sessions: bool = True


# How a host writes turns through the MCP server: the turn's text (with the photo's caption,
# which is part of what was said), kind, key, event_time and source.session; no title, no tags,
# no context. The service links the turns of a session itself (recall.py, neighbour context).
AS_A_HOST_WRITES = Ingest(
    dated_titles=False, speaker_tags=False, before=0, after=0, speaker_prefix=True
)


def entry_text(turn: Turn, ingest: Ingest) -> str:
    text = f"{turn.speaker}: {turn.text}" if ingest.speaker_prefix else turn.text
    if ingest.captions and turn.caption:
        return f"{text}\n[shared a photo: {turn.caption}]"
    return text


def context_of(turns: list[Turn], index: int, ingest: Ingest) -> str:
    """Neighbouring turns of the same session, the searchable context of an entry. Their
    speakers' names are left out: in a two-person chat they would match every question."""
    around = [*range(index - ingest.before, index), *range(index + 1, index + ingest.after + 1)]
    return "\n".join(
        entry_text(turns[other], ingest)
        for other in around
        if 0 <= other < len(turns) and turns[other].session == turns[index].session
    )


def scope_of(conversation: Conversation) -> str:
    return f"/locomo/{conversation.sample_id}"


def turn_item(conversation: Conversation, index: int, options: Ingest) -> dict[str, Any]:
    """The `remember` arguments of one turn."""
    turn = conversation.turns[index]
    item: dict[str, Any] = {
        "text": entry_text(turn, options),
        "kind": "episodic",
        "key": turn.turn_id,
        "scope": scope_of(conversation),
        "event_time": turn.when,
    }
    if options.sessions:
        item["source"] = {"session": f"{conversation.sample_id}/{session_of(turn.turn_id)}"}
    if options.dated_titles:
        item["title"] = f"{turn.speaker}, {turn.when:%-d %B %Y}"
    if options.speaker_tags:
        item["tags"] = [turn.speaker]
    context = context_of(conversation.turns, index, options)
    if context:
        item["context"] = context
    return item


def ingest(service: MemoryService, conversation: Conversation, options: Ingest) -> list[float]:
    """Remember every turn; the latency of each remember in milliseconds."""
    latencies = []
    for index in range(len(conversation.turns)):
        started = time.perf_counter()
        service.remember(**turn_item(conversation, index, options))
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


# ----------------------------------------------------------------------------- metrics


@dataclass(slots=True)
class Scores:
    """Per-question hits, summed per category and overall."""

    sums: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    counts: Counter[str] = field(default_factory=Counter)

    def add(self, category: int, ranked_turns: list[str], evidence: frozenset[str]) -> None:
        """A ranking of turns; sessions rank in the order they first appear in it."""
        sessions = list(dict.fromkeys(session_of(turn) for turn in ranked_turns))
        self._count(
            category,
            {
                **_hits("turn", ranked_turns, evidence),
                **_hits("session", sessions, frozenset(session_of(turn) for turn in evidence)),
            },
        )

    def add_sessions(self, category: int, sessions: list[str], evidence: frozenset[str]) -> None:
        """A ranking of whole sessions, for a system that retrieves sessions only."""
        wanted = frozenset(session_of(turn) for turn in evidence)
        self._count(category, _hits("session", sessions, wanted))

    def mean(self, group: str, metric: str) -> float:
        return self.sums[group][metric] / max(self.counts[group], 1)

    def _count(self, category: int, values: dict[str, float]) -> None:
        for name in ("all", CATEGORIES[category]):
            self.counts[name] += 1
            self.sums[name].update(values)


def _hits(unit: str, ranked: list[str], wanted: frozenset[str]) -> dict[str, float]:
    values: dict[str, float] = {}
    for k in KS:
        top = set(ranked[:k])
        values[f"{unit} all@{k}"] = float(wanted <= top)
        values[f"{unit} any@{k}"] = float(bool(wanted & top))
    first = next((rank for rank, item in enumerate(ranked, 1) if item in wanted), None)
    values[f"{unit} mrr"] = 1.0 / first if first else 0.0
    return values


# ------------------------------------------------------------------------------ BM25 floor


# The small stop list of the reference measurement (docs: "plain BM25 ... about 0.52").
SMALL_STOPLIST = frozenset(
    "a an the and or of to in on at for with is are was were be been it this that i you he "
    "she we they my your his her our their what when where who how did do does".split()
)


def baseline_tokens(text: str, stoplist: frozenset[str]) -> list[str]:
    return [token for token in _BASELINE_TOKEN.findall(text.lower()) if token not in stoplist]


class PlainBm25:
    """Okapi BM25 over raw texts (one conversation's turns, or its sessions), as plain as it
    gets."""

    def __init__(
        self,
        ids: list[str],
        texts: list[str],
        stoplist: frozenset[str] = frozenset(),
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        self.ids = ids
        self.stoplist = stoplist
        self.documents = [Counter(baseline_tokens(text, stoplist)) for text in texts]
        self.lengths = [sum(document.values()) for document in self.documents]
        self.average = sum(self.lengths) / len(self.lengths)
        frequency: Counter[str] = Counter()
        for document in self.documents:
            frequency.update(document.keys())
        size = len(self.documents)
        self.idf = {
            term: math.log(1 + (size - count + 0.5) / (count + 0.5))
            for term, count in frequency.items()
        }
        self.k1, self.b = k1, b

    @classmethod
    def of_turns(cls, turns: list[Turn], stoplist: frozenset[str] = frozenset()) -> PlainBm25:
        return cls([turn.turn_id for turn in turns], [turn.text for turn in turns], stoplist)

    @classmethod
    def of_sessions(cls, turns: list[Turn], stoplist: frozenset[str] = frozenset()) -> PlainBm25:
        """One document per session, its turns' texts joined: the unit of the reference
        measurement's session-level numbers."""
        sessions: dict[str, list[str]] = defaultdict(list)
        for turn in turns:
            sessions[session_of(turn.turn_id)].append(turn.text)
        return cls(list(sessions), ["\n".join(texts) for texts in sessions.values()], stoplist)

    def rank(self, query: str, limit: int) -> list[str]:
        terms = baseline_tokens(query, self.stoplist)
        scored = []
        for index, document in enumerate(self.documents):
            norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.average)
            score = sum(
                self.idf[term] * document[term] * (self.k1 + 1) / (document[term] + norm)
                for term in terms
                if term in document
            )
            if score > 0:
                scored.append((-score, index))
        scored.sort()
        return [self.ids[index] for _, index in scored[:limit]]


# --------------------------------------------------------------------------------- runs


@dataclass(slots=True)
class Run:
    name: str
    scores: Scores
    recall_ms: list[float]
    remember_ms: list[float]
    ingest_seconds: float
    # The units it ranks: a system that retrieves whole sessions has no turn-level figures.
    units: tuple[str, ...] = ("turn", "session")


def run_service(
    name: str,
    conversations: list[Conversation],
    *,
    analyzer: Analyzer = DEFAULT_ANALYZER,
    tuning: RecallTuning | None = None,
    options: Ingest = Ingest(),
    semantic: SemanticRanker | None = None,
) -> Run:
    config = MemoryConfig(max_entries=100_000)
    scores = Scores()
    recall_ms: list[float] = []
    remember_ms: list[float] = []
    notes: Counter[str] = Counter()
    ingest_seconds = 0.0
    with tempfile.TemporaryDirectory() as folder:
        clock = FixedClock(datetime(2024, 1, 1, tzinfo=UTC))
        with MemoryService.open(
            None,
            database=Path(folder) / "memory.db",
            config=config,
            clock=clock,
            analyzer=analyzer,
            tuning=tuning,
        ) as service:
            service.semantic = semantic
            for conversation in conversations:
                started = time.perf_counter()
                remember_ms += ingest(service, conversation, options)
                ingest_seconds += time.perf_counter() - started
            for conversation in conversations:
                # Questions are asked the day after the conversation's last session.
                clock.set(conversation.turns[-1].when + timedelta(days=1))
                for question, category, evidence in conversation.questions:
                    started = time.perf_counter()
                    found = service.recall(
                        question,
                        scope=scope_of(conversation),
                        limit=RESULTS_PER_QUESTION,
                        body_chars=0,
                    )
                    recall_ms.append((time.perf_counter() - started) * 1000)
                    scores.add(category, [hit["key"].upper() for hit in found["results"]], evidence)
                    if "note" in found:
                        notes[found["note"]] += 1
    for note, count in notes.items():
        print(f"{name}: {count} recalls noted: {note}", file=sys.stderr)
    return Run(name, scores, recall_ms, remember_ms, ingest_seconds)


def run_baseline(
    name: str,
    conversations: list[Conversation],
    stoplist: frozenset[str] = frozenset(),
    unit: str = "turn",
) -> Run:
    """Plain BM25 over each conversation's turns, or (`unit` "session") over its sessions."""
    scores = Scores()
    recall_ms: list[float] = []
    started = time.perf_counter()
    build = PlainBm25.of_sessions if unit == "session" else PlainBm25.of_turns
    indexes = [build(conversation.turns, stoplist) for conversation in conversations]
    ingest_seconds = time.perf_counter() - started
    add = scores.add_sessions if unit == "session" else scores.add
    for conversation, index in zip(conversations, indexes, strict=True):
        for question, category, evidence in conversation.questions:
            started = time.perf_counter()
            ranked = index.rank(question, RESULTS_PER_QUESTION)
            recall_ms.append((time.perf_counter() - started) * 1000)
            add(category, ranked, evidence)
    units = ("session",) if unit == "session" else ("turn", "session")
    return Run(name, scores, recall_ms, [], ingest_seconds, units)


# ----------------------------------------------------------------------------- reporting


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share / 100 * (len(ordered) - 1)))]


def print_table(title: str, header: list[str], rows: Iterable[list[str]]) -> None:
    rows = list(rows)
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    print(f"\n{title}")
    print("  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True)))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def report(runs: list[Run]) -> None:
    groups = ["all", *CATEGORIES.values()]
    for unit in ("turn", "session"):
        metrics = [f"{unit} {kind}@{k}" for kind in ("all", "any") for k in KS] + [f"{unit} mrr"]
        print_table(
            f"{unit}-level recall (LoCoMo dev, categories 1-4)",
            ["system", "group", "n", *[metric.split(" ", 1)[1] for metric in metrics]],
            (
                [
                    run.name,
                    group,
                    str(run.scores.counts[group]),
                    *[f"{run.scores.mean(group, metric):.3f}" for metric in metrics],
                ]
                for group in groups
                for run in runs
                if unit in run.units
            ),
        )
    print_table(
        "speed",
        ["system", "ingest s", "remember p50 ms", "remember p95 ms", "recall p50", "recall p95"],
        (
            [
                run.name,
                f"{run.ingest_seconds:.2f}",
                f"{percentile(run.remember_ms, 50):.2f}",
                f"{percentile(run.remember_ms, 95):.2f}",
                f"{percentile(run.recall_ms, 50):.2f}",
                f"{percentile(run.recall_ms, 95):.2f}",
            ]
            for run in runs
        ),
    )
    by_name = {run.name: run.scores for run in runs}
    for (system, name), target in TARGETS.items():
        unit, metric = name.split(" ")
        value = by_name[system].mean("all", f"{unit} {metric.replace('recall_', '')}")
        # The targets are stated to three decimals, as the figures are printed.
        verdict = "met" if round(value, 3) >= target else "missed"
        print(f"target {system}, {name} >= {target}: {value:.3f} ({verdict})")
    for system in ("explicit context", "as a host writes"):
        value = by_name[system].mean("all", "session all@5")
        print(f"{system}, session recall_all@5 (no floor; about 0.83 is the ceiling): {value:.3f}")


# ------------------------------------------------------------------------------ ablations


def ablations() -> list[tuple[str, dict[str, Any]]]:
    """The recall ideas added one at a time, each row keeping the ones above it; the last
    row adds pseudo-relevance feedback, measured but not enabled by default."""
    full = RecallTuning()
    bare = RecallTuning(recency_weight=0.0, session_weight=0.0, time_weight=0.0)
    plain = Analyzer(stem=False, stopwords=False, lemmas=False, compounds=False)
    # Without sessions until the context rows: no linked context, no session support.
    text_only = Ingest(speaker_tags=False, captions=False, before=0, after=0, sessions=False)
    untitled = replace(text_only, dated_titles=False)
    return [
        ("FTS5 BM25, no analysis", {"analyzer": plain, "tuning": bare, "options": untitled}),
        ("+ speaker and date title", {"analyzer": plain, "tuning": bare, "options": text_only}),
        (
            "+ stopwords",
            {
                "analyzer": Analyzer(stem=False, lemmas=False, compounds=False),
                "tuning": bare,
                "options": text_only,
            },
        ),
        (
            "+ Porter stemming",
            {
                "analyzer": Analyzer(lemmas=False, compounds=False),
                "tuning": bare,
                "options": text_only,
            },
        ),
        ("+ irregular lemmas, compounds", {"tuning": bare, "options": text_only}),
        ("+ speaker tag", {"tuning": bare, "options": replace(text_only, speaker_tags=True)}),
        (
            "+ photo captions",
            {"tuning": bare, "options": Ingest(before=0, after=0, sessions=False)},
        ),
        ("+ context: previous turn", {"tuning": bare, "options": Ingest(before=1, after=0)}),
        ("+ context: next turn", {"tuning": bare, "options": Ingest(before=1, after=1)}),
        ("+ context: 2 turns each side", {"tuning": bare}),
        ("+ session support", {"tuning": replace(bare, session_weight=full.session_weight)}),
        ("+ time hints", {"tuning": replace(full, recency_weight=0.0)}),
        ("+ recency (the default)", {"tuning": full}),
        (
            "+ feedback (not adopted)",
            {"tuning": replace(full, feedback_docs=3, feedback_terms=5, feedback_weight=0.3)},
        ),
        (
            "+ leave out terms 5% hold (not adopted)",
            {"tuning": replace(full, common_share=0.05)},
        ),
    ]


def report_ablations(runs: list[Run]) -> None:
    metrics = ["turn all@10", "turn any@10", "turn mrr", "session all@5", "session mrr"]
    print_table(
        "recall ideas, added one at a time (all categories)",
        ["step", *metrics, "recall p95 ms"],
        (
            [
                run.name,
                *[f"{run.scores.mean('all', metric):.3f}" for metric in metrics],
                f"{percentile(run.recall_ms, 95):.2f}",
            ]
            for run in runs
        ),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--ablations", action="store_true")
    parser.add_argument(
        "--embeddings",
        metavar="URI",
        help="also run with semantic re-ranking by this embedding model (openai:// or ollama://)",
    )
    parser.add_argument("--semantic-weight", type=float, default=1.0)
    arguments = parser.parse_args(argv)
    if not arguments.data.exists():
        print(f"LoCoMo data not found at {arguments.data} (use --data)", file=sys.stderr)
        return 2
    conversations = load(arguments.data)
    print(
        f"LoCoMo dev: {len(conversations)} conversations, "
        f"{sum(len(c.turns) for c in conversations)} turns, "
        f"{sum(len(c.questions) for c in conversations)} questions (categories 1-4)"
    )
    runs = [
        run_service("explicit context", conversations),
        run_service("as a host writes", conversations, options=AS_A_HOST_WRITES),
        run_baseline("plain BM25", conversations),
        run_baseline("BM25 + stop list", conversations, SMALL_STOPLIST),
        run_baseline("BM25 sessions + stop list", conversations, SMALL_STOPLIST, unit="session"),
    ]
    if arguments.embeddings:
        embedder = HttpEmbedder(arguments.embeddings)
        ranker = SemanticRanker(embedder, weight=arguments.semantic_weight)
        runs.insert(1, run_service(f"+ {embedder.name}", conversations, semantic=ranker))
        embedder.close()
    report(runs)
    if arguments.ablations:
        report_ablations(
            [run_service(name, conversations, **options) for name, options in ablations()]
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
