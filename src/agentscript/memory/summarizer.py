"""The summarizer: one model call turns a bucket's entries into the text of one summary entry.

It speaks to the runtime's provider layer (`LlmProvider.generate`, a free-form generate with
`return_shape=None`), so every model a program can use can write summaries, and tests use the
scripted mock. The caller builds the provider (`agentscript.app.composition.build_llm`, or `ModelRouter`); the
model URI comes from memory.yml (`timeline.model`).

It fails closed: a provider error, an answer that is not text, an empty answer or one over the
size bound raises SummaryError, and compaction then writes nothing for that bucket. A summary
that silently lost its sources' content would be worse than no summary, because the sources are
archived when it is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from agentscript.memory.config import MemoryConfig
from agentscript.memory.entries import Entry, title_from_text
from agentscript.memory.errors import INVALID_CONFIG, MemoryServiceError
from agentscript.memory.timeline import CHILD_LEVEL, Clock, Level, bucket_label, parse_timestamp
from agentscript.runtime.context import ContextItem, build_context, make_context_item
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.ports import GenerateRequest, LlmProvider
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import LlmBinding

SUMMARY_FAILED = "summary_failed"
# Scripted models answer by `Agent.function`: MemoryCompactor.day, MemoryCompactor.week, …
AGENT_NAME = "MemoryCompactor"
IDENTITY = {
    "role": "Long-term memory compactor",
    "description": (
        "Condenses one period of an agent's long-term memory into a single summary that "
        "replaces the entries it covers, losing no fact, decision, number, date, path or command."
    ),
}
# How long a summary may be, in words (asked for) by level: a year covers more than a day.
TARGET_WORDS: dict[Level, int] = {"day": 250, "week": 350, "month": 450, "year": 600}
DEFAULT_MAX_OUTPUT_TOKENS = 1500
DEFAULT_MAX_OUTPUT_CHARS = 8000
# A source's body beyond this many characters is cut in the prompt (its title never is).
DEFAULT_MAX_SOURCE_CHARS = 4000
# The whole prompt's sources; a bucket holding more fails rather than being summarised in part.
DEFAULT_MAX_INPUT_CHARS = 120_000
_SOURCE_NOUN: dict[Level, str] = {
    "day": "memory entries (things that happened)",
    "week": "day summaries",
    "month": "week summaries",
    "year": "month summaries",
}


EXTRACTIVE_NOTE = (
    "(Extractive summary, written without a model: the entries' titles, keys, tags and first "
    "lines. A model rewrites it once memory.yml names `timeline.model`.)"
)
# The body of an extractive summary, in characters: below a model summary's bound.
DEFAULT_EXTRACT_CHARS = 4000


class BucketSummarizer(Protocol):
    """What compaction needs: the text of one bucket's summary. `method` says how it is
    written (`model` or `extractive`), and so whether a summary may be upgraded later."""

    method: Literal["model", "extractive"]

    def summarize(
        self,
        level: Level,
        bucket: str,
        sources: Sequence[Entry],
        previous: Entry | None = None,
        *,
        clock: Clock | None = None,
    ) -> Summary: ...


class SummaryError(MemoryServiceError):
    """The model gave no usable summary; nothing may be written for the bucket."""

    def __init__(self, message: str) -> None:
        super().__init__(SUMMARY_FAILED, message)


@dataclass(frozen=True, slots=True)
class Summary:
    """What the model wrote: a title (its first line, at most 80 characters) and the body."""

    title: str
    body: str
    usage: Usage | None = None


class Summarizer:
    """Writes the text of a summary with one free-form generate.

    `model` is the LLM URI (memory.yml `timeline.model`); it may be None only with a provider
    that ignores it (the mock and scripted ones). Output is bounded twice: the request asks for
    at most `max_output_tokens`, and an answer over `max_output_chars` is refused.
    """

    method: Literal["model", "extractive"] = "model"

    def __init__(
        self,
        llm: LlmProvider,
        model: str | None = None,
        *,
        week_template: str | None = None,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        max_source_chars: int = DEFAULT_MAX_SOURCE_CHARS,
        max_input_chars: int = DEFAULT_MAX_INPUT_CHARS,
    ) -> None:
        self.llm = llm
        self.model = LlmBinding("timeline.model", model) if model is not None else None
        self.week_template = week_template.strip() if week_template else None
        self.max_output_tokens = max_output_tokens
        self.max_output_chars = max_output_chars
        self.max_source_chars = max_source_chars
        self.max_input_chars = max_input_chars

    @classmethod
    def from_config(cls, config: MemoryConfig, llm: LlmProvider) -> Summarizer:
        """The summarizer memory.yml asks for; an `invalid_config` error when it names no model,
        since compaction must never fall back to some other model silently."""
        if config.timeline.model is None:
            raise MemoryServiceError(
                INVALID_CONFIG,
                "compaction needs a model: set timeline.model in .agentscript/memory.yml "
                "(for example `timeline: {model: openai://gpt-4.1-mini}`)",
                "timeline.model",
            )
        return cls(llm, config.timeline.model, week_template=config.timeline.week_template)

    def request(
        self,
        level: Level,
        bucket: str,
        sources: Sequence[Entry],
        previous: Entry | None = None,
        *,
        clock: Clock | None = None,
    ) -> GenerateRequest:
        """The generate that summarises `sources` (oldest first) for the `level` bucket; with
        `previous`, the bucket's current summary, which the new one replaces and must keep.
        With the service's `clock`, sources are dated in local time, as buckets are."""
        items = self._items(sources, previous, clock)
        size = sum(len(item.text) for item in items)
        if size > self.max_input_chars:
            raise SummaryError(
                f"the {len(items)} entries of {level} {bucket} hold {size:,} characters, more "
                f"than the summarizer reads at once ({self.max_input_chars:,}); forget or "
                "shorten some of them"
            )
        instruction = self._instruction(level, bucket, len(sources), previous is not None)
        built = build_context(AGENT_NAME, self.model, IDENTITY, items, instruction, None, None)
        return GenerateRequest(
            agent_name=AGENT_NAME,
            function_name=level,
            model=self.model,
            identity=IDENTITY,
            instruction=instruction,
            return_shape=None,
            schema=None,
            context=items,
            built=built,
            max_output_tokens=self.max_output_tokens,
        )

    def summarize(
        self,
        level: Level,
        bucket: str,
        sources: Sequence[Entry],
        previous: Entry | None = None,
        *,
        clock: Clock | None = None,
    ) -> Summary:
        """Ask the model; the summary, or SummaryError saying why there is none."""
        if not sources:
            raise SummaryError(f"{level} {bucket} has no entries to summarise")
        request = self.request(level, bucket, sources, previous, clock=clock)
        try:
            response = self.llm.generate(request)
        except AgentScriptError as error:
            raise SummaryError(f"the model failed: {error}") from error
        except Exception as error:  # a provider's own bug is a failed summary, not a crash
            raise SummaryError(
                f"the model provider failed: {str(error) or type(error).__name__}"
            ) from error
        text = response.value
        if not isinstance(text, str):
            raise SummaryError(f"the model answered with {_kind(text)}, not text")
        text = text.replace("\x00", "").strip()
        if not text:
            raise SummaryError("the model returned no text")
        if len(text) > self.max_output_chars:
            raise SummaryError(
                f"the model returned {len(text):,} characters, more than the "
                f"{self.max_output_chars:,} a summary may hold"
            )
        return _split(text, response.usage)

    def _items(
        self, sources: Sequence[Entry], previous: Entry | None, clock: Clock | None
    ) -> list[ContextItem]:
        ordered = [*([previous] if previous is not None else []), *sources]
        items = []
        for index, entry in enumerate(ordered, start=1):
            label = _describe(entry, clock)
            if entry is previous:
                label = f"current summary ({label})"
            body = entry.body
            if len(body) > self.max_source_chars:
                body = body[: self.max_source_chars] + " […cut]"
            # A derived title is the body's first line: no need to say it twice.
            text = body if body.startswith(entry.title) else f"{entry.title}\n{body}"
            items.append(make_context_item(index, label, text, None, label=str(index)))
        return items

    def _instruction(self, level: Level, bucket: str, count: int, rebuild: bool) -> str:
        what = _SOURCE_NOUN[level]
        label = bucket_label(bucket)
        period = label if label == bucket else f"{label} ({bucket})"
        lines = [
            f"Write the {level} summary of {period} from the {what} above ({count}, oldest "
            "first). The summary replaces them in long-term memory, so what it leaves out is "
            "only found again by digging through the archive.",
        ]
        if rebuild:
            lines.append(
                f"Entry 1 is the current summary of this {level}; the others arrived after it. "
                "Merge them into it: keep everything it says unless a newer entry corrects it."
            )
        if CHILD_LEVEL[level] is not None:
            lines.append(
                f"The entries are summaries themselves: combine them into one account of the "
                f"whole {level} instead of listing them one after another."
            )
        lines += [
            "Keep: facts, decisions and their reasons, conclusions, numbers, dates, names, and "
            "file paths, commands, URLs, versions and identifiers exactly as written.",
            "Drop: repetition, small talk, and anything a later entry corrects (keep the "
            "correction).",
            "Format: the first line is a title of at most 80 characters naming the main topics "
            "(plain text, no heading marks); then a blank line; then markdown bullet points "
            "grouped by topic, in the language of the entries, without preamble or closing "
            "remarks. End with a section `Open items` listing unfinished tasks and open "
            "questions, or leave it out when there are none.",
            f"Stay under {TARGET_WORDS[level]} words. Use only what the entries say; never "
            "invent or guess.",
        ]
        if level == "week" and self.week_template:
            lines.append("Follow this outline for the week:\n" + self.week_template)
        return "\n".join(lines)


class ExtractiveSummarizer:
    """Summaries without a model, so compaction runs on a default install: the bucket's label
    and entry count as the title, then one line per source (local time or bucket, key, title,
    tags, and the first line of the body when it says more than the title), a previous
    summary's lines first, cut at `max_chars` with a count of the lines left out. It never
    fails for a bucket that has sources, and calls nothing."""

    method: Literal["model", "extractive"] = "extractive"

    def __init__(self, max_chars: int = DEFAULT_EXTRACT_CHARS) -> None:
        self.max_chars = max_chars

    def summarize(
        self,
        level: Level,
        bucket: str,
        sources: Sequence[Entry],
        previous: Entry | None = None,
        *,
        clock: Clock | None = None,
    ) -> Summary:
        if not sources:
            raise SummaryError(f"{level} {bucket} has no entries to summarise")
        lines = [line for entry in sources for line in _extract_lines(entry, clock)]
        if previous is not None:
            kept = [line for line in previous.body.splitlines() if line.startswith("- ")]
            lines = [*kept, *lines]
        body = [EXTRACTIVE_NOTE, ""]
        size = len(EXTRACTIVE_NOTE) + 1
        for index, line in enumerate(lines):
            if size + len(line) + 1 > self.max_chars:
                body.append(f"- … and {len(lines) - index} more (see the archive)")
                break
            body.append(line)
            size += len(line) + 1
        count = len(lines)
        title = f"{bucket_label(bucket)}: {count} entr{'y' if count == 1 else 'ies'}"
        return Summary(title=title_from_text(title), body="\n".join(body))


def _extract_lines(entry: Entry, clock: Clock | None) -> list[str]:
    """A source's line; a summary's own lines follow its line, indented, so a week built
    from extractive days still lists what happened."""
    lines = [_extract_line(entry, clock)]
    if entry.kind == "summary":
        lines += [f"  {line}" for line in entry.body.splitlines() if line.lstrip().startswith("- ")]
    return lines


def _extract_line(entry: Entry, clock: Clock | None) -> str:
    when = entry.bucket
    if clock is not None and entry.kind != "summary":
        when = f"{clock.to_local(parse_timestamp(entry.event_time)):%H:%M}"
    key = f" `{entry.key}`" if entry.key else ""
    tags = "".join(f" #{tag.replace(' ', '-')}" for tag in entry.tags)
    line = f"- [{when}]{key} {entry.title}{tags}"
    rest = entry.body.removeprefix(entry.title).strip()
    first = next((part.strip() for part in rest.splitlines() if part.strip()), "")
    if first and entry.kind != "summary":
        line += f": {first[:200]}"
    return line


def _describe(entry: Entry, clock: Clock | None) -> str:
    """What and when a source is, for the model: `episodic, 2026-05-04 11:15 #deploy` (local
    time with a clock, else the local day), or `day summary 2026-05-04`."""
    tags = "".join(f" #{tag.replace(' ', '-')}" for tag in entry.tags)
    if entry.kind == "summary":
        return f"{entry.level} summary {entry.bucket}{tags}"
    when = entry.bucket
    if clock is not None:
        when = f"{clock.to_local(parse_timestamp(entry.event_time)):%Y-%m-%d %H:%M}"
    return f"{entry.kind}, {when}{tags}"


def _split(text: str, usage: Usage | None) -> Summary:
    """The first line with words is the title (heading marks, emphasis and a `Title:` label
    removed), the rest the body; a one-line answer is both."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        heading = line.strip().lstrip("#").strip().strip("*_").strip()
        if heading.casefold().startswith("title:"):
            heading = heading[len("title:") :].strip().strip("*_").strip()
        if heading:
            body = "\n".join(lines[index + 1 :]).strip()
            return Summary(title=title_from_text(heading), body=body or text, usage=usage)
    raise SummaryError("the model returned no text, only markup")


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON list"
    return f"a {type(value).__name__}"
