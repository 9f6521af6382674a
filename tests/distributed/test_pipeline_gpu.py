"""The pipeline on CUDA (skipped without a CUDA device, tests/conftest.py).

* one GPU: both stages on cuda:0; ZeroLock's links stage h_k through host memory on gloo
  (NCCL refuses two ranks on one device), and the run equals the sequential trainer on CUDA;
* two or more GPUs: ``--backend nccl`` (one GPU per stage) for ZeroLock and for 1F1B, each
  against the sequential trainer with the same method on CUDA.

Each run also reports the memory split and ``torch.cuda.max_memory_allocated`` per stage.
"""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from zerolock_theory.config import TrainConfig
from zerolock_theory.pipeline import PipelineOptions, launch
from zerolock_theory.pipeline.fixtures import small_config
from zerolock_theory.training.loop import train
from zerolock_theory.training.state import latest_checkpoint

pytestmark = [pytest.mark.gpu, pytest.mark.distributed]
STEPS = 4


def _cuda_config(pipeline_inputs, method: str) -> TrainConfig:
    model, corpus = pipeline_inputs
    raw = small_config(model, 2, STEPS, method=method, data_source=corpus).to_dict()
    raw["model"]["device"] = "cuda"
    return TrainConfig.from_dict(raw)


def _check_against_sequential(config: TrainConfig, run_dir, tmp_path, summary) -> None:
    train(config, tmp_path / "sequential")
    seq = load_file(str(latest_checkpoint(tmp_path / "sequential") / "adapters.safetensors"))
    pipe = load_file(str(run_dir / "adapters.safetensors"))
    assert set(seq) == set(pipe) and seq
    assert max(float((seq[n] - pipe[n]).abs().max()) for n in seq) <= 1e-5
    for result in summary.results:
        assert result["cuda_max_memory_allocated"] > 0
        assert result["memory"]["total"] > result["memory"]["activations"] > 0


def _run(config: TrainConfig, schedule: str, backend: str, out):
    options = PipelineOptions(schedule=schedule, micro_batches=2, backend=backend, measure_memory=True,
                              max_restarts=0, comm_timeout_s=60)
    return launch(config, options, out)


@pytest.mark.timeout(300)
def test_zerolock_two_stages_on_one_gpu(pipeline_inputs, tmp_path) -> None:
    config = _cuda_config(pipeline_inputs, "zerolock")
    summary = _run(config, "zerolock", "gloo", tmp_path / "pipe")
    _check_against_sequential(config, tmp_path / "pipe", tmp_path, summary)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("schedule", "method"), [("zerolock", "zerolock"), ("1f1b", "backprop")])
def test_nccl_backend_one_gpu_per_stage(pipeline_inputs, tmp_path, schedule, method) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("NCCL needs one GPU per stage (two ranks on one device are refused)")
    config = _cuda_config(pipeline_inputs, method)
    summary = _run(config, schedule, "nccl", tmp_path / "pipe")
    _check_against_sequential(config, tmp_path / "pipe", tmp_path, summary)
