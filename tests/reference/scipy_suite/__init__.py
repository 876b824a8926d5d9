"""Run scipy's own correlation tests against ``metrics`` (see plugin.py)."""
