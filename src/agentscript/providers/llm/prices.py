"""What a model call cost, in US dollars, where the model's price is known.

Prices come from `genai-prices` (pydantic's price data, bundled with the package and read
offline: it is never asked to update itself over the network). A model it does not know, a
local model (`ollama://`) or a mock has no price: callers show "unknown", never a guess.
"""

from __future__ import annotations

from agentscript.providers.llm.endpoints import PROTOCOLS

# The genai-prices provider id for each protocol whose models are billed per token.
_PRICED_PROTOCOLS = {"openai": "openai", "anthropic": "anthropic"}


def model_cost(model_uri: str | None, input_tokens: int, output_tokens: int) -> float | None:
    """The price of `input_tokens` in and `output_tokens` out on the model at `model_uri`
    (`openai://gpt-4.1-mini`), or None when the price is unknown."""
    if not model_uri or "://" not in model_uri:
        return None
    protocol, _, rest = model_uri.partition("://")
    provider = _PRICED_PROTOCOLS.get(protocol) if protocol in PROTOCOLS else None
    if provider is None:
        return None
    # A URI may name a host before the model (`openai://host:8000/model`): the model is last.
    model = rest.rstrip("/").rsplit("/", 1)[-1]
    if not model:
        return None
    if (provider, model) in _UNKNOWN:
        return None
    from genai_prices import Usage, calc_price

    try:
        price = calc_price(
            Usage(input_tokens=input_tokens, output_tokens=output_tokens),
            model_ref=model,
            provider_id=provider,
        )
    except LookupError:
        _UNKNOWN.add((provider, model))
        return None
    return float(price.total_price)


# Models already looked up in vain (a lookup scans every model of the provider).
_UNKNOWN: set[tuple[str, str]] = set()
