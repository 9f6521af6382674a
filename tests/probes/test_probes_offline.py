"""Offline recomputation from the readout store equals the online probe values."""

from __future__ import annotations

import pandas as pd

from probes.offline import compare, recompute
from zerolock_theory.app.cli import main
from zerolock_theory.app.workflows.runs import probed_train
from zerolock_theory.config import TrainConfig
from zerolock_theory.jsonio import read_records

N, K, STEPS = 32, 2, 4


def test_recompute_from_the_store_equals_the_online_values(tmp_path, capsys):
    config = TrainConfig.from_dict({
        "model": {"path": "embedded", "chunks": K, "device": "cpu", "lora": {"rank": 4}},
        "data": {"seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "run": {"steps": STEPS, "eval_every": 10, "checkpoint_every": 10, "progress": False},
        "probes": {"n_positions": N, "readouts": {"mode": "full", "dtype": "float32"},
                   "stability": {}, "minimizers": {}},
    })
    run = tmp_path / "run"
    probed_train(config, run)
    online = read_records(run / "metrics.jsonl")
    records = recompute(run)
    assert [r["step"] for r in records] == list(range(STEPS))
    worst = compare(records, online)
    assert any("stability/paper/total/phi" in k for k in worst) and any("minimizer/2/kl_m_p" in k for k in worst)
    assert all(diff == 0.0 for diff in worst.values()), {k: v for k, v in worst.items() if v}
    assert online[1]["probe/stability/implemented/2/phi"] != 0.0
    frame = pd.read_parquet(run / "readouts")  # the store needs nothing of this package
    assert len(frame) == (STEPS + 1) * (K + 1) * N
    capsys.readouterr()
    assert main(["analyze", "--from-store", str(run), "--out", str(tmp_path / "out")]) == 0
    assert "largest relative difference 0" in capsys.readouterr().out
    assert len((tmp_path / "out" / "recomputed.jsonl").read_text().splitlines()) == STEPS


def test_from_store_without_a_store_is_a_one_line_error(tmp_path, capsys):
    assert main(["analyze", "--from-store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no config.json" in err and "Traceback" not in err
