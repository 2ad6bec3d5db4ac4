"""The command line's choices whose meaning the original changed after 0.1.0, settled by the
release a program runs as (compat_version) before anything is built.

The command line cannot settle them itself: the release is declared by the run's workspace,
which only the app knows how to find. So it names the choice in `RunConfig.by_release` and
`settle` turns it into ordinary fields:

- `--mock` ("mock"): 0.1.0 mocks only the model; from 0.1.19 on it also mocks the tools, except
  `host://` ones, which still run, and memory.
- no model named in the flag form ("unchosen-model"): 0.1.0 answers with the mock; from 0.1.6
  on the real model answers, as with `agentscript run`.
"""

from __future__ import annotations

from dataclasses import replace

from agentscript.app.compat_version import runs_as_newer
from agentscript.app.composition import workspace_root
from agentscript.app.configuration import RunConfig


def settle(config: RunConfig, program_path: str | None) -> RunConfig:
    """`config` with its `by_release` choice made for the release the program runs as."""
    if config.by_release is None:
        return config
    newer = runs_as_newer(config.compat, workspace_root(config, program_path))
    settled = replace(config, by_release=None)
    if config.by_release == "unchosen-model":
        settled.model = "real" if newer else "mock"
    elif newer:
        settled.mock_memory = True
        settled.mock_tools = config.mock_tools or "except-host"
    return settled
