"""Probes: instruments attached to the training loop through one protocol."""
