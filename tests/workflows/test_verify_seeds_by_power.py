"""``verify`` with ``seeds_by_power`` end to end at a tiny size (slow): the pilot trains on its own
seeds under ``power_pilot/`` (never among the verdict's runs), the choice goes into ``verify.json``
and the report's scope line, the primary groups run the chosen count, and a re-run keeps the
choice without asking the pilot again.

At 6 steps the rate rows cannot measure their noise (below their shortest horizon), so every row
asks for the cap: the known answer is the cap, 3 here.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from zerolock_theory.app.workflows.suite_spec import QUICK
from zerolock_theory.app.workflows.verify import verify

pytestmark = pytest.mark.slow

TINY = dataclasses.replace(QUICK, steps=6, seeds=(0, 1), lr=0.1, probe_positions=16, scaled_steps=3,
                           readout_records=3, eval_every=6, fixed_point_chunks=(), memory_stages=(), tune=None,
                           seeds_by_power=True, max_seeds=3, power_pilot_seeds=2)


def test_seeds_by_power_end_to_end(tmp_path):
    out = tmp_path / "verify"
    log: list[str] = []
    result = verify(TINY, out, device="cpu", jobs=1, log=log.append)
    saved = json.loads((out / "verify.json").read_text())
    choice = saved["seeds_by_power"]
    assert choice["chosen"] == 3 and choice["seeds"] == [0, 1, 2] and choice["max_seeds"] == 3
    assert choice["pilot"] == [1000, 1001] and all(r["noise"] is None and r["needed"] is None for r in choice["rows"])
    assert saved["spec"]["seeds"] == [0, 1]  # the suite as given: a resume compares against it
    pilot = sorted(p.name for p in (out / "power_pilot").iterdir() if (p / "metrics.jsonl").is_file())
    assert len(pilot) == 4 and all(n.endswith(("seed-1000", "seed-1001")) for n in pilot)
    runs = sorted(p.name for p in (out / "runs").iterdir() if (p / "metrics.jsonl").is_file())
    assert len(runs) == 9 and not any("seed-100" in n for n in runs)
    assert "3 seeds (capped), chosen by a pilot for 80% power" in result.scope
    assert "R: noise not measured" in result.scope
    assert "3 seeds (capped), chosen by a pilot for 80% power" in (out / "report" / "report.md").read_text()
    again: list[str] = []
    verify(TINY, out, device="cpu", jobs=1, log=again.append)
    assert any(x.startswith("seeds by power (chosen before): 3 seeds") for x in again)
    assert not any("a pilot of 2 seeds per rate row" in x for x in again)
