"""The prepared GPU run (not a test): four parts, each with a time budget, each table written as it ends.

One command for a GPU machine lent for minutes: it runs the parts below one after the other,
each in its own process with its own time budget (``--budget PART=SECONDS``; the defaults sum
to ``TOTAL`` = 540 s, and no part runs past the total). Each part writes its table to
``--out DIR/PART.txt`` row by row as it measures, its log to ``DIR/PART.log``; a part that
fails, or runs out of its budget (its process group is killed), is reported in its table and
in ``DIR/summary.txt``, and the next part starts. Parts:

* ``tests``: the ``gpu``-marked tests (``tests/distributed/test_pipeline_gpu.py``), one row per test;
* ``population``: the population step (``training.population``) against S separate steps on
  SmolLM2 at the GPU suite's K and batch, S = 1, 4, 16, 32 (``benchmarks/population.py``'s
  ``_steps``, timed on the device); "not available" in a checkout without the population trainer;
* ``scaling``: the step-scaling probe on SmolLM2 (``benchmarks/scaling_cost.py``): time of the
  training step and of the probe with and without its random baseline, and the kernel launches
  of a scaled step;
* ``suite``: ``zerolock verify`` of the GPU suite ``verify_smollm2`` at ``--steps`` (300) steps
  and ``--seeds`` (16) seeds per group (``gpu_check_smollm2.suite`` with ``LONG``), its verdict
  table and report copied into the out folder; a suite cut off by its budget reports the runs it
  completed.

``--dry-run`` runs the same parts on the CPU with the embedded model at a tiny size (seconds
per part; the ``gpu`` tests are skipped there: "skipped: needs CUDA"). ``--fail PART`` makes a
part raise at its start (the check that the next part still runs); ``--parts`` picks parts::

    python3 benchmarks/gpu_run.py --out gpu-run                    # on a GPU machine
    python3 benchmarks/gpu_run.py --out /tmp/dry --dry-run         # on a CPU (tests/benchmarks runs it)
    python3 benchmarks/gpu_run.py --out gpu-run --parts scaling suite --budget suite=420
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PARTS = ("tests", "population", "scaling", "suite")
BUDGET = {"tests": 90, "population": 90, "scaling": 60, "suite": 300}
"""Seconds per part by default (``--budget PART=SECONDS`` to change one)."""
TOTAL = 540
"""Seconds for the whole run by default: no part runs past it."""
SIZES = (1, 4, 16, 32)
"""Population sizes S of the ``population`` part."""
STATUS = "status:"
"""The first word of a table's last line: ok, skipped: ..., not available: ..., FAILED ..., TIMED OUT ..."""
WIDTH = 40


def long_horizon(steps: int, seeds: int) -> list[str]:
    """The ``suite`` part's overrides of ``verify_smollm2``: ``steps`` steps, ``seeds`` seeds per
    primary group, the pilot on a 2-value grid, Lemma 2's fixed point on chunk 1 only and no
    memory runs (the other parts and ``benchmarks/gpu_check.py`` measure the step's cost)."""
    return [f"suite.steps={steps}", f"suite.seeds={list(range(seeds))}", "suite.matched_seeds=0",
            "suite.pilot_steps=20", "suite.lr_grid=[0.05, 0.0125]", f"suite.eval_every={max(1, steps // 3)}",
            "suite.scaled_steps=30", "suite.proof_every=1", "suite.gradient_every=25", "suite.stability_every=50",
            "suite.minimizer_every=50", "suite.readout_records=10", "suite.fixed_point_chunks=[1]",
            "suite.fixed_point_steps=100", "suite.memory_stages=[]",
            f"suite.name=\"verify_smollm2 at {steps} steps, {seeds} seeds (gpu_run)\""]


DRY_HORIZON = ["suite.steps=4", "suite.seeds=[0, 1]", "suite.matched_seeds=0", "suite.lr=0.025", "suite.chunks=4",
               "suite.scaled_steps=2", "suite.proof_every=0", "suite.global_every=0", "suite.fixed_point_chunks=[]",
               "suite.memory_stages=[]", "suite.eval_every=2", "suite.gradient_every=2", "suite.stability_every=2",
               "suite.minimizer_every=2", "suite.readout_records=2", "suite.probe_positions=8", "suite.seq_len=8",
               "suite.batch_size=2", "suite.smoke=true", "suite.name=\"gpu_run --dry-run suite\""]
"""``--dry-run``: the suite's code on the embedded model in seconds."""


class Table:
    """A part's table file: a title, then one row per measurement written at once (a part cut off
    keeps its rows), then its status line."""

    def __init__(self, path: Path, title: str) -> None:
        self.path = path
        path.write_text(title + "\n", encoding="utf-8")

    def row(self, key: str, value: object) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(f"{key:<{WIDTH}}  {value}\n")
        print(f"{key:<{WIDTH}}  {value}", flush=True)

    def status(self, text: str) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(f"{STATUS} {text}\n")


def _device(args: argparse.Namespace) -> str | None:
    """cpu with ``--dry-run``; cuda when present; None (the part is skipped) without one."""
    import torch

    if args.dry_run:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else None


# ---- the parts: each writes its rows and returns its status ("ok", "skipped: ...", "not available: ...")


def part_tests(args: argparse.Namespace, table: Table) -> str:
    """The ``gpu``-marked tests, one row per test (``pytest -rA``)."""
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-rA", "-p", "no:randomly", "-p", "no:cacheprovider",
           "-n", "0", "tests/distributed/test_pipeline_gpu.py"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    print(done.stdout + done.stderr, file=sys.stderr)
    outcomes = []
    for line in done.stdout.splitlines():
        m = re.match(r"(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.*)", line)
        if m:
            outcomes.append(m.group(1))
            table.row(m.group(1), m.group(2)[:200])
    if done.returncode not in (0, 5) or any(o in ("FAILED", "ERROR") for o in outcomes):
        raise RuntimeError(f"pytest exit status {done.returncode}: {done.stdout.strip().splitlines()[-1:]}")
    if outcomes and all(o == "SKIPPED" for o in outcomes):
        return "skipped: needs CUDA" if "CUDA" in done.stdout else "skipped"
    return "ok" if outcomes else "skipped: no gpu tests collected"


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def part_population(args: argparse.Namespace, table: Table) -> str:
    """The population step against S separate steps (``benchmarks/population.py``'s ``_steps``), timed
    on the device, interleaved, median of ``repeats`` after ``warmup``."""
    try:
        import population  # benchmarks/population.py, beside this script

        import zerolock_theory.training.population  # noqa: F401
    except ImportError:
        return "not available: population trainer not available in this checkout"
    import statistics

    import torch

    from zerolock_theory.models import load_model, resolve_model_path

    device = _device(args)
    if device is None:
        return "skipped: needs CUDA"
    name, chunks, rows, length = ("embedded", 4, 2, 16) if args.dry_run else ("smollm2-135m", 5, 8, 32)
    sizes, repeats, warmup = ((1, 2), 1, 1) if args.dry_run else (tuple(args.sizes), 5, 2)
    method = population.METHODS["zerolock-forward"]
    model, _ = load_model(str(resolve_model_path(name)), "float32", device)
    table.row("model", f"{name}, K = {chunks}, batch {rows} x {length}, zerolock-forward, fp32, {device}")
    table.row("columns", "run step ms | population step ms | separate seed-steps/s | population seed-steps/s | ratio")
    for size in sizes:
        single, pop = population._steps(model, method, chunks, size, warmup + repeats + 1)  # noqa: SLF001
        g = torch.Generator().manual_seed(0)
        times: dict[str, list[float]] = {"single": [], "population": []}
        for t in range(warmup + repeats):
            batches = [{k: v.to(device) for k, v in population._batch(g, model.config.vocab_size, rows,  # noqa: SLF001
                                                                      length).items()} for _ in range(size)]
            _sync(device)
            tic = time.perf_counter()
            single.train_step(batches[0], t + 1)
            _sync(device)
            mid = time.perf_counter()
            pop.train_step(batches, t + 1)
            _sync(device)
            if t >= warmup:
                times["single"].append(mid - tic)
                times["population"].append(time.perf_counter() - mid)
        one, together = statistics.median(times["single"]), statistics.median(times["population"])
        table.row(f"S = {size}", f"{1e3 * one:.1f} | {1e3 * together:.1f} | {1 / one:.2f} | {size / together:.2f} | "
                                 f"{one * size / together:.2f}")
        del single, pop
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return "ok"


def part_scaling(args: argparse.Namespace, table: Table) -> str:
    """``benchmarks/scaling_cost.py``'s measurement on the device: medians and kernel launches."""
    import scaling_cost

    device = _device(args)
    if device is None:
        return "skipped: needs CUDA"
    if args.dry_run:
        argv = ["--device", "cpu", "--seq-len", "8", "--batch-size", "2", "--positions", "8", "--steps", "1",
                "--warmup", "0", "--clock", "wall"]
    else:
        argv = ["--model", "smollm2-135m", "--chunks", "5", "--device", device, "--autocast", "bfloat16",
                "--seq-len", "32", "--batch-size", "8", "--positions", "64", "--steps", "5", "--warmup", "2",
                "--clock", "wall"]
    options = scaling_cost.parser().parse_args(argv)
    table.row("setting", f"{options.model}, K = {options.chunks}, batch {options.batch_size} x {options.seq_len}, "
                         f"probe batch {options.positions}, autocast {options.autocast}, {device}, "
                         f"median of {options.steps} scaled steps (wall)")
    med = scaling_cost.measure(options)
    scaled = med["train"] + med["probe + baseline"]
    table.row("training step ms", f"{med['train']:.1f}")
    table.row("scaling probe, no baseline ms", f"{med['probe']:.1f}")
    table.row("scaling probe with baseline ms", f"{med['probe + baseline']:.1f}")
    table.row("scaled step ms (step + probe, baseline)", f"{scaled:.1f} ({scaled / med['train']:.1f} training steps)")
    table.row("kernel launches: training step", f"{med['launches train']:.0f}")
    table.row("kernel launches: probe with baseline", f"{med['launches probe + baseline']:.0f} "
                                                      f"({med['launches probe + baseline'] / med['launches train']:.1f}"
                                                      " training steps)")
    return "ok"


def part_suite(args: argparse.Namespace, table: Table) -> str:
    """``verify_smollm2`` at the long horizon (``long_horizon``); its verdict table and report into ``--out``."""
    import gpu_check_smollm2

    from reports.wording import verdict_lines

    device = _device(args)
    if device is None:
        return "skipped: needs CUDA"
    model = "embedded" if args.dry_run else "smollm2-135m"
    horizon = DRY_HORIZON if args.dry_run else long_horizon(args.steps, args.seeds)
    jobs = 1 if args.dry_run else args.suite_jobs
    table.row("suite", f"{gpu_check_smollm2.SUITE} on {model}, {device}, {jobs} job(s): {' '.join(horizon)}")
    out = args.out / "suite"
    tic = time.perf_counter()
    result = gpu_check_smollm2.suite(model, device, args.dry_run, out, horizon=horizon, jobs=jobs)
    table.row("wall s", f"{time.perf_counter() - tic:.1f} ({len(result.run_dirs)} runs)")
    verdicts = "\n".join([result.scope, "", *verdict_lines(result.verdicts)]) + "\n"
    (args.out / "suite_verdicts.txt").write_text(verdicts, encoding="utf-8")
    report = out / "report" / "report.md"
    if report.is_file():
        shutil.copy(report, args.out / "suite_report.md")
    for line in verdict_lines(result.verdicts):
        table.row("verdict", line)
    return "ok"


RUNNERS = {"tests": part_tests, "population": part_population, "scaling": part_scaling, "suite": part_suite}


def run_part(args: argparse.Namespace) -> int:
    """In the part's own process: its table, its status line; a failure is its last line."""
    part = args.part
    table = Table(args.out / f"{part}.txt", f"gpu_run part {part}" + (" (--dry-run)" if args.dry_run else ""))
    try:
        if part in args.fail:
            raise RuntimeError(f"forced failure of part {part} (--fail)")
        while part in args.hang:  # a part that never ends (the check of the budget's cut)
            time.sleep(1)
        table.status(RUNNERS[part](args, table))
        return 0
    except Exception as exc:  # noqa: BLE001 -- reported in the table; the parent starts the next part
        traceback.print_exc()
        table.status(f"FAILED {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300])
        return 1


def _status(table: Path) -> str | None:
    if not table.is_file():
        return None
    lines = [line for line in table.read_text(encoding="utf-8").splitlines() if line.startswith(STATUS)]
    return lines[-1][len(STATUS):].strip() if lines else None


def _suite_progress(out: Path) -> str:
    """How far a cut-off suite got: its complete runs (final checkpoint written)."""
    runs = [d for d in (out / "suite" / "runs").glob("*") if d.is_dir()]
    done = sum(any(d.glob("checkpoints/*/COMPLETE")) for d in runs)
    return f"; {done} of {len(runs)} started suite runs complete" if runs else ""


def _child(args: argparse.Namespace, part: str) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--part", part, "--out", str(args.out),
           "--steps", str(args.steps), "--seeds", str(args.seeds), "--suite-jobs", str(args.suite_jobs),
           "--sizes", *map(str, args.sizes)]
    return (cmd + (["--dry-run"] if args.dry_run else []) + (["--fail", *args.fail] if args.fail else [])
            + (["--hang", *args.hang] if args.hang else []))


def run_all(args: argparse.Namespace) -> int:
    """Every part in its own process group, within its budget and the total; the summary."""
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.total
    summary = Table(args.out / "summary.txt", f"gpu_run summary{' (--dry-run)' if args.dry_run else ''}: "
                                              f"part, status, seconds (budget), table")
    bad = 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")])}
    for part in args.parts:
        table = args.out / f"{part}.txt"
        budget = min(args.budget[part], deadline - time.monotonic())
        if budget < 1:
            Table(table, f"gpu_run part {part}").status(f"skipped: no time left of the total budget ({args.total} s)")
            summary.row(part, f"skipped: no time left of the total budget ({args.total} s) | 0 s | {table.name}")
            bad += 1
            continue
        tic = time.monotonic()
        with (args.out / f"{part}.log").open("w", encoding="utf-8") as log:
            child = subprocess.Popen(_child(args, part), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
            try:
                child.wait(timeout=budget)
                status = _status(table) or f"FAILED: exit status {child.returncode}, no status line (see {part}.log)"
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                status = f"TIMED OUT: ran out of its time budget of {budget:.0f} s" + (
                    _suite_progress(args.out) if part == "suite" else "")
                if not table.is_file():
                    Table(table, f"gpu_run part {part}")
                with table.open("a", encoding="utf-8") as f:  # after the rows the part wrote before the cut
                    f.write(f"{STATUS} {status}\n")
        took = time.monotonic() - tic
        bad += not status.startswith(("ok", "skipped", "not available"))
        summary.row(part, f"{status} | {took:.0f} s ({args.budget[part]} s) | {table.name}")
    return 1 if bad else 0


def _budget(values: list[str]) -> dict[str, int]:
    budget = dict(BUDGET)
    for value in values:
        part, _, seconds = value.partition("=")
        if part not in PARTS or not seconds.isdigit():
            raise SystemExit(f"gpu_run: --budget {value!r}: expected PART=SECONDS with PART one of {list(PARTS)}")
        budget[part] = int(seconds)
    return budget


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="the folder for the tables, logs and summary")
    p.add_argument("--dry-run", action="store_true", help="the same parts on the CPU, embedded model, tiny sizes")
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="which parts, in this order")
    p.add_argument("--budget", action="append", default=[], metavar="PART=SECONDS",
                   help=f"a part's time budget (defaults {BUDGET})")
    p.add_argument("--total", type=int, default=TOTAL, help=f"seconds for the whole run (default {TOTAL})")
    p.add_argument("--steps", type=int, default=300, help="suite part: steps per run (default 300)")
    p.add_argument("--seeds", type=int, default=16, help="suite part: seeds per group (default 16)")
    p.add_argument("--suite-jobs", type=int, default=4, help="suite part: worker processes sharing the GPU")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="population part: S values")
    p.add_argument("--fail", nargs="+", choices=PARTS, default=[], help="make these parts raise at their start")
    p.add_argument("--hang", nargs="+", choices=PARTS, default=[], help=argparse.SUPPRESS)  # tests: never end
    p.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)  # one part, in this process
    args = p.parse_args(argv)
    args.budget = _budget(args.budget)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part:
        return run_part(args)
    return run_all(args)


if __name__ == "__main__":
    raise SystemExit(main())
