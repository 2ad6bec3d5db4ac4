"""Token prices: what a model call cost, where the price of the model is known.

Prices come from `genai-prices` (a maintained table of the common providers' list prices that
ships with its data, so a lookup works offline), read at its base tier: long-context surcharges
are not applied. A model the table does not know (a local Ollama model, a private deployment)
has no price unless the user names one in the JSON file `AGENTSCRIPT_PRICES` points to:

    {"openai://my-finetune": {"input_per_mtok": 0.8, "output_per_mtok": 3.2}}

keyed by model URI, in US dollars per million tokens; an entry there wins over the table.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

PRICES_FILE_VARIABLE = "AGENTSCRIPT_PRICES"
# Which genai-prices provider a model URI's scheme names.
_PROVIDERS = {"openai": "openai", "anthropic": "anthropic"}
_FIELDS = ("input_per_mtok", "output_per_mtok")


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million input and output tokens, and where the figure came from."""

    input_per_mtok: float
    output_per_mtok: float
    source: str


def price_of(model_uri: str) -> Price | None:
    """The price of the model a URI names (`openai://gpt-4.1-mini`), or None if unknown."""
    user = _user_prices(os.environ.get(PRICES_FILE_VARIABLE, ""))
    if model_uri in user:
        return user[model_uri]
    scheme, _, rest = model_uri.partition("://")
    provider = _PROVIDERS.get(scheme)
    model = rest.split("?", 1)[0].strip("/")
    if provider is None or not model:
        return None
    return _table_price(provider, model)


def cost(price: Price, input_tokens: int, output_tokens: int) -> float:
    """What `input_tokens` in and `output_tokens` out cost at `price`, in US dollars."""
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6


def model_cost(model_uri: str | None, input_tokens: int, output_tokens: int) -> float | None:
    """`price_of` and `cost` in one call: None when the model's price is unknown (callers show
    "unknown", never a guess)."""
    price = price_of(model_uri) if model_uri else None
    return cost(price, input_tokens, output_tokens) if price is not None else None


@cache
def _table_price(provider: str, model: str) -> Price | None:
    from genai_prices import Usage, calc_price  # 0.2 s to import: only when a price is asked

    try:
        found = calc_price(Usage(input_tokens=1, output_tokens=1), model, provider_id=provider)
    except LookupError:
        return None
    model_price = found.model_price
    return Price(
        _base(model_price.input_mtok),
        _base(model_price.output_mtok),
        f"genai-prices ({found.provider.id}/{found.model.id})",
    )


def _base(value: Any) -> float:
    """A flat price, or the base tier of a tiered one; an absent price is free."""
    if value is None:
        return 0.0
    base = getattr(value, "base", value)
    return float(base) if isinstance(base, Decimal | int | float) else 0.0


@cache
def _user_prices(path: str) -> dict[str, Price]:
    """The user's price file (cached per path); a missing or malformed file is an error that
    names the file, since a silently wrong cost is worse than none."""
    if not path:
        return {}
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as problem:
        raise ValueError(f"{PRICES_FILE_VARIABLE}={path}: cannot read prices: {problem}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{PRICES_FILE_VARIABLE}={path}: expected an object keyed by model URI")
    prices: dict[str, Price] = {}
    for uri, entry in raw.items():
        if not isinstance(entry, dict) or not all(_is_number(entry.get(key)) for key in _FIELDS):
            raise ValueError(
                f"{PRICES_FILE_VARIABLE}={path}: '{uri}' needs numbers {' and '.join(_FIELDS)}"
            )
        prices[uri] = Price(float(entry[_FIELDS[0]]), float(entry[_FIELDS[1]]), path)
    return prices


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
