"""Pipelined ZeroLock across processes equals the sequential trainer; a killed stage recovers.

Each test starts K stage processes on gloo (CPU). Equivalence: same seed and data order →
the final adapters of ``zerolock pipeline`` equal those of ``training.loop.train`` within 1e-6,
and so do the per-step local losses. Recovery: a stage killed mid-step (os._exit) restarts
from its own checkpoint, replays its windows from upstream's replay buffer, and the run ends
with exactly the adapters of the uninterrupted run.
"""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from zerolock_theory.jsonio import read_records
from zerolock_theory.pipeline import PipelineOptions, launch
from zerolock_theory.pipeline.fixtures import small_config
from zerolock_theory.records import CHUNK
from zerolock_theory.training.loop import train
from zerolock_theory.training.state import latest_checkpoint

pytestmark = [pytest.mark.distributed]
STEPS = 6


@pytest.fixture(scope="module")
def make_config(pipeline_inputs):
    """K → a small run config on the embedded model."""
    model, corpus = pipeline_inputs
    return lambda K: small_config(model, K, STEPS, data_source=corpus)


@pytest.fixture(scope="module")
def pipelined(make_config, tmp_path_factory):
    """Uninterrupted pipelined runs, cached by (K, M): {(K, M): run_dir}."""
    cache = {}

    def run(K: int, M: int):
        if (K, M) not in cache:
            out = tmp_path_factory.mktemp(f"pipe_K{K}_M{M}")
            options = PipelineOptions(micro_batches=M, max_lead=1, comm_timeout_s=60)
            launch(make_config(K), options, out, overwrite=True)
            cache[K, M] = out
        return cache[K, M]

    return run


def _assert_same_adapters(a: dict, b: dict, atol: float) -> None:
    assert set(a) == set(b) and a
    worst = max(float((a[n] - b[n]).abs().max()) for n in a)
    assert worst <= atol, f"max |Δω| = {worst}"


@pytest.mark.timeout(150)
@pytest.mark.parametrize(("K", "M"), [(2, 1), (4, 2)], ids=["K2-M1", "K4-M2"])
def test_pipeline_equals_sequential_trainer(make_config, pipelined, tmp_path, K, M) -> None:
    run_dir = pipelined(K, M)
    seq_dir = tmp_path / "sequential"
    train(make_config(K), seq_dir)
    seq = load_file(str(latest_checkpoint(seq_dir) / "adapters.safetensors"))
    pipe = load_file(str(run_dir / "adapters.safetensors"))
    _assert_same_adapters(seq, pipe, atol=1e-6)
    assert max(float(v.abs().max()) for n, v in pipe.items() if "lora_B" in n) > 1e-4  # adapters moved
    seq_rec, pipe_rec = read_records(seq_dir / "metrics.jsonl"), read_records(run_dir / "metrics.jsonl")
    assert [r["step"] for r in pipe_rec] == list(range(STEPS))
    for a, b in zip(seq_rec, pipe_rec, strict=True):
        for k in range(1, K + 1):
            for key in ("loss", "ce", "grad_norm_sq"):
                assert b[CHUNK.key(k, key)] == pytest.approx(a[CHUNK.key(k, key)], rel=1e-5, abs=1e-7)


@pytest.mark.timeout(150)
def test_killed_stage_recovers_to_uninterrupted_adapters(make_config, pipelined, tmp_path, capsys) -> None:
    reference = pipelined(4, 2)
    options = PipelineOptions(micro_batches=2, max_lead=1, comm_timeout_s=60, fail_stage=2, fail_at_step=3)
    summary = launch(make_config(4), options, tmp_path / "ft")
    assert summary.restarts == {1: 0, 2: 1, 3: 0, 4: 0}  # only the killed stage restarted
    [rec] = summary.recoveries
    assert rec["stage"] == 2 and rec["failed_at_step"] == 3
    assert rec["restart_step"] == 2 and rec["replayed_steps"] == 2  # its own window only
    assert 0 < rec["latency_s"] < 60
    with capsys.disabled():
        print(f"\n[recovery] stage 2 killed in step 3: caught up after {rec['latency_s']:.2f}s "
              f"(restart {rec['restart_s']:.2f}s, replay {rec['replay_s']:.2f}s)")
    upstream, killed, downstream = summary.results[0], summary.results[1], summary.results[2]
    assert 4 <= upstream["replayed_messages"] <= 6  # steps 2, 3 (+ step 4 if it ran ahead), M = 2
    assert upstream["replay_peak_steps"] <= upstream["replay_capacity_steps"]
    assert killed["start_step"] == 2 and downstream["start_step"] == 0
    _assert_same_adapters(load_file(str(reference / "adapters.safetensors")),
                          load_file(str(tmp_path / "ft" / "adapters.safetensors")), atol=0.0)
    steps = [r["step"] for r in read_records(tmp_path / "ft" / "metrics.jsonl")]
    assert steps == list(range(STEPS))
    ref = read_records(reference / "metrics.jsonl")
    got = read_records(tmp_path / "ft" / "metrics.jsonl")
    for a, b in zip(ref, got, strict=True):
        assert b["chunk/2/loss"] == a["chunk/2/loss"] and b["chunk/4/loss"] == a["chunk/4/loss"]
    assert torch.isfinite(torch.tensor([r["train/final_ce"] for r in got])).all()
