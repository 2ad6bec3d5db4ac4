"""The example service's own code, which its agent calls as Python tools."""
