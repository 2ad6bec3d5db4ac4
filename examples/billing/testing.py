"""Helpers for the billing test suite."""

from billing.config import Config, load_config


def sample_config(path: str) -> Config | None:
    return load_config(path)
