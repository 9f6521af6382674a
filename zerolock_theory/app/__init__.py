"""The roof: the ``zerolock`` command line (``cli``) and the workflows it runs (``workflows``).

Nothing below imports from here (tests/architecture/test_layers.py)."""
