"""Puts tests/analyses on sys.path for the family folders below it (``synthetic_runs``)."""
