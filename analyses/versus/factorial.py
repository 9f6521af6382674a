"""Why ZeroLock falls behind backprop: the factorial of method controls (docs/DIAGNOSIS.md).

A factorial directory holds one ``zerolock tune`` directory per control (``zerolock_theory/recipes/
diagnosis/``): backprop, plain ZeroLock forward (α = ½), and the settings that each remove one
suspected cause. A control is recognised by its runs' method settings (``control_of``), never by its
directory's name, so a renamed or reordered directory reads the same.

For each control at the η_0 its validation split chose (``analyses.versus.tuning.select``): the
test CE at the budget over the seeds run at that η_0, and the paired differences (same seeds) to
backprop and to plain ZeroLock, each a t-interval over seeds with its two-sided t-test p; Holm over
every difference of the table. Then each registered prediction (``PREDICTIONS``) reads
"supported", "refuted" or "undecided" from its own contrast's interval, and each mechanism takes
the reading of its decisive prediction. A prediction whose thresholds were written after some
results had been seen says so (``Prediction.written``): the report prints it beside the reading.

How a contrast is read (``_read``; docs/breaks/factorial.md holds the constructions that shaped it):

* a difference of test CE: its t-interval over the paired seeds;
* a share of the gap, (plain − control)/(plain − backprop): Fieller's interval of the ratio of the
  two seed means, never a mean of per-seed ratios (one seed whose gap is near 0, or whose backprop
  run blew up, would decide that). Without a gap, an interval of plain − backprop above 0, there
  is nothing to share: "not testable";
* "not testable" too with fewer than ``MIN_PAIRED`` paired seeds, or when a control of the contrast
  chose its η_0 on its grid's edge (the control's best may lie beyond);
* the decisive predictions, one per mechanism, are read at the Bonferroni level
  1 − (1 − level)/m over their m contrasts, so that all four mechanisms at their thresholds read a
  decided word in at most 1 − level of factorials; the others at ``level``;
* an interval end within ``TOLERANCE`` of the threshold touches it.

A second reading of the shares, against a **stable backprop** (``stable_choice``), is added when
backprop's chosen η_0 is unstable: some run at it ended at a test CE that is not finite or not below
its start, the test CE at ω⁰ (the run's own ``test_initial``; without one, the start the other
backprop runs recorded, the same split and model; with none recorded anywhere, finiteness alone
decides). The reference is then the stable η_0 (every run there stable) of least mean validation CE
over the grid seeds; the shares are read from it by the same rule, and two more checks from
docs/breaks/stable_backprop.md:

* **the stability edge**: when the next larger η_0 of the grid is unstable, a better stable backprop
  may lie between the two, and against a worse backprop a share only grows. So "refuted" stands,
  but "supported" stands only if the share is also supported against the stable η_0's runs moved
  by the mean difference (when negative) of that unstable η_0's stable runs (the runs that did not
  fall off) to them on their common seeds; otherwise it reads "undecided", with the reason;
* **how many runs say "stable"**: the reading carries the count (``stable_runs``); 0 failures in n
  runs leaves a failure rate up to 1 − 0.05^(1/n) not excluded at 95% (63% at n = 3).

It was registered after backprop's diverged SmolLM2 seed had been seen (``STABLE_WRITTEN``); a
mechanism keeps its registered reading.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from analyses.results import Interval, Result, declare, register
from analyses.stats.multiplicity import multiplicity, t_test_p
from analyses.stats.seeds import seed_interval
from analyses.versus.tuning import Selection, TunedRun, load_tuned, select

__all__ = [
    "ALIGNMENT_FILE", "alignment_file", "CONTROLS", "FACTORIAL", "AlignmentPoint", "alignment_along", "MECHANISMS", "PREDICTIONS", "Control", "ControlRow", "Factorial", "Prediction",
    "PredictionReading", "STABLE_WRITTEN", "analyze_factorial", "control_of", "factorial", "is_factorial_dir",
    "StableChoice", "is_stable", "load_factorial", "stable_choice",
]

BACKPROP, PLAIN = "backprop", "plain"
READINGS = ("supported", "refuted", "undecided", "not testable", "not run")
MIN_PAIRED = 3
"""Paired seeds a prediction's contrast needs."""
TOLERANCE = 1e-9
"""An interval end this close to the threshold (relative, at least absolute) touches it."""


@dataclass(frozen=True)
class Control:
    """One cell of the factorial: its name, its label in tables, and the mechanism it tests."""

    name: str
    label: str
    tests: str  # the mechanism (``MECHANISMS``) it was added for; "" for the two references


CONTROLS: tuple[Control, ...] = (
    Control(BACKPROP, "backprop", ""),
    Control(PLAIN, "ZeroLock forward, α = ½", ""),
    Control("alpha_out", "α = ½, 1 on the output chunk", "M1"),
    Control("frozen", "chunks 1…K−1 frozen, output α = 1 (the detached floor)", "M2"),
    Control("alpha_one", "α = 1 on every chunk", "M1"),
    Control("twin_half", "un-detached twin, α = ½", "M3"),
    Control("twin_one", "un-detached twin, α = 1", "M3"),
    Control("p0_uniform", "p_0 uniform", "M4"),
)
_BY_NAME = {c.name: c for c in CONTROLS}

MECHANISMS: dict[str, str] = {
    "M1": "the output chunk's teacher p_{K−1}",
    "M2": "the early chunks' local objectives (the frozen head reading mid-depth states)",
    "M3": "detaching: no gradient crosses a chunk boundary",
    "M4": "p_0 copies the input token",
    "M5": "the step size",
}


def control_of(method: dict, chunks: int) -> str | None:
    """The control (``CONTROLS``) a run's ``method`` settings at K = ``chunks`` make; None for none.

    Only ZeroLock forward without smoothing (ε = 0) and backprop are cells of the factorial."""
    if method.get("name") == "backprop":
        return BACKPROP
    if method.get("direction", "forward") != "forward" or float(method.get("epsilon", 0.0) or 0.0) != 0.0:
        return None
    raw = method.get("alpha", 0.5)
    alphas = [float(a) for a in raw] if isinstance(raw, list) else [float(raw)] * chunks
    if len(alphas) != chunks:
        return None
    frozen = sorted(int(k) for k in method.get("frozen_chunks") or [])
    detach = bool(method.get("detach", True))
    p0 = method.get("p0", "embedding")
    if method.get("loss_weights") not in (None, []):
        return None
    early, last = alphas[:-1], alphas[-1]
    if frozen:
        return "frozen" if frozen == list(range(1, chunks)) and last == 1.0 and detach and p0 == "embedding" else None
    if p0 == "uniform":
        return "p0_uniform" if all(a == 0.5 for a in alphas) and detach else None
    if p0 != "embedding":
        return None
    if all(a == 0.5 for a in alphas):
        return PLAIN if detach else "twin_half"
    if all(a == 1.0 for a in alphas):
        return "alpha_one" if detach else "twin_one"
    if all(a == 0.5 for a in early) and last == 1.0 and detach:
        return "alpha_out"
    return None


@dataclass(frozen=True)
class Prediction:
    """A registered prediction: if ``mechanism`` is the cause, ``contrast`` (a per-seed difference of
    test CE, in nats, or a share of the gap to backprop) lies on ``side`` of ``threshold``."""

    mechanism: str
    text: str
    contrast: str  # a key of ``CONTRASTS``
    side: str  # "above" or "below"
    threshold: float
    decisive: bool
    written: str  # when the thresholds were written, and what had been seen then


_AFTER_EMBEDDED = "2026-12-06, after the embedded factorial's results, before SmolLM2's"


def _gain(control: str) -> Callable[[dict[str, dict[int, float]], int], float]:
    """Plain ZeroLock's test CE minus ``control``'s (nats): what removing the control's cause gains."""
    return lambda t, s: t[PLAIN][s] - t[control][s]


def _share(control: str) -> Callable[[dict[str, dict[int, float]], int], float]:
    """The gain of ``control`` as a share of the seed's gap, plain − backprop."""
    return lambda t, s: (t[PLAIN][s] - t[control][s]) / (t[PLAIN][s] - t[BACKPROP][s])


SHARES: dict[str, str] = {"share_alpha_out": "alpha_out", "share_twin_half": "twin_half"}
"""The share contrasts and their control: read by Fieller's interval of a ratio of means (``_read``)."""

CONTRASTS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, dict[int, float]], int], float]]] = {
    "share_alpha_out": ((PLAIN, BACKPROP, "alpha_out"), _share("alpha_out")),
    "share_twin_half": ((PLAIN, BACKPROP, "twin_half"), _share("twin_half")),
    "gain_alpha_one": ((PLAIN, "alpha_one"), _gain("alpha_one")),
    "gain_p0_uniform": ((PLAIN, "p0_uniform"), _gain("p0_uniform")),
    "frozen_minus_alpha_out": (("frozen", "alpha_out"), lambda t, s: t["frozen"][s] - t["alpha_out"][s]),
    "twin_one_minus_twin_half": (("twin_one", "twin_half"), lambda t, s: t["twin_one"][s] - t["twin_half"][s]),
    "twin_one_minus_alpha_one": (("twin_one", "alpha_one"), lambda t, s: t["twin_one"][s] - t["alpha_one"][s]),
}

PREDICTIONS: tuple[Prediction, ...] = (
    Prediction("M1", "α = 1 on the output chunk alone closes most (> ½) of the gap to backprop",
               "share_alpha_out", "above", 0.5, True, _AFTER_EMBEDDED),
    Prediction("M1", "α = 1 everywhere is better than α = ½", "gain_alpha_one", "above", 0.0, False, _AFTER_EMBEDDED),
    Prediction("M1", "the twin at α = 1 is better than the twin at α = ½", "twin_one_minus_twin_half", "below", 0.0,
               False, _AFTER_EMBEDDED),
    Prediction("M2", "freezing the early chunks is better than the α-per-chunk control", "frozen_minus_alpha_out",
               "below", 0.0, True, _AFTER_EMBEDDED),
    Prediction("M2", "the twin at α = 1 is better than ZeroLock at α = 1 (deep supervision)",
               "twin_one_minus_alpha_one", "below", 0.0, False, _AFTER_EMBEDDED),
    Prediction("M3", "the un-detached twin at α = ½ closes most (> ½) of the gap to backprop", "share_twin_half",
               "above", 0.5, True, _AFTER_EMBEDDED),
    Prediction("M4", "p_0 uniform gains more than 0.05 nats over plain ZeroLock", "gain_p0_uniform", "above", 0.05,
               True, _AFTER_EMBEDDED),
)


STABLE_WRITTEN = ("2026-12-07 04:06, after backprop's diverged SmolLM2 seed and alpha_out's SmolLM2 results had been "
                  "seen, before any twin_half run had ended; its checks of the stability edge and of a missing start "
                  "at 04:38, after two twin_half grid runs had ended (η_0 0.0125 and 0.00625, seed 0)")


def _start(runs: list[TunedRun]) -> float:
    """The start (test CE at ω⁰) the runs recorded: their median; NaN when none did."""
    starts = [r.data.test_initial for r in runs if r.data is not None and math.isfinite(r.data.test_initial)]
    return float(np.median(starts)) if starts else math.nan


def is_stable(run: TunedRun, start: float = math.nan) -> bool:
    """The run ended at a finite test CE below its start: its own ``test_initial``, else ``start`` (its
    tune's); with neither, a finite test CE is stable."""
    own = run.data.test_initial if run.data is not None else math.nan
    start = own if math.isfinite(own) else start
    return math.isfinite(run.test) and (not math.isfinite(start) or run.test < start)


@dataclass(frozen=True)
class StableChoice:
    """Backprop's stable reference (``stable_choice``)."""

    selection: Selection  # ``lr`` the stable η_0; ``scores`` over the whole grid (``on_boundary``: its edge)
    by_seed: dict[int, float]  # test CE per seed at ``selection.lr``
    runs: int  # runs at ``selection.lr``, every one stable
    above: float | None  # the next larger η_0 of the grid when it is unstable (the stability edge)
    above_by_seed: dict[int, float]  # that η_0's stable runs, per seed


def stable_choice(runs: list[TunedRun], chosen: Selection) -> StableChoice | None:
    """Backprop's stable reference (module docstring) when its ``chosen`` η_0 is unstable: the stable η_0
    of least mean validation CE over ``chosen``'s grid seeds; None when the chosen η_0 is stable or no
    η_0 is."""
    start = _start(runs)
    by_lr: dict[float, list[TunedRun]] = {}
    for r in runs:
        by_lr.setdefault(r.lr, []).append(r)
    if all(is_stable(r, start) for r in by_lr.get(chosen.lr, [])):
        return None
    stable = [lr for lr, rs in by_lr.items() if lr in chosen.scores and all(is_stable(r, start) for r in rs)]
    if not stable:
        return None
    lr = min(stable, key=lambda x: (chosen.scores[x], x))
    above = min((x for x in chosen.scores if x > lr), default=None)
    if above is not None and above in stable:
        above = None
    kept = {r.seed: r.test for r in by_lr.get(above, []) if is_stable(r, start)} if above is not None else {}
    return StableChoice(dataclasses.replace(chosen, lr=lr), {r.seed: r.test for r in by_lr[lr]}, len(by_lr[lr]),
                        above, kept)


@dataclass(frozen=True)
class ControlRow:
    """One control at its chosen η_0: test CE and its paired differences, with Holm over the table."""

    control: str
    label: str
    lr: float
    on_boundary: bool
    scores: dict[float, float]  # validation CE per η_0 of the grid (mean over the grid seeds)
    test_by_seed: dict[int, float]
    test: Interval | None
    minus_backprop: Interval | None
    minus_plain: Interval | None
    p_backprop: float | None
    p_plain: float | None
    holm_backprop: float | None  # Holm-adjusted p over every difference of the table
    holm_plain: float | None


@dataclass(frozen=True)
class PredictionReading:
    """One prediction's contrast over the paired seeds, and what its interval reads."""

    mechanism: str
    text: str
    contrast: str
    side: str
    threshold: float
    decisive: bool
    written: str
    estimate: Interval | None
    seeds: tuple[int, ...]
    reading: str  # ``READINGS``
    reason: str = ""  # why "not testable" or "not run"
    level: float = 0.95  # the interval's level (Bonferroni for the decisive predictions)


@dataclass(frozen=True)
class AlignmentPoint:
    """The alignment probe after ``step`` training steps: cos(g_out, g_ZL) of one chunk (0: all chunks)."""

    step: int
    chunk: int
    cosine: Interval | None
    seeds: int
    control: str = PLAIN  # the control (``CONTROLS``) whose run and step these are
    lr: float | None = None  # η_0 of that run (its ``optim.lr``), when recorded


ALIGNMENT_FILE = "alignment.json"
"""In a factorial directory: ``scripts/alignment.py --after-steps ... --json`` of plain ZeroLock (optional);
``alignment_<control>.json`` (``alignment_file``) the same for another control."""


def alignment_file(control: str) -> str:
    """The file name of ``control``'s alignment along its run in a factorial directory."""
    return ALIGNMENT_FILE if control == PLAIN else f"alignment_{control}.json"


def alignment_along(data: dict, level: float = 0.95, control: str = PLAIN) -> tuple[AlignmentPoint, ...]:
    """Per step and chunk the seeds' cosine between the output CE's gradient and ZeroLock's step
    (``inner / (norm_step · norm_out)``), and over all chunks (chunk 0: the inner products summed over
    the norms of the concatenated gradients), each a t-interval over seeds; ``control`` names the run."""
    lr = (data.get("config") or {}).get("optim", {}).get("lr")
    lr = None if lr is None else float(lr)
    out = []
    for step, seeds in sorted(data.get("after_steps", {}).items(), key=lambda kv: int(kv[0])):
        by_chunk: dict[int, list[float]] = {}
        for seed in seeds:
            chunks = seed["chunks"]
            for c in chunks:
                by_chunk.setdefault(int(c["chunk"]), []).append(c["inner"] / (c["norm_step"] * c["norm_out"]))
            inner = sum(c["inner"] for c in chunks)
            norm = math.sqrt(sum(c["norm_step"] ** 2 for c in chunks)) * math.sqrt(sum(c["norm_out"] ** 2 for c in chunks))
            by_chunk.setdefault(0, []).append(inner / norm)
        out += [AlignmentPoint(int(step), k, _interval(v, level), len(v), control, lr) for k, v in sorted(by_chunk.items())]
    return tuple(out)


@register
@dataclass(frozen=True)
class Factorial(Result):
    """The factorial table, the predictions' readings and each mechanism's (module docstring)."""

    kind = "versus_factorial"

    model: str
    chunks: int
    steps: int
    level: float
    rows: tuple[ControlRow, ...]
    missing: dict[str, str]  # control -> why it has no row (not run, unfinished)
    predictions: tuple[PredictionReading, ...]
    mechanisms: dict[str, str]  # mechanism -> reading of its decisive prediction ("not tested" for M5)
    all_interior: bool  # every control's η_0 is interior to its grid
    alignment: tuple[AlignmentPoint, ...] = ()  # each control's alignment along its run (``alignment_file``), when given
    stable_lr: float | None = None  # backprop's stable η_0 (``stable_choice``), when its chosen one is unstable
    stable_on_boundary: bool = False  # that η_0 is on backprop's grid's edge
    stable_readings: tuple[PredictionReading, ...] = ()  # the share predictions read against it
    stable_runs: int = 0  # the runs at ``stable_lr``, every one stable
    stable_above: float | None = None  # the unstable η_0 just above ``stable_lr`` (the stability edge), if any

    def row(self, control: str) -> ControlRow | None:
        return next((r for r in self.rows if r.control == control), None)


FACTORIAL = declare("versus_factorial", Factorial, builtin=True)


def _config(run: TunedRun) -> dict:
    return json.loads((Path(run.path) / "config.json").read_text()) if run.path is not None else {}


def is_factorial_dir(path: Path) -> bool:
    """A directory of ``zerolock tune`` directories (no run or tune file of its own)."""
    path = Path(path)
    return (path.is_dir() and not (path / "metrics.jsonl").exists() and not (path / "tune.json").exists()
            and any((d / "tune.json").is_file() for d in path.iterdir() if d.is_dir()))


def load_factorial(path: str | Path) -> dict[str, list[TunedRun]]:
    """The runs of each control under a factorial directory; ``ValueError`` when two tune directories
    make the same control, or one mixes controls."""
    found: dict[str, list[TunedRun]] = {}
    where: dict[str, Path] = {}
    for tune in sorted(d for d in Path(path).iterdir() if (d / "tune.json").is_file()):
        runs = [r for r in load_tuned(tune) if r.path is not None]
        configs = [_config(r) for r in runs]  # each run's config.json read once
        controls = {control_of(c["method"], int(c["model"]["chunks"])) for c in configs}
        controls.discard(None)
        if len(controls) > 1:
            raise ValueError(f"{tune}: its runs make several controls {sorted(controls)}")
        if not controls:
            continue
        name = controls.pop()
        if name in found:
            raise ValueError(f"{tune} and {where[name]} both hold the control {name!r}")
        found[name], where[name] = runs, tune
    return found


def analyze_factorial(path: str | Path, level: float = 0.95) -> Factorial:
    """``factorial`` of a factorial directory, with the model and K its runs' configs name."""
    by_control = load_factorial(path)
    first = next((r for runs in by_control.values() for r in runs), None)
    config = _config(first) if first is not None else {}
    result = factorial(by_control, level, model=str(config.get("model", {}).get("path", "")),
                       chunks=int(config.get("model", {}).get("chunks", 0)))
    points: list[AlignmentPoint] = []
    for control in CONTROLS:
        file = Path(path) / alignment_file(control.name)
        if control.name == BACKPROP or not file.is_file():
            continue
        try:
            data = json.loads(file.read_text())
            made = control_of(data["config"]["method"], int(data["config"]["model"]["chunks"]))
            if made != control.name:
                raise ValueError(f"its runs are the control {made!r}, not {control.name!r}")
            points += alignment_along(data, level, control.name)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise ValueError(f"{file}: not the scripts/alignment.py --json of {control.label} ({exc})") from exc
    return dataclasses.replace(result, alignment=tuple(points)) if points else result


def _interval(values: list[float], level: float) -> Interval | None:
    return seed_interval(values, level, min_seeds=2)


def _reading(iv: Interval, side: str, threshold: float) -> str:
    tol = TOLERANCE * max(1.0, abs(threshold))
    above, below = iv.low > threshold + tol, iv.high < threshold - tol
    if side == "above":
        return "supported" if above else "refuted" if below else "undecided"
    return "supported" if below else "refuted" if above else "undecided"


def _fieller(top: list[float], bottom: list[float], level: float) -> Interval | None:
    """Fieller's interval of mean(top)/mean(bottom) over paired seeds; None unless mean(bottom) is
    above 0 at ``level`` (then the set is a bounded interval)."""
    a, b = np.asarray(top, dtype=float), np.asarray(bottom, dtype=float)
    n = a.size
    m1, m2 = float(a.mean()), float(b.mean())
    cov = np.cov(np.vstack([a, b]), ddof=1)
    q = float(stats.t.ppf(0.5 + level / 2.0, df=n - 1)) ** 2 / n
    qa, qb, qc = m2 * m2 - q * cov[1, 1], -2.0 * (m1 * m2 - q * cov[0, 1]), m1 * m1 - q * cov[0, 0]
    if m2 <= 0 or qa <= 0:
        return None
    root = math.sqrt(max(qb * qb - 4.0 * qa * qc, 0.0))
    return Interval(m1 / m2, (-qb - root) / (2.0 * qa), (-qb + root) / (2.0 * qa), level)


def _read(p: Prediction, tests: dict[str, dict[int, float]], edges: set[str], level: float
          ) -> tuple[Interval | None, tuple[int, ...], str, str]:
    """A prediction's interval, paired seeds, reading and reason (module docstring)."""
    needs, fn = CONTRASTS[p.contrast]
    if not all(n in tests for n in needs):
        return None, (), "not run", "a control of its contrast has no row"
    seeds = tuple(sorted(set.intersection(*(set(tests[n]) for n in needs))))
    on_edge = sorted(n for n in needs if n in edges)
    if on_edge:
        return None, seeds, "not testable", f"{', '.join(on_edge)} chose η_0 on its grid's edge"
    if len(seeds) < MIN_PAIRED:
        return None, seeds, "not testable", f"{len(seeds)} paired seeds ({MIN_PAIRED} needed)"
    if p.contrast in SHARES:
        control = SHARES[p.contrast]
        gap = [tests[PLAIN][s] - tests[BACKPROP][s] for s in seeds]
        iv = _fieller([tests[PLAIN][s] - tests[control][s] for s in seeds], gap, level)
        if iv is None:
            return None, seeds, "not testable", f"no gap to share: plain − backprop {_interval(gap, level)}"
    else:
        iv = _interval([fn(tests, s) for s in seeds], level)
    return iv, seeds, _reading(iv, p.side, p.threshold), ""


def _at_the_edge(reading: PredictionReading, shifted: PredictionReading | None, stable: StableChoice,
                 shift: float) -> PredictionReading:
    """A "supported" share against a stable η_0 just below an unstable one stands only if it is also
    supported against the stable η_0's runs moved by ``shift``, the mean difference of the unstable
    η_0's stable runs to them on their common seeds (``shifted``; None without a common seed)."""
    if reading.reading != "supported" or (shifted is not None and shifted.reading == "supported"):
        return reading
    if shifted is None:
        why = f"{stable.above:g} has no stable run on a seed {stable.selection.lr:g} ran"
    else:
        why = f"moved by {stable.above:g}'s stable runs ({shift:+.3g} nats) it reads {shifted.reading}"
        why += f": {shifted.reason}" if shifted.reason else ""
    return dataclasses.replace(reading, reading="undecided", reason=(
        f"supported against {stable.selection.lr:g}, which sits below the unstable {stable.above:g}; {why}"))


def _read_all(predictions, tests: dict[str, dict[int, float]], edges: set[str], levels: tuple[float, float],
              written: str = "") -> tuple[PredictionReading, ...]:
    """Each prediction read by ``_read``, the decisive ones at ``levels[0]``, the others at ``levels[1]``."""
    out = []
    for p in predictions:
        at = levels[0] if p.decisive else levels[1]
        iv, seeds, reading, reason = _read(p, tests, edges, at)
        out.append(PredictionReading(p.mechanism, p.text, p.contrast, p.side, p.threshold, p.decisive,
                                     written or p.written, iv, seeds, reading, reason, at))
    return tuple(out)


def _second_reading(stable: StableChoice, tests: dict[str, dict[int, float]], edges: set[str],
                    levels: tuple[float, float]) -> tuple[PredictionReading, ...]:
    """The shares read against the stable backprop, bracketed at the stability edge (module docstring)."""
    shares = [p for p in PREDICTIONS if p.contrast in SHARES]
    edges = (edges - {BACKPROP}) | ({BACKPROP} if stable.selection.on_boundary else set())
    readings = _read_all(shares, {**tests, BACKPROP: stable.by_seed}, edges, levels, STABLE_WRITTEN)
    if stable.above is None:
        return readings
    common = sorted(set(stable.above_by_seed) & set(stable.by_seed))
    if not common:
        return tuple(_at_the_edge(r, None, stable, 0.0) for r in readings)
    shift = min(0.0, float(np.mean([stable.above_by_seed[s] - stable.by_seed[s] for s in common])))
    moved = {s: v + shift for s, v in stable.by_seed.items()}
    beyond = _read_all(shares, {**tests, BACKPROP: moved}, edges, levels, STABLE_WRITTEN)
    return tuple(_at_the_edge(r, b, stable, shift) for r, b in zip(readings, beyond, strict=True))


def factorial(by_control: dict[str, list[TunedRun]], level: float = 0.95, *, model: str = "", chunks: int = 0
              ) -> Factorial:
    """The table and the readings (module docstring) from the runs of each control (``load_factorial``)."""
    rows, missing, tests = [], {}, {}
    unknown = sorted(set(by_control) - set(_BY_NAME))
    if unknown:
        raise ValueError(f"not controls of the factorial: {unknown}")
    for control in CONTROLS:
        runs = by_control.get(control.name, [])
        if not runs:
            missing[control.name] = "not run"
            continue
        for run in runs:  # a run with its config on disk must make the control it is filed under
            config = _config(run)
            made = control_of(config["method"], int(config["model"]["chunks"])) if config else control.name
            if made != control.name:
                raise ValueError(f"{run.path}: its settings make the control {made!r}, filed as {control.name!r}")
        method = runs[0].method
        try:
            chosen = select(runs, method)
        except ValueError as exc:
            missing[control.name] = str(exc)
            continue
        by_seed = {r.seed: r.test for r in runs if r.lr == chosen.lr and math.isfinite(r.test)}
        tests[control.name] = (chosen, by_seed)
    ps: list[float | None] = []
    cells = []
    for name, (chosen, by_seed) in tests.items():
        diffs = {}
        for ref in (BACKPROP, PLAIN):
            other = tests.get(ref, (None, {}))[1]
            seeds = sorted(set(by_seed) & set(other))
            d = [by_seed[s] - other[s] for s in seeds] if name != ref else []
            diffs[ref] = d
            ps.append(t_test_p(d) if d else None)
        cells.append((name, chosen, by_seed, diffs))
    adjusted = multiplicity(ps, level)
    for i, (name, chosen, by_seed, diffs) in enumerate(cells):
        holm_bp, holm_zl = adjusted[2 * i], adjusted[2 * i + 1]
        rows.append(ControlRow(
            name, _BY_NAME[name].label, chosen.lr, chosen.on_boundary, chosen.scores, by_seed,
            _interval(list(by_seed.values()), level), _interval(diffs[BACKPROP], level), _interval(diffs[PLAIN], level),
            ps[2 * i], ps[2 * i + 1], holm_bp.adjusted if holm_bp else None, holm_zl.adjusted if holm_zl else None))
    by_seed_of = {name: t[1] for name, t in tests.items()}
    edges = {r.control for r in rows if r.on_boundary}
    decisive = 1.0 - (1.0 - level) / max(1, sum(p.decisive for p in PREDICTIONS))
    readings = _read_all(PREDICTIONS, by_seed_of, edges, (decisive, level))
    stable = stable_choice(by_control[BACKPROP], tests[BACKPROP][0]) if BACKPROP in tests else None
    stable_readings = _second_reading(stable, by_seed_of, edges, (decisive, level)) if stable is not None else ()
    mechanisms = {r.mechanism: r.reading for r in readings if r.decisive}
    mechanisms["M5"] = "not tested"
    return Factorial(
        model, chunks, max((r.steps for runs in by_control.values() for r in runs), default=0), level, tuple(rows), missing,
        readings, mechanisms, all(not r.on_boundary for r in rows), (),
        stable.selection.lr if stable else None, bool(stable and stable.selection.on_boundary), stable_readings,
        stable.runs if stable else 0, stable.above if stable else None)
