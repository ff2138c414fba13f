"""Judges: pure functions from parsed facts and the cluster definition to findings.

The tests in tests/ gather (run commands on nodes, parse the output) and report; the judging
lives here so it can be tested on captured outputs without a machine.
"""
