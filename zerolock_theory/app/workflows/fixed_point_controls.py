"""The fixed-point experiment with its controls (``analyses.lemma2.fixed_point_controls``).

Per seed (``workflows.fixed_point.prepare_seed``: the model, adapters and fixed batch of that
seed), from chunk k's initial adapters each time:

1. forward and reverse trainings on the batch's labels (the experiment);
2. forward and reverse trainings on the labels permuted among the batch's positions (a seeded
   permutation), measured against the true labels' targets (the label-permutation control);
3. the label-free moves from p^0 toward p_{k-1}, arithmetic (forward) and geometric (reverse),
   with no training: at ``analyses.lemma2.fixed_point.ARM_FLOOR_STEPS`` they set the (descriptive)
   contrast's floor, at ``LABEL_FREE_STEP`` they are the label-free control.

The floor. On a real model p^0 and p_{k-1} already lean toward the true labels, so even a
label-free move has a small label part (embedded model, chunk 1: about −0.005 at s = ½, beyond
the fixed ``CONTRAST_FLOOR`` of 0.001). The contrast's floor is therefore the label part a label-free
move reaches on this batch: per seed the largest |C_label| over s ∈ ``ARM_FLOOR_STEPS``, its mean over
seeds (never below ``CONTRAST_FLOOR``). The arms' own floor is computed with each record
(``analyses.lemma2.fixed_point.reached``). The control then moves to s = ``LABEL_FREE_STEP``, a step the
floors did not see.

Every reached readout is recorded with the label-permutation null (``analyses.lemma2.fixed_point.reached``
with ``label_permutations``), and the same rule decides each of the three
(``fixed_point_decision``). Four trainings per seed: twice the experiment alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

import torch

from analyses.lemma2.fixed_point import (
    ARM_FLOOR_STEPS,
    CONTRAST_FLOOR,
    FixedPointSeed,
    fixed_point_decision,
    label_free_move,
    label_permutations,
    reached,
)
from analyses.lemma2.fixed_point_controls import LABEL_FREE_STEP, FixedPointControls
from zerolock_theory.app.workflows.fixed_point import (
    FixedPointSettings,
    SeedBatch,
    prepare_seed,
    train_from_start,
)

__all__ = ["label_free_moves", "run_fixed_point_controls"]

PERMUTATION_SEED = 20_000
"""Offset of the training permutation's seed (distinct from the null's permutations)."""


def label_free_moves(log_start: torch.Tensor, log_prev: torch.Tensor, step: float = LABEL_FREE_STEP
                     ) -> dict[str, torch.Tensor]:
    """log of (1−s)·p^0 + s·p_{k-1} ("forward") and of ∝ (p^0)^{1−s}·p_{k-1}^s ("reverse"): no label used
    (``analyses.lemma2.fixed_point.label_free_move``)."""
    return {"forward": label_free_move(log_start, log_prev, step, "arithmetic"),
            "reverse": label_free_move(log_start, log_prev, step, "geometric")}


def _record(b: SeedBatch, seed: int, logs: dict[str, torch.Tensor], settings: FixedPointSettings,
            permuted: list[torch.Tensor]) -> FixedPointSeed:
    out = {d: reached(d, b.log_prev, b.start_log_p, logs[d], b.labels, settings.alpha, settings.epsilon,
                      permuted=permuted) for d in ("forward", "reverse")}
    return FixedPointSeed(seed, out["forward"], out["reverse"], float(b.start["tv_m"].mean()),
                         float(b.start["tv_g"].mean()), float(b.start["tv_m_g"].mean()))


def _trained(b: SeedBatch, seed: int, settings: FixedPointSettings, permuted: list[torch.Tensor],
             labels: torch.Tensor | None) -> FixedPointSeed:
    """Both trainings on ``labels`` (None: the batch's own), recorded against the batch's own labels."""
    out = {}
    for direction in ("forward", "reverse"):
        run, log_p = train_from_start(b, settings, direction, labels)
        out[direction] = reached(direction, b.log_prev, b.start_log_p, log_p, b.labels, settings.alpha,
                                 settings.epsilon, steps=run.steps, converged=run.converged,
                                 loss_start=run.loss_start, loss_end=run.loss_end, permuted=permuted)
    return FixedPointSeed(seed, out["forward"], out["reverse"], float(b.start["tv_m"].mean()),
                         float(b.start["tv_g"].mean()), float(b.start["tv_m_g"].mean()))


def run_fixed_point_controls(settings: FixedPointSettings, level: float = 0.95,
                             progress: Callable[[str], None] | None = None) -> FixedPointControls:
    """The experiment, the label-permutation control and the label-free control (module docstring)."""
    main, shuffled, free, floors = [], [], [], []
    for seed in range(settings.first_seed, settings.first_seed + settings.seeds):
        b = prepare_seed(settings, seed)
        null = label_permutations(b.labels, seed)
        gen = torch.Generator().manual_seed(PERMUTATION_SEED + seed)
        train_labels = b.labels[torch.randperm(b.labels.numel(), generator=gen).to(b.labels.device)]
        main.append(_trained(b, seed, settings, null, None))
        shuffled.append(_trained(b, seed, settings, null, train_labels))
        free.append(_record(b, seed, label_free_moves(b.start_log_p, b.log_prev), settings, null))
        floors.append(max(abs(_record(b, seed, label_free_moves(b.start_log_p, b.log_prev, step), settings,
                                      null).label_contrast) for step in ARM_FLOOR_STEPS))
        if progress is not None:
            progress(f"seed {seed}: label part {main[-1].label_contrast:.3g}, permuted "
                     f"{shuffled[-1].label_contrast:.3g}, label-free {free[-1].label_contrast:.3g}")
    described = {name: str(value) for name, value in asdict(settings).items()}

    floor = max(CONTRAST_FLOOR, sum(floors) / len(floors))

    def decide(records: list[FixedPointSeed], what: str):
        return fixed_point_decision(records, settings.chunk, settings.alpha, settings.epsilon, level,
                                    {**described, "records": what}, floor=floor)

    return FixedPointControls(settings.chunk, decide(main, "experiment"), decide(shuffled, "labels permuted"),
                              decide(free, "label-free move"), LABEL_FREE_STEP, list(ARM_FLOOR_STEPS), floors)
