"""Token prices: the genai-prices table offline, the user's file first, unknown models None."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscript.providers.llm import prices
from agentscript.providers.llm.prices import Price, cost, price_of


def test_known_models_are_priced_from_the_table_offline() -> None:
    price = price_of("openai://gpt-4.1-mini")
    assert price is not None
    assert price.input_per_mtok == pytest.approx(0.4)
    assert price.output_per_mtok == pytest.approx(1.6)
    assert "genai-prices" in price.source
    tiered = price_of("anthropic://claude-sonnet-4-5")
    assert tiered is not None and tiered.input_per_mtok == pytest.approx(3.0)


def test_unknown_and_local_models_have_no_price() -> None:
    assert price_of("openai://no-such-model-xyz") is None
    assert price_of("ollama://llama3.2") is None
    assert price_of("mock://anything") is None


def test_cost_is_per_million_tokens() -> None:
    price = Price(input_per_mtok=2.0, output_per_mtok=8.0, source="test")
    assert cost(price, 1_000_000, 0) == pytest.approx(2.0)
    assert cost(price, 1500, 250) == pytest.approx(0.003 + 0.002)


def test_the_users_price_file_wins_and_adds_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "prices.json"
    table.write_text(
        json.dumps(
            {
                "ollama://llama3.2": {"input_per_mtok": 0.1, "output_per_mtok": 0.2},
                "openai://gpt-4.1-mini": {"input_per_mtok": 9, "output_per_mtok": 9},
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv(prices.PRICES_FILE_VARIABLE, str(table))
    assert price_of("ollama://llama3.2") == Price(0.1, 0.2, str(table))
    mini = price_of("openai://gpt-4.1-mini")
    assert mini is not None and mini.input_per_mtok == 9


def test_a_malformed_price_file_names_the_file_and_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "bad-prices.json"
    table.write_text(json.dumps({"openai://x": {"input_per_mtok": "cheap"}}), encoding="utf-8")
    monkeypatch.setenv(prices.PRICES_FILE_VARIABLE, str(table))
    with pytest.raises(ValueError, match=r"bad-prices\.json: 'openai://x' needs numbers"):
        price_of("openai://x")
