"""memory.yml's `recall.cache_bytes` bounds what the SQLite store keeps of decoded postings:
a long-running server asked about every term of a large scope never holds more."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscript.memory import MemoryService, sqlite_postings
from agentscript.memory.config import DEFAULT_CACHE_BYTES, parse_config
from agentscript.memory.errors import MemoryServiceError
from agentscript.memory.sqlite_store import SqliteStore
from agentscript.memory.text import Analyzer

WORDS = [f"word{n}" for n in range(40)]


def test_the_configured_bound_holds_for_every_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 200)  # blocks, not only a tail
    (tmp_path / ".agentscript").mkdir()
    (tmp_path / ".agentscript" / "memory.yml").write_text(
        "recall:\n  cache_bytes: 2048\n", encoding="utf-8"
    )
    with MemoryService.open(tmp_path, database=tmp_path / "memory.db") as service:
        service.remember_many(
            [
                {"text": f"note {n}: {WORDS[n % 40]} {WORDS[(n * 7) % 40]} kiln", "scope": "/s"}
                for n in range(600)
            ]
        )
        store = service.store
        assert isinstance(store, SqliteStore)
        reader = store._index
        assert reader.cache_bytes == 2048
        kept = []
        for word in [*WORDS, "kiln", *WORDS]:
            assert service.recall(word, scope="/s", limit=3).total > 0
            assert reader.cached_bytes <= 2048
            kept.append(reader.cached_bytes)
        assert max(kept) > 0  # something was kept, within the bound


def test_the_bound_defaults_and_is_checked() -> None:
    assert parse_config("").recall.cache_bytes == DEFAULT_CACHE_BYTES
    assert parse_config("recall: {cache_bytes: 0}").recall.cache_bytes == 0
    with pytest.raises(MemoryServiceError, match=r"recall\.cache_bytes"):
        parse_config("recall: {cache_bytes: -1}")


def test_the_analysers_line_cache_stays_small_whatever_it_reads() -> None:
    """What a long-running process keeps of analysed lines: short lines only, so at most
    their number times their length."""
    analyzer = Analyzer()
    long_line = " ".join(f"kiln{n}" for n in range(400))
    assert "kiln399" in analyzer.terms(long_line)
    assert long_line not in analyzer._lines
    for n in range(9_000):
        analyzer.terms(f"turn {n} about the kiln")
        assert len(analyzer._lines) <= 8_192
    assert max(map(len, analyzer._lines)) <= 1_024
