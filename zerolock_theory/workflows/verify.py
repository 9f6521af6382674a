"""The main job: run the suite of experiments, analyse it, write the report.

The suite (docs/MATH.md names):

* ZeroLock forward (the implemented CE loss), ZeroLock reverse (the paper's objective,
  ε = 0.1) and backprop, each over several seeds, with SGD and η_t = η_0/√(t+1) as in
  Theorem 1, all probes on: the rate fits and the 2×2 minimizer table;
* a learning-rate sweep of ZeroLock forward and reverse: the scaling slope of ρ_t.

Runs go one after another through ``zerolock_theory.workflows.sweep.run_grid``, so an interrupted
verify resumes: complete runs are skipped, a half-written run resumes.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from zerolock_theory.workflows.sweep import GridPoint, run_grid, validate_grid

__all__ = ["FULL", "QUICK", "SuiteSpec", "VerifyResult", "suite_points", "verify"]

MARKER = "verify.json"


@dataclass(frozen=True)
class SuiteSpec:
    """Sizes of the suite; ``QUICK`` and ``FULL`` are the shipped presets."""

    steps: int
    seq_len: int
    batch_size: int
    seeds: tuple[int, ...]
    lr: float  # η_0 of SGD
    lr_factors: tuple[float, ...]  # the sweep: η_0 × factor, seed seeds[0]
    chunks: int = 4
    eval_every: int = 10
    probe_positions: int = 128
    gradient_every: int = 5
    alpha: float = 0.5
    epsilon_reverse: float = 0.1
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)


QUICK = SuiteSpec(steps=40, seq_len=64, batch_size=4, seeds=(0, 1), lr=0.1, lr_factors=(0.25, 4.0),
                  eval_every=10, probe_positions=64, gradient_every=5)
FULL = SuiteSpec(steps=120, seq_len=64, batch_size=8, seeds=(0, 1, 2), lr=0.1,
                 lr_factors=(0.25, 4.0), eval_every=15, probe_positions=128, gradient_every=5)


def base_config(spec: SuiteSpec, model: str, data: str, device: str, dtype: str, autocast: str | None) -> dict[str, Any]:
    """The config every run of the suite starts from (before its own overrides)."""
    n = spec.probe_positions
    probes = {
        "stability": {"n_positions": n},
        "minimizers": {"n_positions": n},
        "gradients": {"n_positions": n, "every": spec.gradient_every},
        "readouts": {"n_positions": n, "every": max(1, spec.steps // 20)},
        # Assumption 5 by step scaling, 8 probed steps a run; 4 factors: 3 extra probe-batch forwards and
        # 8 stability evaluations per probed step (~2.3 s at N = 128 on 2 loaded CPU cores)
        "scaling": {"n_positions": n, "every": max(1, spec.steps // 8), "factors": [1.0, 0.25, 0.0625, 0.015625]},
    }
    for name, options in spec.probes.items():
        probes.setdefault(name, {}).update(options)
    return {
        "model": {"path": model, "chunks": spec.chunks, "device": device, "dtype": dtype, "autocast": autocast},
        "data": {"source": data, "seq_len": spec.seq_len, "batch_size": spec.batch_size},
        "method": {"alpha": spec.alpha},
        "optim": {"name": "sgd", "lr": spec.lr, "schedule": "inv_sqrt"},
        "run": {"steps": spec.steps, "eval_every": spec.eval_every, "checkpoint_every": spec.steps,
                "keep_checkpoints": 1, "progress": False,
                # One intra-op thread on CPU: the embedded model's ops are too small to gain from
                # more, and an OpenMP region stalls ~15 ms per op whenever a core is busy.
                "threads": 1 if device == "cpu" or (device == "auto" and not torch.cuda.is_available()) else None},
        "probes": probes,
    }


def suite_points(spec: SuiteSpec) -> list[GridPoint]:
    """The runs of the suite, named ``{method}-{direction}_lr-{η}_seed-{s}``."""
    variants = {
        "zerolock-forward": (("method.name", "zerolock"), ("method.direction", "forward"), ("method.epsilon", 0.0)),
        "zerolock-reverse": (("method.name", "zerolock"), ("method.direction", "reverse"),
                             ("method.epsilon", spec.epsilon_reverse)),
        "backprop": (("method.name", "backprop"), ("method.direction", "forward"), ("method.epsilon", 0.0)),
    }
    points = []
    for label, overrides in variants.items():
        for seed in spec.seeds:
            points.append(GridPoint(f"{label}_lr-{spec.lr:g}_seed-{seed}",
                                    (*overrides, ("run.seed", seed), ("optim.lr", spec.lr))))
    for label in ("zerolock-forward", "zerolock-reverse"):
        for factor in spec.lr_factors:
            lr = spec.lr * factor
            points.append(GridPoint(f"{label}_lr-{lr:g}_seed-{spec.seeds[0]}",
                                    (*variants[label], ("run.seed", spec.seeds[0]), ("optim.lr", lr))))
    return points


@dataclass
class VerifyResult:
    """Where everything went and what it says."""

    out: Path
    run_dirs: list[Path]
    analysis_dir: Path
    report_html: Path
    report_markdown: Path
    verdicts: list[dict[str, Any]]
    seconds: float


def check_out_dir(out: Path, overwrite: bool) -> None:
    """A fresh or an earlier verify directory is fine; ``overwrite`` replaces only our own runs."""
    from zerolock_theory.training.rundir import check_out, run_kind

    check_out(out, "verify", resume=out.is_dir() and run_kind(out) == "verify", overwrite=overwrite)


def verify(
    spec: SuiteSpec,
    out: Path,
    *,
    model: str = "embedded",
    data: str = "embedded",
    device: str = "auto",
    dtype: str = "float32",
    autocast: str | None = None,
    overwrite: bool = False,
    log=print,
) -> VerifyResult:
    """Run the suite under ``out/runs``, analyse into ``out/analysis``, report into ``out/report``."""
    import shutil

    from analyses.suite import analyze_runs
    from reports.page import write_report

    out = Path(out)
    check_out_dir(out, overwrite)
    started = time.perf_counter()
    base = base_config(spec, model, data, device, dtype, autocast)
    from zerolock_theory.training.rundir import prepare_kind, write_marker

    validate_grid(base, suite_points(spec))  # every config and input checked before the first write
    prepare_kind(out, "verify", overwrite=overwrite)
    write_marker(out, "verify")
    (out / MARKER).write_text(json.dumps({"spec": asdict(spec), "base": base}, indent=2))
    run_dirs = run_grid(base, suite_points(spec), out / "runs", log=log)
    log("analysing ...")
    suite = analyze_runs(run_dirs)
    for stale in ("analysis", "report"):
        shutil.rmtree(out / stale, ignore_errors=True)
    suite.save(out / "analysis")
    files = write_report(suite, out / "report")
    verdicts = [v.to_json() if hasattr(v, "to_json") else asdict(v) for v in suite.claims]
    return VerifyResult(out, run_dirs, out / "analysis", files.html, files.markdown, verdicts,
                        time.perf_counter() - started)
