"""Calibrate the schedule model, validate it against the CPU pipeline, predict ZeroLock ÷ 1F1B.

``validate``: for each K in --stages and m in --micro-batches, time the per-stage costs with
the pipeline's own code (``pipeline/calibrate.py``), predict the steady-state step time of
ZeroLock, GPipe and 1F1B (1F1B only where m ≥ K, PyTorch's rule) with the schedule model on
--cores shared cores (processor sharing), then run the real pipeline on gloo and compare with
the last stage's mean step time over the steps after --warmup (the final step, which writes
the checkpoint, left out). Writes ``schedule_validation.json``.

``predict``: calibrate once on --model (K = 2, one micro-batch of --tokens), then predict the
ratio, bubble and work factors for every shape in ``schedule_costs.SHAPES``, K ≤ 32 and
m ≤ 64, one device per stage. Writes ``schedule_prediction.json``.

    python3 benchmarks/schedule_calibrate.py validate --out runs/schedule
    python3 benchmarks/schedule_calibrate.py predict --out runs/schedule --model DIR

The result file records its setup without paths (--out left out, --model and --data by name) and
its provenance: the machine (processor, logical CPUs, system, Python and torch versions; no host
name), the date (UTC) and the command that reproduces it, with DIR for the output folder.

Bad arguments: one line on stderr, exit status 2, nothing written.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

try:
    import zerolock_theory  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without ``pip install -e .``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PREDICT_K = (2, 3, 4, 5, 8, 16, 24, 32)
PREDICT_M = (1, 2, 4, 8, 16, 32, 64)


class BadInput(ValueError):
    """An argument that cannot run."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=("validate", "predict"))
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--model", default="embedded", help="'embedded' or a local model directory")
    p.add_argument("--data", default="embedded")
    p.add_argument("--stages", type=int, nargs="+", default=[2, 4])
    p.add_argument("--micro-batches", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--steps", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--cores", type=int, default=2, help="CPU cores the stage processes share")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per cost (median)")
    p.add_argument("--tokens", type=int, default=512, help="predict: tokens per micro-batch")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier result in --out")
    return p.parse_args(argv)


def check(args: argparse.Namespace) -> Path:
    """Every argument that cannot run, before anything is written; returns the result file."""
    if any(K < 2 for K in args.stages):
        raise BadInput(f"--stages must be >= 2, got {args.stages}")
    if any(m < 1 or args.batch_size % m for m in args.micro_batches):
        raise BadInput(f"--micro-batches {args.micro_batches} must be >= 1 and divide --batch-size {args.batch_size}")
    if args.warmup < 1 or args.steps < args.warmup + 2:
        raise BadInput(f"need --warmup >= 1 and --steps >= warmup + 2, got {args.steps}, {args.warmup}")
    if min(args.cores, args.repeats, args.seq_len, args.tokens) < 1:
        raise BadInput("--cores, --repeats, --seq-len and --tokens must be >= 1")
    if args.model != "embedded" and not Path(args.model).is_dir():
        raise BadInput(f"--model {args.model}: no such model directory")
    if args.out.exists() and not args.out.is_dir():
        raise BadInput(f"--out {args.out} is a file")
    target = args.out / f"schedule_{'validation' if args.mode == 'validate' else 'prediction'}.json"
    if target.exists() and not args.overwrite:
        raise BadInput(f"{target} exists (pass --overwrite to replace it)")
    return target


def config(args: argparse.Namespace, K: int, method: str):
    from zerolock_theory.config import TrainConfig

    return TrainConfig.from_dict({
        "model": {"path": args.model, "chunks": K, "device": "cpu"},
        "data": {"source": args.data, "seq_len": args.seq_len, "batch_size": args.batch_size, "eval_batches": 1},
        "method": {"name": method}, "optim": {"name": "adamw", "lr": 1e-4},
        "run": {"steps": args.steps, "checkpoint_every": args.steps, "eval_every": 10_000, "progress": False},
    })


def measured(args: argparse.Namespace, K: int, m: int, schedule: str) -> dict:
    """A real pipelined run: the last stage's median step time over steps warmup .. steps−2,
    the largest per-stage median CPU seconds per step, and the load average after the run."""
    from zerolock_theory.pipeline import PipelineOptions, launch

    method = "zerolock" if schedule == "zerolock" else "backprop"
    options = PipelineOptions(schedule=schedule, micro_batches=m, warmup_steps=args.warmup, max_restarts=0)
    summary = launch(config(args, K, method), options, args.out / "runs" / f"{schedule}_K{K}_m{m}", overwrite=True)
    load = os.getloadavg()[0]
    results = sorted(summary.results, key=lambda r: r["stage"])
    window = slice(args.warmup, -1)
    return {"period_s": statistics.median(results[-1]["step_times"][window]),
            "cpu_s": max(statistics.median(r["step_cpu_times"][window]) for r in results), "load_average": load}


def predicted(args: argparse.Namespace, K: int, m: int, schedule: str, costs, background: float) -> dict:
    """The model's steady-state step time on --cores shared cores with ``background`` other jobs,
    on an idle machine, and the largest per-stage work per step."""
    from zerolock_theory.pipeline.schedule_model import simulate

    def period(b: float) -> float:
        ends = simulate(schedule, K, m, costs, steps=args.steps, devices=args.cores, background=b).step_end[-1]
        return (ends[-2] - ends[args.warmup - 1]) / (args.steps - 1 - args.warmup)

    tl = simulate(schedule, K, m, costs, steps=1)
    return {"period_s": period(background), "period_idle_s": period(0.0), "cpu_s": max(tl.busy)}


def validate(args: argparse.Namespace) -> dict:
    from zerolock_theory.pipeline.calibrate import measure_costs

    rows, calibrations = [], {}
    for K in args.stages:
        for m in args.micro_batches:
            cal = measure_costs(config(args, K, "zerolock"), m, args.repeats)
            calibrations[f"K{K}_m{m}"] = cal.to_dict()
            for schedule in ("zerolock", "gpipe", "1f1b"):
                if schedule == "1f1b" and m < K:
                    continue
                costs = cal.zerolock if schedule == "zerolock" else cal.baseline
                meas = measured(args, K, m, schedule)
                background = max(0.0, meas["load_average"] - K)
                pred = predicted(args, K, m, schedule, costs, background)
                row = {"schedule": schedule, "K": K, "m": m, "background": background,
                       **{f"predicted_{k}": v for k, v in pred.items()}, **{f"measured_{k}": v for k, v in meas.items()},
                       "error": pred["period_s"] / meas["period_s"] - 1, "cpu_error": pred["cpu_s"] / meas["cpu_s"] - 1}
                rows.append(row)
                print(f"{schedule:<9} K={K} m={m}: step predicted {pred['period_s'] * 1e3:7.1f} ms  measured "
                      f"{meas['period_s'] * 1e3:7.1f} ms  error {row['error']:+.1%} | CPU/step predicted "
                      f"{pred['cpu_s'] * 1e3:6.1f} ms measured {meas['cpu_s'] * 1e3:6.1f} ms error {row['cpu_error']:+.1%}"
                      f" | idle-machine prediction {pred['period_idle_s'] * 1e3:6.1f} ms, load {meas['load_average']:.1f}",
                      flush=True)
    return {"validation": rows, "calibrations": calibrations}


def predict(args: argparse.Namespace) -> dict:
    from zerolock_theory.pipeline.calibrate import measure_costs
    from zerolock_theory.pipeline.schedule_costs import SHAPES
    from zerolock_theory.pipeline.schedule_predict import predict_grid

    args.batch_size, args.seq_len = max(1, args.tokens // args.seq_len), args.seq_len
    cal = measure_costs(config(args, 2, "zerolock"), 1, args.repeats, link=False)
    out = {"calibration": cal.to_dict(), "tokens": args.tokens, "variants": {}}
    flat = dict.fromkeys(cal.flop_rates, 1e12)
    variants = {"measured_rates": (cal.flop_rates, cal.loss_s_per_element),
                "flops_only": (flat, {"zerolock": 0.0, "baseline": 0.0})}
    for name, (rates, loss) in variants.items():
        rows = predict_grid(SHAPES.values(), PREDICT_K, PREDICT_M, rates, loss, args.tokens, args.seq_len)
        out["variants"][name] = [asdict(r) for r in rows]
        print(f"\n{name}: ZeroLock ÷ 1F1B throughput (bubble × work), m = K and m = 64")
        for r in rows:
            if r.micro_batches in (r.chunks, 64) or (r.chunks > 64 and r.micro_batches == 64):
                print(f"  {r.model:<13} K={r.chunks:<2} m={r.micro_batches:<2}  {r.ratio:6.3f} = "
                      f"{r.bubble:6.3f} × {r.work:5.3f}   readout share {r.readout_share:5.1%}")
    return out


def _name(source: str) -> str:
    """A model or data source by name: "embedded" as it is, a directory by its last component."""
    return source if source == "embedded" else Path(source).name


def recorded_setup(args: argparse.Namespace) -> dict:
    """The arguments as the result file records them: no paths (--out left out, sources by name)."""
    setup = {k: v for k, v in vars(args).items() if k != "out"}
    setup["model"], setup["data"] = _name(str(args.model)), _name(str(args.data))
    return setup


def command(setup: dict) -> str:
    """The command line that reproduces ``setup``, with DIR for the output folder."""
    flags = []
    for key, value in setup.items():
        if key in ("mode", "overwrite"):
            continue
        shown = " ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        flags.append(f"--{key.replace('_', '-')} {shown}")
    return " ".join(["python3 benchmarks/schedule_calibrate.py", setup["mode"], "--out DIR", *flags])


def machine() -> str:
    """The processor, logical CPUs, system, Python and torch versions (no host name, no path)."""
    import torch

    cpu = platform.processor() or platform.machine()
    info = Path("/proc/cpuinfo")
    if info.is_file():
        names = [line.split(":", 1)[1].strip() for line in info.read_text().splitlines() if line.startswith("model name")]
        cpu = names[0] if names else cpu
    return (f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.machine()}, "
            f"Python {platform.python_version()}, torch {torch.__version__}")


def provenance(args: argparse.Namespace) -> dict:
    """Where, when and how the result was measured: machine, date (UTC) and command."""
    return {"machine": machine(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "command": command(recorded_setup(args))}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        target = check(args)
        args.out.mkdir(parents=True, exist_ok=True)
        result = validate(args) if args.mode == "validate" else predict(args)
    except (BadInput, ValueError, FileNotFoundError) as exc:
        print(f"schedule_calibrate: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    record = {**result, "setup": recorded_setup(args), "provenance": provenance(args)}
    target.write_text(json.dumps(record, indent=1))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
