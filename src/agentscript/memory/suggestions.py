"""What to distil: the suggestions `check` makes from the active entries of one scope.

The seed's `memory_check` answers `{suggestions: [{signal, summary}]}`, the active side of
remembering: episodes pile up, and someone has to turn what they have in common into knowledge
a later session can use. The service never does that itself (it calls no model on its own
behalf to write memories); it says where it sees material, and the agent or the user distils.
Every signal is computed from the entries alone, deterministically, so the same memory gives
the same suggestions:

- `recurring_topic`: a tag on at least RECURRING_AT remembered episodes while no active fact or
  knowledge entry carries it;
- `reinforced_episode`: one episode written at least REINFORCED_AT times (it keeps happening);
- `undistilled_checkpoints`: compaction checkpoints (compaction_sink) newer than the newest
  fact or knowledge entry: a session was compacted and nothing was learned from it since.

What runs learn on their own (run memories, experiences) is left out: agentscript.learn
distils those already.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from agentscript.memory.entries import Entry

RECURRING_AT = 3
REINFORCED_AT = 3
# At most this many suggestions of one signal: the biggest first.
PER_SIGNAL = 5


def distil_suggestions(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The suggestions for one scope's active entries, `[{signal, summary, ids}]`, in the
    order of the signals above."""
    episodes: list[Entry] = []
    checkpoints: list[Entry] = []
    lasting: list[Entry] = []
    for entry in entries:
        if entry.learned or not entry.active:
            continue
        if entry.checkpoint:
            checkpoints.append(entry)
        elif entry.kind == "episodic":
            episodes.append(entry)
        elif entry.kind in ("fact", "knowledge"):
            lasting.append(entry)
    return [
        *_recurring_topics(episodes, lasting),
        *_reinforced(episodes),
        *_undistilled(checkpoints, lasting),
    ]


def _recurring_topics(episodes: list[Entry], lasting: list[Entry]) -> list[dict[str, Any]]:
    covered = {tag for entry in lasting for tag in entry.tags}
    counts = Counter(tag for entry in episodes for tag in entry.tags if tag not in covered)
    found: list[dict[str, Any]] = []
    for tag, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        if count < RECURRING_AT or len(found) == PER_SIGNAL:
            break
        tagged = sorted(
            (entry for entry in episodes if tag in entry.tags),
            key=lambda entry: entry.event_time,
            reverse=True,
        )
        found.append(
            _suggestion(
                "recurring_topic",
                f"{count} episodes are tagged {tag} (latest: {tagged[0].title!r}) and no fact "
                f"or knowledge is: distil what they have in common into one knowledge entry "
                f"tagged {tag}",
                tagged,
            )
        )
    return found


def _reinforced(episodes: list[Entry]) -> list[dict[str, Any]]:
    repeated = sorted(
        (entry for entry in episodes if entry.reinforce_count + 1 >= REINFORCED_AT),
        key=lambda entry: (-entry.reinforce_count, entry.title),
    )
    return [
        _suggestion(
            "reinforced_episode",
            f"{entry.title!r} happened {entry.reinforce_count + 1} times: if it holds a lasting "
            "lesson, remember the lesson as knowledge (or a keyed fact)",
            [entry],
        )
        for entry in repeated[:PER_SIGNAL]
    ]


def _undistilled(checkpoints: list[Entry], lasting: list[Entry]) -> list[dict[str, Any]]:
    newest_lesson = max((entry.updated_at for entry in lasting), default="")
    fresh = sorted(
        (entry for entry in checkpoints if entry.created_at > newest_lesson),
        key=lambda entry: entry.created_at,
        reverse=True,
    )
    if not fresh:
        return []
    return [
        _suggestion(
            "undistilled_checkpoints",
            f"{len(fresh)} compaction checkpoint{'s' if len(fresh) > 1 else ''} (latest: "
            f"{fresh[0].title!r}) since the last fact or knowledge entry: read them "
            "(recall with tags [compaction]) and remember what will still matter",
            fresh,
        )
    ]


def _suggestion(signal: str, summary: str, entries: list[Entry]) -> dict[str, Any]:
    return {"signal": signal, "summary": summary, "ids": sorted(entry.id for entry in entries)}
