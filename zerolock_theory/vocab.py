"""The package's closed vocabularies: every choice word, in one place (docs/MATH.md names).

Config fields are annotated with these ``Literal`` types, so a wrong value fails when the
config loads, listing the allowed values (``config_types``). Analyses and reports use the
same words and the one objective ↔ direction map.

* ``Method``: ZeroLock or the backprop baseline.
* ``Direction``: the local loss a ZeroLock run trains. ``forward`` is cross-entropy
  (forward KL, what implementations train, minimized by the arithmetic mixture m_k);
  ``reverse`` is the paper's Eq. 14 (reverse KL, minimized by the geometric mean g_k).
* ``Objective``: the surrogate a stability or proof quantity is measured on. ``paper`` is
  R^t = Σ_k KL(p_k ‖ g_k) (the reverse direction's), ``implemented`` is R̄^t = Σ_k
  KL(m_k ‖ p_k) (the forward direction's).
* ``Status``: the outcome words every verdict row may return besides its own.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "DIRECTIONS", "DIRECTION_OBJECTIVE", "DTYPES", "METHODS", "NOT_CALIBRATED", "NOT_MEASURED",
    "NOT_TESTABLE", "OBJECTIVES", "OBJECTIVE_DIRECTION", "OPTIMIZERS", "P0S", "SCHEDULES", "STATUSES",
    "Direction", "Dtype", "Method", "Objective", "Optimizer", "P0", "Schedule", "Status",
    "direction_of", "objective_of",
]

Method = Literal["zerolock", "backprop"]
Direction = Literal["forward", "reverse"]
Objective = Literal["paper", "implemented"]
P0 = Literal["embedding", "uniform"]
Optimizer = Literal["sgd", "adamw"]
Schedule = Literal["constant", "cosine", "inv_sqrt"]
Dtype = Literal["float32", "float64", "bfloat16", "float16"]

METHODS: tuple[str, ...] = get_args(Method)
DIRECTIONS: tuple[str, ...] = get_args(Direction)
OBJECTIVES: tuple[str, ...] = get_args(Objective)
P0S: tuple[str, ...] = get_args(P0)
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
SCHEDULES: tuple[str, ...] = get_args(Schedule)
DTYPES: tuple[str, ...] = get_args(Dtype)

OBJECTIVE_DIRECTION: dict[str, str] = {"paper": "reverse", "implemented": "forward"}
"""The training direction whose surrogate each objective is: R is reverse training's, R̄ forward's."""
DIRECTION_OBJECTIVE: dict[str, str] = {d: o for o, d in OBJECTIVE_DIRECTION.items()}

Status = Literal["not testable", "not measured", "not calibrated"]
NOT_TESTABLE, NOT_MEASURED, NOT_CALIBRATED = get_args(Status)
STATUSES: tuple[str, ...] = get_args(Status)
"""Outcomes any verdict row may return: too little data to decide; the analysis did not run;
a control of the rule failed, so the rule's answer is not a finding."""


def direction_of(objective: str) -> str:
    """The training direction of ``objective`` (``ValueError`` for an unknown word)."""
    try:
        return OBJECTIVE_DIRECTION[objective]
    except KeyError:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}") from None


def objective_of(direction: str) -> str:
    """The objective (surrogate) of training ``direction`` (``ValueError`` for an unknown word)."""
    try:
        return DIRECTION_OBJECTIVE[direction]
    except KeyError:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}") from None
