"""Hostile referee: constructions with known answers against the memory row's map rule.

    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/break_memory_rule.py [--out table.md]

Every construction writes ``memory_map.json`` and ``systems.json`` in the layout the suite writes
(``zerolock_theory.app.workflows.memory_map`` and the systems benchmark; the same layout as
``analyses.systems.families.write_map``) and reads them back through the row's own code:
``analyses.systems.memory.memory_claim`` and the registered claim's ``decide``. A point of a map is
given by its total ratio ZeroLock ÷ 1F1B: 1F1B holds 1000 bytes of activations, ZeroLock
``1000·ratio`` (weights 0), unless the construction uses the linear split of the families
(weights fixed, activations proportional to the tokens), whose crossing of 0.735 is known in
closed form.

Truths are those of the construction: the outcome word of the measured curve (the words of
``MAP_OUTCOMES``, read literally), the measured sizes that bracket the crossing where there is
one, ``RunDataError`` for a file that is malformed (non-finite or non-positive byte counts, a key
missing, a size of 0 tokens), and the one setting's word where no map may decide (fewer than 3
sizes, a map at another K than the row's primary one). A construction "agrees" when the row's
outcome, reason and bracket equal the truth. Prints (or writes) one markdown table:
construction | truth | outcome | agrees?
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from analyses.io import RunDataError
from analyses.registry import ClaimInputs, claim
from analyses.systems.memory import MAP_OUTCOMES, MEMORY_OUTCOMES, memory_claim

FROM, SHORT, RISES = MAP_OUTCOMES
ONE_LESS = MEMORY_OUTCOMES[1]  # the one setting's "lower than 1F1B, less than the paper claims"
ERROR = "RunDataError"
SEQ_LEN = 16
W_Z, W_B, A_Z, A_B = 6_246_640.0, 4_148_976.0, 52_601.0, 90_428.0  # the families' linear split (bytes)
N_STAR = (W_Z - 0.735 * W_B) / (0.735 * A_B - A_Z)  # where that split's total ratio is 0.735 (≈ 231 tokens)


def stages(weights: float, activations: float, total: float | None = None) -> list[dict[str, float]]:
    """A peak stage with this split and a smaller second stage (as the families write them)."""
    peak = {"weights": weights, "gradients": 0.0, "optimizer": 0.0, "activations": activations,
            "communication": 0.0, "total": weights + activations if total is None else total}
    return [peak, {**peak, "weights": 0.0, "activations": 0.5, "total": 0.5}]


def tabled(tokens: int, ratio: float) -> dict:
    """One map point whose total ratio is ``ratio`` (1F1B 1000 bytes, ZeroLock 1000·ratio)."""
    return {"tokens": tokens, "sequences": max(tokens // SEQ_LEN, 1), "zerolock": stages(0.0, 1000.0 * ratio),
            "1f1b": stages(0.0, 1000.0)}


def linear(tokens: int) -> dict:
    """One map point of the families' linear split (weights fixed, activations ∝ tokens)."""
    return {"tokens": tokens, "sequences": max(tokens // SEQ_LEN, 1), "zerolock": stages(W_Z, A_Z * tokens),
            "1f1b": stages(W_B, A_B * tokens)}


def curve(ratios: dict[int, float]) -> list[dict]:
    return [tabled(n, r) for n, r in ratios.items()]


def write(folder: Path, points: list[dict] | None, *, map_extra: dict | None = None, drop: tuple[str, ...] = (),
          one_setting: float = 0.9, systems_ks: tuple[int, ...] = (4,), with_split: bool = True,
          repeats: tuple[float, ...] | None = None) -> Path:
    """``memory_map.json`` (unless ``points`` is None) and ``systems.json``; returns the systems path.

    ``one_setting`` is the total ratio of the suite's one setting (at every K of ``systems_ks``),
    ``repeats`` its per-repeat ratios when they differ; ``drop`` removes top-level map keys."""
    folder.mkdir(parents=True, exist_ok=True)
    if points is not None:
        data = {"K": 4, "micro_batches": 4, "seq_len": SEQ_LEN, "points": points, "skipped": []}
        data.update(map_extra or {})
        for key in drop:
            data.pop(key, None)
        (folder / "memory_map.json").write_text(json.dumps(data), encoding="utf-8")
    ratios = repeats or (one_setting,)
    z = {"peak_saved_bytes": [1], "tokens_per_s": 1.0, "memory": [stages(0.0, 1000.0 * r) for r in ratios]}
    b = {"peak_saved_bytes": [1], "tokens_per_s": 1.0, "memory": [stages(0.0, 1000.0) for _ in ratios]}
    if not with_split:
        z, b = {k: v for k, v in z.items() if k != "memory"}, {k: v for k, v in b.items() if k != "memory"}
    systems = folder / "systems.json"
    systems.write_text(json.dumps({
        "zerolock": {str(k): z for k in systems_ks}, "1f1b": {str(k): b for k in systems_ks},
        "gpipe": {str(k): b for k in systems_ks},
        "setup": {"micro_batches": 4, "batch_size": 16, "seq_len": SEQ_LEN}}), encoding="utf-8")
    return systems


@dataclass(frozen=True)
class Construction:
    """Files with a known answer: ``build(folder)`` writes them and returns the systems path."""

    name: str
    build: Callable[[Path], Path]
    truth: str  # an outcome word of the row, or "RunDataError"
    bracket: tuple[int, int] | None = None  # the measured sizes around the crossing, where truth locates one
    reason: str | None = None  # the row's reason where it matters: "memory_map", or "" (no map decides, and the
    # map shown beside the row, if any, is descriptive: its bracket is not compared)
    note: str = ""
    crossing: float | None = None  # the closed-form crossing (linear split), for the error column
    extra: Callable[[object], bool] | None = field(default=None, repr=False)  # a further check on the result


@dataclass(frozen=True)
class Reading:
    """What the row made of a construction."""

    outcome: str  # the verdict's outcome word, or the exception's type
    detail: str  # bracket, crossing and reason
    agrees: bool


def read(con: Construction, folder: Path) -> Reading:
    """Run the construction's files through ``memory_claim`` and the row's ``decide``; compare with the truth."""
    try:
        result = memory_claim(con.build(folder))
        verdict = claim("systems_memory").decide(ClaimInputs({"systems_memory": result}, {}))
    except Exception as exc:  # noqa: BLE001 -- the exception's type is the outcome under test
        message = str(exc).replace(f"{folder}/", "")
        return Reading(type(exc).__name__, message.splitlines()[0][:70] if message else "",
                       con.truth == ERROR and isinstance(exc, RunDataError))
    found = result.map
    bracket = tuple(found.bracket) if found is not None and found.bracket else None
    crossing = found.crossing_tokens if found is not None else None
    parts = [f"reason {result.reason or 'computed'}"]
    if found is not None:
        parts.append(f"map K={found.chunks}, {len(found.points)} sizes")
    if bracket:
        parts.append(f"bracket {list(bracket)}, crossing {crossing:.1f}")
        if con.crossing:
            parts.append(f"log error {math.log(crossing / con.crossing):+.2f}" if crossing == crossing else "")
    elif found is not None and found.reaches_from is not None:
        parts.append(f"reaches from {found.reaches_from}")
    agrees = verdict.outcome == con.truth and (bracket == con.bracket or con.reason == "")
    if con.reason is not None:
        agrees = agrees and (result.reason or "") == con.reason
    if con.extra is not None:
        agrees = agrees and con.extra(result)
    return Reading(verdict.outcome, "; ".join(p for p in parts if p), agrees)


def _points_shuffled() -> list[dict]:
    sizes = [32, 64, 128, 256, 512, 1024, 2048]
    return [linear(n) for n in (sizes[3], sizes[0], sizes[6], sizes[1], sizes[5], sizes[2], sizes[4])]


def _duplicate(first: float, second: float) -> list[dict]:
    return [tabled(32, 0.9), tabled(64, 0.8), tabled(128, first), tabled(128, second), tabled(256, 0.7),
            tabled(512, 0.65)]


def _non_finite(where: str, value: float, ratios: dict[int, float], at: int) -> list[dict]:
    """The curve with every stage total of ``where`` at ``at`` tokens replaced by ``value``."""
    points = curve(ratios)
    point = next(p for p in points if p["tokens"] == at)
    for stage in point[where]:
        stage["total"] = value
    return points


def _without(part: str, method: str = "zerolock") -> list[dict]:
    points = [linear(n) for n in (32, 64, 128, 256, 512)]
    del points[2][method][0][part]
    return points


def _missing_method() -> list[dict]:
    points = [linear(n) for n in (32, 64, 128, 256, 512)]
    del points[1]["1f1b"]
    return points


def _linear_from(smallest: int) -> Callable[[Path], Path]:
    """The families' linear split measured at powers of two from ``smallest`` up to 2048 tokens."""
    sizes = [smallest * 2 ** i for i in range(int(math.log2(2048 // smallest)) + 1)]
    return lambda folder: write(folder, [linear(n) for n in sizes])


STEP = {32: 0.9, 64: 0.8, 128: 0.7, 256: 0.65, 512: 0.6}  # a plain crossing between 64 and 128


def _short(result: object) -> str:
    """The row's short line for ``result``."""
    row = claim("systems_memory")
    return row.short(row.decide(ClaimInputs({"systems_memory": result}, {})).evidence)


def _finite_map(result: object) -> bool:
    found = result.map
    return found is not None and all(math.isfinite(p.total) for p in found.points) and (
        found.crossing_tokens is None or math.isfinite(found.crossing_tokens))


CONSTRUCTIONS: tuple[Construction, ...] = (
    # non-monotone curves
    Construction("dip_below_then_back_up", lambda f: write(f, curve({32: 0.9, 64: 0.7, 128: 0.8, 256: 0.9})),
                 RISES, (32, 64), "memory_map", "reaches 0.735 at 64 only"),
    Construction("dip_up_then_down_again", lambda f: write(f, curve({32: 0.9, 64: 0.7, 128: 0.8, 256: 0.7,
                                                                      512: 0.6})),
                 RISES, (32, 64), "memory_map", "above again at 128, below from 256: the word is literal"),
    Construction("noise_around_0.735_ending_above", lambda f: write(f, curve(
        {32: 0.80, 64: 0.74, 128: 0.73, 256: 0.74, 512: 0.73, 1024: 0.74})), RISES, (64, 128), "memory_map"),
    Construction("noise_around_0.735_ending_below", lambda f: write(f, curve(
        {32: 0.80, 64: 0.74, 128: 0.73, 256: 0.74, 512: 0.73})), RISES, (64, 128), "memory_map",
                 "above at 256 after 128 reached it"),
    Construction("a_hair_above_at_the_largest", lambda f: write(f, curve({32: 0.9, 64: 0.8, 128: 0.7,
                                                                           256: 0.7351})),
                 RISES, (64, 128), "memory_map"),
    # where the crossing lies
    Construction("crosses_between_the_last_two", lambda f: write(f, [linear(n) for n in (32, 64, 128, 256)]),
                 FROM, (128, 256), "memory_map", "linear split, n* between 128 and 256", N_STAR),
    Construction("reaches_only_at_the_largest", lambda f: write(f, curve({32: 0.9, 64: 0.8, 128: 0.7})),
                 FROM, (64, 128), "memory_map"),
    Construction("exactly_0.735_at_the_largest", lambda f: write(f, curve({32: 0.9, 64: 0.8, 128: 0.735})),
                 FROM, (64, 128), "memory_map", "735/1000 bytes",
                 extra=lambda r: r.map.crossing_tokens == 128.0),
    Construction("exactly_0.735_at_the_smallest", lambda f: write(f, curve({32: 0.735, 64: 0.7, 128: 0.6})),
                 FROM, None, "memory_map", extra=lambda r: r.map.reaches_from == 32),
    Construction("exactly_0.735_in_the_middle", lambda f: write(f, curve({32: 0.9, 64: 0.735, 128: 0.7,
                                                                           256: 0.6})),
                 FROM, (32, 64), "memory_map", extra=lambda r: r.map.crossing_tokens == 64.0),
    Construction("only_3_sizes", lambda f: write(f, [linear(n) for n in (64, 256, 1024)]),
                 FROM, (64, 256), "memory_map", "linear split", N_STAR),
    Construction("only_2_sizes_falls_back", lambda f: write(f, curve({64: 0.9, 128: 0.7})),
                 ONE_LESS, None, "", "one setting 0.9"),
    Construction("only_2_sizes_short_line", lambda f: write(f, curve({64: 0.9, 128: 0.7})),
                 ONE_LESS, None, "", "the row's short line names no crossing from a map that cannot decide",
                 extra=lambda r: "near" not in _short(r)),
    Construction("uneven_sizes", lambda f: write(f, [linear(n) for n in (16, 48, 80, 1000, 4000)]),
                 FROM, (80, 1000), "memory_map", "linear split, a wide bracket", N_STAR),
    Construction("points_written_out_of_order", lambda f: write(f, _points_shuffled()),
                 FROM, (128, 256), "memory_map", "linear split", N_STAR),
    # every smallest size
    *(Construction(f"linear_from_{s}", _linear_from(s), FROM, (128, 256) if s <= 128 else None, "memory_map", f"linear split from {s}", N_STAR)
      for s in (16, 32, 64, 128, 256, 512)),
    Construction("below_at_the_tiniest_size_from_16", lambda f: write(f, curve(
        {16: 0.7, 32: 0.9, 64: 0.8, 128: 0.7, 256: 0.65})), RISES, None, "memory_map",
                 "0.7 at 16 then above: reaches at 16, above at 32",
                 extra=lambda r: r.map.reaches_from == 16),
    Construction("below_at_the_tiniest_size_from_32", lambda f: write(f, curve(
        {32: 0.9, 64: 0.8, 128: 0.7, 256: 0.65})), FROM, (64, 128), "memory_map"),
    # never reaching it
    Construction("above_1_everywhere", lambda f: write(f, curve({32: 1.3, 64: 1.2, 128: 1.1, 256: 1.05})),
                 SHORT, None, "memory_map"),
    Construction("above_1_and_rising", lambda f: write(f, curve({32: 1.05, 64: 1.1, 128: 1.3, 256: 1.5})),
                 SHORT, None, "memory_map"),
    Construction("reaches_only_by_extrapolation", lambda f: write(f, curve({32: 0.95, 64: 0.9, 128: 0.85,
                                                                             256: 0.8})),
                 SHORT, None, "memory_map", "a straight line in log tokens hits 0.735 near 600",
                 extra=lambda r: r.map.crossing_tokens is None and r.map.where == ""),
    # repeats
    Construction("a_size_repeated_agreeing", lambda f: write(f, _duplicate(0.7, 0.7)), FROM, (64, 128),
                 "memory_map"),
    Construction("a_size_repeated_disagreeing_below_first", lambda f: write(f, _duplicate(0.7, 0.8)), FROM,
                 (128, 256), "memory_map", "128 measured twice, 0.70 then 0.80"),
    Construction("a_size_repeated_disagreeing_above_first", lambda f: write(f, _duplicate(0.8, 0.7)), FROM,
                 (128, 256), "memory_map", "the same data, 0.80 then 0.70"),
    Construction("one_setting_repeats_disagree_no_map", lambda f: write(f, None, repeats=(0.7, 0.8)),
                 ONE_LESS, None, "", "both repeats < 1, one above 0.735"),
    # malformed parts
    Construction("a_point_without_1f1b", lambda f: write(f, _missing_method()), ERROR),
    Construction("a_stage_without_communication", lambda f: write(f, _without("communication")), ERROR),
    Construction("a_stage_without_total", lambda f: write(f, _without("total", "1f1b")), ERROR),
    Construction("a_stage_without_activations", lambda f: write(f, _without("activations")), ERROR),
    Construction("map_without_K", lambda f: write(f, curve(STEP), drop=("K",)), ERROR),
    Construction("map_without_points", lambda f: write(f, [], drop=("points",)), ERROR),
    Construction("systems_without_split_map_present", lambda f: write(f, curve(STEP), with_split=False),
                 FROM, (64, 128), "memory_map", "the map has 5 sizes; systems.json no split"),
    # K different from the primary
    Construction("map_at_K2_primary_K4", lambda f: write(f, curve(STEP), map_extra={"K": 2},
                                                         systems_ks=(2, 4)),
                 ONE_LESS, None, "", "the primary is the largest K; one setting 0.9"),
    Construction("map_at_K8_primary_K4", lambda f: write(f, curve(STEP), map_extra={"K": 8}),
                 ONE_LESS, None, "", "a map at a K the suite did not run"),
    Construction("map_micro_batches_differ", lambda f: write(f, curve(STEP), map_extra={"micro_batches": 8}),
                 ONE_LESS, None, "", "map m = 8, suite m = 4"),
    # non-finite and non-positive entries
    Construction("nan_zerolock_before_the_crossing", lambda f: write(f, _non_finite("zerolock", math.nan, STEP,
                                                                                     64)), ERROR,
                 extra=_finite_map),
    Construction("nan_zerolock_after_reaching", lambda f: write(f, _non_finite("zerolock", math.nan, STEP, 256)),
                 ERROR),
    Construction("inf_1f1b_total", lambda f: write(f, _non_finite("1f1b", math.inf, {32: 0.9, 64: 0.85,
                                                                                    128: 0.8, 256: 0.78}, 64)),
                 ERROR, note="1F1B at inf bytes at 64: ratio 0 there, above 0.735 elsewhere"),
    Construction("inf_zerolock_total", lambda f: write(f, _non_finite("zerolock", math.inf, STEP, 32)), ERROR),
    Construction("negative_1f1b_total", lambda f: write(f, _non_finite("1f1b", -1000.0, {32: 0.9, 64: 0.85,
                                                                                        128: 0.8, 256: 0.78}, 256)),
                 ERROR, note="every stage of 1F1B at -1000 bytes at 256; the one-setting rows reject a 1F1B peak <= 0"),
    Construction("zero_1f1b_total", lambda f: write(f, _non_finite("1f1b", 0.0, STEP, 64)), ERROR),
    Construction("a_size_of_0_tokens", lambda f: write(f, [tabled(0, 0.9), tabled(64, 0.7), tabled(128, 0.6)]),
                 ERROR),
    # no map
    Construction("empty_map", lambda f: write(f, []), ONE_LESS, None, "", "points: []"),
    Construction("no_map_file", lambda f: write(f, None), ONE_LESS, None, ""),
)


def truth_text(con: Construction) -> str:
    text = con.truth + (f", bracket {list(con.bracket)}" if con.bracket else "")
    return text + (f" ({con.note})" if con.note else "")


def table(constructions: tuple[Construction, ...] = CONSTRUCTIONS) -> tuple[str, list[str]]:
    """The markdown table and the names of the constructions that disagree."""
    lines = ["| construction | truth | outcome | agrees? |", "|---|---|---|---|"]
    broken = []
    with tempfile.TemporaryDirectory() as tmp:
        for con in constructions:
            got = read(con, Path(tmp) / con.name)
            lines.append(f"| {con.name} | {truth_text(con)} | {got.outcome} ({got.detail}) | "
                         f"{'yes' if got.agrees else 'NO'} |")
            if not got.agrees:
                broken.append(con.name)
    return "\n".join(lines) + "\n", broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the table here (markdown) instead of printing it")
    args = parser.parse_args(argv)
    text, broken = table()
    text += f"\n{len(broken)} of {len(CONSTRUCTIONS)} constructions disagree: {', '.join(broken) or 'none'}\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
