"""Peak memory of pipelined ZeroLock against GPipe and 1F1B, measured (``systems.json``).

For each K and method, ``repeats`` pipelined runs (one process per stage; the same model,
stages, micro-batches, batch, adapters and optimizer) with ``measure_memory``: every stage
reports its memory split (``pipeline/memory.py``: weights, gradients and optimizer state
accounted from tensor sizes, activations measured with saved-tensor hooks, communication
buffers accounted). ``analyses.systems.memory.memory_claim`` reads the file; ``zerolock verify``
runs it (``SuiteSpec.memory_stages``) and ``benchmarks/pipeline_memory.py`` prints it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["METHODS", "MemorySettings", "measure_memory", "memory_backend", "memory_config", "run_one"]

METHODS = ("zerolock", "gpipe", "1f1b")


@dataclass(frozen=True)
class MemorySettings:
    """What the memory runs share."""

    model: str = "embedded"
    data: str = "embedded"
    text_field: str = "text"
    """The corpus's text field or column (as ``data.text_field``)."""
    eval_fraction: float = 0.1
    """Share of blocks held out (as ``data.eval_fraction``)."""
    data_seed: int = 0
    """Seed of the train/held-out split (as ``data.seed``)."""
    stages: tuple[int, ...] = (2, 4)
    micro_batches: int = 8
    batch_size: int = 8
    seq_len: int = 128
    steps: int = 8
    warmup: int = 2
    threads: int = 1
    device: str = "auto"
    """auto (cuda when present, else cpu), cpu, cuda or cuda:N: where every stage runs (as ``model.device``)."""
    dtype: str = "float32"
    """Parameter dtype (as ``model.dtype``)."""
    autocast: str | None = None
    """Autocast dtype, bfloat16 or float16; None = none (as ``model.autocast``)."""
    optim: str = "adamw"
    repeats: int = 3
    lora_rank: int = 8
    """LoRA rank of every stage's adapters (as ``model.lora.rank``; a verify suite passes its runs' value)."""

    def __post_init__(self) -> None:
        if self.repeats < 1 or self.steps <= self.warmup or not self.stages or min(self.stages) < 2:
            raise ValueError("memory runs need repeats >= 1, steps > warmup and stages >= 2")


def memory_config(settings: MemorySettings, method: str, K: int):
    """The ``TrainConfig`` of one method's pipelined runs at K (device and dtypes from ``settings``)."""
    from zerolock_theory.config import TrainConfig

    return TrainConfig.from_dict({
        "model": {"path": settings.model, "chunks": K, "device": settings.device, "dtype": settings.dtype,
                  "autocast": settings.autocast, "lora": {"rank": settings.lora_rank}},
        "data": {"source": settings.data, "text_field": settings.text_field, "seq_len": settings.seq_len,
                 "batch_size": settings.batch_size, "eval_batches": 1, "eval_fraction": settings.eval_fraction,
                 "seed": settings.data_seed},
        "method": {"name": "zerolock" if method == "zerolock" else "backprop"},
        "optim": {"name": settings.optim, "lr": 1e-3 if settings.optim == "adamw" else 0.01},
        "run": {"steps": settings.steps, "checkpoint_every": settings.steps, "eval_every": 10_000, "progress": False},
    })


def memory_backend(device: str, K: int) -> str:
    """The links' backend: NCCL when every one of the K stages has a GPU of its own, else gloo
    (NCCL refuses two ranks on one device; stages that share a GPU talk through host memory)."""
    import torch

    on_cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    return "nccl" if on_cuda and torch.cuda.device_count() >= K else "gloo"


def run_one(settings: MemorySettings, method: str, K: int, out: Path) -> dict:
    """One method at one K, ``repeats`` times; returns its ``systems.json`` entry."""
    from zerolock_theory.pipeline import PipelineOptions, launch

    config = memory_config(settings, method, K)
    options = PipelineOptions(schedule=method, micro_batches=settings.micro_batches, threads=settings.threads,
                              measure_memory=True, warmup_steps=settings.warmup, max_restarts=0,
                              backend=memory_backend(settings.device, K))
    memory, rates = [], []
    for _ in range(settings.repeats):
        summary = launch(config, options, out / "runs" / f"{method}_K{K}", overwrite=True)
        results = sorted(summary.results, key=lambda r: r["stage"])
        memory.append([r["memory"] for r in results])
        rates.append(float(results[-1]["tokens_per_s"]))
    return {
        "peak_saved_bytes": [int(r["peak_saved_bytes"]) for r in results],
        "tokens_per_s": float(sorted(rates)[len(rates) // 2]),
        "tokens_per_s_runs": rates,
        "memory": memory,
        "cuda_max_memory_allocated": [r.get("cuda_max_memory_allocated") for r in results],
        "micro_batches": settings.micro_batches,
        "bytes_sent_per_step": [int(r.get("bytes_sent", 0) / settings.steps) for r in results],
    }


def measure_memory(settings: MemorySettings, out: Path, log=print) -> Path:
    """Every method at every K; writes and returns ``out/systems.json``."""
    out.mkdir(parents=True, exist_ok=True)
    systems: dict = {m: {} for m in METHODS}
    for K in settings.stages:
        for method in METHODS:
            systems[method][str(K)] = run_one(settings, method, K, out)
            log(f"memory: {method} K={K} done")
    systems["setup"] = {**asdict(settings), "stages": list(settings.stages), "threads_per_stage": settings.threads}
    path = out / "systems.json"
    path.write_text(json.dumps(systems, indent=1))
    return path
