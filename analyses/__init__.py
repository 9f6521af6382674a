"""Analyses: pure functions from run directories to result objects (docs/MATH.md names)."""
