"""Every recorded per-chunk quantity, declared once: its key pattern, its axes and its fields.

A record of ``metrics.jsonl`` is a flat object (docs/SCHEMA.md): keys are slash-separated
(``probe/stability/paper/2/phi``). Each family of keys is one ``Quantity`` below, and a key
is built only by ``Quantity.key`` (one value) or ``Quantity.write`` (an array over the axes),
so the probe or step that writes a quantity and the analysis that reads it share one
declaration, not a string.

The sizes of the axes are never read from the column names. They come from the run's typed
config as a ``Layout``: K (``model.chunks``), the objectives, and the step-scaling probe's
factors and directions (``config.TrainConfig.layout`` builds it; ``analyses.io.load_run``
attaches it to the metrics frame). ``Quantity.read`` then returns a float array indexed by
step and the declared axes, NaN where a record has no value.

Axes and how a coordinate is written in a key:

* ``objective``: ``paper`` or ``implemented`` (``vocab.OBJECTIVES``);
* ``chunk``: k = 1…K (0 for p_0 where a quantity has it; ``"total"`` for a sum over chunks);
* ``part``: an optional chunk: None (the total, no segment) or k (``/k``);
* ``factor``: a step-scaling factor c, as its shortest exact repr (``c=0.015625``);
* ``direction``: ``actual`` (no segment), ``random`` or ``antithetic`` (``/random``).

This module imports nothing from the package but ``vocab`` (it sits below ``training``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zerolock_theory.vocab import OBJECTIVES

__all__ = [
    "CHUNK", "DATA", "DATA_EPOCH", "EVAL", "EVAL_CE", "EVAL_CE_INITIAL", "EVAL_CHUNK", "EVAL_OBJECTIVE",
    "EVAL_OBJECTIVE_INITIAL", "FINAL_CE", "GLOBAL_GRAD_SQ_UNBIASED", "GRAD_NOISE_FLOOR", "GRAD_NORM_SQ",
    "GRAD_SQ_UNBIASED", "LR", "STEP_TIME_S", "TEST", "TEST_CE_INITIAL", "TOKENS", "TOKENS_PER_S", "TRAIN",
    "TRAIN_LOSS", "GRADIENT", "GRADIENT_BATCH", "INITIAL", "LEMMA2", "LEMMA2_FIELDS", "LEMMA2_STEP",
    "LEMMA2_NULL_FIELDS", "MINIMIZER", "MINIMIZER_INITIAL", "PROOF", "PROOF_FIELDS", "PROOF_STEP",
    "QUANTITIES", "SCALING", "SCALING_DIRECTIONS", "SCALING_STEP", "STABILITY", "STABILITY_FIELDS",
    "STABILITY_FLAG", "TEST_CE", "TEST_CHUNK", "Layout", "Quantity", "initial", "layout_of", "with_layout",
]

SCALING_DIRECTIONS: tuple[str, ...] = ("actual", "random", "antithetic")
"""The update Δω_t, a random u_t of the same norms per chunk, or its mirror −u_t."""
INITIAL = "_initial"
"""Appended to a key for its value at ω^0, logged with step 0 (``initial``)."""


@dataclass(frozen=True)
class Layout:
    """The sizes of a run's axes, from its typed config: K, the objectives, the scaling probe's
    factors (largest first; empty when the probe is off) and directions."""

    chunks: int
    objectives: tuple[str, ...] = OBJECTIVES
    factors: tuple[float, ...] = ()
    directions: tuple[str, ...] = ("actual",)

    def __post_init__(self) -> None:
        if isinstance(self.chunks, bool) or not isinstance(self.chunks, int) or self.chunks < 1:
            raise ValueError(f"a layout needs K >= 1 chunks, got {self.chunks!r}")
        object.__setattr__(self, "factors", tuple(sorted(map(float, self.factors), reverse=True)))

    def coordinates(self, axis: str) -> tuple[Any, ...]:
        """Every coordinate of ``axis`` in this run, in array order (chunks 1…K)."""
        if axis in ("chunk", "part"):
            return tuple(range(1, self.chunks + 1))
        return {"objective": self.objectives, "factor": self.factors, "direction": self.directions}[axis]


def _one_of(values: tuple[str, ...]) -> Callable[[Any], str]:
    def text(value: Any) -> str:
        if value not in values:
            raise ValueError(f"expected one of {values}, got {value!r}")
        return str(value)
    return text


def _chunk(value: Any) -> str:
    if value == "total" or (isinstance(value, str) and value.isdigit()) or (
            isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0):
        return str(value)
    raise ValueError(f"a chunk is an integer >= 0 (or its text) or 'total', got {value!r}")


def _part(value: Any) -> str:
    return "" if value is None else "/" + _chunk(value)


def _factor(value: Any) -> str:
    return "c=" + repr(float(value))


def _direction(value: Any) -> str:
    return "" if _one_of(SCALING_DIRECTIONS)(value) == "actual" else f"/{value}"


AXIS_TEXT: dict[str, Callable[[Any], str]] = {
    "objective": _one_of(OBJECTIVES), "chunk": _chunk, "part": _part, "factor": _factor, "direction": _direction,
}


@dataclass(frozen=True)
class Quantity:
    """One family of keys: ``pattern`` with a ``{name}`` per axis and ``{field}``.

    ``order`` is the order of ``key``'s positional arguments (the axes and ``field``);
    ``defaults`` gives axes that may be left out (``direction="actual"``, ``part=None``).
    """

    pattern: str
    order: tuple[str, ...]
    fields: tuple[str, ...]
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        """The pattern's fixed text before its first axis or field (``eval/chunk/``): every key starts with it."""
        return self.pattern.split("{", 1)[0]

    @property
    def axes(self) -> tuple[str, ...]:
        """The axes, in the order of ``key``'s arguments."""
        return tuple(name for name in self.order if name != "field")

    def key(self, *args: Any, **kwargs: Any) -> str:
        """The key of one value: positional in ``order``, or by name."""
        if len(args) > len(self.order):
            raise TypeError(f"{self.pattern}: expected at most {len(self.order)} arguments {self.order}, got {args}")
        given = {**self.defaults, **dict(zip(self.order[: len(args)], args, strict=True)), **kwargs}
        if set(given) != set(self.order):
            raise TypeError(f"{self.pattern}: expected {self.order}, got {sorted(given)}")
        if given["field"] not in self.fields:
            raise ValueError(f"{self.pattern}: field must be one of {self.fields}, got {given['field']!r}")
        return self.pattern.format(**{name: value if name == "field" else AXIS_TEXT[name](value)
                                      for name, value in given.items()})

    def _grid(self, layout: Layout, fixed: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
        free = [a for a in self.axes if a not in fixed]
        extra = set(fixed) - set(self.order)
        if extra:
            raise TypeError(f"{self.pattern}: no axis {sorted(extra)}")
        return free, [layout.coordinates(a) for a in free]

    def columns(self, layout: Layout, field: str, **fixed: Any) -> np.ndarray:
        """The keys of ``field`` over the free axes (those not in ``fixed``; a defaulted axis too:
        ``part`` then runs over chunks 1…K, the total needs ``part=None``), as an object array
        shaped like ``read``'s value at one step."""
        free, coords = self._grid(layout, fixed)
        out = np.empty([len(c) for c in coords], dtype=object)
        for index in np.ndindex(out.shape):
            at = {a: coords[i][j] for i, (a, j) in enumerate(zip(free, index, strict=True))}
            out[index] = self.key(**{**fixed, **at}, field=field)
        return out

    def write(self, values: Any, layout: Layout, field: str, **fixed: Any) -> dict[str, Any]:
        """``{key: value}`` for an array over the free axes (``columns``' shape); None and NaN
        are written as None (JSON null)."""
        keys = self.columns(layout, field, **fixed)
        array = np.asarray(values, dtype=object)
        if array.shape != keys.shape:
            raise ValueError(f"{self.pattern}: {field} needs shape {keys.shape}, got {array.shape}")
        return {str(k): _metric(v) for k, v in zip(keys.flat, array.flat, strict=True)}

    def read(self, frame: Any, layout: Layout, field: str, **fixed: Any) -> np.ndarray:
        """Float array [step, *free axes] from a metrics frame; NaN where a column or a value is missing."""
        keys = self.columns(layout, field, **fixed)
        out = np.full((len(frame), *keys.shape), np.nan)
        for index in np.ndindex(keys.shape):
            if keys[index] in frame.columns:
                out[(slice(None), *index)] = _floats(frame[keys[index]])
        return out

    def present(self, frame: Any, layout: Layout, field: str, **fixed: Any) -> bool:
        """Whether the frame has a column for every coordinate of the layout (a probe that ran)."""
        keys = self.columns(layout, field, **fixed)
        return keys.size > 0 and all(str(k) in frame.columns for k in keys.flat)


def _metric(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    value = float(value)
    return value if np.isfinite(value) else None


def _floats(column: Any) -> np.ndarray:
    values = column.to_numpy()
    if values.dtype.kind in "fiu":
        return values.astype(float)
    return np.array([float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan
                     for v in values])


def initial(key: str) -> str:
    """``{key}_initial``: the value at ω^0, logged on step 0 (``eval/ce_initial``)."""
    return key + INITIAL


STABILITY_FIELDS: tuple[str, ...] = ("phi", "q", "ratio", "actual", "remainder")
LEMMA2_FIELDS: tuple[str, ...] = ("tv_m_g", "tv_m", "tv_g", "entropy")
LEMMA2_NULL_FIELDS: tuple[str, ...] = ("null_tv_m", "null_tv_g", "null_temperature")
PROOF_FIELDS: tuple[str, ...] = ("surrogate", "descent", "drift")
"""Per objective, in total and per chunk: R^t(ω^t), R^t(ω^{t+1}) − R^t(ω^t), R^{t+1}(ω^{t+1}) − R^t(ω^{t+1})."""

STABILITY = Quantity("probe/stability/{objective}/{chunk}/{field}", ("objective", "chunk", "field"),
                     (*STABILITY_FIELDS, "phi_autograd"))
"""Assumption 5's terms of step t per chunk k (and ``total``): φ_t, q_t, their ratio, R's actual change, the remainder."""
STABILITY_FLAG = Quantity("probe/stability/{objective}/{field}", ("objective", "field"), ("defined", "reason"))
SCALING = Quantity("probe/scaling/{objective}{direction}/{factor}/{field}",
                   ("objective", "factor", "field", "direction"), ("phi", "q", "ratio", "drift"),
                   {"direction": "actual"})
"""Totals at ω^t + c·Δω_t (actual), ω^t + c·u_t (random, ‖u_{t,k}‖ = ‖Δω_{t,k}‖) or ω^t − c·u_t (antithetic)."""
SCALING_STEP = Quantity("probe/scaling/{objective}{direction}/{field}", ("objective", "field", "direction"),
                        ("phi_prime", "q_second", "defined"), {"direction": "actual"})
"""Per scaled step: φ(c_min)/c_min, q(c_min)/c_min² and whether the terms are defined."""
PROOF = Quantity("probe/proof/{objective}{part}/{field}", ("objective", "field", "part"),
                 (*PROOF_FIELDS, "directional", "smoothness", "eta_smoothness", "defined", "reason"), {"part": None})
"""The proof probe per objective, in total (``part`` None; every field) or per chunk (``PROOF_FIELDS``)."""
PROOF_STEP = Quantity("probe/proof/{field}", ("field",), ("span", "lr_sum", "lr_sq_sum"))
"""Per proof record, shared by both objectives: its span of steps, Σ η_t and Σ η_t² over it."""
MINIMIZER = Quantity("probe/minimizer/{chunk}/{field}", ("chunk", "field"),
                     ("kl_p_g", "kl_m_p", "tv_g", "tv_m", "gap", "ce"))
"""Per chunk k (and CE of p_0 at k = 0): distances to m_k and g_k, the local gap δ_k, CE_k."""
MINIMIZER_INITIAL = Quantity("probe/minimizer/initial/{chunk}/{field}", ("chunk", "field"), ("ce", "gap"))
"""CE_k and δ_k at the untrained ω^0 (logged with step 0)."""
LEMMA2 = Quantity("probe/lemma2/{chunk}/{field}", ("chunk", "field"),
                  (*LEMMA2_FIELDS, *(f + INITIAL for f in LEMMA2_FIELDS), *LEMMA2_NULL_FIELDS))
"""Lemma 2's distances at ω^{t+1}, at ω^0 (``_initial``) and the null's (last step)."""
LEMMA2_STEP = Quantity("probe/lemma2/{field}", ("field",), ("epsilon",))
"""The ε of p_y that Lemma 2's targets used (logged with the first probed step)."""
GRADIENT = Quantity("probe/gradient{part}/{field}", ("part", "field"), ("global_sq", "local_sq", "cos"), {"part": None})
"""The gradients probe: ‖∇_k L‖², ‖∇_k ℓ_k‖² and their cosine per chunk; the two squares in total."""
GRADIENT_BATCH = Quantity("probe/gradient_batch{part}/{field}", ("part", "field"), ("grad_sq_unbiased",),
                          {"part": None})
"""Ĝ_t from a separate pair of batches, per chunk and in total."""
CHUNK = Quantity("chunk/{chunk}/{field}", ("chunk", "field"),
                 ("loss", "task", "consistency", "ce", "grad_norm_sq", "grad_sq_unbiased"))
"""Per chunk on the training minibatch: the local loss and its parts, CE(e_y, p_k), ‖g_k‖², Ĝ_{t,k}."""
EVAL_CHUNK = Quantity("eval/chunk/{chunk}/{field}", ("chunk", "field"), ("ce",))
"""Held-out CE(e_y, p_k)."""
TEST_CHUNK = Quantity("test/chunk/{chunk}/{field}", ("chunk", "field"), ("ce",))
"""Test-split CE(e_y, p_k) (runs with ``data.test_fraction`` > 0: the held-out part is then validation)."""

QUANTITIES: dict[str, Quantity] = {
    "stability": STABILITY, "stability_flag": STABILITY_FLAG, "scaling": SCALING, "scaling_step": SCALING_STEP,
    "proof": PROOF, "proof_step": PROOF_STEP, "minimizer": MINIMIZER, "minimizer_initial": MINIMIZER_INITIAL,
    "lemma2": LEMMA2, "lemma2_step": LEMMA2_STEP, "gradient": GRADIENT, "gradient_batch": GRADIENT_BATCH, "chunk": CHUNK,
    "eval_chunk": EVAL_CHUNK, "test_chunk": TEST_CHUNK,
}
"""Every declared quantity by name (docs/SCHEMA.md lists their keys)."""

TRAIN = Quantity("train/{field}", ("field",), (
    "loss", "final_ce", "lr", "grad_norm_sq", "grad_sq_unbiased", "global_grad_sq_unbiased", "grad_noise_floor",
    "tokens", "tokens_per_s", "step_time_s"))
"""Per training step, over the whole model: the output chunk's CE, η_t, ‖g‖², Ĝ_t (local; ``global_...``: of the
task loss by full backprop), the noise floor, tokens, throughput and the step's wall time (``loss``: older runs)."""
EVAL = Quantity("eval/{field}", ("field",), ("ce", "objective", "ce" + INITIAL, "objective" + INITIAL))
"""On the fixed held-out batches: CE(e_y, p_K) and the run's own objective, at ω^{t+1} and at ω^0."""
TEST = Quantity("test/{field}", ("field",), ("ce", "ce" + INITIAL))
"""On the test split (runs with ``data.test_fraction`` > 0): CE(e_y, p_K), at ω^{t+1} and at ω^0."""
DATA = Quantity("data/{field}", ("field",), ("epoch",))
"""The data stream's position: the epoch the step's batch came from."""
QUANTITIES.update({"train": TRAIN, "eval": EVAL, "test": TEST, "data": DATA})

TRAIN_LOSS, FINAL_CE, LR = TRAIN.key("loss"), TRAIN.key("final_ce"), TRAIN.key("lr")
GRAD_NORM_SQ, GRAD_SQ_UNBIASED = TRAIN.key("grad_norm_sq"), TRAIN.key("grad_sq_unbiased")
GLOBAL_GRAD_SQ_UNBIASED = TRAIN.key("global_grad_sq_unbiased")
"""Ĝ_t of the task loss L = CE(p_y^ε, p_K) by full backprop, from two halves of the training batch."""
GRAD_NOISE_FLOOR = TRAIN.key("grad_noise_floor")
TOKENS, TOKENS_PER_S, STEP_TIME_S = TRAIN.key("tokens"), TRAIN.key("tokens_per_s"), TRAIN.key("step_time_s")
EVAL_CE, EVAL_CE_INITIAL = EVAL.key("ce"), EVAL.key("ce" + INITIAL)
EVAL_OBJECTIVE, EVAL_OBJECTIVE_INITIAL = EVAL.key("objective"), EVAL.key("objective" + INITIAL)
"""The run's own objective on the fixed held-out batches."""
TEST_CE, TEST_CE_INITIAL = TEST.key("ce"), TEST.key("ce" + INITIAL)
DATA_EPOCH = DATA.key("epoch")


LAYOUT_ATTR = "zerolock.layout"
"""Where a metrics frame (pandas) carries its run's ``Layout`` (``with_layout``)."""


def with_layout(frame: Any, layout: Layout | str) -> Any:
    """``frame`` with its run's layout attached (or the reason there is none); pandas keeps it
    through selections and copies. Returns the frame."""
    frame.attrs[LAYOUT_ATTR] = layout
    return frame


def layout_of(frame: Any) -> Layout:
    """The layout attached by ``with_layout``; ``ValueError`` with the reason when there is none."""
    found = frame.attrs.get(LAYOUT_ATTR)
    if isinstance(found, Layout):
        return found
    raise ValueError(found or "the metrics carry no layout (K, factors) of their run: load them with "
                              "analyses.io.load_run, or attach one with records.with_layout")
