"""Evals: run a program over a dataset of cases, in every configuration (model × variant),
score each answer with a metric, and summarise with paired bootstrap intervals.

`agentscript.evaluate` and `agentscript eval` are clients of `runner.evaluate`.
"""
