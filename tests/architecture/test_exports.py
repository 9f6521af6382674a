"""The package root re-exports the theory layer lazily: the same names, and no torch on import."""

from __future__ import annotations

import subprocess
import sys


def test_root_exports_are_the_theory_layer():
    import zerolock_theory
    import zerolock_theory.theory as theory

    assert zerolock_theory.__all__ == sorted(theory.__all__)
    assert all(getattr(zerolock_theory, name) is getattr(theory, name) for name in theory.__all__)


def test_importing_the_root_imports_no_torch():
    code = "import sys, zerolock_theory; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
