"""Systems claim, throughput: ZeroLock ÷ 1F1B as a predicted map, never a verdict.

Throughput cannot be measured on shared CPU cores; a schedule model fed with costs measured on
a CPU and scaled by FLOPs to each model's shape (``zerolock_theory/pipeline/schedule_predict.py``)
predicts ZeroLock ÷ 1F1B over (model, K, micro-batches m). The prediction depends on the setting
more than on the method: on one model the same K gives ratios from well above to below 1 as m
grows, and the paper states neither K, m nor the model. So the row shows the map and the region
where the prediction reaches the paper's 1.049, with the outcome "a prediction, not a verdict"
(or "not measured" without a prediction), and says what is validated: the CPU pipelines' step
times against the model (``schedule_validation.json``: the errors, how many within
``VALIDATED_WITHIN``), not the overlap between stages that the claim is about.

Input: ``schedule_prediction.json`` (``benchmarks/schedule_calibrate.py predict``) with rows
(model, K, m, ratio, bubble, work, readout_share) per cost variant; optionally
``schedule_validation.json`` (the same script's ``validate``) for the model's error. Where the
costs were measured is the file's own ``provenance`` (machine, date, command; ``measured_where``):
the row repeats it, and says so when the file records none.

Each model's section uses its own shape (``ModelRegion``, one per model of the grid); the suite's
model leads when it is in the grid (``model``), and no other model's cell is printed as its own.
``SETTING`` (Llama-3-8B, K = 4, m = 8) is kept as one described cell of the Llama-3-8B map, not as
the row's setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyses.results import Result, declare, register
from analyses.systems.data import PROVENANCE_KEYS, PredictedCell, PredictionData, prediction_data

__all__ = ["CLAIMED_THROUGHPUT_RATIO", "PROVENANCE_KEYS", "SETTING", "THROUGHPUT_OUTCOMES", "VALIDATED_WITHIN",
           "ModelRegion", "ThroughputPrediction", "grid_model", "measured_where", "throughput_outcome",
           "throughput_of", "throughput_prediction"]

CLAIMED_THROUGHPUT_RATIO = 1.049
THROUGHPUT_OUTCOMES: tuple[str, ...] = ("a prediction, not a verdict", "not measured")
VALIDATED_WITHIN = 0.25
"""A validated step time: predicted within this relative error of the CPU pipeline's measured one."""
SETTING: dict[str, Any] = {"model": "Llama-3-8B", "chunks": 4, "micro_batches": 8}
"""Assumed: one stage per GPU on a 4-GPU server, m = 2K, an 8B model (not stated by the paper)."""
REAL_MODEL = "SmolLM2-135M"
REAL_CHUNKS: tuple[int, ...] = (2, 3, 5)
QUESTION = ("Where over (model, K, micro-batches m) does the schedule model predict ZeroLock's throughput "
            "above 1F1B's by the paper's 4.9% (ZeroLock/1F1B = 1.049)? A prediction, not a measurement")


@dataclass(frozen=True)
class ModelRegion:
    """One model's map: where the predicted ratio reaches 1.049, and its range."""

    model: str
    cells: int
    reaching: list[list[int]]  # [K, m] of the cells with ratio ≥ 1.049
    above_one: int  # cells with ratio > 1
    lowest: float
    highest: float


def _regions(cells: list[PredictedCell]) -> list[ModelRegion]:
    out = []
    for model in sorted({c.model for c in cells}):
        own = [c for c in cells if c.model == model]
        out.append(ModelRegion(model, len(own), [[c.chunks, c.micro_batches] for c in own
                                                 if c.ratio >= CLAIMED_THROUGHPUT_RATIO],
                               sum(c.ratio > 1.0 for c in own), min(c.ratio for c in own),
                               max(c.ratio for c in own)))
    return out


def grid_model(path: str, models: list[str]) -> str:
    """The grid's model whose name appears in the run's model path (case-insensitive), else ""."""
    lowered = path.lower()
    return next((m for m in models if m.lower() in lowered), "")


@register
@dataclass(frozen=True)
class ThroughputPrediction(Result):
    """The modelled throughput ratio at the assumed setting, the real model's sign, the grid."""

    kind = "systems_throughput"
    question: str
    outcome: str  # one of THROUGHPUT_OUTCOMES
    variant: str  # cost variant: measured_rates or flops_only
    setting: dict[str, Any]
    setting_source: str
    at_setting: PredictedCell | None
    real_model: str
    real_model_cells: list[PredictedCell]
    real_model_sign: str  # "higher", "lower" or "mixed" (over K ∈ REAL_CHUNKS and every m); "" if absent
    share_reaching_claim: float  # of the grid's cells, ratio ≥ 1.049
    cells: list[PredictedCell]
    validation_errors: list[float]  # predicted/measured − 1 of the CPU step times, if given
    claimed_ratio: float = CLAIMED_THROUGHPUT_RATIO
    reason: str = ""
    model: str = ""  # the suite's model when in the grid (its section leads), else ""
    regions: list[ModelRegion] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)  # the prediction file's: machine, date, command

    @property
    def validated(self) -> int:
        """Step times predicted within ``VALIDATED_WITHIN`` of the CPU pipeline's."""
        return sum(abs(e) <= VALIDATED_WITHIN for e in self.validation_errors)


def measured_where(provenance: dict[str, str]) -> str:
    """Where the costs were measured, in the prediction file's own words (machine, date, command)."""
    if not all(provenance.get(k) for k in PROVENANCE_KEYS):
        return "costs measured where the prediction file does not record"
    return (f"costs measured on {provenance['machine']}, {provenance['date']}, by "
            f"`{provenance['command']}`")


THROUGHPUT = declare("systems_throughput", ThroughputPrediction)


def throughput_outcome(cells: list[PredictedCell]) -> str:
    """"a prediction, not a verdict" for any predicted map, "not measured" without one."""
    return THROUGHPUT_OUTCOMES[0] if cells else THROUGHPUT_OUTCOMES[1]


def throughput_of(data: PredictionData, setting: dict[str, Any] | None = None, model: str = "") -> ThroughputPrediction:
    """The throughput row from a read ``schedule_prediction.json`` (module docstring).

    Guarantees (tests): the outcome is "a prediction, not a verdict" whatever the ratios; one
    ``ModelRegion`` per model of the grid, from that model's cells only; ``model`` (the suite's
    model path or name) selects the grid model that leads (``grid_model``).
    """
    cells = list(data.cells)
    setting = dict(setting or SETTING)
    at = next((c for c in cells if (c.model, c.chunks, c.micro_batches)
               == (setting["model"], setting["chunks"], setting["micro_batches"])), None)
    real = [c for c in cells if c.model == REAL_MODEL and c.chunks in REAL_CHUNKS]
    signs = {c.ratio > 1.0 for c in real}
    sign = "" if not real else ("mixed" if len(signs) == 2 else ("higher" if signs == {True} else "lower"))
    errors = list(data.validation_errors)
    share = sum(c.ratio >= CLAIMED_THROUGHPUT_RATIO for c in cells) / len(cells)
    source = "assumed (the paper states neither K, m nor the model)" if setting == SETTING else "given"
    own = grid_model(model, sorted({c.model for c in cells})) if model else ""
    return ThroughputPrediction(QUESTION, throughput_outcome(cells), data.variant, setting, source,
                                at, REAL_MODEL, real, sign, share, cells, errors,
                                reason="prediction", model=own, regions=_regions(cells),
                                provenance=dict(data.provenance))


def throughput_prediction(path: str | Path, validation: str | Path | None = None, variant: str = "measured_rates",
                          setting: dict[str, Any] | None = None, model: str = "") -> ThroughputPrediction:
    """``throughput_of`` ``schedule_prediction.json`` and, when given, ``schedule_validation.json``
    (``analyses.systems.data.prediction_data``)."""
    return throughput_of(prediction_data(path, validation, variant), setting, model)
