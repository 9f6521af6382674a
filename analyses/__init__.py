"""Analyses: pure functions from run directories to result objects (MATH.md names)."""
