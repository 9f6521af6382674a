"""Metric key names, built in one place for the probes that write them and the analyses that read them.

Keys are slash-separated (``probe/stability/paper/2/phi``). Probes build them with the
functions below; analyses find them with the same functions (``present_chunks`` tries
``key(k)`` for k = 1, 2, … instead of parsing column names), so a key can change here
without a regular expression elsewhere going stale. ``scaling_factors`` is the one parser:
the step-scaling factors c are part of the key and are read back here.

This module imports nothing from the package (it sits below ``training``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from zerolock_theory.vocab import OBJECTIVES

__all__ = [
    "EVAL_CE",
    "EVAL_CE_INITIAL",
    "INITIAL",
    "LEMMA2",
    "LEMMA2_FIELDS",
    "LEMMA2_NULL_FIELDS",
    "MAX_CHUNKS",
    "OBJECTIVES",
    "SCALING",
    "SCALING_DIRECTIONS",
    "STABILITY",
    "STABILITY_FIELDS",
    "chunk_ce",
    "eval_chunk_ce",
    "factor_label",
    "lemma2_key",
    "minimizer_initial_key",
    "minimizer_key",
    "PROOF",
    "PROOF_FIELDS",
    "GLOBAL_GRAD_SQ_UNBIASED",
    "present_chunks",
    "proof_key",
    "proof_step_key",
    "scaling_factors",
    "scaling_key",
    "scaling_step_key",
    "stability_flag",
    "stability_key",
    "TEST_CE",
    "initial_key",
    "test_chunk_ce",
]

STABILITY = "probe/stability"
SCALING = "probe/scaling"
MINIMIZER = "probe/minimizer"
LEMMA2 = "probe/lemma2"
LEMMA2_FIELDS: tuple[str, ...] = ("tv_m_g", "tv_m", "tv_g", "entropy")
LEMMA2_NULL_FIELDS: tuple[str, ...] = ("null_tv_m", "null_tv_g", "null_temperature")
INITIAL = "_initial"
STABILITY_FIELDS: tuple[str, ...] = ("phi", "q", "ratio", "actual", "remainder")
SCALING_FIELDS: tuple[str, ...] = ("phi", "q", "ratio", "drift")
PROOF = "probe/proof"
PROOF_FIELDS: tuple[str, ...] = ("surrogate", "descent", "drift")
"""Per objective, in total and per chunk: R^t(ω^t), R^t(ω^{t+1}) − R^t(ω^t), R^{t+1}(ω^{t+1}) − R^t(ω^{t+1})."""
GLOBAL_GRAD_SQ_UNBIASED = "train/global_grad_sq_unbiased"
"""Ĝ_t of the task loss L = CE(p_y^ε, p_K) by full backprop, from two halves of the training batch."""
SCALING_DIRECTIONS: tuple[str, ...] = ("actual", "random", "antithetic")
"""The update Δω_t, a random u_t of the same norms per chunk, or its mirror −u_t."""
EVAL_CE = "eval/ce"
EVAL_CE_INITIAL = "eval/ce_initial"
EVAL_OBJECTIVE = "eval/objective"  # the run's own objective on the fixed held-out batches
EVAL_OBJECTIVE_INITIAL = "eval/objective_initial"
MAX_CHUNKS = 256


def stability_key(objective: str, chunk: int | str, field: str) -> str:
    """``probe/stability/{objective}/{k|total}/{field}`` (field in ``STABILITY_FIELDS`` or ``phi_autograd``)."""
    return f"{STABILITY}/{objective}/{chunk}/{field}"


def stability_flag(objective: str, name: str) -> str:
    """``probe/stability/{objective}/{defined|reason}``."""
    return f"{STABILITY}/{objective}/{name}"


def factor_label(c: float) -> str:
    """The text of a scaling factor c inside a key: shortest exact repr (``0.5``, ``0.015625``)."""
    return repr(float(c))


def _scaling_root(objective: str, direction: str) -> str:
    if direction not in SCALING_DIRECTIONS:
        raise ValueError(f"scaling direction must be one of {SCALING_DIRECTIONS}, got {direction!r}")
    return f"{SCALING}/{objective}" if direction == "actual" else f"{SCALING}/{objective}/{direction}"


def scaling_key(objective: str, c: float, field: str, direction: str = "actual") -> str:
    """``probe/scaling/{objective}/c={c}/{phi|q|ratio|drift}``: the totals at ω^t + c·Δω_t (the
    actual update); ``probe/scaling/{objective}/random/c={c}/{field}`` at ω^t + c·u_t (the random
    direction u_t with ‖u_{t,k}‖ = ‖Δω_{t,k}‖ per chunk); ``probe/scaling/{objective}/antithetic/c={c}/{field}``
    at ω^t + c·(−u_t)."""
    return f"{_scaling_root(objective, direction)}/c={factor_label(c)}/{field}"


def scaling_step_key(objective: str, name: str, direction: str = "actual") -> str:
    """Per-step summaries of the scaling probe:
    ``probe/scaling/{objective}[/random|/antithetic]/{phi_prime|q_second|defined}``."""
    return f"{_scaling_root(objective, direction)}/{name}"


def scaling_factors(columns: Iterable[str], objective: str, direction: str = "actual") -> list[float]:
    """The factors c with a ``scaling_key(objective, c, "phi", direction)`` column, largest first."""
    head, tail = f"{_scaling_root(objective, direction)}/c=", "/phi"
    found = set()
    for column in map(str, columns):
        if column.startswith(head) and column.endswith(tail):
            try:
                found.add(float(column[len(head) : -len(tail)]))
            except ValueError:
                continue
    return sorted(found, reverse=True)


def proof_key(objective: str, field: str, chunk: int | None = None) -> str:
    """``probe/proof/{objective}/{field}`` (total over chunks) or ``probe/proof/{objective}/{k}/{field}``.

    ``field`` is one of ``PROOF_FIELDS`` or, totals only, ``directional``, ``smoothness``,
    ``eta_smoothness``, ``defined``, ``reason``.
    """
    return f"{PROOF}/{objective}/{field}" if chunk is None else f"{PROOF}/{objective}/{chunk}/{field}"


def proof_step_key(name: str) -> str:
    """Per-record columns of the proof probe shared by both objectives: ``probe/proof/{span|lr_sum|lr_sq_sum}``."""
    return f"{PROOF}/{name}"


def minimizer_key(chunk: int, field: str) -> str:
    """``probe/minimizer/{k}/{field}`` (kl_p_g, kl_m_p, tv_g, tv_m, gap, ce)."""
    return f"{MINIMIZER}/{chunk}/{field}"


def minimizer_initial_key(chunk: int, field: str) -> str:
    """``probe/minimizer/initial/{k}/{ce|gap}``: CE_k and δ_k at the untrained ω^0 (logged with step 0)."""
    return f"{MINIMIZER}/initial/{chunk}/{field}"


def lemma2_key(chunk: int | str, field: str) -> str:
    """``probe/lemma2/{k}/{field}``: a field of ``LEMMA2_FIELDS`` (at ω^{t+1}), the same with
    ``INITIAL`` appended (at ω^0) or one of ``LEMMA2_NULL_FIELDS`` (last step)."""
    return f"{LEMMA2}/{chunk}/{field}"


def eval_chunk_ce(chunk: int) -> str:
    """``eval/chunk/{k}/ce``: held-out CE(e_y, p_k)."""
    return f"eval/chunk/{chunk}/ce"


TEST_CE = "test/ce"
"""Test-split CE(e_y, p_K) (runs with ``data.test_fraction`` > 0: the held-out part is then validation)."""


def test_chunk_ce(chunk: int) -> str:
    """``test/chunk/{k}/ce``: test-split CE(e_y, p_k)."""
    return f"test/chunk/{chunk}/ce"


def initial_key(key: str) -> str:
    """``{key}_initial``: the value at ω^0, logged on step 0 (as ``eval/ce_initial``)."""
    return f"{key}_initial"


def chunk_ce(chunk: int) -> str:
    """``chunk/{k}/ce``: CE(e_y, p_k) on the training minibatch."""
    return f"chunk/{chunk}/ce"


def present_chunks(columns: Iterable[str], key: Callable[[int], str]) -> list[int]:
    """The chunks k = 1, 2, … whose ``key(k)`` is a column, stopping at the first absent one."""
    have = set(map(str, columns))
    out = []
    for k in range(1, MAX_CHUNKS + 1):
        if key(k) not in have:
            break
        out.append(k)
    return out
