"""The main job: run the suite of experiments, analyse it, write the report.

The suite (docs/MATH.md names):

1. **Pilot** (η_0 of each primary group, chosen by code): for each method (ZeroLock forward,
   ZeroLock reverse, backprop) and each η_0 of ``lr_grid`` from the largest down, a
   ``pilot_steps``-step run (seed ``seeds[0]``, SGD, η_t = η_0/√(t+1), no probes), stopping at
   the first **stable** η_0: judged on the run's own objective (every training loss finite, and
   the objective on the fixed held-out batches at the end not above its value at ω^0;
   held-out task CE is recorded as an outcome only). The method's η_0 is ``pilot_backoff`` (½) × that η_0: a stable step is below
   2/L, so half of it lies inside η ≤ 1/L, the descent regime of Theorem 1's proof. If none is
   stable, the smallest is used ("none qualified"). Pilots live under ``out/pilot/METHOD``.
2. **Primary groups** (one per claim, pre-registered): ZeroLock forward (the implemented CE
   loss), ZeroLock reverse (the paper's objective, ε = 0.1) and backprop, each over ``seeds``
   at the chosen η_0, ``steps`` steps, with the probes of ``base_config``: Ĝ_t every step (the
   training step), the global Ĝ_t every ``global_every`` steps, the proof probe every
   ``proof_every`` step (ZeroLock groups only: backprop's surrogate is the fixed loss), step
   scaling with its random baseline at ``scaled_steps`` steps (``scaling_groups``), the
   lemma2, stability, minimizer, gradient and readout probes.
3. **Matched η_0** (``matched_seeds``): ZeroLock forward at the reverse group's η_0, so R and R̄
   are also compared at one step size (descriptive).
4. **Side runs** (``workflows.side_runs``): Lemma 2's fixed-point experiment on
   ``fixed_point_chunks``, and the pipelined memory runs at ``memory_stages``.
5. **Sweep** (optional, descriptive): η_0 × ``lr_factors``, seed ``seeds[0]``.

Sizing: a ZeroLock step costs about 0.2 s on one core at batch 8 × 32 (embedded model, K = 4),
the proof probe 0.1 s more, a scaled step with its baseline about 1.7 s (64 probe positions);
README gives the measured wall times of ``--quick`` and the full suite. Runs go through
``workflows.sweep.run_grid`` (``jobs`` at once), so an interrupted verify resumes: complete
runs are skipped, a half-written run resumes, finished side runs are skipped.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from zerolock_theory.config import merge_tables
from zerolock_theory.workflows.preflight import check_verify_resume, suite_checks
from zerolock_theory.workflows.progress import UNPROBED, PlannedRun, SuiteProgress, starting
from zerolock_theory.workflows.sweep import GridPoint, run_grid, validate_grid
from zerolock_theory.workflows.worker import die_with_parent

__all__ = ["FULL", "QUICK", "SuiteSpec", "VerifyResult", "suite_base", "suite_points", "verify"]

MARKER = "verify.json"


PRIMARY = ("zerolock-forward", "zerolock-reverse", "backprop")


@dataclass(frozen=True)
class SuiteSpec:
    """Sizes of the suite; ``QUICK`` and ``FULL`` are the shipped presets."""

    steps: int
    seq_len: int
    batch_size: int
    seeds: tuple[int, ...]
    lr_grid: tuple[float, ...]  # candidate η_0 of SGD for the pilot, any order
    lr_factors: tuple[float, ...]  # the sweep: η_0 × factor, seed seeds[0]
    pilot_steps: int = 30
    sweep_steps: int | None = None  # None: ``steps``
    chunks: int = 4
    eval_every: int = 10
    probe_positions: int = 128
    gradient_every: int = 5
    stability_every: int = 1
    minimizer_every: int = 1
    readout_records: int = 20
    alpha: float = 0.5
    epsilon_reverse: float = 0.1
    smoke: bool = False  # a smoke test: too short for the bound test
    lr: float | None = None  # fixes η_0 and skips the pilot (tests, ``--lr``)
    pilot_backoff: float = 0.5  # η_0 = pilot_backoff × the largest stable η_0 of the pilot (module docstring)
    scaled_steps: int = 30  # Assumption 5: scaled steps per run (the share's minimum per seed is 30)
    random_baseline: bool = True  # Assumption 5: the random-direction baseline at every scaled step
    proof_every: int = 1  # Theorem 1 (b): the proof probe's cadence (0: off; the rule needs 1)
    global_every: int = 5  # ZeroLock against backprop: the global G-hat_t every so many steps (0: off)
    matched_seeds: int = 0  # R against R-bar at a matched eta_0: forward runs at the reverse group's eta_0
    fixed_point_chunks: tuple[int, ...] = (1,)  # Lemma 2's fixed-point experiment on these chunks (): off)
    fixed_point_steps: int = 400  # its step limit per training (it stops earlier when the loss stops falling)
    memory_stages: tuple[int, ...] = ()  # the systems row: pipelined peak memory at these K (): off)
    memory_repeats: int = 3  # its repeats per method and K (the spread)
    memory_micro_batches: int = 4  # micro-batches per step of the memory runs (1F1B needs >= K; divides batch_size)
    name: str | None = None  # the suite's name in the scope line (default: "full", or "--quick (smoke test)")
    scaling_groups: tuple[str, ...] = PRIMARY  # primary groups that run the step-scaling probe (the
    # Assumption 5 rows read only the ZeroLock groups; backprop's scaled steps are descriptive)
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)  # extra probes / options by name
    variants: tuple[str, ...] = ()  # "KEY=VALUE" each: the sensitivity suite (workflows.sensitivity); needs lr
    tune: str | None = None  # a tune recipe run at the suite's sizes into tuned/ (the tuned versus row; None: off)


# The packaged recipes verify_quick.toml / verify_full.toml hold the same values (tests check it).
QUICK = SuiteSpec(steps=32, seq_len=32, batch_size=4, seeds=(0, 1, 2), lr_grid=(0.1, 0.025), lr_factors=(),
                  pilot_steps=10, eval_every=10, probe_positions=64, gradient_every=5, readout_records=16, smoke=True,
                  scaled_steps=32, scaling_groups=("zerolock-forward", "zerolock-reverse"), random_baseline=True,
                  proof_every=1, global_every=5,
                  fixed_point_chunks=(1,), fixed_point_steps=200, memory_stages=(2,), memory_repeats=2)
FULL = SuiteSpec(steps=1000, seq_len=32, batch_size=8, seeds=(0, 1, 2, 3, 4), matched_seeds=3,
                 scaling_groups=("zerolock-forward", "zerolock-reverse"),
                 fixed_point_chunks=(1, 2), memory_stages=(2, 4), memory_repeats=3,
                 lr_grid=(0.4, 0.2, 0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125), lr_factors=(),
                 pilot_steps=50,
                 sweep_steps=200, eval_every=125, probe_positions=64,
                 gradient_every=25, stability_every=20, minimizer_every=20, tune="tune_embedded")


def base_config(spec: SuiteSpec, model: str, data: str, device: str, dtype: str, autocast: str | None) -> dict[str, Any]:
    """The config every run of the suite starts from (before its own overrides).

    The probe table holds the built-in probes; ``spec.probes`` adds probes (e.g. a
    ``scaling`` probe) or overrides options by name.
    """
    n = spec.probe_positions
    probes = {
        "stability": {"n_positions": n, "every": spec.stability_every},
        "minimizers": {"n_positions": n, "every": spec.minimizer_every},
        "gradients": {"n_positions": n, "every": spec.gradient_every},
        "readouts": {"n_positions": n, "every": max(1, spec.steps // spec.readout_records)},
        # Assumption 5 by step scaling at the seven factors 1 ... 1/64, ``scaled_steps`` scaled steps a run,
        # with the random-direction baseline (~0.8 s + 0.9 s per scaled step at N = 64, one core)
        "scaling": {"n_positions": n, "every": max(1, spec.steps // spec.scaled_steps),
                    "random_baseline": spec.random_baseline},
    }
    # Lemma 2 on the model: TV(m_k, g_k) at the exact readouts, untrained and trained, and the
    # entropy-matched null of the descriptive tracking statistic at the last step
    probes["lemma2"] = {"n_positions": n, "every": max(1, spec.steps // spec.readout_records), "null": True}
    if spec.proof_every:  # Theorem 1 (b): descent_t and drift_t of both surrogates, every step
        probes["proof"] = {"n_positions": n, "every": spec.proof_every}
    for name, options in spec.probes.items():
        probes.setdefault(name, {}).update(options)
    return {
        "model": {"path": model, "chunks": spec.chunks, "device": device, "dtype": dtype, "autocast": autocast},
        "data": {"source": data, "seq_len": spec.seq_len, "batch_size": spec.batch_size},
        "method": {"alpha": spec.alpha},
        "optim": {"name": "sgd", "lr": spec.lr_grid[0] if spec.lr is None else spec.lr, "schedule": "inv_sqrt"},
        "run": {"steps": spec.steps, "eval_every": spec.eval_every, "checkpoint_every": spec.steps,
                "keep_checkpoints": 1, "progress": False, "global_grad_every": spec.global_every,
                # One intra-op thread on CPU: the embedded model's ops are too small to gain from
                # more, and an OpenMP region stalls ~15 ms per op whenever a core is busy.
                "threads": 1 if device == "cpu" or (device == "auto" and not torch.cuda.is_available()) else None},
        "probes": probes,
    }


def suite_base(spec: SuiteSpec, model: str, data: str, device: str, dtype: str, autocast: str | None,
               tables: dict[str, Any] | None = None) -> dict[str, Any]:
    """``base_config`` with a recipe's run-config ``tables`` merged on top (key by key)."""
    return merge_tables(base_config(spec, model, data, device, dtype, autocast), tables or {})


VARIANTS = {
    "zerolock-forward": lambda spec: (("method.name", "zerolock"), ("method.direction", "forward"),
                                      ("method.epsilon", 0.0)),
    "zerolock-reverse": lambda spec: (("method.name", "zerolock"), ("method.direction", "reverse"),
                                      ("method.epsilon", spec.epsilon_reverse)),
    "backprop": lambda spec: (("method.name", "backprop"), ("method.direction", "forward"), ("method.epsilon", 0.0)),
}


def replicate(seed: int) -> tuple[tuple[str, int], ...]:
    """The overrides of one replicate: ``seed`` draws the adapters' init, the training RNG AND the
    training order (``data.order_seed``); the train/eval split (``data.seed``) stays shared.

    Seeds that shared one data order would share its batch-to-batch noise: on the embedded
    model Ĝ_t at the same step correlates 0.76–0.90 between backprop runs that differ only in
    η_0, so such "seeds" are not independent replicates and a seed-level interval over them
    is too narrow (docs/MATH.md, "Statistics for every verdict").
    """
    return (("run.seed", seed), ("data.order_seed", seed))


def pilot_points(spec: SuiteSpec, lr: float, label: str) -> GridPoint:
    """The pilot run of one method at one η_0: seed ``seeds[0]``, ``pilot_steps`` steps."""
    seed = spec.seeds[0]
    return GridPoint(f"{label}_lr-{lr:g}_seed-{seed}",
                     (*VARIANTS[label](spec), *replicate(seed), ("optim.lr", lr), ("run.steps", spec.pilot_steps),
                      ("run.eval_every", spec.pilot_steps), ("run.checkpoint_every", spec.pilot_steps)))


def _pilot_ok(run_dir: Path) -> dict[str, Any]:
    """The pilot criterion (``analyses.seeds.regime_check``): stable on the run's OWN training
    objective, held-out CE only an outcome; ``ok``, ``why`` and the figures."""
    from analyses.io import load_run
    from analyses.seeds import regime_check

    return regime_check(load_run(run_dir).metrics)


def pilot_chain(spec: SuiteSpec, base: dict[str, Any], out: Path, label: str, log=print) -> list[dict[str, Any]]:
    """One method's pilots from the largest η_0 down, stopping at the first stable one.

    Each row holds ``ok``, ``why`` and the figures of ``_pilot_ok`` (held-out CE at both
    ends, the own objective's tenth means). The last row is the choice: ``lr`` =
    ``pilot_backoff`` × the stable η_0 (``chosen``), or the grid's smallest when none qualified."""
    from zerolock_theory.training.steps import NonFiniteLossError

    rows: list[dict[str, Any]] = []
    for lr in sorted(spec.lr_grid, reverse=True):
        point = pilot_points(spec, lr, label)
        try:
            (run_dir,) = run_grid(base, [point], out, log=log)
            verdict = _pilot_ok(run_dir)
        except NonFiniteLossError as exc:
            verdict = {"ok": False, "why": f"non-finite loss ({exc})"}
        rows.append({"method": label, "lr": lr, **verdict})
        if verdict["ok"]:
            chosen = spec.pilot_backoff * lr
            rows.append({"method": label, "lr": chosen, "ok": True,
                         "why": f"chosen: {spec.pilot_backoff:g} x largest stable {lr:g}"})
            return rows
    rows.append({"method": label, "lr": min(spec.lr_grid), "ok": False, "why": "none qualified: smallest"})
    return rows


def choose_lr(
    spec: SuiteSpec, base: dict[str, Any], out: Path, log=print, jobs: int = 1
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """η_0 per primary method by the pilot criterion (module docstring), and the pilot table.

    ``jobs`` > 1 runs the methods' pilot chains at once (one process each, each in its own
    directory ``out/METHOD``)."""
    base = {**base, "probes": {}}
    if jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        out.mkdir(parents=True, exist_ok=True)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=die_with_parent) as pool:
            chains = list(pool.map(pilot_chain, *zip(*[(spec, base, out / label, label) for label in PRIMARY],
                                                     strict=True)))
    else:
        chains = [pilot_chain(spec, base, out / label, label, log=log) for label in PRIMARY]
    table = [row for chain in chains for row in chain]
    return {chain[-1]["method"]: chain[-1]["lr"] for chain in chains}, table


def run_points(base: dict[str, Any], points: list[GridPoint], out: Path, jobs: int = 1, log=print) -> list[Path]:
    """``run_grid`` over ``points`` with ``jobs`` worker processes, longest runs first (so the
    cores stay busy to the end); returns the run directories in the order of ``points``."""
    order = sorted(range(len(points)), key=lambda i: -_cost(base, points[i]))
    dirs = run_grid(base, [points[i] for i in order], out, log=log, jobs=jobs)
    by_index = dict(zip(order, dirs, strict=True))
    return [by_index[i] for i in range(len(points))]


def _cost(base: dict[str, Any], point: GridPoint) -> float:
    """Relative cost of a run: steps × method weight (measured: reverse 1.4, forward 1, backprop 0.7)."""
    over = dict(point.overrides)
    steps = over.get("run.steps", base["run"]["steps"])
    if over.get("method.name") == "backprop":
        return 0.7 * steps
    return (1.4 if over.get("method.direction") == "reverse" else 1.0) * steps


def _plan(spec: SuiteSpec, base: dict[str, Any], out: Path, lrs: dict[str, float] | None = None, jobs: int = 1) -> list:
    grid, steps = sorted(spec.lr_grid, reverse=True), base["run"]["steps"]  # workflows.progress's plan, in start order:
    chains = [[(out / "pilot" / m / p.name, p, UNPROBED) for p in (pilot_points(spec, lr, m) for lr in grid)]
              for m in ([] if spec.lr is not None else PRIMARY)]
    pilots = [x for i in range(len(grid)) for c in chains for x in c[i:i + 1] if lrs is None or x[0].is_dir()]  # side by side
    runs = [(out / "runs" / p.name, p, 1.0) for p in sorted(suite_points(spec, lrs), key=lambda p: -_cost(base, p))]  # then
    return [r for part in (pilots, runs) for r in starting([PlannedRun(d, n, w * _cost(base, p) / n) for d, p, w in part
                                                            for n in [dict(p.overrides).get("run.steps", steps)]], jobs)]


def suite_points(spec: SuiteSpec, lrs: float | dict[str, float] | None = None) -> list[GridPoint]:
    """The primary groups and the sweep, named ``{method}-{direction}_lr-{η}_seed-{s}``.

    ``lrs``: η_0 per primary method (a number: the same for all; default ``spec.lr`` or the
    grid's first value). The sweep is η_0 × ``lr_factors`` of each ZeroLock direction.
    """
    if lrs is None:
        lrs = spec.lr if spec.lr is not None else spec.lr_grid[0]
    if not isinstance(lrs, dict):
        lrs = dict.fromkeys(PRIMARY, float(lrs))
    points = []
    for label in PRIMARY:
        for seed in spec.seeds:
            off = () if label in spec.scaling_groups else (("probes.scaling.enabled", False),)
            if label == "backprop":  # its surrogate is the fixed loss (drift 0): Theorem 1 (b) reads ZeroLock only
                off += (("probes.proof.enabled", False),)
            points.append(GridPoint(f"{label}_lr-{lrs[label]:g}_seed-{seed}",
                                    (*VARIANTS[label](spec), *replicate(seed), ("optim.lr", lrs[label]), *off)))
    for seed in spec.seeds[: spec.matched_seeds]:  # forward at reverse's eta_0: R-bar against R, same step size
        lr = lrs["zerolock-reverse"]
        points.append(GridPoint(f"zerolock-forward-matched_lr-{lr:g}_seed-{seed}",
                                (*VARIANTS["zerolock-forward"](spec), *replicate(seed), ("optim.lr", lr),
                                 ("probes.scaling.enabled", False), ("probes.proof.enabled", False))))
    sweep_steps = spec.sweep_steps or spec.steps
    for label in ("zerolock-forward", "zerolock-reverse"):
        for factor in spec.lr_factors:
            swept = lrs[label] * factor
            points.append(GridPoint(f"{label}_lr-{swept:g}_seed-{spec.seeds[0]}",
                                    (*VARIANTS[label](spec), *replicate(spec.seeds[0]), ("optim.lr", swept),
                                     ("run.steps", sweep_steps), ("run.checkpoint_every", sweep_steps),
                                     ("run.eval_every", min(spec.eval_every, sweep_steps)))))
    return points


def _scope_settings(spec: SuiteSpec, lrs: dict[str, float], pilot: list[dict[str, Any]], model: str) -> dict[str, Any]:
    """What the report's scope line needs beyond the runs: the suite's name, η_0 and how it was chosen."""
    kind = spec.name or ("--quick (smoke test)" if spec.smoke else "full")
    how = "fixed" if not pilot else f"by pilot: {spec.pilot_backoff:g} x largest stable of {sorted(spec.lr_grid)}"
    failed = sorted({row["method"] for row in pilot if row["why"].startswith("none qualified")})
    how += f"; none qualified for {', '.join(failed)}" if failed else ""
    etas = ", ".join(f"{k} {v:g}" for k, v in lrs.items())
    from zerolock_theory.models import model_display_name

    size = ("embedded Llama, 8 layers, d=128, V=4096, 2.6M parameters" if model == "embedded"
            else model_display_name(model))
    return {"suite": f"{kind}; eta_0: {etas} ({how}); the rate reads G-hat_t's level over (T/20, T] of each run "
                     f"in four blocks of equal width in log T (the first twentieth skips the LoRA warm-up from B = 0)", "pilot": pilot,
            "model_size": f"{size}; LoRA adapters trained"}


@dataclass
class VerifyResult:
    """Where everything went and what it says."""

    out: Path
    run_dirs: list[Path]
    analysis_dir: Path
    report_html: Path
    report_markdown: Path
    verdicts: list[Any]  # analyses.verdict.Verdict, one per registered claim
    seconds: float
    scope: str = ""


def check_out_dir(out: Path, overwrite: bool) -> None:
    """A fresh or an earlier verify directory is fine; ``overwrite`` replaces only our own runs."""
    from zerolock_theory.training.rundir import check_out, run_kind
    check_out(out, "verify", resume=out.is_dir() and run_kind(out) == "verify", overwrite=overwrite)


def reanalyze(out: Path, *, extra: Sequence[Path] = (), log=print) -> VerifyResult:
    """Analyse a finished (or partly finished) suite directory again with this version's rules, and
    write ``out/analysis`` and ``out/report`` anew; nothing is trained. ``extra``: more inputs for
    the analysis, e.g. a ``zerolock tune`` directory (the tuned "ZeroLock against backprop" row).

    Reads ``verify.json`` for the suite's settings, every run directory under ``out/runs`` with
    metrics, the fixed-point directories and the systems output. Raises ``ValueError`` when ``out``
    is not a verify directory."""
    out = Path(out)
    marker = out / MARKER
    if not marker.is_file():
        raise ValueError(f"--reanalyze: {out} holds no {MARKER} (not a zerolock verify directory)")
    saved = json.loads(marker.read_text())
    fields = {f.name for f in dataclasses.fields(SuiteSpec)}
    spec = SuiteSpec(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved["spec"].items() if k in fields})
    runs = sorted(p for p in (out / "runs").glob("*") if (p / "metrics.jsonl").is_file())
    if not runs:
        raise ValueError(f"--reanalyze: no run with metrics under {out / 'runs'}")
    fixed = sorted(p for p in (out / "fixed_point").glob("chunk-*") if p.is_dir())
    systems = out / "systems" if (out / "systems" / "systems.json").is_file() else None
    if (out / "tuned" / "tune.json").is_file():  # the suite's own tuned comparison
        extra = [out / "tuned", *extra]
    started = time.perf_counter()
    model = str(saved.get("base", {}).get("model", {}).get("path", "embedded"))
    for path in extra:  # a tune directory of another model would answer another question
        other = next((json.loads(c.read_text()).get("model", {}).get("path") for c in sorted(Path(path).glob("*/config.json"))),
                     None)
        if other is not None and str(other) != model:
            raise ValueError(f"--with {path}: its runs train model {other!r}, this suite's runs {model!r}")
    settings = _scope_settings(spec, saved.get("lr", {}), saved.get("pilot", []), model)
    log(f"analysing {len(runs)} runs again with this version's rules ...")
    return _analyse_and_report(out, runs, [*runs, *fixed, *extra], systems, settings, started)


def _analyse_and_report(out: Path, run_dirs: list[Path], inputs: list[Path], systems: Path | None,
                        settings: dict[str, Any], started: float) -> VerifyResult:
    """Analyse ``inputs``, then replace ``out/analysis`` and ``out/report`` with this analysis."""
    import shutil

    from analyses.suite import analyze_runs
    from reports.page import write_report
    from reports.scope import scope_line

    suite = analyze_runs(inputs, systems=systems)
    suite.settings.update(settings)
    for stale in ("analysis", "report"):
        shutil.rmtree(out / stale, ignore_errors=True)
    suite.save(out / "analysis")
    files = write_report(suite, out / "report")
    return VerifyResult(out, run_dirs, out / "analysis", files.html, files.markdown, suite.claims,
                        time.perf_counter() - started, scope_line(suite))


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
    jobs: int = 1,
    tables: dict[str, Any] | None = None,
    log=print,
) -> VerifyResult:
    """Run the suite under ``out/runs``, analyse into ``out/analysis``, report into ``out/report``.

    ``jobs``: runs trained at once (each with one thread; 2 on a 2-core machine).
    ``tables``: run-config tables merged on top of ``base_config`` (a verify recipe's
    [model], [data], ... and its ``--set``; see ``workflows.verify_config``).
    """

    from zerolock_theory.workflows.side_runs import fixed_points, memory_runs, tuned_runs

    out = Path(out)
    if spec.variants:  # the sensitivity suite: zerolock verify runs it (workflows.sensitivity.verify_sensitivity)
        raise ValueError("suite.variants is the sensitivity suite: run it with workflows.sensitivity.verify_sensitivity")
    check_out_dir(out, overwrite)
    started = time.perf_counter()
    base = suite_base(spec, model, data, device, dtype, autocast, tables)
    from zerolock_theory.training.rundir import prepare_kind, run_kind, write_marker

    points = suite_points(spec)
    configs = validate_grid(base, points)  # every config and input checked before the first write:
    resumed = out.is_dir() and run_kind(out) == "verify"
    if resumed and not overwrite:  # a resume that would be refused run by run, refused here
        check_verify_resume(out, spec, base)
    suite_checks(spec, base, [(p.name, c) for p, c in zip(points, configs, strict=True)])  # K, corpus sizes
    model = str(base["model"].get("path", model))
    prepare_kind(out, "verify", overwrite=overwrite)
    write_marker(out, "verify")
    progress = SuiteProgress(_plan(spec, base, out, jobs=jobs), resumed=resumed)
    say = log if progress.bar.disable else progress.write
    try:
        if spec.lr is None:
            progress.announce("pilot", say)
            lrs, pilot = choose_lr(spec, base, out / "pilot", log=say, jobs=jobs)
            say(f"pilot: eta_0 = {lrs} (per method, {spec.pilot_backoff:g} x the largest of {sorted(spec.lr_grid)} "
                "whose pilot is stable on its own held-out objective; see verify.json)")
        else:
            lrs, pilot = dict.fromkeys(PRIMARY, spec.lr), []
        (out / MARKER).write_text(json.dumps({"spec": asdict(spec), "base": base, "lr": lrs, "pilot": pilot}, indent=2))
        progress.plan(_plan(spec, base, out, lrs, jobs))
        progress.announce("runs", say)
        run_dirs = run_points(base, suite_points(spec, lrs), out / "runs", jobs=jobs, log=say)
    finally:
        progress.close()
    log(progress.summary())  # the bar plans the training runs; the side runs follow, each one line
    fixed = fixed_points(spec, base, out / "fixed_point", log=log)
    systems = memory_runs(spec, base, out / "systems", log=log)
    tuned = tuned_runs(spec, base, out / "tuned", log=log)
    log("analysing ...")
    return _analyse_and_report(out, run_dirs, [*run_dirs, *fixed, *([tuned] if tuned else [])], systems,
                               _scope_settings(spec, lrs, pilot, model), started)
