"""The paper's systems claims as rows: peak memory, measured as a map; throughput, predicted as a map.

* **Memory** (paper: 26.5% lower peak memory than 1F1B, a ratio of 0.735): per-stage peak memory of
  pipelined ZeroLock against 1F1B at the same K, micro-batches and batch, split into weights,
  optimizer state, activations and communication buffers (``analyses.systems.memory.memory_claim`` on
  ``systems.json``). The ratio falls with the tokens a micro-batch carries, so the row decides on
  the memory map (``memory_map.json``: ≥ 3 measured sizes, repeats of a size merged, at the primary
  K and the suite's micro-batches) when present, from where its total crosses 0.735 (interpolated
  between the measured sizes that bracket it), whatever the smallest measured size, and says that
  the paper's own tokens per micro-batch are not stated; otherwise on the suite's one setting,
  which it names, with why a map present did not decide. The split is a deterministic
  accounting: repeats are not shown as a spread.
* **Throughput** (paper: 4.9% higher than 1F1B, 1.049): a schedule model's prediction over
  (model, K, m), never a verdict: the region where it reaches 1.049 per model, the suite's own
  model's map first (``analyses.systems.throughput``), and what the CPU pipelines validated (step
  times) and did not (the overlap between stages). It reads a ``schedule_prediction.json`` next to
  the systems output when given, else the packaged one (``zerolock_theory/pipeline/data/``), and
  says where that file's costs were measured (its recorded machine, date and command).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from analyses.registry import (
    NOT_MEASURED,
    Claim,
    Outcome,
    SuiteInputs,
    register,
    result_rule,
)
from analyses.results import NotMeasured
from analyses.systems.data import prediction_data, systems_data
from analyses.systems.memory import (
    MAP_OUTCOMES,
    MEMORY,
    MEMORY_OUTCOMES,
    MemoryClaim,
    memory_claim_of,
    place_on_map,
)
from analyses.systems.throughput import THROUGHPUT as THROUGHPUT_RESULT
from analyses.systems.throughput import (
    THROUGHPUT_OUTCOMES,
    VALIDATED_WITHIN,
    ThroughputPrediction,
    measured_where,
    throughput_of,
)
from analyses.verdict import Evidence

PACKAGED = Path(str(files("zerolock_theory.pipeline") / "data"))


def _memory(inputs: SuiteInputs) -> MemoryClaim:
    if inputs.systems is None:
        raise NotMeasured("no systems.json given (zerolock verify measures it; or benchmarks/pipeline_memory.py)")
    return memory_claim_of(systems_data(inputs.systems))


def _throughput(inputs: SuiteInputs) -> ThroughputPrediction:
    given = None
    if inputs.systems is not None:
        folder = inputs.systems if inputs.systems.is_dir() else inputs.systems.parent
        given = folder / "schedule_prediction.json"
    source = given if given is not None and given.is_file() else PACKAGED / "schedule_prediction.json"
    validation = source.parent / "schedule_validation.json"
    model = inputs.table[0][0].model if inputs.table else ""
    return throughput_of(prediction_data(source, validation if validation.is_file() else None), model=model)


def _memory_short(ev: Evidence) -> str:
    """What decided the row: the map's ends and crossing when the map decided, else the one setting (and why a
    map present did not decide)."""
    r = ev.result
    if not isinstance(r, MemoryClaim):
        return "-"
    if r.reason == "memory_map" and r.map is not None and r.map.points:
        where = r.map.where
        cross = f"; reaches 0.735 {where}" if where else "; reaches 0.735 at no measured size"
        ends = f"{r.map.points[0].total:.3f} at {r.map.points[0].tokens} to {r.map.points[-1].total:.3f} at " \
               f"{r.map.points[-1].tokens} tokens per micro-batch"
        return f"K = {r.map.chunks}: total {ends}{cross} (paper 0.735, its size not stated)"
    unused = f" (map not used: {r.map_unused})" if r.map_unused else ""
    row = next((x for x in r.rows if x.chunks == r.primary_chunks), None)
    if row is None:
        return f"-{unused}" if unused else "-"
    return f"{r.setting or f'K = {row.chunks}'}: total {row.total.estimate:.3f}, activations " \
           f"{row.activations.estimate:.3f} (paper 0.735){unused}"


def _memory_measured(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, MemoryClaim):
        return "-"
    cells = [f"K = {x.chunks}: total {x.total.estimate:.3f}, activations {x.activations.estimate:.3f}" for x in r.rows]
    text = (f"ZeroLock / 1F1B per-stage peak memory at the suite's setting ({r.setting}): " + "; ".join(cells)
            if cells else f"No per-stage memory split at the suite's setting ({r.setting})")
    if r.map is not None:
        points = "; ".join(f"{p.tokens} tokens: total {p.total:.3f}" + (
            f" (largest of {p.repeats} repeats, smallest {p.lowest:.3f})" if p.repeats > 1 else "")
            + f", activations {p.activations:.3f}" for p in r.map.points)
        text += f". Map at K = {r.map.chunks}, {r.map.micro_batches} micro-batches (measured): {points}"
        text += f"; {place_on_map(r.map)}" if r.map.points else ""
        text += f"; not used: {r.map_unused}" if r.map_unused else ""
    return text


def _where(reaching: list[list[int]]) -> str:
    """The cells reaching 1.049, per K: "K=4: m <= 8" when they are the smallest m, else the list."""
    by_k: dict[int, list[int]] = {}
    for k, m in reaching:
        by_k.setdefault(k, []).append(m)
    parts = []
    for k, ms in sorted(by_k.items()):
        ms = sorted(ms)
        parts.append(f"K={k}: m <= {ms[-1]}" if ms[0] == 1 and all(b == 2 * a for a, b in zip(ms, ms[1:], strict=False))
                     else f"K={k}: m in {ms}")
    return "; ".join(parts) or "nowhere"


def _region(region) -> str:
    where = _where(region.reaching)
    return (f"{region.model}: ratio {region.lowest:.3g} to {region.highest:.3g}; >= 1.049 at {where} "
            f"({len(region.reaching)} of {region.cells} (K, m) cells)")


def _throughput_short(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, ThroughputPrediction) or not r.regions:
        return "-"
    own = next((g for g in r.regions if g.model == r.model), None)
    if own is None:
        return f"predicted, no verdict: {r.share_reaching_claim:.0%} of the (model, K, m) grid reaches 1.049"
    return f"predicted, no verdict: {own.model} reaches 1.049 at {len(own.reaching)} of {own.cells} (K, m) cells"


def _throughput_measured(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, ThroughputPrediction):
        return "-"
    regions = sorted(r.regions, key=lambda g: g.model != r.model)  # the suite's own model first
    errors = r.validation_errors
    validated = (f"validated: CPU pipeline step times, errors {min(errors):+.0%} to {max(errors):+.0%} "
                 f"({r.validated} of {len(errors)} within {VALIDATED_WITHIN:.0%})" if errors
                 else "validated: no validation file")
    return (f"A prediction (schedule model, {measured_where(r.provenance)}, scaled by FLOPs to each shape): "
            + "; ".join(_region(g) for g in regions)
            + f". {validated}; not validated: the overlap between stages, which the claim is about")


REASONS = {
    "memory_map": "the memory map decides: where its total ratio (>= 3 measured micro-batch sizes) crosses 0.735",
    "computed": "the suite's one setting decides (no memory map of >= 3 sizes at the primary K and the suite's "
                "micro-batches): its total ratio against 0.735 and 1",
    "no_memory_split": "no per-stage memory split recorded",
    "prediction": "a schedule model's prediction: shown as a map, never a verdict",
}


def _reason(ev: Evidence) -> str:
    if ev.reason == "skipped":
        return ev.skipped or "no data"
    return REASONS.get(ev.reason, ev.reason.replace("_", " "))


MEMORY = register(Claim(
    key="systems_memory", title="Systems: peak memory (paper: 0.735x 1F1B)",
    paper="ZeroLock reduces peak memory by 26.5% compared with a PipeDream-style 1F1B pipeline.",
    question="Is ZeroLock's per-stage peak memory lower than 1F1B's at the same K, micro-batches and batch, by "
    "as much as the paper's 26.5%, and at which tokens per micro-batch?",
    primary="the suite's model, ZeroLock and 1F1B pipelines at the largest K: the memory map over tokens per "
    "micro-batch (>= 3 sizes), else the suite's one setting",
    outcomes={MAP_OUTCOMES[0]: Outcome("the total ratio is at or below 0.735 from a measured micro-batch size on "
                                       "(where it crosses is named; the paper states no size)", "mixed"),
              MAP_OUTCOMES[1]: Outcome("the total ratio is above 0.735 at every measured micro-batch size", "fails"),
              MAP_OUTCOMES[2]: Outcome("the total ratio reaches 0.735 at some measured size and rises above it at "
                                       "a larger one", "mixed"),
              MEMORY_OUTCOMES[0]: Outcome("at the named setting, the total ratio is at or below 0.735 (no map decides)",
                                          "holds"),
              MEMORY_OUTCOMES[1]: Outcome("at the named setting, lower than 1F1B but by less than 26.5% (no map decides)",
                                          "mixed"),
              MEMORY_OUTCOMES[2]: Outcome("at the named setting, not lower than 1F1B (no map decides)", "fails"),
              MEMORY_OUTCOMES[3]: Outcome("the repeats straddle the thresholds", "mixed"),
              "not measured": NOT_MEASURED},
    rule=result_rule("systems_memory", MEMORY, lambda found: found.reason or "computed"),
    vocabulary=MAP_OUTCOMES + MEMORY_OUTCOMES,
    measured=_memory_measured, short=_memory_short,
    reason=_reason, analyses={MEMORY: _memory}, figure="systems_memory",
    tests=("tests/analyses/systems/test_analyses_systems.py::test_memory_claim_returns_each_outcome",
           "tests/analyses/systems/test_analyses_systems.py::test_memory_claim_without_split_is_not_measured",
           "tests/analyses/systems/test_analyses_systems_map.py::test_the_map_names_where_the_ratio_crosses",
           "tests/analyses/systems/test_analyses_systems_families.py::test_the_curve_reads_the_same_from_any_smallest_size",
           "tests/analyses/systems/test_analyses_systems_families.py::test_each_construction_reads_its_truth"),
))
THROUGHPUT = register(Claim(
    key="systems_throughput", title="Systems: throughput (predicted map, paper: 1.049x 1F1B)",
    paper="ZeroLock improves throughput by 4.9% compared with a PipeDream-style 1F1B pipeline.",
    question="Where over (model, K, micro-batches m) does a schedule model, fed with measured costs, predict "
    "ZeroLock above 1F1B by the paper's 4.9%? (a prediction: throughput is not measured here)",
    primary="the schedule model's map, the suite's own model first (the paper states neither K, m nor the model)",
    outcomes={THROUGHPUT_OUTCOMES[0]: Outcome("a predicted map with the region reaching 1.049; the overlap between "
                                              "stages it rests on is not validated", "none"),
              "not measured": NOT_MEASURED},
    rule=result_rule("systems_throughput", THROUGHPUT_RESULT, lambda found: found.reason or "computed"), vocabulary=THROUGHPUT_OUTCOMES,
    measured=_throughput_measured,
    short=_throughput_short, reason=_reason, analyses={THROUGHPUT_RESULT: _throughput},
    figure="systems_throughput",
    tests=("tests/analyses/systems/test_analyses_systems_throughput.py::test_the_row_is_a_map_whatever_the_ratios",
           "tests/analyses/systems/test_analyses_systems_throughput.py::test_each_model_reads_its_own_cells",
           "tests/analyses/systems/test_analyses_systems_provenance.py::test_the_row_says_where_the_file_was_measured",
           "tests/distributed/test_schedule_model.py::test_uniform_costs_give_the_closed_form_bubble"),
))
