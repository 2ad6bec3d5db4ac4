"""Token usage reported by model providers, per call and summed per generate and per run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Usage:
    """Tokens a model call consumed, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage | None) -> None:
        if other is not None:
            self.input_tokens += other.input_tokens
            self.output_tokens += other.output_tokens

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def __bool__(self) -> bool:
        return self.total > 0

    def to_json(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    @classmethod
    def from_json(cls, raw: Any) -> Usage | None:
        """The usage `to_json` wrote, or None for anything that is not such an object."""
        if not isinstance(raw, dict):
            return None
        return cls(int(raw.get("input_tokens") or 0), int(raw.get("output_tokens") or 0))
