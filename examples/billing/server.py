"""Start-up of the billing server."""

from billing.config import load_config


def start(path: str) -> str:
    config = load_config(path)
    if config is None:
        return "refusing to start: no configuration"
    return f"serving prices in {config.currency}"
