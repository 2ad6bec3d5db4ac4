"""Billing settings: the deprecated loader and its replacement."""

from __future__ import annotations

import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path


class ConfigError(Exception):
    """The settings file is missing or invalid."""


@dataclass(frozen=True)
class Config:
    currency: str
    tax_rate: float

    @classmethod
    def from_file(cls, path: str | Path) -> Config:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as problem:
            raise ConfigError(f"cannot load {path}: {problem}") from None
        return cls(data.get("currency", "EUR"), float(data.get("tax_rate", 0)))


def load_config(path: str | Path) -> Config | None:
    """Deprecated: use Config.from_file, which raises ConfigError instead of returning None."""
    warnings.warn("use Config.from_file", DeprecationWarning, stacklevel=2)
    try:
        return Config.from_file(path)
    except ConfigError:
        return None
