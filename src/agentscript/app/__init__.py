"""The application layer: configuration, wiring and one module per use case."""
