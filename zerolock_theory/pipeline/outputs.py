"""Turn the stages' own files into the run directory's files (``docs/SCHEMA.md``).

* ``metrics.jsonl``: one record per step, the union of the stages' records for that step
  (``chunk/{k}/...`` from stage k), plus ``train/final_ce`` (= ``chunk/K/ce`` for ZeroLock),
  ``train/grad_norm_sq`` (Σ_k), ``train/step_time_s`` (the slowest stage) and
  ``train/tokens_per_s``;
* ``adapters.safetensors``: ω after the last step, every chunk's adapters from its stage's
  final checkpoint;
* ``stages.json``: every stage's report (peak saved bytes, throughput, replay statistics);
* ``recovery.json``: one entry per recovered stage (failure step, restart point, latency).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from safetensors.torch import load_file, save_file

from zerolock_theory.jsonio import dumps, read_records
from zerolock_theory.pipeline.checkpoints import choose_checkpoint, stage_dir
from zerolock_theory.records import CHUNK, FINAL_CE, GRAD_NORM_SQ, STEP_TIME_S, TOKENS, TOKENS_PER_S

__all__ = ["merge_outputs", "read_adapters"]


def _merge_metrics(run_dir: Path, K: int) -> list[dict[str, Any]]:
    by_step: dict[int, dict[str, Any]] = {}
    for k in range(1, K + 1):
        path = stage_dir(run_dir, k) / "metrics.jsonl"
        for record in read_records(path) if path.is_file() else []:
            by_step.setdefault(int(record["step"]), {}).update(record)
    records = []
    for step in sorted(by_step):
        rec = by_step[step]
        if CHUNK.key(K, "ce") in rec:
            rec.setdefault(FINAL_CE, rec[CHUNK.key(K, "ce")])
        grads = [rec.get(CHUNK.key(k, "grad_norm_sq")) for k in range(1, K + 1)]
        if all(isinstance(g, (int, float)) for g in grads):
            rec[GRAD_NORM_SQ] = float(sum(grads))
        times = [rec.get(f"stage/{k}/step_time_s") for k in range(1, K + 1)]
        times = [t for t in times if isinstance(t, (int, float))]
        if times:
            rec[STEP_TIME_S] = max(times)
            rec[TOKENS_PER_S] = rec.get(TOKENS, 0) / max(max(times), 1e-9)
        records.append(rec)
    return records


def read_adapters(run_dir: Path, K: int) -> dict[str, Any]:
    """ω from the newest checkpoint of every stage (name → tensor)."""
    merged: dict[str, Any] = {}
    for k in range(1, K + 1):
        path = choose_checkpoint(run_dir, k, None)
        if path is None:
            raise FileNotFoundError(f"stage {k} left no checkpoint under {stage_dir(run_dir, k)}")
        merged.update(load_file(str(path / "adapters.safetensors")))
    return merged


def merge_outputs(run_dir: Path, K: int) -> dict[str, Any]:
    """Write the run-level files; returns {"results", "recoveries", "final_train_ce"}."""
    run_dir = Path(run_dir)
    records = _merge_metrics(run_dir, K)
    with open(run_dir / "metrics.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(dumps(r) + "\n" for r in records)
    save_file(read_adapters(run_dir, K), str(run_dir / "adapters.safetensors"))
    results = []
    for k in range(1, K + 1):
        path = stage_dir(run_dir, k) / "result.json"
        results.append(json.loads(path.read_text()) if path.is_file() else {"stage": k})
    (run_dir / "stages.json").write_text(json.dumps(results, indent=1))
    recoveries = [r["recovery"] for r in results if r.get("recovery")]
    if recoveries:
        (run_dir / "recovery.json").write_text(json.dumps(recoveries, indent=1))
    final = records[-1].get(FINAL_CE) if records else None
    return {"results": results, "recoveries": recoveries, "final_train_ce": final}
