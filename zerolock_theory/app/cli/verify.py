"""``zerolock verify``: the main job, from nothing to a report with a verdict per claim.

Examples::

    zerolock verify --quick --out runs/verify-quick       # smoke test: embedded model (docs/results/: wall time)
    zerolock verify --out runs/verify                     # the full suite: 1000 steps, 5 seeds per primary group,
                                                          # and its tuned comparison (docs/TUNED.md)
    zerolock verify --config verify_smollm2_cpu --out runs/smollm2   # SmolLM2-135M, 2 CPU cores, short horizon
    zerolock verify --quick --set data.seq_len=64 --set model.lora.rank=4 --out runs/vq64
    zerolock verify --config my_suite.toml --set suite.steps=2000 --out runs/long
    zerolock verify --config verify_sensitivity --out runs/sensitivity   # the sensitivity map (docs/SENSITIVITY.md: its cost)
    zerolock verify --out runs/qwen --model /models/Qwen2.5-0.5B --data corpus.jsonl \\
        --text-field body --device cuda --autocast bfloat16   # fp32 weights, bf16 compute

The suite is a recipe: --quick is --config verify_quick, the default is verify_full
(zerolock recipes verify_full --out my.toml copies one out). Its [suite] table sizes the
suite and builds every run's base config; the recipe's [model], [data], [method], [optim],
[run] and [probes] tables, then the flags, then --set override that base config
(--set suite.KEY=VALUE changes the suite itself). --steps, --seeds, --chunks and --lr are
shorthands for suite.steps, suite.seeds, suite.chunks and suite.lr.

η_0 of each primary group is chosen by a pilot: half the largest η_0 of the grid whose short
pilot is stable on its own objective (on the fixed held-out batches, the end not above the
start; suite.pilot_backoff = 0.5), unless --lr fixes it. Re-running with the same --out
resumes (also after a kill): finished runs are skipped, and it says how many. Ctrl-C prints the
command that resumes and exits with 130.

A group's seeds train as one population (one forward for all members, each its own run
directory); --no-population trains them one by one. --seeds-by-power chooses the seed count from a
pilot on seeds 1000 and up (never in a verdict): the count at which Theorem 1 (a)'s rate rows reach
80% power at the pilot's noise, at most --max-seeds (default 20).

A recipe's suite.tune names a tune recipe (verify_full: tune_embedded): after the runs and the
side runs, each method is tuned over one eta_0 grid at the suite's model, corpus, K, sizes and
steps into OUT/tuned, and the row "ZeroLock against backprop" decides from it
(--set suite.tune=null skips it; the row then reads "not tuned").
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from zerolock_theory.app.cli import CLIError
from zerolock_theory.app.cli.flags import TRAIN_CONFIG, add_field_flags, flag_values

DTYPE_FLAGS = {"dtype": "model.dtype", "autocast": "model.autocast"}
"""The dtype flags, as ``zerolock train``'s: --dtype the parameter dtype, --autocast the autocast dtype."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("verify", help="run the suite, analyse it and write the report",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="output directory (runs/, analysis/, report/)")
    suite = parser.add_mutually_exclusive_group()
    suite.add_argument("--quick", action="store_true",
                       help="smoke test (= --config verify_quick): too short for Theorem 1's bound test")
    suite.add_argument("--config", default=None,
                       help="verify recipe: a file or a packaged name (default: verify_full)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a suite or run-config key, e.g. --set suite.steps=60 --set data.seq_len=64")
    parser.add_argument("--model", default=None, help="'embedded' (default), a local Hugging Face model directory, a .gguf file or smollm2-135m")
    parser.add_argument("--data", default=None, help="'embedded' (default), a file (.txt .md .jsonl .json .csv "
                        ".parquet, optionally .gz), a directory of them, or a datasets save_to_disk directory")
    parser.add_argument("--text-field", default=None,
                        help="field (JSON) or column (CSV, Parquet, datasets) of --data holding the text (default: text)")
    parser.add_argument("--device", default=None, help="auto (default; cuda when present), cpu, cuda, ...")
    add_field_flags(parser, TRAIN_CONFIG, DTYPE_FLAGS)  # --dtype and --autocast: as zerolock train's
    parser.add_argument("--steps", type=int, help="override the steps per run")
    parser.add_argument("--seeds", type=int, help="override the number of seeds")
    parser.add_argument("--chunks", type=int, help="override K")
    parser.add_argument("--jobs", type=int, default=None,
                        help="runs trained at once, one thread each (default: 2 on CPU, 1 on a GPU)")
    parser.add_argument("--lr", type=float, help="fix eta_0 of SGD (skips the pilot that chooses it)")
    parser.add_argument("--seeds-by-power", action="store_true",
                        help="choose the primary groups' seed count by a pilot (its own seeds, 1000 and up, never "
                        "in a verdict): the count at which Theorem 1 (a)'s rate rows reach 80%% power at the "
                        "pilot's measured noise (= --set suite.seeds_by_power=true)")
    parser.add_argument("--max-seeds", type=int, default=None, metavar="N",
                        help="with --seeds-by-power: the most seeds it may choose (default 20; at least 3)")
    parser.add_argument("--no-population", dest="population", action="store_false",
                        help="train every seed as its own run (default: a group's seeds, which differ only in "
                        "their seed, train as one population: one forward for all members)")
    parser.add_argument("--reanalyze", action="store_true",
                        help="analyse the runs under --out again with this version's rules and rewrite its analysis "
                        "and report; trains nothing")
    parser.add_argument("--with", dest="extra", action="append", type=Path, default=[], metavar="DIR",
                        help="with --reanalyze: another input of the analysis, e.g. a zerolock tune directory "
                        "(the tuned ZeroLock-against-backprop row) or a directory of them (the factorial of zerolock diagnose: "
                        "the report's section on why)")
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it holds another of our runs (never a directory of yours)")
    parser.add_argument("--publish", type=Path, default=None, metavar="PAGE.md",
                        help="also write the verdict table as a results page (command, commit, date, wall time, "
                        "scope), e.g. docs/results/embedded-full.md; only a new file or a page --publish wrote")
    parser.set_defaults(func=run)


def _flag_values(args: argparse.Namespace) -> dict[str, object]:
    """The shorthand flags as typed values by dotted key (applied before --set)."""
    out: dict[str, object] = {}
    if args.steps is not None:
        if args.steps < 5:
            raise CLIError(f"--steps {args.steps}: a suite needs at least 5 steps (Theorem 1's rate row "
                           "needs 500 for a verdict; shorter suites leave it not testable)")
        out["suite.steps"] = args.steps
    if args.seeds is not None:
        if args.seeds < 1:
            raise CLIError("--seeds must be >= 1")
        out["suite.seeds"] = list(range(args.seeds))
    if args.chunks is not None:
        out["suite.chunks"] = args.chunks
    if args.max_seeds is not None:
        if args.max_seeds < 3:
            raise CLIError(f"--max-seeds {args.max_seeds}: must be >= 3 (a verdict needs 3 seeds)")
        out["suite.max_seeds"] = args.max_seeds
    if args.seeds_by_power:
        out["suite.seeds_by_power"] = True
    if args.lr is not None:
        if not args.lr > 0:
            raise CLIError(f"--lr must be > 0, got {args.lr}")
        out["suite.lr"] = args.lr
    for flag, key in (("model", "model.path"), ("data", "data.source"), ("text_field", "data.text_field"),
                      ("device", "model.device")):
        if getattr(args, flag) is not None:
            out[key] = getattr(args, flag)
    out.update(flag_values(args, DTYPE_FLAGS))
    return out


def _suite(args: argparse.Namespace):
    """The suite spec and run-config tables: recipe, then shorthand flags, then --set."""
    from zerolock_theory.app.workflows.verify_config import load_suite

    config = "verify_quick" if args.quick else (args.config or "verify_full")
    try:
        return load_suite(config, list(args.overrides), values=_flag_values(args))
    except ValueError as exc:
        raise CLIError(str(exc)) from exc


def _default_jobs(device: str) -> int:
    """2 single-threaded runs at once on CPU (the 2-core budget of the suite), 1 on a GPU."""
    import os

    import torch

    on_gpu = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    return 1 if on_gpu else max(1, min(2, os.cpu_count() or 1))


def resume_command(args: argparse.Namespace) -> str:
    """The command that resumes this suite: the same suite, flags and overrides (without --overwrite,
    which a re-run does not need: it continues its own verify directory)."""
    parts = ["zerolock", "verify", *(["--quick"] if args.quick else []),
             *(["--config", str(args.config)] if args.config else []), "--out", str(args.out)]
    for flag in ("model", "data", "text_field", "device", "steps", "seeds", "chunks", "jobs", "lr", "max_seeds"):
        if getattr(args, flag) is not None:
            parts += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    for flag in DTYPE_FLAGS:
        if hasattr(args, flag):
            parts += [f"--{flag}", "none" if getattr(args, flag) is None else str(getattr(args, flag))]
    if getattr(args, "seeds_by_power", False):
        parts.append("--seeds-by-power")
    if not getattr(args, "population", True):
        parts.append("--no-population")
    for override in args.overrides:
        parts += ["--set", override]
    return shlex.join(parts)


@contextlib.contextmanager
def _interrupts(seen: list[int]) -> Iterator[None]:
    """Record a SIGINT in ``seen`` (then raise ``KeyboardInterrupt`` as usual), so that an error it
    causes on its way out (a worker that died of it) still reads as the interrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _reanalyze(args: argparse.Namespace) -> int:
    from reports.wording import verdict_lines
    from zerolock_theory.app.workflows.verify import reanalyze

    for path in args.extra:
        if not path.is_dir():
            raise CLIError(f"--with {path}: no such directory")
    try:
        result = reanalyze(args.out, extra=args.extra)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    if result.scope:
        print(f"\n{result.scope}")
    print("\n" + "\n".join(verdict_lines(result.verdicts)))
    print(f"\nreport: {result.report_html}")
    print(f"markdown: {result.report_markdown}")
    _publish(args, result)
    return 0


def _check_publish(args: argparse.Namespace) -> None:
    from reports.publish import check_publish_path

    if args.publish is not None:
        try:
            check_publish_path(args.publish)
        except ValueError as exc:
            raise CLIError(str(exc)) from exc


def _publish(args: argparse.Namespace, result) -> None:
    """The results page of ``--publish`` (``reports.publish``), with the suite's recorded wall time."""
    if args.publish is None:
        return
    from reports.publish import write_results_page
    from zerolock_theory.app.workflows.verify import recorded_seconds

    out = Path(args.out)
    shown = out.name if out.is_absolute() else str(out)  # a page names no directory of the machine it ran on
    page = Path(args.publish)
    extra = "".join(f" --with {p.name if p.is_absolute() else p}" for p in args.extra)  # the other inputs, named
    command = (resume_command(args).replace(str(out), shown) + (" --reanalyze" if args.reanalyze else "") + extra
               + f" --publish {page.name if page.is_absolute() else page}")
    report = Path(result.report_html)
    report = Path(shown) / report.relative_to(out) if report.is_relative_to(out) else Path(report.name)
    title = f"Verdicts: {out.name}" + (" (re-analysed)" if args.reanalyze else "")
    written = write_results_page(args.publish, result.verdicts, result.scope, title=title, command=command,
                                 seconds=recorded_seconds(out), report=str(report))
    print(f"results page: {written}")


def run(args: argparse.Namespace) -> int:
    from reports.wording import verdict_lines
    from zerolock_theory.app.workflows.kill_point import arm
    from zerolock_theory.app.workflows.sensitivity import verify_sensitivity
    from zerolock_theory.app.workflows.verify import verify
    from zerolock_theory.training.state import CheckpointError
    from zerolock_theory.training.steps import NonFiniteLossError

    if args.jobs is not None and args.jobs < 1:
        raise CLIError(f"--jobs must be >= 1, got {args.jobs}")
    if args.extra and not args.reanalyze:
        raise CLIError("--with belongs to --reanalyze")
    _check_publish(args)
    if args.reanalyze:
        return _reanalyze(args)
    spec, tables = _suite(args)
    if spec.variants and spec.seeds_by_power:
        raise CLIError("--seeds-by-power: the sensitivity suite (suite.variants) runs its settings at fixed seeds")
    model_table = tables.get("model") if isinstance(tables.get("model"), dict) else {}
    device = str(model_table.get("device", "auto"))
    jobs = args.jobs if args.jobs is not None else _default_jobs(device)
    interrupted: list[int] = []
    try:
        run_suite = verify_sensitivity if spec.variants else verify  # suite.variants: the sensitivity map
        arm()  # a test's kill point kills this process (workflows.kill_point)
        with _interrupts(interrupted):
            result = run_suite(spec, args.out, device=device, overwrite=args.overwrite, jobs=jobs, tables=tables,
                               population=args.population)
    except BaseException as exc:
        if interrupted or isinstance(exc, KeyboardInterrupt):  # an interrupt, whatever it broke on its way
            print(f"zerolock verify: interrupted; resume with: {resume_command(args)}", file=sys.stderr)
            return 130
        if isinstance(exc, (FileExistsError, ValueError, NonFiniteLossError, CheckpointError)):
            raise CLIError(str(exc)) from exc
        raise
    if result.scope:
        print(f"\n{result.scope}")
    print("\n" + "\n".join(verdict_lines(result.verdicts)))
    print(f"\nreport: {result.report_html}")
    print(f"markdown: {result.report_markdown}")
    where = result.out / ("settings" if spec.variants else "runs")
    print(f"runs: {len(result.run_dirs)} in {where}; wall time {result.seconds:.0f}s")
    _publish(args, result)
    return 0
