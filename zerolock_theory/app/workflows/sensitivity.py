"""The sensitivity suite: the short-horizon rows under one setting changed at a time.

A verify recipe whose ``[suite]`` lists ``variants`` (``verify_sensitivity``) runs, for the
default setting and for each variant, the ZeroLock forward (R̄, the implemented CE loss) and
reverse (R, the paper's objective) groups over ``seeds``, at ONE fixed η_0 (``suite.lr``: there
is no pilot, every setting and both directions share it, so a change of outcome is not a change
of step size), each setting under ``out/settings/NAME/runs``. Each setting is analysed on its
own (``analyses.suite.analyze_runs``, saved under ``out/settings/NAME/analysis``); the verdict
tables become the sensitivity map (``analyses.sensitivity``), saved as ``sensitivity.json`` in
``out/analysis`` beside the default setting's analysis; the report (``out/report``) is the
default setting's, with the map.

A variant is ``KEY=VALUE``: a run-config key applied to every run of that setting
(``method.alpha=0.1``, ``method.p0=uniform``, ``model.chunks=2``), or ``suite.FIELD=VALUE`` for
a suite field (``suite.epsilon_reverse=0.01``: ε of the reverse runs only). A run whose config
equals a default run's (the forward runs of an ε variant) is not trained again: the setting reads
the default's run. Keys the suite sets per run (method name, direction, ε, seed, data order,
η_0) are refused. Every variant is parsed and every run's config validated before anything is
written (one-line ``ValueError``). Re-running resumes: ``run_grid`` skips finished runs.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zerolock_theory.app.workflows.kill_point import reached
from zerolock_theory.app.workflows.preflight import check_runs
from zerolock_theory.app.workflows.suite_spec import VARIANTS, SuiteSpec, replicate, suite_base
from zerolock_theory.app.workflows.sweep import GridPoint, validate_grid
from zerolock_theory.app.workflows.verify import (
    MARKER,
    VerifyResult,
    _scope_settings,
    check_out_dir,
    run_points,
)
from zerolock_theory.config_overrides import parse_value

__all__ = ["DIRECTIONS", "SENSITIVITY", "SENSITIVITY_TABLES", "Setting", "plan_settings", "setting_points", "settings_of",
           "verify_sensitivity"]

DIRECTIONS = ("zerolock-forward", "zerolock-reverse")
# set by the suite for each run: a variant of these would be overwritten (or is a suite field)
_PER_RUN = ("method.name", "method.direction", "method.epsilon", "run.seed", "data.order_seed", "optim.lr")
# suite fields a variant may change (those that shape a run, not the suite's size)
_SUITE_FIELDS = ("alpha", "epsilon_reverse", "chunks")


@dataclass(frozen=True)
class Setting:
    """One setting of the map: its directory name, the change from the default (``"default"``
    or the variant's text), its suite spec and the run-config overrides of its runs."""

    name: str
    change: str
    spec: SuiteSpec
    overrides: tuple[tuple[str, Any], ...] = ()


def _parse(text: str, spec: SuiteSpec) -> Setting:
    """One variant ``KEY=VALUE`` as a ``Setting``; one-line ``ValueError`` for a bad one."""
    key, sep, raw = str(text).partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or "." not in key or not raw:
        raise ValueError(f"suite.variants: {text!r} must look like section.key=value (e.g. method.alpha=0.1)")
    value = parse_value(raw)
    name = f"{key.split('.')[-1]}-{raw}".replace("/", "_")
    if key.startswith("suite."):
        field = key.removeprefix("suite.")
        if field not in _SUITE_FIELDS:
            raise ValueError(f"suite.variants: {text!r}: a variant may change suite.{{{', '.join(_SUITE_FIELDS)}}} "
                             "or a run-config key")
        from zerolock_theory.config_types import check_value

        value = check_value(value, typing.get_type_hints(SuiteSpec)[field], key)
        if field == "epsilon_reverse" and not 0 <= value < 1:
            raise ValueError(f"suite.variants: {text!r}: epsilon must lie in [0, 1)")
        return Setting(name, text, dataclasses.replace(spec, **{field: value}))
    if key in _PER_RUN:
        raise ValueError(f"suite.variants: {text!r}: {key} is set by the suite per run "
                         "(use suite.epsilon_reverse=... for the reverse runs' epsilon)")
    return Setting(name, text, spec, ((key, value),))


def settings_of(spec: SuiteSpec) -> list[Setting]:
    """The default setting, then one per variant of ``spec.variants`` (one-line ``ValueError``s)."""
    if spec.lr is None:
        raise ValueError("suite.variants needs a fixed eta_0 (suite.lr): the sensitivity suite runs no pilot")
    base = dataclasses.replace(spec, variants=())
    out = [Setting("default", "default", base)]
    for text in spec.variants:
        out.append(_parse(text, base))
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ValueError(f"suite.variants: two variants give the same setting ({sorted(spec.variants)})")
    return out


def setting_points(setting: Setting) -> list[GridPoint]:
    """The forward and reverse runs of one setting over its seeds at η_0 = ``suite.lr``."""
    spec = setting.spec
    return [GridPoint(f"{label}_lr-{spec.lr:g}_seed-{seed}",
                      (*setting.overrides, *VARIANTS[label](spec), *replicate(seed), ("optim.lr", spec.lr)))
            for label in DIRECTIONS for seed in spec.seeds]


def plan_settings(spec: SuiteSpec, model: str, data: str, device: str, dtype: str, autocast: str | None,
          tables: dict[str, Any] | None) -> list[tuple[Setting, dict[str, Any], list[GridPoint], list[str]]]:
    """Per setting: its base config, its points and their validated configs as JSON (checked here)."""
    plan = []
    for setting in settings_of(spec):
        base = suite_base(setting.spec, model, data, device, dtype, autocast, tables)
        points = setting_points(setting)
        try:
            configs = validate_grid(base, points)
            check_runs([(p.name, c) for p, c in zip(points, configs, strict=True)])  # K, corpus sizes
        except ValueError as exc:
            said = str(exc) if str(exc).startswith(setting.change) else f"{setting.change}: {exc}"
            raise ValueError(f"suite.variants: {said}") from exc
        plan.append((setting, base, points, [json.dumps(c.to_dict(), sort_keys=True, default=str) for c in configs]))
    return plan


def verify_sensitivity(
    spec: SuiteSpec, out: Path, *, model: str = "embedded", data: str = "embedded", device: str = "auto",
    dtype: str = "float32", autocast: str | None = None, overwrite: bool = False, jobs: int = 1,
    tables: dict[str, Any] | None = None, log=print, population: bool = True,
) -> VerifyResult:
    """Run, analyse and report the sensitivity suite (module docstring) under ``out``; ``population``
    as ``verify``'s (a setting's seeds as one population)."""
    from analyses.registry import claims
    from analyses.sensitivity import (
        SENSITIVITY,
        SHORT_HORIZON_ROWS,
        SettingVerdicts,
        sensitivity_map,
    )
    from analyses.suite import analyze_runs
    from reports.page import write_report
    from reports.scope import scope_line
    from zerolock_theory.training.rundir import prepare_kind, write_marker

    out = Path(out)
    check_out_dir(out, overwrite)
    started = time.perf_counter()
    plan = plan_settings(spec, model, data, device, dtype, autocast, tables)  # everything checked before a write
    model = str(plan[0][1]["model"].get("path", model))
    prepare_kind(out, "verify", overwrite=overwrite)
    write_marker(out, "verify")
    (out / MARKER).write_text(json.dumps({"spec": dataclasses.asdict(spec), "lr": spec.lr, "pilot": [],
                                          "settings": [s.change for s, *_ in plan]}, indent=2, default=str))
    default_dirs: dict[str, Path] = {}
    rows, all_dirs, default_suite = [], [], None
    for setting, base, points, configs in plan:
        where = out / "settings" / setting.name
        own = [(p, c) for p, c in zip(points, configs, strict=True) if c not in default_dirs]
        log(f"setting {setting.change}: {len(own)} runs ({len(points) - len(own)} shared with the default)")
        dirs = dict(zip([c for _, c in own], run_points(base, [p for p, _ in own], where / "runs", jobs=jobs, log=log,
                                                                population=population),
                        strict=True)) if own else {}
        run_dirs = [dirs.get(c) or default_dirs[c] for c in configs]
        if setting.change == "default":
            default_dirs = dict(zip(configs, run_dirs, strict=True))
        all_dirs += [d for d in run_dirs if d not in all_dirs]
        log(f"setting {setting.change}: analysing ...")
        suite = analyze_runs(run_dirs)
        shutil.rmtree(where / "analysis", ignore_errors=True)
        suite.save(where / "analysis")
        rows.append(SettingVerdicts(setting.name, setting.change, suite.claims, len(run_dirs)))
        default_suite = default_suite or suite
    reached("analysis")  # a test's kill point (workflows.kill_point)
    found = sensitivity_map(rows, [k for k in SHORT_HORIZON_ROWS if k in {c.key for c in claims()}])
    default_suite.results[SENSITIVITY.name] = found
    lrs = dict.fromkeys(DIRECTIONS, spec.lr)
    default_suite.settings.update(_scope_settings(spec, lrs, [], model))
    default_suite.settings["suite"] = (f"sensitivity: {len(rows)} settings ({', '.join(s.change for s in rows)}), "
                                       f"{len(spec.seeds)} seeds, {spec.steps} steps; eta_0 = {spec.lr:g} "
                                       "fixed for every setting and both directions (no pilot); verdicts: the default")
    for stale in ("analysis", "report"):
        shutil.rmtree(out / stale, ignore_errors=True)
    default_suite.save(out / "analysis")
    files = write_report(default_suite, out / "report")
    log(f"sensitivity map: {found.outcome}" + (f" ({', '.join(found.sensitive)} change)" if found.sensitive else ""))
    return VerifyResult(out, all_dirs, out / "analysis", files.html, files.markdown, default_suite.claims,
                        time.perf_counter() - started, scope_line(default_suite))


# The packaged recipe verify_sensitivity.toml holds the same values (tests/cli/test_verify_sensitivity.py).
SENSITIVITY = SuiteSpec(
    steps=40, seq_len=32, batch_size=8, seeds=(0, 1, 2), lr=0.025, lr_grid=(0.025,), lr_factors=(), eval_every=20,
    probe_positions=32, minimizer_every=1, readout_records=20, scaled_steps=40, random_baseline=True, proof_every=0,
    global_every=0, matched_seeds=0, fixed_point_chunks=(),
    variants=("method.alpha=0.1", "method.alpha=0.9", "suite.epsilon_reverse=0.01", "suite.epsilon_reverse=0.3",
              "model.chunks=2", "model.chunks=8", "method.p0=uniform"))
SENSITIVITY_TABLES = {"probes": {"stability": {"enabled": False}, "gradients": {"enabled": False}}}
