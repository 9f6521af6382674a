"""Systems claim, throughput: ZeroLock ÷ 1F1B from the validated schedule model.

Question: does the schedule model, fed with costs measured on this machine and scaled by
FLOPs to the model's shape, predict ZeroLock's throughput above 1F1B's, by the paper's 4.9%
(ratio 1.049)? Throughput cannot be measured on shared CPU cores; this row is a prediction
(``zerolock_theory/pipeline/schedule_predict.py``), never a measurement.

Input: ``schedule_prediction.json`` (``benchmarks/schedule_calibrate.py predict``) with rows
(model, K, m, ratio, bubble, work, readout_share) per cost variant; optionally
``schedule_validation.json`` (the same script's ``validate``) for the model's error.

Rule at the setting (``SETTING``; the paper states neither K, m nor the model in the text we
have, so the setting is an assumption and says so): ratio ≥ 1.049 → "higher than 1F1B, as
the paper claims"; 1 < ratio < 1.049 → "higher than 1F1B, less than the paper claims";
ratio ≤ 1 → "not higher than 1F1B"; no prediction → "not measured". Beside it: the sign of
ratio − 1 at the real model's shape (SmolLM2-135M, K ∈ {2, 3, 5}) for every m, and the share
of the (model, K, m) grid where the ratio reaches 1.049.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyses.io import RunDataError
from analyses.results import Result, register

__all__ = ["CLAIMED_THROUGHPUT_RATIO", "SETTING", "THROUGHPUT_OUTCOMES", "ThroughputPrediction",
           "throughput_outcome", "throughput_prediction"]

CLAIMED_THROUGHPUT_RATIO = 1.049
THROUGHPUT_OUTCOMES: tuple[str, ...] = ("higher than 1F1B, as the paper claims",
                                        "higher than 1F1B, less than the paper claims",
                                        "not higher than 1F1B", "not measured")
SETTING: dict[str, Any] = {"model": "Llama-3-8B", "chunks": 4, "micro_batches": 8}
"""Assumed: one stage per GPU on a 4-GPU server, m = 2K, an 8B model (not stated by the paper)."""
REAL_MODEL = "SmolLM2-135M"
REAL_CHUNKS: tuple[int, ...] = (2, 3, 5)
QUESTION = ("Does the schedule model predict ZeroLock's throughput above 1F1B's by the paper's 4.9% "
            "(ZeroLock/1F1B = 1.049)?")


@dataclass(frozen=True)
class PredictedCell:
    """The modelled ratio at one (model, K, m), with its two factors (ratio = bubble × work)."""

    model: str
    chunks: int
    micro_batches: int
    ratio: float
    bubble: float
    work: float
    readout_share: float


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


def throughput_outcome(ratio: float | None) -> str:
    """The outcome word for the modelled ratio at the setting (module docstring)."""
    if ratio is None:
        return THROUGHPUT_OUTCOMES[3]
    if ratio >= CLAIMED_THROUGHPUT_RATIO:
        return THROUGHPUT_OUTCOMES[0]
    return THROUGHPUT_OUTCOMES[1] if ratio > 1.0 else THROUGHPUT_OUTCOMES[2]


def _read(path: Path) -> Any:
    if not path.is_file():
        raise RunDataError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc


def _cell(raw: Any, where: str) -> PredictedCell:
    try:
        cell = PredictedCell(str(raw["model"]), int(raw["chunks"]), int(raw["micro_batches"]),
                             *(float(raw[k]) for k in ("ratio", "bubble", "work", "readout_share")))
    except (KeyError, TypeError, ValueError) as exc:
        raise RunDataError(f"{where}: a prediction row needs model, chunks, micro_batches, ratio, bubble, "
                           f"work, readout_share ({exc})") from exc
    if not cell.ratio > 0:
        raise RunDataError(f"{where}: ratio must be > 0, got {cell.ratio}")
    return cell


def throughput_prediction(path: str | Path, validation: str | Path | None = None, variant: str = "measured_rates",
                          setting: dict[str, Any] | None = None) -> ThroughputPrediction:
    """The throughput row from ``schedule_prediction.json`` (module docstring).

    Guarantees (tests): the outcome is one of ``THROUGHPUT_OUTCOMES`` and follows
    ``throughput_outcome`` of the cell at the setting; a setting outside the grid gives
    "not measured" with reason "setting_not_in_grid".
    """
    path = Path(path)
    path = path / "schedule_prediction.json" if path.is_dir() else path
    data = _read(path)
    rows = data.get("variants", {}).get(variant) if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise RunDataError(f"{path}: no prediction rows for variant {variant!r}")
    cells = [_cell(r, f"{path}: row {i + 1}") for i, r in enumerate(rows)]
    setting = dict(setting or SETTING)
    at = next((c for c in cells if (c.model, c.chunks, c.micro_batches)
               == (setting["model"], setting["chunks"], setting["micro_batches"])), None)
    real = [c for c in cells if c.model == REAL_MODEL and c.chunks in REAL_CHUNKS]
    signs = {c.ratio > 1.0 for c in real}
    sign = "" if not real else ("mixed" if len(signs) == 2 else ("higher" if signs == {True} else "lower"))
    errors: list[float] = []
    if validation is not None:
        vpath = Path(validation)
        vpath = vpath / "schedule_validation.json" if vpath.is_dir() else vpath
        errors = [float(r["error"]) for r in _read(vpath).get("validation", [])]
    share = sum(c.ratio >= CLAIMED_THROUGHPUT_RATIO for c in cells) / len(cells)
    source = "assumed (the paper states neither K, m nor the model)" if setting == SETTING else "given"
    return ThroughputPrediction(QUESTION, throughput_outcome(at.ratio if at else None), variant, setting, source,
                                at, REAL_MODEL, real, sign, share, cells, errors,
                                reason="" if at else "setting_not_in_grid")
