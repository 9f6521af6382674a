"""Systems claims: peak activation memory and throughput, next to the paper's numbers.

The paper claims 26.5% lower peak memory and 4.9% higher throughput than 1F1B (PipeDream).
``systems.json`` (written by the systems benchmark) is read in either layout:

* nested: ``{method: {K: {"peak_saved_activation_bytes": [per stage] | number,
  "tokens_per_s": number}}}`` with method ∈ {zerolock, gpipe, 1f1b};
* records: ``[{"method", "chunks" | "K", <peak key>, "tokens_per_s"}, ...]``, optionally under
  a top-level ``"results"`` key.

The peak key is the first key starting with ``peak`` (e.g. ``peak_saved_activation_bytes``).
A per-stage list is reduced to its maximum (the stage that bounds device memory).

For each K and baseline b ∈ {1f1b, gpipe}: memory reduction = 1 − peak_zerolock / peak_b,
throughput gain = tps_zerolock / tps_b − 1.

``memory_claim`` reads the per-stage memory split the benchmark records for every repeat
(``{method: {K: {"memory": [[{weights, gradients, optimizer, activations, communication,
total}, ... per stage], ... per repeat]}}}``) and answers: is ZeroLock's per-stage peak memory
lower than 1F1B's at the same K, micro-batches and batch, and by as much as the paper's
26.5% (ratio 0.735)? Per repeat r the peak is the largest stage total (the stage that bounds a
device), ratio_r = peak_ZeroLock,r / peak_1F1B,r; the same for activations alone. The spread
is [min, max] over repeats, estimate the median. The decision uses the total (what the paper
states): every repeat ≤ 0.735 → "lower than 1F1B, as the paper claims"; every repeat < 1 →
"lower than 1F1B, less than the paper claims"; every repeat ≥ 1 → "not lower than 1F1B";
otherwise "undecided"; no split recorded → "not measured". The activations-only ratio (the
part the schedule changes; weights are fixed by the model and LoRA) is shown beside it. The
split is a deterministic accounting: repeats agree, and their spread is no evidence.

The answer depends on the setting: weights and optimizer state are fixed while activations grow
with the tokens a micro-batch carries, so the total ratio falls with the micro-batch size.
``memory_map`` reads ``memory_map.json`` (``zerolock_theory.app.workflows.memory_map``: the ratio
per measured size, the split per component). A size measured more than once is one point
(``_merge``): it reaches 0.735 only when every repeat does, its ratio is the largest repeat's,
whatever the order in the file. Byte counts must be finite and ≥ 0, the 1F1B peak positive, sizes,
K and micro-batches whole numbers ≥ 1, every key present: anything else is a ``RunDataError``.
``memory_claim`` decides on the map when it has ≥ 3 sizes and stands at the row's primary setting
(its K the primary K, its micro-batches the suite's where ``systems.json`` records them), with or
without a per-stage split in ``systems.json``; otherwise the one setting decides and
``map_unused`` says why the map did not. The map decides from where the total ratio crosses 0.735
(``map_outcome``): "as the paper claims from a
micro-batch size on" (at or below 0.735 at the largest measured size and at every size after the
first one that is; where it starts is named: the crossing, linear in log tokens between the two
measured sizes that bracket it, or "at or below the smallest measured size" when even that one
is), "short of the paper's 26.5% at every measured size" (no measured size at or below 0.735),
"rises above 0.735 again at a larger size" (at or below 0.735 at some size, above it at a larger
one). The word depends on where the curve meets 0.735, never on the ratio at the smallest
sizes: measuring the same curve from a smaller first size adds points on the side above 0.735
and leaves the word and the bracketing sizes unchanged. Where the paper's own setting lies on
the map (``place_on_map``): the paper states no tokens per micro-batch (``PAPER_TOKENS`` is
None), so the row says from which size the map reaches 0.735 and that the paper's size is not
stated. Without a map that may decide, the outcome is the one measured setting's, and it says
which setting (K, micro-batches, tokens per micro-batch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyses.results import Interval, Result, declare, register
from analyses.systems.data import (
    SPLIT_PARTS,
    MapData,
    MemoryMapPoint,
    SplitRepeats,
    SystemsData,
    SystemsRow,
    read_map,
    read_systems,
    systems_data,
)

__all__ = [
    "CLAIMED_MEMORY_REDUCTION",
    "CLAIMED_MEMORY_RATIO",
    "CLAIMED_THROUGHPUT_GAIN",
    "MAP_OUTCOMES",
    "PAPER_TOKENS",
    "map_outcome",
    "place_on_map",
    "MEMORY_OUTCOMES",
    "MemoryMap",
    "MemoryMapPoint",
    "memory_map",
    "SPLIT_PARTS",
    "MemoryClaim",
    "MemoryRatioRow",
    "SystemsComparison",
    "SystemsRatio",
    "SystemsRow",
    "read_systems",
    "comparison_of",
    "map_of",
    "memory_claim",
    "memory_claim_of",
    "systems_comparison",
]

CLAIMED_MEMORY_REDUCTION = 0.265
CLAIMED_THROUGHPUT_GAIN = 0.049
CLAIMED_MEMORY_RATIO = 1.0 - CLAIMED_MEMORY_REDUCTION  # 0.735
MAP_OUTCOMES: tuple[str, ...] = ("as the paper claims from a micro-batch size on",
                                 "short of the paper's 26.5% at every measured size",
                                 "rises above 0.735 again at a larger size")
PAPER_TOKENS: int | None = None
"""The paper's tokens per micro-batch: not stated in the paper's text available to us."""
MIN_MAP_POINTS = 3
"""A memory map decides only with at least this many measured micro-batch sizes."""
MEMORY_OUTCOMES: tuple[str, ...] = ("lower than 1F1B, as the paper claims", "lower than 1F1B, less than the paper claims",
                                    "not lower than 1F1B", "undecided", "not measured")
BASELINES: tuple[str, ...] = ("1f1b", "gpipe")


@dataclass(frozen=True)
class SystemsRatio:
    """ZeroLock against one baseline at one K."""

    chunks: int
    baseline: str
    memory_reduction: float
    throughput_gain: float


@register
@dataclass(frozen=True)
class SystemsComparison(Result):
    """Measured memory and throughput ratios with the paper's claims alongside."""

    kind = "systems"
    source: str
    rows: list[SystemsRow]
    ratios: list[SystemsRatio]
    claimed_memory_reduction: float = CLAIMED_MEMORY_REDUCTION
    claimed_throughput_gain: float = CLAIMED_THROUGHPUT_GAIN


def comparison_of(rows: list[SystemsRow], source: str) -> SystemsComparison:
    """Ratios of ZeroLock to each baseline per K over measured rows (module docstring).

    Guarantees: one ratio per K where both ZeroLock and the baseline were measured;
    ``memory_reduction = 1 − zl/base`` and ``throughput_gain = zl/base − 1`` exactly.
    """
    by = {(r.method, r.chunks): r for r in rows}
    ratios = []
    for k in sorted({r.chunks for r in rows}):
        zl = by.get(("zerolock", k))
        for base in BASELINES:
            b = by.get((base, k))
            if zl is None or b is None or b.peak_bytes <= 0 or b.tokens_per_s <= 0:
                continue
            ratios.append(
                SystemsRatio(
                    k,
                    base,
                    1.0 - zl.peak_bytes / b.peak_bytes,
                    zl.tokens_per_s / b.tokens_per_s - 1.0,
                )
            )
    return SystemsComparison(source, rows, ratios)


def systems_comparison(path: str | Path) -> SystemsComparison:
    """``comparison_of`` the rows of ``systems.json`` (``analyses.systems.data.read_systems``)."""
    return comparison_of(read_systems(path), str(path))


@dataclass(frozen=True)
class MemoryRatioRow:
    """ZeroLock ÷ 1F1B per-stage peak memory at one K, over the repeats."""

    chunks: int
    repeats: int
    total: Interval  # median [min, max] over repeats of max-stage totals' ratio
    activations: Interval
    zerolock_split: dict[str, float]  # bytes, the peak stage of the first repeat
    baseline_split: dict[str, float]
    outcome: str


@register
@dataclass(frozen=True)
class MemoryMap(Result):
    """The total ratio against tokens per micro-batch at one K (module docstring)."""

    kind = "systems_memory_map"
    outcome: str  # one of MAP_OUTCOMES, or "not testable" below MIN_MAP_POINTS sizes
    chunks: int
    micro_batches: int
    seq_len: int
    points: list[MemoryMapPoint]
    crossing_tokens: float | None  # where the total ratio reaches 0.735 (interpolated), if bracketed
    bracket: list[int] | None = None  # the two measured sizes around ``crossing_tokens``
    reaches_from: int | None = None  # the first measured size at or below 0.735, if any

    @property
    def where(self) -> str:
        """Where the total reaches 0.735: "near N tokens (between a and b)", "at or below the smallest
        measured size, N tokens", or "" when no measured size reaches it."""
        if self.crossing_tokens is not None and self.bracket:
            return (f"near {self.crossing_tokens:.0f} tokens per micro-batch (interpolated between the measured "
                    f"{self.bracket[0]} and {self.bracket[1]})")
        if self.reaches_from is not None:
            return f"at or below the smallest measured size, {self.reaches_from} tokens per micro-batch"
        return ""


def _reaches(totals: list[float]) -> list[bool]:
    return [t <= CLAIMED_MEMORY_RATIO for t in totals]


def map_outcome(totals: list[float]) -> str:
    """The map's outcome word from its total ratios in order of size (module docstring)."""
    if len(totals) < MIN_MAP_POINTS:
        return "not testable"
    at = _reaches(totals)
    if not any(at):
        return MAP_OUTCOMES[1]
    return MAP_OUTCOMES[0] if all(at[at.index(True):]) else MAP_OUTCOMES[2]


def _crossing(points: list[MemoryMapPoint]) -> tuple[float | None, list[int] | None, int | None]:
    """(crossing, bracket, first size at or below 0.735): the first measured size at or below 0.735
    and, when a measured size above 0.735 precedes it, the crossing linear in log tokens between them."""
    at = _reaches([p.total for p in points])
    if not any(at):
        return None, None, None
    i = at.index(True)
    b = points[i]
    if i == 0:
        return None, None, b.tokens
    a = points[i - 1]
    if b.total == CLAIMED_MEMORY_RATIO:
        return float(b.tokens), [a.tokens, b.tokens], b.tokens
    w = (a.total - CLAIMED_MEMORY_RATIO) / (a.total - b.total)
    crossing = float(math.exp(math.log(a.tokens) + w * (math.log(b.tokens) - math.log(a.tokens))))
    return crossing, [a.tokens, b.tokens], b.tokens


def place_on_map(found: MemoryMap, tokens: int | None = PAPER_TOKENS) -> str:
    """Where a setting of ``tokens`` per micro-batch lies on the map; the paper's by default (not stated)."""
    where = found.where
    if tokens is None:
        reach = f"the map reaches 0.735 {where}" if where else "no measured size reaches 0.735"
        return f"the paper states no tokens per micro-batch, so its setting is not placed on the map; {reach}"
    sizes = [p.tokens for p in found.points]
    if not sizes[0] <= tokens <= sizes[-1]:
        return f"{tokens} tokens per micro-batch lie outside the measured {sizes[0]} to {sizes[-1]}"
    a = max((p for p in found.points if p.tokens <= tokens), key=lambda p: p.tokens)
    b = min((p for p in found.points if p.tokens >= tokens), key=lambda p: p.tokens)
    w = 0.0 if a.tokens == b.tokens else math.log(tokens / a.tokens) / math.log(b.tokens / a.tokens)
    ratio = a.total + w * (b.total - a.total)
    side = "at or below" if ratio <= CLAIMED_MEMORY_RATIO else "above"
    return f"at {tokens} tokens per micro-batch the total ratio is {ratio:.3f} (interpolated), {side} 0.735"


def _merge(points: list[MemoryMapPoint]) -> list[MemoryMapPoint]:
    """One point per size, sorted by tokens: a size measured more than once keeps its largest total and
    activations ratio (it reaches 0.735 only when every repeat does), the split of its largest total, and
    the smallest total as ``lowest``; the order of the repeats in the file does not matter."""
    by: dict[int, list[MemoryMapPoint]] = {}
    for p in points:
        by.setdefault(p.tokens, []).append(p)
    merged = []
    for tokens in sorted(by):
        group = by[tokens]
        if len(group) == 1:
            merged.append(group[0])
            continue
        top = max(group, key=lambda p: p.total)
        merged.append(MemoryMapPoint(tokens, top.sequences, top.total, max(p.activations for p in group),
                                     top.zerolock_split, top.baseline_split, len(group),
                                     min(p.total for p in group)))
    return merged


def map_of(data: MapData) -> MemoryMap:
    """The ``MemoryMap`` of a read ``memory_map.json``: one point per size, sorted by tokens, repeats of a
    size merged (``_merge``)."""
    points = _merge(list(data.points))
    crossing, bracket, first = _crossing(points)
    return MemoryMap(map_outcome([p.total for p in points]), data.chunks, data.micro_batches, data.seq_len, points,
                     crossing, bracket, first)


def memory_map(path: str | Path) -> MemoryMap:
    """``map_of`` ``memory_map.json`` (``analyses.systems.data.read_map``: ``RunDataError`` with one line if
    malformed: a key missing, a size below 1 token, a byte count that is not a finite number >= 0, a 1F1B
    peak that is not positive)."""
    return map_of(read_map(path))


@register
@dataclass(frozen=True)
class MemoryClaim(Result):
    """Peak memory, ZeroLock against 1F1B, with the paper's 0.735 beside it (module docstring)."""

    kind = "systems_memory"
    question: str
    outcome: str  # one of MEMORY_OUTCOMES, at ``primary_chunks``
    primary_chunks: int
    rows: list[MemoryRatioRow]
    claimed_ratio: float = CLAIMED_MEMORY_RATIO
    decided_on: str = "total"
    reason: str = ""
    setting: str = ""  # the measured setting of the rows (K, micro-batches, tokens per micro-batch)
    map: MemoryMap | None = None  # the ratio against tokens per micro-batch, when measured
    map_unused: str = ""  # why a map present did not decide the row ("" when it decided or is absent)


SYSTEMS = declare("systems", SystemsComparison, builtin=True)
MEMORY = declare("systems_memory", MemoryClaim)


QUESTION = ("Is ZeroLock's per-stage peak memory lower than 1F1B's at the same K, micro-batches and batch, "
            "by as much as the paper's 26.5% (ZeroLock/1F1B = 0.735)?")


def memory_outcome(ratios: list[float]) -> str:
    """The outcome word for the total ratios of every repeat (module docstring)."""
    if not ratios:
        return "not measured"
    if max(ratios) <= CLAIMED_MEMORY_RATIO:
        return MEMORY_OUTCOMES[0]
    if max(ratios) < 1.0:
        return MEMORY_OUTCOMES[1]
    if min(ratios) >= 1.0:
        return MEMORY_OUTCOMES[2]
    return "undecided"


def _interval(values: list[float]) -> Interval:
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])
    return Interval(median, ordered[0], ordered[-1], level=1.0)


def _memory_row(split: SplitRepeats) -> MemoryRatioRow:
    totals = (split.zerolock_total / split.baseline_total).tolist()
    acts = (split.zerolock_activations / split.baseline_activations).tolist()
    return MemoryRatioRow(split.chunks, len(totals), _interval(totals), _interval(acts), split.zerolock_split,
                          split.baseline_split, memory_outcome(totals))


def _map_unused(found: MemoryMap, primary: int, micro_batches: Any) -> str:
    """Why the map cannot decide the row ("" when it can): fewer than ``MIN_MAP_POINTS`` sizes, or a setting
    other than the row's primary one (its K, and the suite's micro-batches where ``systems.json`` records them)."""
    if found.outcome not in MAP_OUTCOMES:
        return f"the map has {len(found.points)} measured sizes, fewer than {MIN_MAP_POINTS}"
    if found.chunks != primary:
        return f"the map is at K = {found.chunks}, the row's primary setting at K = {primary}"
    if isinstance(micro_batches, int) and not isinstance(micro_batches, bool) and found.micro_batches != micro_batches:
        return f"the map has {found.micro_batches} micro-batches, the suite's setting {micro_batches}"
    return ""


def memory_claim_of(data: SystemsData) -> MemoryClaim:
    """ZeroLock ÷ 1F1B peak memory per K from a read ``systems.json`` (module docstring).

    Guarantees (tests): the ratio of each repeat is max-stage total ZeroLock / max-stage total
    1F1B exactly; the outcome is one of ``MEMORY_OUTCOMES`` or ``MAP_OUTCOMES``, at the primary K
    (the largest K with both methods' splits measured, else with both methods measured); a
    complete map at the primary K and the suite's micro-batches decides (reason "memory_map"),
    otherwise the one setting does and ``map_unused`` says why a map present did not; a file
    without memory splits and without such a map gives "not measured".
    """
    measured, rows = data.measured, [_memory_row(split) for split in data.splits]
    both = {r.chunks for r in measured if r.method == "zerolock"} & {r.chunks for r in measured if r.method == "1f1b"}
    primary_k = rows[-1].chunks if rows else max(both, default=0)
    m, batch, seq = data.micro_batches, data.batch_size, data.seq_len
    setting = f"K = {primary_k}" + (
        f", {m} micro-batches of {batch // m} x {seq} = {batch // m * seq} tokens" if m and batch and seq else "")
    found = map_of(data.map) if data.map is not None else None
    unused = _map_unused(found, primary_k, m) if found is not None and primary_k else ""
    if found is not None and primary_k and not unused:
        return MemoryClaim(QUESTION, found.outcome, primary_k, rows, setting=setting, map=found,
                           reason="memory_map")
    if not rows:
        return MemoryClaim(QUESTION, "not measured", primary_k, [], reason="no_memory_split", setting=setting,
                           map=found, map_unused=unused)
    return MemoryClaim(QUESTION, rows[-1].outcome, primary_k, rows, setting=setting, map=found, map_unused=unused)


def memory_claim(path: str | Path) -> MemoryClaim:
    """``memory_claim_of`` ``systems.json`` and the map beside it (``analyses.systems.data.systems_data``:
    the same errors as the throughput rows for a missing or malformed file)."""
    return memory_claim_of(systems_data(path))
