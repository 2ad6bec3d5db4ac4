"""AgentSpec, the original's JSON blueprint of an agent (0.1.21), and `host://architect`.

A model asked to design an agent fills in an AgentSpec instead of writing source; the validator
names each mistake by its JSON pointer, the compiler lowers a valid spec to AgentScript source
deterministically, and the analyser checks that source (and summarises any program) the way
`agentscript check` does. One module per step:

- `spec.py`: the AgentSpec model (pydantic) and its vocabulary (types, patterns, name rules);
- `diagnostics.py`: a finding at a JSON pointer, as the original words it;
- `shape_check.py`, `reference_check.py`: the validator's two halves; `validate.py` joins them;
- `compile.py`: a valid spec → source; `analyze.py`: source → diagnostics and a summary;
- `build.py`: the `agentscript architect` use cases, and `architect.as`, the program that
  designs a spec from a plain-language request; `tool.py`: the `host://architect` tool.
"""
