"""Implementations of the runtime's ports: model providers, host tools and memory backends."""
