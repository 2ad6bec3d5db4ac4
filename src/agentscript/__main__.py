"""`python -m agentscript`: the same command line as the `agentscript` script."""

from agentscript.cli.main import main

raise SystemExit(main())
