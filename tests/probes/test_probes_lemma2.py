"""The ``lemma2`` probe on a short real run: its keys equal the exact readouts recomputed from the store."""

from __future__ import annotations

import json

import pytest
import torch

from probes.readout_probe import ReadoutStore
from probes.registry import build_probes
from zerolock_theory.app.workflows.runs import probed_train
from zerolock_theory.config import TrainConfig
from zerolock_theory.jsonio import read_records
from zerolock_theory.records import INITIAL, LEMMA2, LEMMA2_FIELDS, LEMMA2_NULL_FIELDS
from zerolock_theory.theory.lemma2 import readout_distances

N, K, STEPS, ALPHA = 16, 2, 3, 0.5


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("lemma2") / "run"
    config = TrainConfig.from_dict({
        "model": {"path": "embedded", "chunks": K, "device": "cpu", "lora": {"rank": 4}},
        "data": {"seq_len": 16, "batch_size": 2, "eval_batches": 1},
        "method": {"alpha": ALPHA},
        "run": {"steps": STEPS, "eval_every": 5, "checkpoint_every": 5, "progress": False},
        "probes": {"readouts": {"mode": "full", "dtype": "float32", "n_positions": N},
                   "lemma2": {"n_positions": N, "every": 2}},
    })
    probed_train(config, out)
    return out


def _expected(run, step: int) -> dict[str, float]:
    log_p = torch.from_numpy(ReadoutStore(run / "readouts").log_dense(step).copy()).double()
    labels = torch.tensor(json.loads((run / "probe_batch.json").read_text())["labels"]).reshape(-1)
    labels = labels[labels != -100]
    out = {}
    for k in range(1, K + 1):
        for name, value in readout_distances(log_p[k - 1], log_p[k], labels, ALPHA, 0.1).items():
            out[LEMMA2.key(k, name)] = float(value.mean())
    return out


def test_keys_are_the_exact_full_vocabulary_values(run) -> None:
    records = read_records(run / "metrics.jsonl")
    steps = [r for r in records if "chunk/1/loss" in r]
    first, last = steps[0], steps[-1]
    assert first["probe/lemma2/epsilon"] == 0.1  # method.epsilon = 0: the probe's ε for both targets
    for key, value in _expected(run, 0).items():
        assert first[key.replace(key.rsplit("/", 1)[1], key.rsplit("/", 1)[1] + INITIAL)] == pytest.approx(value, abs=1e-9)
    for key, value in _expected(run, STEPS).items():
        assert last[key] == pytest.approx(value, abs=1e-9)


def test_cadence_initial_and_null_records(run) -> None:
    records = [r for r in read_records(run / "metrics.jsonl") if "chunk/1/loss" in r]
    has = [[LEMMA2.key(1, "tv_m_g") in r, LEMMA2.key(1, "tv_m_g" + INITIAL) in r, LEMMA2.key(1, "null_tv_m") in r]
           for r in records]
    # every = 2: steps 0 and 2 (the last) log; the initial keys only in the first record, the null only in the last
    assert has == [[True, True, False], [False, False, False], [True, False, True]]
    last = records[-1]
    for k in range(1, K + 1):
        assert all(LEMMA2.key(k, f) in last for f in (*LEMMA2_FIELDS, *LEMMA2_NULL_FIELDS))
        assert last[LEMMA2.key(k, "null_temperature")] > 0


def test_bad_options_raise() -> None:
    with pytest.raises(ValueError):
        build_probes({"lemma2": {"every": 0}})
    with pytest.raises(ValueError):
        build_probes({"lemma2": {"epsilon": 0.0}})
