"""Runs on a durable queue shared by many workers (DBOS): `agentscript worker`, `submit`."""
