"""The factorial of method controls (analyses.versus.factorial): each control recognised by its
settings, the table's paired differences and Holm, and each prediction's reading on constructions
whose answer is known."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from analyses.versus.data import TunedData
from analyses.versus.factorial import (
    CONTROLS,
    FACTORIAL,
    PREDICTIONS,
    STABLE_WRITTEN,
    Factorial,
    analyze_factorial,
    control_of,
    factorial,
    is_factorial_dir,
    is_stable,
    load_factorial,
)
from analyses.versus.tuning import TunedRun
from zerolock_theory.config import TrainConfig, read_recipe

RECIPES = Path(__file__).resolve().parents[3] / "zerolock_theory" / "recipes" / "diagnosis"
FILE_TO_CONTROL = {"backprop_wide": "backprop"}


def _config(recipe: Path, lr: float, seed: int) -> dict:
    raw = read_recipe(recipe)
    method = raw["tune"]["methods"][0]
    sections = {k: v for k, v in raw.items() if k in ("model", "data", "method", "optim", "run")}
    sections["method"] = {**sections.get("method", {}), "name": "backprop" if method == "backprop" else "zerolock"}
    config = TrainConfig.from_dict(sections).to_dict()
    config["optim"]["lr"], config["run"]["seed"], config["run"]["steps"] = lr, seed, 20
    return config


@pytest.mark.parametrize("recipe", sorted(RECIPES.glob("*.toml")), ids=lambda p: p.stem)
def test_every_diagnosis_recipe_makes_the_control_it_is_named_for(recipe):
    config = _config(recipe, 0.1, 0)
    name = recipe.stem.split("_", 1)[1]
    assert control_of(config["method"], config["model"]["chunks"]) == FILE_TO_CONTROL.get(name, name)


def test_settings_outside_the_factorial_make_no_control():
    assert control_of({"name": "zerolock", "direction": "reverse", "alpha": 0.5, "epsilon": 0.1}, 4) is None
    assert control_of({"name": "zerolock", "alpha": [0.5, 1.0, 0.5, 1.0]}, 4) is None
    assert control_of({"name": "zerolock", "alpha": 0.5, "frozen_chunks": [1]}, 4) is None
    assert control_of({"name": "zerolock", "alpha": [0.5, 0.5, 1.0]}, 4) is None  # K mismatch


def _runs(test_by_control: dict[str, list[float]], lr: float = 0.1) -> dict[str, list[TunedRun]]:
    """Each control run at one η_0 over seeds 0.. with the given test CE (validation = test)."""
    out = {}
    for name, values in test_by_control.items():
        method = "backprop" if name == "backprop" else "zerolock-forward"
        out[name] = [TunedRun(method, lr, s, v, v, 20) for s, v in enumerate(values)]
    return out


NOISE = (0.0, 0.004, -0.004, 0.002, -0.002)


def _cells(**means: float) -> dict[str, list[float]]:
    return {name: [m + NOISE[s] * (1 + i % 3) for s in range(5)] for i, (name, m) in enumerate(means.items())}


def _readings(result: Factorial) -> dict[str, str]:
    return {f"{p.mechanism}:{p.contrast}": p.reading for p in result.predictions}


def test_a_control_that_closes_most_of_the_gap_supports_its_mechanism():
    # gap 0.4; alpha_out closes 0.32 (80%): M1 supported; twin_half closes 0.08 (20%): M3 refuted
    result = factorial(_runs(_cells(backprop=5.0, plain=5.4, alpha_out=5.08, twin_half=5.32)))
    got = _readings(result)
    assert got["M1:share_alpha_out"] == "supported"
    assert got["M3:share_twin_half"] == "refuted"
    assert result.mechanisms["M1"] == "supported" and result.mechanisms["M3"] == "refuted"
    assert got["M2:frozen_minus_alpha_out"] == "not run" and result.mechanisms["M2"] == "not run"
    assert result.mechanisms["M5"] == "not tested"
    assert set(result.missing) == {"frozen", "alpha_one", "twin_one", "p0_uniform"}


def test_a_contrast_whose_interval_holds_its_threshold_is_undecided():
    # p0 uniform gains exactly the registered 0.05 nats, with noise: the interval straddles it
    result = factorial(_runs({"backprop": [5.0] * 5, "plain": [5.4] * 5,
                              "p0_uniform": [5.35 + d for d in (0.03, -0.03, 0.02, -0.02, 0.0)]}))
    assert _readings(result)["M4:gain_p0_uniform"] == "undecided"


def test_the_table_pairs_seeds_and_corrects_over_every_difference():
    cells = _cells(backprop=5.0, plain=5.4, frozen=5.1, alpha_out=5.38)
    result = factorial(_runs(cells))
    frozen = result.row("frozen")
    assert frozen.minus_backprop.estimate == pytest.approx(sum(a - b for a, b in zip(cells["frozen"], cells["backprop"], strict=True)) / 5)
    assert frozen.minus_plain.estimate == pytest.approx(-0.3, abs=0.01)
    p = [x for r in result.rows for x in (r.p_backprop, r.p_plain) if x is not None]
    assert len(p) == 6  # 4 controls x 2 references, less the two self-differences
    assert all(r.holm_backprop is None or r.holm_backprop >= r.p_backprop for r in result.rows)
    assert result.row("backprop").minus_backprop is None and result.row("plain").minus_plain is None
    assert _readings(result)["M2:frozen_minus_alpha_out"] == "supported"


def test_only_the_chosen_eta_0_enters_and_a_boundary_choice_is_flagged():
    runs = _runs(_cells(backprop=5.0, plain=5.4))
    worse = [TunedRun("zerolock-forward", 0.2, s, 9.0, 1.0, 20) for s in range(2)]  # test CE never read at 0.2
    result = factorial({**runs, "plain": runs["plain"] + worse})
    plain = result.row("plain")
    assert plain.lr == 0.1 and plain.on_boundary and not result.all_interior
    assert plain.test.estimate == pytest.approx(5.4, abs=0.01)


def test_relabelled_seeds_give_the_same_readings():
    cells = _cells(backprop=5.0, plain=5.4, alpha_out=5.3, frozen=5.1, twin_half=5.2)
    base = factorial(_runs(cells))
    shifted = {name: [TunedRun(r.method, r.lr, r.seed + 10, r.validation, r.test, r.steps) for r in reversed(rs)]
               for name, rs in _runs(cells).items()}
    other = factorial(shifted)
    assert _readings(base) == _readings(other)
    assert [r.minus_backprop for r in base.rows] == [r.minus_backprop for r in other.rows]


def _write_tune(root: Path, recipe: str, values: dict[int, float], lr: float = 0.1) -> None:
    root.mkdir(parents=True)
    (root / "tune.json").write_text("{}")
    for seed, value in values.items():
        run = root / f"run_lr-{lr}_seed-{seed}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps(_config(RECIPES / f"{recipe}.toml", lr, seed)))
        (run / "metrics.jsonl").write_text(json.dumps({"step": 19, "eval/ce": value, "test/ce": value}) + "\n")


def test_a_directory_reads_by_settings_not_by_names(tmp_path):
    values = {"embedded_backprop_wide": 5.0, "embedded_plain": 5.4, "embedded_frozen": 5.1}
    for i, (recipe, mean) in enumerate(values.items()):
        _write_tune(tmp_path / "named" / recipe, recipe, {s: mean + NOISE[s] for s in range(3)})
        _write_tune(tmp_path / "shuffled" / f"dir{2 - i}", recipe, {s: mean + NOISE[s] for s in range(3)})
    assert is_factorial_dir(tmp_path / "named") and not is_factorial_dir(tmp_path / "named" / "embedded_plain")
    named, shuffled = analyze_factorial(tmp_path / "named"), analyze_factorial(tmp_path / "shuffled")
    assert named.model == "embedded" and named.chunks == 4
    assert [r.control for r in named.rows] == ["backprop", "plain", "frozen"]
    assert named.rows == shuffled.rows
    assert FACTORIAL.check(Factorial.from_json(named.to_json())) == named


def test_two_directories_of_one_control_are_refused(tmp_path):
    _write_tune(tmp_path / "a", "embedded_plain", {0: 5.4})
    _write_tune(tmp_path / "b", "embedded_plain", {0: 5.4})
    with pytest.raises(ValueError, match="both hold the control 'plain'"):
        load_factorial(tmp_path)


def test_every_prediction_names_a_known_contrast_and_mechanism():
    from analyses.versus.factorial import CONTRASTS, MECHANISMS
    assert all(p.contrast in CONTRASTS and p.mechanism in MECHANISMS for p in PREDICTIONS)
    assert {c.tests for c in CONTROLS} - {""} <= set(MECHANISMS)
    decisive = [p.mechanism for p in PREDICTIONS if p.decisive]
    assert len(decisive) == len(set(decisive))
    assert not math.isnan(PREDICTIONS[0].threshold)


def _alignment_seed(cosines: list[float]) -> dict:
    return {"chunks": [{"chunk": k + 1, "inner": c * 2.0 * 0.5, "norm_step": 2.0, "norm_out": 0.5}
                       for k, c in enumerate(cosines)]}


def test_alignment_along_the_run_reads_each_chunks_cosine_and_the_total():
    from analyses.versus.factorial import alignment_along

    data = {"after_steps": {"50": [_alignment_seed([0.2, -0.4]), _alignment_seed([0.4, -0.2])],
                            "0": [_alignment_seed([1.0, 1.0])] * 2}}
    points = {(p.step, p.chunk): p for p in alignment_along(data)}
    assert [k for k in points] == [(0, 0), (0, 1), (0, 2), (50, 0), (50, 1), (50, 2)]
    assert points[0, 0].cosine.estimate == pytest.approx(1.0)
    assert points[50, 1].cosine.estimate == pytest.approx(0.3) and points[50, 2].cosine.estimate == pytest.approx(-0.3)
    # equal norms per chunk: the total is the mean of the chunks' cosines
    assert points[50, 0].cosine.estimate == pytest.approx(0.0, abs=1e-12)


def test_an_alignment_file_of_another_control_is_refused(tmp_path):
    _write_tune(tmp_path / "plain", "embedded_plain", {0: 5.4, 1: 5.41})
    config = _config(RECIPES / "embedded_frozen.toml", 0.1, 0)
    (tmp_path / "alignment.json").write_text(json.dumps({"config": config, "after_steps": {"0": [_alignment_seed([0.5] * 4)]}}))
    with pytest.raises(ValueError, match="the control 'frozen', not 'plain'"):
        analyze_factorial(tmp_path)
    config = _config(RECIPES / "embedded_plain.toml", 0.1, 0)
    (tmp_path / "alignment.json").write_text(json.dumps({"config": config, "after_steps": {"0": [_alignment_seed([0.5] * 4)] * 2}}))
    assert analyze_factorial(tmp_path).alignment[0].cosine.estimate == pytest.approx(0.5)


# How a contrast is read (docs/breaks/factorial.md): constructions with known answers.

def _reading_of(result: Factorial, contrast: str):
    return next(p for p in result.predictions if p.contrast == contrast)


def test_a_share_is_a_ratio_of_means_not_a_mean_of_ratios():
    # seed 2's gap is 0.001: its own ratio is -40; the ratio of the means is near the 0.8 the other seeds share
    plain = [5.4, 5.41, 5.001, 5.39, 5.42, 5.4, 5.43, 5.38, 5.41, 5.4]
    backprop = [5.0, 5.01, 5.0, 4.99, 5.02, 5.0, 5.03, 4.98, 5.01, 5.0]
    alpha_out = [p - 0.8 * (p - b) for p, b in zip(plain, backprop, strict=True)]
    alpha_out[2] = 5.041
    got = _reading_of(factorial(_runs({"backprop": backprop, "plain": plain, "alpha_out": alpha_out})), "share_alpha_out")
    assert got.estimate.estimate == pytest.approx(0.8, abs=0.03)
    assert got.reading == "supported" and got.estimate.low > 0.5


def test_a_diverged_backprop_seed_leaves_no_gap_to_share():
    # SmolLM2's pattern: backprop's third seed blew up (10.21); plain ZeroLock near 4.1
    result = factorial(_runs({"backprop": [3.297, 3.299, 10.21], "plain": [4.10, 4.12, 4.11],
                              "alpha_out": [4.0, 4.02, 4.01]}))
    got = _reading_of(result, "share_alpha_out")
    assert got.reading == "not testable" and got.reason.startswith("no gap to share") and got.estimate is None
    assert result.mechanisms["M1"] == "not testable"


def test_a_share_exactly_on_its_threshold_is_undecided_not_refuted():
    # no cell noise: every seed's share is 0.5 up to float rounding (0.49999999999999)
    plain = [5.4 + e for e in (0.0, 0.13, -0.07, 0.21, -0.11)]
    backprop = [p - 0.4 for p in plain]
    alpha_out = [p - 0.2 for p in plain]
    got = _reading_of(factorial(_runs({"backprop": backprop, "plain": plain, "alpha_out": alpha_out})), "share_alpha_out")
    assert got.reading == "undecided"


def test_a_control_chosen_on_its_grids_edge_or_with_two_seeds_is_not_testable():
    runs = _runs(_cells(backprop=5.0, plain=5.4, alpha_out=5.08))
    edge = [TunedRun("zerolock-forward", 0.2, s, 9.0, 9.0, 20) for s in range(2)]  # alpha_out's 0.1 is the edge
    got = _reading_of(factorial({**runs, "alpha_out": runs["alpha_out"] + edge}), "share_alpha_out")
    assert got.reading == "not testable" and "alpha_out chose η_0 on its grid's edge" in got.reason
    two = _runs({"backprop": [5.0, 5.01], "plain": [5.4, 5.41], "alpha_out": [5.08, 5.09]})
    got = _reading_of(factorial(two), "share_alpha_out")
    assert got.reading == "not testable" and got.reason == "2 paired seeds (3 needed)"


def test_the_decisive_predictions_are_read_at_the_bonferroni_level():
    result = factorial(_runs(_cells(backprop=5.0, plain=5.4, alpha_out=5.08, twin_half=5.32)))
    decisive = sum(p.decisive for p in PREDICTIONS)
    assert decisive == 4
    for p in result.predictions:
        assert p.level == pytest.approx(1 - 0.05 / decisive if p.decisive else 0.95)
        if p.estimate is not None:
            assert p.estimate.level == p.level


def test_runs_filed_under_another_controls_key_are_refused(tmp_path):
    _write_tune(tmp_path / "plain", "embedded_plain", {s: 5.4 + NOISE[s] for s in range(3)})
    _write_tune(tmp_path / "alpha_out", "embedded_alpha_out", {s: 5.3 + NOISE[s] for s in range(3)})
    found = load_factorial(tmp_path)
    with pytest.raises(ValueError, match="make the control 'alpha_out', filed as 'plain'"):
        factorial({"plain": found["alpha_out"], "alpha_out": found["plain"]})
    with pytest.raises(ValueError, match="not controls of the factorial"):
        factorial({"planned": found["plain"]})


def _started(method: str, lr: float, seed: int, validation: float, test: float, start: float = 4.04) -> TunedRun:
    """A tune run whose test CE at ω⁰ was ``start`` (what ``is_stable`` reads)."""
    data = TunedData(None, None, start, (), np.empty((0, 0)), np.empty(0), np.empty(0), math.nan)
    return TunedRun(method, lr, seed, validation, test, 20, data)


def _smollm2_backprop(diverged: float = 10.21) -> list[TunedRun]:
    """SmolLM2's backprop grid (section 4b): 0.8 chosen on seeds 0-1, its confirmation seed 2 blown up;
    0.4 run on seeds 0-2, every run below its start."""
    grid = {0.2: (3.71, 3.43), 0.4: (3.65, 3.35), 0.8: (3.61, 3.30)}
    runs = [_started("backprop", lr, s, v + 0.01 * s, t + 0.01 * s) for lr, (v, t) in grid.items() for s in (0, 1)]
    return runs + [_started("backprop", 0.4, 2, 3.66, 3.36), _started("backprop", 0.8, 2, diverged, diverged)]


def _controls(shares: dict[str, float], reference: tuple[float, ...], seeds: int = 3) -> dict[str, list[TunedRun]]:
    """Plain ZeroLock near 4.04 and each control closing its share of each seed's gap to ``reference``."""
    plain = [4.04, 4.045, 4.042, 4.047][:seeds]
    out = {"plain": [TunedRun("zerolock-forward", 0.1, s, v, v, 20) for s, v in enumerate(plain)]}
    for name, share in shares.items():
        values = [p - share * (p - b) for p, b in zip(plain, reference, strict=False)]
        out[name] = [TunedRun("zerolock-forward", 0.1, s, v, v, 20) for s, v in enumerate(values)]
    return out


def test_an_unstable_backprop_choice_adds_a_reading_against_its_stable_eta_0():
    # alpha_out closes 0.1% and twin_half 80% of each seed's gap to backprop at 0.4 (3.35, 3.36, 3.36)
    cells = _controls({"alpha_out": 0.001, "twin_half": 0.8}, (3.35, 3.36, 3.36))
    result = factorial({"backprop": _smollm2_backprop(), **cells})
    assert result.row("backprop").lr == 0.8  # the registered choice is kept
    assert _reading_of(result, "share_alpha_out").reading == "not testable" and result.mechanisms["M1"] == "not testable"
    assert result.stable_lr == 0.4 and not result.stable_on_boundary and result.stable_runs == 3
    assert result.stable_above == 0.8  # 0.4 sits just below the unstable 0.8: the stability edge
    stable = {r.contrast: r for r in result.stable_readings}
    assert set(stable) == {"share_alpha_out", "share_twin_half"}
    assert stable["share_alpha_out"].reading == "refuted" and stable["share_alpha_out"].written == STABLE_WRITTEN
    # "supported" against 0.4 must hold against 0.4 moved by 0.8's stable runs (seeds 0-1, 0.05 nats better)
    twin = stable["share_twin_half"]
    assert twin.estimate.estimate == pytest.approx(0.8) and twin.reading == "supported" and twin.reason == ""
    near = factorial({"backprop": _smollm2_backprop(), **_controls({"twin_half": 0.52}, (3.35, 3.36, 3.36))})
    twin = {r.contrast: r for r in near.stable_readings}["share_twin_half"]
    assert twin.estimate.estimate == pytest.approx(0.52) and twin.reading == "undecided"  # 0.52 x 0.69 / 0.74 < ½
    assert "below the unstable 0.8; moved by 0.8's stable runs (-0.05 nats) it reads refuted" in twin.reason
    # a stable choice gives no second reading; neither does a grid without recorded starts and with finite runs
    assert factorial({"backprop": _smollm2_backprop(diverged=3.31), **cells}).stable_readings == ()
    assert factorial(_runs(_cells(backprop=5.0, plain=5.4, alpha_out=5.08))).stable_lr is None


def test_at_the_stability_edge_without_a_common_seed_supported_reads_undecided():
    # 0.8 chosen, its seed 2 blown up; 0.4 ends above its start on both grid seeds: the stable 0.2 sits
    # below 0.4, which has no stable run to bound the better stable backprop with
    runs = [_started("backprop", 0.2, s, 3.73, 3.43) for s in range(3)] + [_started("backprop", 0.4, s, 3.70, 4.1) for s in (0, 1)]
    runs += [_started("backprop", 0.1, s, 3.8, 3.53) for s in (0, 1)]  # so that 0.2 is interior
    runs += [_started("backprop", 0.8, s, 3.6, 3.30) for s in (0, 1)] + [_started("backprop", 0.8, 2, 9.0, 9.0)]
    result = factorial({"backprop": runs, **_controls({"twin_half": 0.8}, (3.43, 3.43, 3.43))})
    assert result.row("backprop").lr == 0.8 and result.stable_lr == 0.2 and result.stable_above == 0.4
    twin = {r.contrast: r for r in result.stable_readings}["share_twin_half"]
    assert twin.reading == "undecided" and "0.4 has no stable run on a seed 0.2 ran" in twin.reason


def test_the_stable_reference_on_its_grids_edge_is_not_testable_and_no_stable_eta_0_gives_none():
    runs = [r for r in _smollm2_backprop() if r.lr != 0.2]
    runs += [_started("backprop", 0.2, s, 3.71, 4.1) for s in (0, 1)]  # 0.2 ends above its start: unstable
    plain = [TunedRun("zerolock-forward", 0.1, s, 4.04, 4.04, 20) for s in range(3)]
    alpha_out = [TunedRun("zerolock-forward", 0.1, s, 3.5, 3.5, 20) for s in range(3)]
    result = factorial({"backprop": runs + [_started("backprop", 0.1, s, 3.9, 3.6) for s in range(3)],
                        "plain": plain, "alpha_out": alpha_out})
    assert result.stable_lr == 0.4  # 0.2 unstable, 0.4 better than 0.1 and interior
    edge = [r for r in runs if r.lr != 0.4] + [_started("backprop", 0.1, s, 3.9, 3.6) for s in range(3)]
    result = factorial({"backprop": edge, "plain": plain, "alpha_out": alpha_out})
    assert result.stable_lr == 0.1 and result.stable_on_boundary and result.stable_above == 0.2
    assert {r.contrast: r.reading for r in result.stable_readings}["share_alpha_out"] == "not testable"
    none = [_started("backprop", lr, s, 3.0, 9.0) for lr in (0.1, 0.2) for s in range(3)]
    assert factorial({"backprop": none, "plain": plain, "alpha_out": alpha_out}).stable_readings == ()


def test_is_stable_reads_the_runs_own_start_else_its_tunes():
    assert is_stable(_started("backprop", 0.1, 0, 3.0, 4.0, start=4.04))
    assert not is_stable(_started("backprop", 0.1, 0, 3.0, 4.04, start=4.04))  # not below: level
    assert not is_stable(_started("backprop", 0.1, 0, math.inf, math.inf))
    unrecorded = _started("backprop", 0.1, 0, 4.5, 4.5, start=math.nan)
    assert not is_stable(unrecorded, 4.04) and is_stable(unrecorded)  # the tune's start, else finiteness
    assert is_stable(TunedRun("backprop", 0.1, 0, 3.0, 3.0, 20)) and not is_stable(TunedRun("backprop", 0.1, 0, 3.0, 3.0, 20), 2.9)


def test_a_run_without_its_start_is_judged_by_its_tunes_start():
    # 0.8 is truly stable; one of its runs did not record its start: the other runs' start judges it
    runs = _smollm2_backprop(diverged=3.31)
    runs[-1] = TunedRun("backprop", 0.8, 2, 3.31, 3.31, 20)
    cells = _controls({"twin_half": 0.5}, (3.30, 3.31, 3.31))
    assert factorial({"backprop": runs, **cells}).stable_readings == ()


def test_each_controls_alignment_file_is_read_as_that_control_and_a_mislabelled_one_refused(tmp_path):
    from analyses.results import load_result
    from analyses.versus.factorial import alignment_file

    _write_tune(tmp_path / "plain", "embedded_plain", {0: 5.4, 1: 5.41})
    plain = _config(RECIPES / "embedded_plain.toml", 0.2, 0)
    twin = _config(RECIPES / "embedded_twin_one.toml", 0.4, 0)
    (tmp_path / alignment_file("plain")).write_text(json.dumps({"config": plain, "after_steps": {"0": [_alignment_seed([0.5] * 4)] * 2}}))
    (tmp_path / alignment_file("twin_one")).write_text(json.dumps({"config": twin, "after_steps": {
        "0": [_alignment_seed([0.8] * 4)] * 2, "50": [_alignment_seed([0.7, 0.9, 0.9, 1.0])] * 3}}))
    found = analyze_factorial(tmp_path)
    by = {(p.control, p.step, p.chunk): p for p in found.alignment}
    assert by["plain", 0, 1].cosine.estimate == pytest.approx(0.5) and by["plain", 0, 1].lr == pytest.approx(0.2)
    assert by["twin_one", 50, 1].cosine.estimate == pytest.approx(0.7) and by["twin_one", 50, 1].seeds == 3
    assert by["twin_one", 0, 1].lr == pytest.approx(0.4)
    assert load_result(found.to_json()) == found  # the control and η_0 survive the JSON round trip
    (tmp_path / alignment_file("alpha_one")).write_text(json.dumps({"config": twin, "after_steps": {"0": [_alignment_seed([0.5] * 4)] * 2}}))
    with pytest.raises(ValueError, match="alignment_alpha_one.json: .*the control 'twin_one', not 'alpha_one'"):
        analyze_factorial(tmp_path)
