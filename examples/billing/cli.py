"""The `billing` command."""

from billing.config import load_config


def main(argv: list[str]) -> int:
    config = load_config(argv[1] if len(argv) > 1 else "billing.toml")
    print(f"Prices in {config.currency}, tax {config.tax_rate:.0%}")
    return 0
