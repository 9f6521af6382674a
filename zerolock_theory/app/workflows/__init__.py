"""Workflows: what the CLI runs (a probed training run, sweeps, the verify suite).

This is the top layer with ``zerolock_theory.app.cli``: it may import everything below it
(theory ← models, data, config ← training ← probes, pipeline ← analyses ← reports).
"""
