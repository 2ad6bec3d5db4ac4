"""Learning from runs: the run journal, the task graph built from it, and execution traces.

Every run can append its events to a journal; the graph and the execution trace of a run are
derived from those events and can always be rebuilt from them. Nothing here takes part in a
run's outcome: a journal that cannot be written is reported, never raised into the program.
"""
