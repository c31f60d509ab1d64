"""Benchmarks: scripts that print small tables of ratios measured in one run.

Run one with ``python -m benchmarks.<name>`` or all of them with ``python -m benchmarks``.
"""
