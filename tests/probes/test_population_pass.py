"""The proof probe of a population in stacked forwards (``probes.population_pass``).

A population of S = 3 (embedded model, K = 3, LoRA dropout on) with the proof probe every step
and the readout store: no member computes its readouts or its moved chunks alone after
``on_start`` (each step's come from one stacked forward), and every probe value equals the
member's single run's to 1e-6 relative (bit for bit on the CPUs we run), and so does the readout
store."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

import probes.proof as proof_module
import probes.readout_pass as readout_pass
from probes.population_pass import stacked_batch
from probes.readout_pass import ProbeBatch
from probes.registry import build_probes
from tests.training.test_population_loop import METHODS, config
from zerolock_theory.training.hooks import ProbeCache
from zerolock_theory.training.logger import read_records
from zerolock_theory.training.loop import train
from zerolock_theory.training.population_loop import train_population

SEEDS = (0, 1, 2)
STEPS = 6
PROBES = {"n_positions": 16, "epsilon": 0.1, "proof": {"every": 1},
          "readouts": {"every": 1, "mode": "full", "dtype": "float32"}, "stability": {"every": 2}}


def _configs(method: str):
    out = []
    for s in SEEDS:
        c = config(METHODS[method], s, PROBES, steps=STEPS)
        out.append(dataclasses.replace(c, model=dataclasses.replace(c.model, chunks=3)))
    return out


def _spy(monkeypatch, module, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("method", ["forward", pytest.param("reverse", marks=pytest.mark.slow)])
def test_population_proof_probe_runs_stacked_and_equals_single_runs(tmp_path, monkeypatch, method):
    configs = _configs(method)
    outs = [tmp_path / f"member-{s}" for s in SEEDS]
    alone_readouts = _spy(monkeypatch, readout_pass, "_compute_readouts")
    alone_chunks = _spy(monkeypatch, proof_module.ProofProbe, "_chunk_outputs")
    train_population(configs, outs, hooks=[build_probes(c.probes, c.probe_settings) for c in configs])
    assert len(alone_readouts) == len(SEEDS)  # each member's on_start only
    assert alone_chunks == []
    monkeypatch.undo()
    compared = 0
    for c, out, s in zip(configs, outs, SEEDS, strict=True):
        single = tmp_path / f"single-{s}"
        train(c, single, hooks=build_probes(c.probes, c.probe_settings))
        for x, y in zip(read_records(out / "metrics.jsonl"), read_records(single / "metrics.jsonl"), strict=True):
            probe_keys = {k for k in x if k.startswith("probe/")}
            assert probe_keys == {k for k in y if k.startswith("probe/")}
            for key in probe_keys:
                if isinstance(x[key], float):
                    assert math.isclose(x[key], y[key], rel_tol=1e-6, abs_tol=1e-12), (x["step"], key, x[key], y[key])
                    compared += 1
                else:
                    assert x[key] == y[key], key
        stored, alone = pd.read_parquet(out / "readouts"), pd.read_parquet(single / "readouts")
        assert len(stored) == len(alone) > 0  # the store reads the stacked forward's rows of this member
        for column in ("step", "row", "position"):
            assert (stored[column].to_numpy() == alone[column].to_numpy()).all()
        np.testing.assert_allclose(np.stack(stored["log_probs"].to_numpy()), np.stack(alone["log_probs"].to_numpy()),
                                   rtol=1e-6, atol=1e-6)
    assert compared > 500


def _batch(rows: int, seq: int = 8, n: int = 8) -> ProbeBatch:
    labels = torch.full((rows, seq), -100)
    labels.view(-1)[:n] = 1
    return ProbeBatch(torch.zeros(rows, seq, dtype=torch.long), torch.ones(rows, seq, dtype=torch.long), labels, n, 0)


def _ctx(batch: ProbeBatch | None) -> SimpleNamespace:
    return SimpleNamespace(cache=ProbeCache(batch=batch))


def test_stacked_batch_stacks_equal_batches_and_refuses_others():
    a, b = _batch(2), _batch(2)
    stacked = stacked_batch([_ctx(a), _ctx(b)])
    assert stacked is not None and stacked.input_ids.shape == (4, 8)
    assert torch.equal(stacked.mask, torch.cat([a.mask, b.mask]))
    assert stacked_batch([_ctx(a), _ctx(_batch(3))]) is None  # shapes differ: each member alone
    assert stacked_batch([_ctx(a), _ctx(None)]) is None  # a member without its batch yet
    assert stacked_batch([_ctx(a)]) is None  # one member: nothing to share
