"""The fixed-point experiment with its controls (docs/MATH.md, "Lemma 2"; ``analyses.lemma2.fixed_point``).

Three decisions through the SAME rule (``analyses.lemma2.fixed_point.fixed_point_decision``), each on
per-seed records whose projections carry the label-permutation null (so each arm decides on its
label part A_d):

* ``main``: chunk k trained alone with each loss on the batch's labels (the experiment);
* ``permuted``: both trainings re-run on the labels permuted among the batch's positions, the
  reached readouts measured against the TRUE labels' targets: training carried no information
  about those labels, so neither arm may find a direction (row word "no difference detected" or
  "not testable"; any decided arm is a failed control);
* ``label_free``: no training and no label: the forward "reached" readout is the arithmetic
  move (1−s)·p^0 + s·p_{k-1}, the reverse one the geometric move ∝ (p^0)^{1−s}·p_{k-1}^s
  (s = ``LABEL_FREE_STEP``), which near m_k and g_k respectively without any label; neither arm
  may find a direction either.

Each arm's floor in each decision (``ArmDecision.floor``) is computed with the records
(``analyses.lemma2.fixed_point``): the component along m_k − g_k that label-free moves reach on the
same batch (toward p_{k-1}^λ and tempered starts, at ``analyses.lemma2.fixed_point.ARM_FLOOR_STEPS``)
and that the reached readout shows against permuted labels' targets, never below
``analyses.lemma2.fixed_point.ALONG_FLOOR``. The label-free control's arithmetic move lies on a fitted
label-free direction; its geometric move does not. ``floor_steps`` and ``seed_floors`` record the
(descriptive) TV contrast's floor.

``calibrated`` is True when both controls read as they must; the Lemma 2 row reports "not
calibrated" otherwise (and without controls).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analyses.lemma2.fixed_point import FixedPointResult
from analyses.results import Result, declare_family, register

__all__ = ["LABEL_FREE_STEP", "PERMUTED_ALLOWED", "FixedPointControls"]

LABEL_FREE_STEP = 0.75
"""s: how far the label-free control moves p^0 toward p_{k-1} (arithmetic forward, geometric reverse)."""
PERMUTED_ALLOWED: tuple[str, ...] = ("no difference detected", "not testable")
"""What the controls may read: neither arm finds a direction."""


@register
@dataclass(frozen=True)
class FixedPointControls(Result):
    """The experiment on one chunk with its label-part null, and its two controls."""

    kind = "fixed_point_controls"
    chunk: int
    main: FixedPointResult
    permuted: FixedPointResult
    label_free: FixedPointResult
    label_free_step: float = LABEL_FREE_STEP
    floor_steps: list[float] = field(default_factory=list)  # s of the label-free moves of the contrast's floor
    seed_floors: list[float] = field(default_factory=list)  # per seed, the largest |C_label| over floor_steps

    @property
    def failed_controls(self) -> list[str]:
        """The controls that read what they must not (empty: calibrated)."""
        failed = []
        for name, found in (("label permutation", self.permuted), ("label-free move", self.label_free)):
            if found.outcome not in PERMUTED_ALLOWED:
                arms = "; ".join(f"{a.arm} arm {a.outcome}" for a in found.arms if a.decided)
                failed.append(f"{name} reads {found.outcome!r} ({arms})")
        return failed

    @property
    def calibrated(self) -> bool:
        return not self.failed_controls


CONTROLS = declare_family("fixed_point_controls_chunk", FixedPointControls)
"""The fixed-point experiment's controls of each chunk run (``controls.json``)."""


