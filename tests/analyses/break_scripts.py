"""The hostile referees' break scripts (``scripts/break_*.py``) as the tests read them: each script loaded as
a module, and its constructions as test parameters, those that break marked ``xfail(strict=True)``."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` run as a module; registered as ``name`` in ``sys.modules`` unless a module of that
    name is there already (a second attack that loaded its first keeps that one)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def break_param(value: Any, name: str, breaks: Mapping[str, str], slow: bool = False) -> Any:
    """``value`` as the parameter named ``name``: ``xfail(strict=True)`` with the reason in ``breaks`` when it
    names a break, and marked slow when ``slow``."""
    marks = [pytest.mark.xfail(strict=True, reason=breaks[name])] if name in breaks else []
    if slow:
        marks.append(pytest.mark.slow)
    return pytest.param(value, id=name, marks=marks)


def assert_agrees(harness: ModuleType, con: Any, groups: int) -> None:
    """The rule agrees with ``con`` over ``groups`` seeded groups, by ``harness.judge`` (the scripts whose judge
    gives the outcome counts, the share outside the accepted outcomes and whether the rule agrees)."""
    got, bad, agrees = harness.judge(con, groups)
    assert agrees, f"{con.name}: truth {con.truth}, got {dict(got)} ({bad:.0%} outside {sorted(con.ok)})"
