"""Memory resource backends for `import memory`."""
