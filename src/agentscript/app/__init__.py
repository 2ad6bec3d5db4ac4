"""The application layer: one module per use case, wired from one composition root."""
