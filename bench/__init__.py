"""Benchmark suites (pytest-benchmark) of overlap-metrics against its peers.

Not part of the default test run (``testpaths = ["tests"]``); see README.md here.
"""
