"""The paper's systems claims as rows: peak memory, measured; throughput, modelled.

* **Memory** (paper: 26.5% lower peak memory than 1F1B, a ratio of 0.735): per-stage peak memory of
  pipelined ZeroLock against 1F1B at the same K, micro-batches and batch, split into weights,
  optimizer state, activations and communication buffers, over repeats
  (``analyses.systems.memory_claim`` on ``systems.json``, written by ``zerolock verify`` or
  ``benchmarks/pipeline_memory.py``). Decided on the total; the activations-only ratio beside it.
* **Throughput** (paper: 4.9% higher than 1F1B, 1.049): on 2 CPU cores it cannot be measured, so
  it is modelled (``zerolock_theory.pipeline.schedule_model``, validated against the CPU pipeline)
  at the setting the package assumes (the paper does not state it), with the sign of the
  prediction at SmolLM2-135M's shape beside it (``analyses.systems_throughput``). It reads a
  ``schedule_prediction.json`` next to the systems output when given, else the packaged one
  (``zerolock_theory/pipeline/data/``, costs measured on 2 CPU cores; see docs/SYSTEMS.md).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from analyses.claims.registry import (
    NOT_MEASURED,
    Claim,
    Outcome,
    SuiteInputs,
    register,
    result_rule,
)
from analyses.results import NotMeasured
from analyses.systems import MEMORY_OUTCOMES, MemoryClaim, memory_claim
from analyses.systems_throughput import (
    THROUGHPUT_OUTCOMES,
    ThroughputPrediction,
    throughput_prediction,
)
from analyses.verdict import Evidence

PACKAGED = Path(str(files("zerolock_theory.pipeline") / "data"))


def _memory(inputs: SuiteInputs) -> MemoryClaim:
    if inputs.systems is None:
        raise NotMeasured("no systems.json given (zerolock verify measures it; or benchmarks/pipeline_memory.py)")
    return memory_claim(inputs.systems)


def _throughput(inputs: SuiteInputs) -> ThroughputPrediction:
    given = None
    if inputs.systems is not None:
        folder = inputs.systems if inputs.systems.is_dir() else inputs.systems.parent
        given = folder / "schedule_prediction.json"
    source = given if given is not None and given.is_file() else PACKAGED / "schedule_prediction.json"
    validation = source.parent / "schedule_validation.json"
    return throughput_prediction(source, validation if validation.is_file() else None)


def _memory_short(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, MemoryClaim) or not r.rows:
        return "-"
    row = next(x for x in r.rows if x.chunks == r.primary_chunks)
    return f"K = {row.chunks}: total {row.total}, activations {row.activations} (paper 0.735)"


def _memory_measured(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, MemoryClaim):
        return "-"
    cells = [f"K = {x.chunks}: total {x.total}, activations {x.activations} ({x.repeats} repeats)" for x in r.rows]
    return "ZeroLock / 1F1B per-stage peak memory, median [min, max]: " + "; ".join(cells)


def _throughput_short(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, ThroughputPrediction) or r.at_setting is None:
        return "-"
    return f"modelled {r.at_setting.ratio:.3g} x 1F1B (paper 1.049); {r.real_model}: {r.real_model_sign}"


def _throughput_measured(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, ThroughputPrediction):
        return "-"
    at = r.at_setting
    head = "not in the grid" if at is None else (
        f"{at.ratio:.3g} = bubble {at.bubble:.3g} x work {at.work:.3g} (readouts {at.readout_share:.0%} of a "
        f"ZeroLock stage's work)")
    setting = ", ".join(f"{k} {v}" for k, v in r.setting.items())
    return (f"at the assumed setting ({setting}; {r.setting_source}): {head}; {r.real_model} shape: "
            f"{r.real_model_sign}; {r.share_reaching_claim:.0%} of the (model, K, m) grid reaches 1.049")


def _reason(ev: Evidence) -> str:
    return ev.skipped or "no data" if ev.reason == "skipped" else ev.reason.replace("_", " ")


MEMORY = register(Claim(
    key="systems_memory", title="Systems: peak memory (paper: 0.735x 1F1B)",
    paper="ZeroLock reduces peak memory by 26.5% compared with a PipeDream-style 1F1B pipeline.",
    question="Is ZeroLock's per-stage peak memory lower than 1F1B's at the same K, micro-batches and batch, by "
    "as much as the paper's 26.5%?",
    primary="the embedded model (or the suite's model), ZeroLock and 1F1B pipelines, 3 repeats, the largest K",
    outcomes={MEMORY_OUTCOMES[0]: Outcome("every repeat's total ratio is at or below 0.735", "holds"),
              MEMORY_OUTCOMES[1]: Outcome("lower than 1F1B, but by less than the paper's 26.5%", "mixed"),
              MEMORY_OUTCOMES[2]: Outcome("not lower than 1F1B", "fails"),
              MEMORY_OUTCOMES[3]: Outcome("the repeats straddle the thresholds", "mixed"),
              "not measured": NOT_MEASURED},
    rule=result_rule("systems_memory", "systems_memory", MemoryClaim, lambda found: found.reason or "computed"),
    measured=_memory_measured, short=_memory_short,
    reason=_reason, analyses={"systems_memory": _memory}, figure="systems_memory",
    tests=("tests/analyses/test_analyses_systems.py::test_memory_claim_returns_each_outcome",
           "tests/analyses/test_analyses_systems.py::test_memory_claim_without_split_is_not_measured"),
))
THROUGHPUT = register(Claim(
    key="systems_throughput", title="Systems: throughput (modelled, paper: 1.049x 1F1B)",
    paper="ZeroLock improves throughput by 4.9% compared with a PipeDream-style 1F1B pipeline.",
    question="Does a schedule model, fed with measured costs and validated on the CPU pipeline, predict ZeroLock "
    "above 1F1B by the paper's 4.9%?",
    primary="the schedule model at the assumed setting (the paper does not state K, m or the model)",
    outcomes={THROUGHPUT_OUTCOMES[0]: Outcome("the modelled ratio is at least 1.049", "holds"),
              THROUGHPUT_OUTCOMES[1]: Outcome("above 1F1B, by less than 4.9%", "mixed"),
              THROUGHPUT_OUTCOMES[2]: Outcome("the model predicts ZeroLock no faster than 1F1B", "fails"),
              "not measured": NOT_MEASURED},
    rule=result_rule("systems_throughput", "systems_throughput", ThroughputPrediction,
                     lambda found: found.reason or "computed"), measured=_throughput_measured,
    short=_throughput_short, reason=_reason, analyses={"systems_throughput": _throughput},
    figure="systems_throughput",
    tests=("tests/analyses/test_analyses_systems_throughput.py::test_outcome_at_the_setting",
           "tests/distributed/test_schedule_model.py::test_uniform_costs_give_the_closed_form_bubble"),
))
