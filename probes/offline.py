"""Recompute the minimizer and stability metrics of a run offline, from its readout store.

``recompute(run_dir)`` reads ``config.json``, ``probe_batch.json`` and ``readouts/`` and, for
every pair of consecutive stored steps (t, t+1), evaluates the same functions the online
probes ran (``probes.kernels.cached_sums`` → ``probes.stability.kernel_metrics``):
the minimizer keys at ω^{t+1} and the stability keys of the step t → t+1, as the record of
step t. With a full float32 store (``[probes.readouts] mode = "full", dtype = "float32"``)
the inputs are the online log-readouts exactly, so the numbers equal the online ones (for a
run whose kernels ran compiled, ``probes.compile`` in its config, they differ by float32
rounding, about 1e-7 relative); a top-k store spreads each tail evenly, an
approximation (the comparison shows by how much).

``compare(recomputed, online)`` gives, per key, the largest relative difference.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch

from probes.kernels import cached_sums, supported
from probes.readout_pass import BATCH_FILE, smoothing_for_g
from probes.readout_probe import STORE_DIR
from probes.stability import kernel_metrics
from zerolock_theory.config import TrainConfig, one_alpha
from zerolock_theory.readout_store import ReadoutStore
from zerolock_theory.training.hooks import ProbeCache

__all__ = ["compare", "recompute"]


def _labels(run_dir: Path) -> torch.Tensor:
    batch = json.loads((run_dir / BATCH_FILE).read_text(encoding="utf-8"))
    labels = torch.tensor(batch["labels"]).reshape(-1)
    return labels[labels != -100]


def recompute(run_dir: str | Path) -> list[dict[str, Any]]:
    """One record per stored step t with t+1 also stored: ``step`` and the probe keys."""
    run_dir = Path(run_dir)
    for needed in ("config.json", BATCH_FILE, STORE_DIR):
        if not (run_dir / needed).exists():
            raise ValueError(f"{run_dir}: no {needed} (a run with the readouts probe is needed)")
    config = TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text(encoding="utf-8")))
    method = config.method
    eps_g = smoothing_for_g(method.epsilon, config.probe_settings.epsilon)
    alpha = one_alpha(method, "the offline stability measurement")
    if not supported(alpha, eps_g):
        raise ValueError(f"{run_dir}: alpha = {alpha}, epsilon = {eps_g}: outside the kernels' range")
    store = ReadoutStore(run_dir / STORE_DIR)
    labels = _labels(run_dir)
    cache = ProbeCache()
    out = []
    steps = set(store.steps)
    for t in store.steps:
        if t + 1 not in steps:
            continue
        before = torch.from_numpy(store.log_dense(t).copy())
        after = torch.from_numpy(store.log_dense(t + 1).copy())
        sums = cached_sums(cache, t, before, after, labels, alpha, eps_g, method.epsilon)
        out.append({"step": t, **kernel_metrics(sums, alpha, stability=True, direction=method.direction)})
    return out


def compare(recomputed: list[dict[str, Any]], online: list[dict[str, Any]]) -> dict[str, float]:
    """Largest relative difference per key over the steps both hold (0.0: identical)."""
    by_step = {r.get("step"): r for r in online}
    worst: dict[str, float] = {}
    for record in recomputed:
        logged = by_step.get(record["step"])
        if logged is None:
            continue
        for key, value in record.items():
            if key == "step" or key not in logged or not isinstance(value, float):
                continue
            other = logged[key]
            if not isinstance(other, (int, float)) or not (math.isfinite(value) and math.isfinite(other)):
                continue
            diff = abs(value - other) / max(abs(other), 1e-300) if value != other else 0.0
            worst[key] = max(worst.get(key, 0.0), diff)
    return worst
