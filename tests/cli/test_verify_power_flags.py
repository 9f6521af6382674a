"""``zerolock verify``'s --seeds-by-power, --max-seeds and --no-population on the command line:
bad input gets one line and exit 2 before anything is written; the resume command keeps the flags."""

from __future__ import annotations

import argparse

import pytest

from zerolock_theory.app.cli import main
from zerolock_theory.app.cli.verify import resume_command


@pytest.mark.parametrize(("args", "line"), [
    (["--seeds-by-power", "--max-seeds", "0"], "--max-seeds 0: must be >= 3 (a verdict needs 3 seeds)"),
    (["--seeds-by-power", "--max-seeds", "2"], "--max-seeds 2: must be >= 3 (a verdict needs 3 seeds)"),
    (["--seeds-by-power", "--set", "suite.max_seeds=1"], "suite.max_seeds=1: must be >= 3"),
    (["--seeds-by-power", "--set", "suite.power_pilot_seeds=1"], "suite.power_pilot_seeds=1: must be >= 2"),
    (["--seeds-by-power", "--set", "suite.seeds=[990]"], "would reach the power pilot's seeds (1000 and up)"),
])
def test_bad_power_settings_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, args, line):
    out = tmp_path / "verify"
    assert main(["verify", "--quick", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and line in err
    assert not out.exists()


def test_sensitivity_suite_refuses_seeds_by_power(tmp_path, capsys):
    out = tmp_path / "verify"
    assert main(["verify", "--config", "verify_sensitivity", "--seeds-by-power", "--out", str(out)]) == 2
    assert "the sensitivity suite (suite.variants) runs its settings at fixed seeds" in capsys.readouterr().err
    assert not out.exists()


def test_resume_command_keeps_power_and_population_flags():
    args = argparse.Namespace(quick=True, config=None, out="runs/v", model=None, data=None, text_field=None,
                              device=None, steps=None, seeds=None, chunks=None, jobs=None, lr=None, max_seeds=12,
                              seeds_by_power=True, population=False, overrides=[])
    command = resume_command(args)
    assert "--max-seeds 12" in command and "--seeds-by-power" in command and "--no-population" in command
