"""What runs learn on their own stays apart from what users remember: recall ranks every
remembered match first, and the digest lists learned entries last under their own heading."""

from __future__ import annotations

from pathlib import Path

from agentscript.memory.service import DIGEST_LEARNED_HEADING, MemoryService


def open_service(tmp_path: Path) -> MemoryService:
    workspace = tmp_path / "project"
    workspace.mkdir(exist_ok=True)
    return MemoryService.open(workspace, database=tmp_path / "memory.db")


def test_a_users_entry_is_recalled_before_many_better_matching_run_memories(
    tmp_path: Path,
) -> None:
    with open_service(tmp_path) as service:
        for number in range(10):
            service.remember(
                f"hello.as succeeded: Ada. Ada greeted Ada, run {number} of hello for Ada.",
                kind="episodic",
                key=f"run:{number}",
                title=f"hello.as succeeded: Ada ({number})",
                tags=["run", "ok"],
                source={"run": str(number), "reason": "run-memory"},
            )
        service.remember(
            "Learned: Ada answers first.",
            kind="knowledge",
            title="Ada lesson",
            source={"reason": "experience:repair"},
        )
        mine = service.remember("Ada prefers short greetings.", kind="fact", title="Ada")
        results = service.recall("Ada greeted hello", limit=3)["results"]
    assert results[0]["id"] == mine["id"]
    assert len(results) == 3


def test_learned_entries_fill_the_places_nothing_remembered_matches(tmp_path: Path) -> None:
    with open_service(tmp_path) as service:
        service.remember(
            "tides run", kind="episodic", key="run:1", title="tides run",
            source={"run": "1", "reason": "run-memory"},
        )  # fmt: skip
        results = service.recall("tides", limit=5)["results"]
    assert [result["title"] for result in results] == ["tides run"]


def test_the_digest_shows_learned_entries_only_in_their_own_section(tmp_path: Path) -> None:
    with open_service(tmp_path) as service:
        service.remember(
            "Run of hello", kind="episodic", key="run:7", title="hello.as succeeded: Ada",
            source={"run": "7", "reason": "run-memory"},
        )  # fmt: skip
        service.remember("Ada likes tea.", kind="fact", title="Ada likes tea")
        digest = service.digest()
    lines = digest["text"].splitlines()
    heading = lines.index(DIGEST_LEARNED_HEADING)
    assert any("Ada likes tea" in line for line in lines[:heading])
    assert any("hello.as succeeded: Ada" in line for line in lines[heading + 1 :])
    assert digest["entries"] == 2 and digest["omitted"] == 0
