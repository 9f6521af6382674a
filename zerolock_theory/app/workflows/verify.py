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
   **Seeds by power** (``seeds_by_power``, ``workflows.power``): a pilot of ZeroLock forward and
   reverse on seeds 1000, 1001, ... (never in a verdict; ``out/power_pilot``) measures the rate
   rows' noise, and the primary groups run the seeds that reach 80% power (at most ``max_seeds``).
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

Sizing: a scaled step (the update at seven factors, along the actual and the random direction)
costs several training steps, the proof probe about half of one; ``scaled_steps`` and
``proof_every`` set how often they run. The results pages under docs/results/ give the measured wall times of ``--quick`` and the full suite. Runs go through
``workflows.sweep.run_grid`` (``jobs`` at once), so an interrupted verify resumes: complete
runs are skipped, a half-written run resumes, finished side runs are skipped. A group's seeds
differ only in their seed, so its unfinished runs train as one population (``run_grid(...,
population=True)``; each member its own run directory) unless ``population`` is False.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from zerolock_theory.app.workflows.kill_point import reached
from zerolock_theory.app.workflows.preflight import check_verify_resume, suite_checks
from zerolock_theory.app.workflows.progress import (
    UNPROBED,
    PlannedRun,
    SuiteProgress,
    starting,
    step_extras,
)
from zerolock_theory.app.workflows.suite_spec import (
    PRIMARY,
    VARIANTS,
    SuiteSpec,
    replicate,
    suite_base,
    suite_points,
)
from zerolock_theory.app.workflows.sweep import GridPoint, run_grid, validate_grid
from zerolock_theory.app.workflows.worker import die_with_parent
from zerolock_theory.config_overrides import apply_values

__all__ = ["VerifyResult", "reanalyze", "record_seconds", "recorded_seconds", "verify"]

MARKER = "verify.json"


def pilot_points(spec: SuiteSpec, lr: float, label: str) -> GridPoint:
    """The pilot run of one method at one η_0: seed ``seeds[0]``, ``pilot_steps`` steps."""
    seed = spec.seeds[0]
    return GridPoint(f"{label}_lr-{lr:g}_seed-{seed}",
                     (*VARIANTS[label](spec), *replicate(seed), ("optim.lr", lr), ("run.steps", spec.pilot_steps),
                      ("run.eval_every", spec.pilot_steps), ("run.checkpoint_every", spec.pilot_steps)))


def _pilot_ok(run_dir: Path) -> dict[str, Any]:
    """The pilot criterion (``analyses.stats.seeds.regime_check``): stable on the run's OWN training
    objective, held-out CE only an outcome; ``ok``, ``why`` and the figures."""
    from analyses.io import load_run
    from analyses.stats.seeds import regime_check

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
        _quiet_resource_tracker()
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=die_with_parent) as pool:
            chains = list(pool.map(pilot_chain, *zip(*[(spec, base, out / label, label) for label in PRIMARY],
                                                     strict=True)))
    else:
        chains = [pilot_chain(spec, base, out / label, label, log=log) for label in PRIMARY]
    table = [row for chain in chains for row in chain]
    return {chain[-1]["method"]: chain[-1]["lr"] for chain in chains}, table


def _quiet_resource_tracker() -> None:
    """Silence one warning of multiprocessing's resource tracker, the process that frees the
    pool's semaphores. After Ctrl-C the pool's workers exit at once (``die_with_parent``), the
    tracker frees the queues' semaphores and warns on stderr of "leaked semaphore objects":
    noise after the one line an interrupt prints, since nothing is left behind. The tracker is
    started with the pool and reads the filter from the environment."""
    rule = "ignore:resource_tracker:UserWarning"
    current = os.environ.get("PYTHONWARNINGS", "")
    if rule not in current.split(","):
        os.environ["PYTHONWARNINGS"] = f"{current},{rule}" if current else rule


def run_points(base: dict[str, Any], points: list[GridPoint], out: Path, jobs: int = 1, log=print,
               population: bool = True) -> list[Path]:
    """``run_grid`` over ``points`` with ``jobs`` worker processes, longest runs first (so the
    cores stay busy to the end); returns the run directories in the order of ``points``.

    ``population``: each group's unfinished seeds train as one population (``run_grid``), one
    process per group; False: every run on its own (the log says which)."""
    order = sorted(range(len(points)), key=lambda i: -_cost(base, points[i]))
    if not population and len(points) > 1:
        log(f"separate runs (populations switched off): {len(points)} runs")
    dirs = run_grid(base, [points[i] for i in order], out, log=log, jobs=jobs, population=population)
    by_index = dict(zip(order, dirs, strict=True))
    return [by_index[i] for i in range(len(points))]


def _cost(base: dict[str, Any], point: GridPoint) -> float:
    """Relative cost of a run: steps × method weight (measured: reverse 1.4, forward 1, backprop 0.7)."""
    over = dict(point.overrides)
    steps = over.get("run.steps", base["run"]["steps"])
    if over.get("method.name") == "backprop":
        return 0.7 * steps
    return (1.4 if over.get("method.direction") == "reverse" else 1.0) * steps


def _plan(spec: SuiteSpec, base: dict[str, Any], out: Path, lrs: dict[str, float] | None = None, jobs: int = 1,
          *, seeds_chosen: bool = False) -> list:
    """The suite's runs for its progress bar (``workflows.progress``), in start order. With
    ``--seeds-by-power``, until ``seeds_chosen`` the plan holds the power pilot and the primary
    groups at the cap (``max_seeds``), the most the choice can ask for; after it, the pilot (its work
    stays this session's) and the chosen count."""
    grid, steps = sorted(spec.lr_grid, reverse=True), base["run"]["steps"]
    chains = [[(out / "pilot" / m / p.name, p, UNPROBED) for p in (pilot_points(spec, lr, m) for lr in grid)]
              for m in ([] if spec.lr is not None else PRIMARY)]
    pilots = [x for i in range(len(grid)) for c in chains for x in c[i:i + 1] if lrs is None or x[0].is_dir()]  # side by side
    if spec.seeds_by_power:  # then the power pilot (names by the chosen η_0: placeholders until it is known)
        from zerolock_theory.app.workflows.power import pilot_points as power_points
        from zerolock_theory.app.workflows.power import with_seed_count

        pilots += [(out / "power_pilot" / p.name, p, UNPROBED)
                   for p in power_points(spec, lrs or dict.fromkeys(PRIMARY, grid[0]))]
        spec = spec if seeds_chosen else with_seed_count(spec, spec.max_seeds)
    runs = [(out / "runs" / p.name, p, 1.0) for p in sorted(suite_points(spec, lrs), key=lambda p: -_cost(base, p))]  # then
    bare = {**base, "probes": {}}  # the pilots run without probes (choose_lr)

    def planned(run_dir: Path, point: GridPoint, weight: float) -> PlannedRun:
        n = dict(point.overrides).get("run.steps", steps)
        raw = apply_values(bare if weight == UNPROBED else base, dict(point.overrides))
        return PlannedRun(run_dir, n, weight * _cost(base, point) / n, extras=step_extras(raw))

    return [r for part in (pilots, runs) for r in starting([planned(*x) for x in part], jobs)]




def _seeds_by_power(spec: SuiteSpec, base: dict[str, Any], lrs: dict[str, float], out: Path, resumed: bool,
                    jobs: int, population: bool, log) -> tuple[SuiteSpec, dict[str, Any]]:
    """The suite with the seed count its power pilot chose (``workflows.power``), and the choice as
    ``verify.json`` keeps it. A resumed suite keeps the choice it made (the pilot is not read again)."""
    from zerolock_theory.app.workflows.power import PowerChoice, seeds_by_power

    saved = json.loads((out / MARKER).read_text()).get("seeds_by_power") if resumed and (out / MARKER).is_file() else None
    if saved:
        choice = PowerChoice(**{k: saved[k] for k in ("rows", "max_seeds", "chosen", "pilot")})
        chosen = dataclasses.replace(spec, seeds=tuple(saved["seeds"]))
        log(f"seeds by power (chosen before): {choice.sentence()}")
    else:
        log(f"seeds by power: a pilot of {spec.power_pilot_seeds} seeds per rate row, trained under "
            f"{out / 'power_pilot'} (never part of a verdict) ...")
        chosen, choice = seeds_by_power(spec, base, lrs, out / "power_pilot", log=log, run=lambda b, points, where: (
            run_points(b, points, where, jobs=jobs, log=log, population=population)))
    return chosen, {**choice.to_dict(), "seeds": list(chosen.seeds), "sentence": choice.sentence()}


def _scope_settings(spec: SuiteSpec, lrs: dict[str, float], pilot: list[dict[str, Any]], model: str,
                    power: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the report's scope line needs beyond the runs: the suite's name, η_0 and how it was chosen,
    and the seed count when a power pilot chose it."""
    kind = spec.name or ("--quick (smoke test)" if spec.smoke else "full")
    how = "fixed" if not pilot else f"by pilot: {spec.pilot_backoff:g} x largest stable of {sorted(spec.lr_grid)}"
    failed = sorted({row["method"] for row in pilot if row["why"].startswith("none qualified")})
    how += f"; none qualified for {', '.join(failed)}" if failed else ""
    etas = ", ".join(f"{k} {v:g}" for k, v in lrs.items())
    from zerolock_theory.models import model_display_name

    size = ("embedded Llama, 8 layers, d=128, V=4096, 2.6M parameters" if model == "embedded"
            else model_display_name(model))
    seeds = f"; {power['sentence']}" if power else ""
    return {"suite": f"{kind}; eta_0: {etas} ({how}){seeds}; the rate reads G-hat_t's level over (T/20, T] of each run "
                     "in four blocks of equal width in log T (the first twentieth skips the LoRA warm-up from B = 0) "
                     "and over its last half in linear time (four tails), and each fall word names the T from which "
                     "a floor is not excluded", "pilot": pilot,
            "model_size": f"{size}; LoRA adapters trained", **({"seeds_by_power": power} if power else {})}


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
        configs = sorted(Path(path).glob("*/config.json")) or sorted(Path(path).glob("*/*/config.json"))  # a factorial
        other = next((json.loads(c.read_text()).get("model", {}).get("path") for c in configs), None)
        if other is not None and str(other) != model:
            raise ValueError(f"--with {path}: its runs train model {other!r}, this suite's runs {model!r}")
    settings = _scope_settings(spec, saved.get("lr", {}), saved.get("pilot", []), model, saved.get("seeds_by_power"))
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
    population: bool = True,
) -> VerifyResult:
    """Run the suite under ``out/runs``, analyse into ``out/analysis``, report into ``out/report``.

    ``jobs``: runs (or populations) trained at once (each with one thread; 2 on a 2-core machine).
    ``population``: each group's seeds train as one population (``run_points``); False: run by run.
    ``tables``: run-config tables merged on top of ``base_config`` (a verify recipe's
    [model], [data], ... and its ``--set``; see ``workflows.verify_config``).
    """

    from zerolock_theory.app.workflows.side_runs import fixed_points_beside, memory_runs, tuned_runs

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
    with contextlib.ExitStack() as side:  # the fixed points' process, if any, ends with the block
        try:
            if spec.lr is None:
                progress.announce("pilot", say)
                lrs, pilot = choose_lr(spec, base, out / "pilot", log=say, jobs=jobs)
                say(f"pilot: eta_0 = {lrs} (per method, {spec.pilot_backoff:g} x the largest of {sorted(spec.lr_grid)} "
                    "whose pilot is stable on its own held-out objective; see verify.json)")
            else:
                lrs, pilot = dict.fromkeys(PRIMARY, spec.lr), []
            given, power = spec, None
            if spec.seeds_by_power:
                progress.plan(_plan(spec, base, out, lrs, jobs))  # the power pilot's names, now that η_0 is known
                spec, power = _seeds_by_power(spec, base, lrs, out, resumed, jobs, population, say)
            (out / MARKER).write_text(json.dumps({"spec": asdict(given), "base": base, "lr": lrs, "pilot": pilot,
                                                  **({"seeds_by_power": power} if power else {})}, indent=2))
            reached("pilot")  # a test's kill point (workflows.kill_point)
            progress.plan(_plan(spec, base, out, lrs, jobs, seeds_chosen=True))
            progress.announce("runs", say)
            # with --jobs >= 2 the fixed points start now, in a process of their own beside the runs
            fixed_points_done = side.enter_context(fixed_points_beside(spec, base, out / "fixed_point", jobs, log=log))
            if jobs >= 2 and spec.memory_stages:  # the memory runs' fork server imports beside the runs, not after
                from zerolock_theory.pipeline.launch import warm_fork_server

                warm_fork_server()
            run_dirs = sorted(run_points(base, suite_points(spec, lrs), out / "runs", jobs=jobs, log=say,
                                         population=population))  # as --reanalyze reads them
        finally:
            progress.close()
        log(progress.summary())  # the bar plans the training runs; the side runs follow, each one line
        fixed = fixed_points_done()
    systems = memory_runs(spec, base, out / "systems", log=log)
    tuned = tuned_runs(spec, base, out / "tuned", log=log)
    reached("analysis")
    log("analysing ...")
    result = _analyse_and_report(out, run_dirs, [*run_dirs, *fixed, *([tuned] if tuned else [])], systems,
                                 _scope_settings(spec, lrs, pilot, model, power), started)
    record_seconds(out, result.seconds)
    return result


def record_seconds(out: Path, seconds: float) -> None:
    """Record in ``verify.json`` the wall time of the invocation that finished the suite (a resumed
    suite: its last part only; the page that publishes it says so)."""
    marker = Path(out) / MARKER
    saved = json.loads(marker.read_text())
    saved["seconds"] = float(seconds)
    marker.write_text(json.dumps(saved, indent=2))


def recorded_seconds(out: Path) -> float | None:
    """The wall time ``record_seconds`` left in ``verify.json``, or None (an older suite)."""
    marker = Path(out) / MARKER
    if not marker.is_file():
        return None
    value = json.loads(marker.read_text()).get("seconds")
    return None if value is None else float(value)
