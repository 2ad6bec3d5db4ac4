"""The application layer: one module (or package) per use case, built on the public API."""
