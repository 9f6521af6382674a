"""Fast stability and minimizer kernels on log-readouts (MATH.md, "Assumption 5", "Proposition 1").

The float64 reference is ``zerolock_theory.theory.stability`` (and the definitions of
``probes.minimizers``); this module computes the same numbers from float32 log p̃ at a cost
comparable to the probe forward:

* positions are processed in blocks of ``block_elems`` coordinates (cache-sized), so the
  working set is a few [block, V] float32 arrays whatever N is;
* everything elementwise is float32 and in log space: each readout row is exponentiated
  once (P = exp L); g_k's unnormalised U = p_y^α p_{k-1}^{1-α} = exp(log U) once per
  upstream row (a square root when α = 1/2); Δp = p·expm1(L^{t+1} − L^t) (one ``expm1``,
  exact for small changes); logs of m_k only when ε_m > 0 (otherwise log m = log(1-α) + L);
* every reduction accumulates in float64: products are summed in float32 over runs of 64
  coordinates, then the partial sums in float64;
* differences that cancel are taken analytically, never by subtracting two large sums:
  actual = R(ω^t; p̃^{t+1}) − R(ω^t; p̃^t) uses log(Z^{t+1}/Z^t) = log1p(Σ g^t·expm1((1-α)δ))
  (paper) and m log m differences through log(m^{t+1}/m^t) (implemented);
* the features of one step's readouts (p, g's numerator, L_{k-1} − L_k, o − g, R) are kept
  for the next step, whose ``before`` they are (``keep``, up to ``KEEP_BYTES``).

``step_sums`` returns per-chunk float64 means over positions; ``probes.stability.kernel_metrics``
turns them into the logged keys. q_t = ‖Δp̃_t‖² is the per-position mean
(1/N) Σ_n Σ_k ‖Δp_{k-1}(n)‖². α = 1 and ε_g = 0 (where R is +inf) are left to the
reference: ``supported`` says whether the fast path applies.

This is the one fast kernel: plain torch, the same code and roundings on every device, no
warm-up. It is not compiled: the same sums in a one-pass form through ``torch.compile`` are
2–4× faster per call on a CPU, but only after 16–26 s of compiling per (α, ε, shape) and
process, which the shipped suites' probe cadence never earns back; compiling needs a C++
compiler, runs uncompiled without a word past dynamo's recompile limit (8 per process), and
rounds differently from this kernel (docs/PROBES.md, "Why the kernel is not compiled";
``benchmarks/kernel_choice.py`` at commit 79260f0 compares the two).

The code is split in two: ``probes.kernels_base`` (sums, constants, ``KernelSums``) and
``probes.kernels_eager`` (``_block``); this module drives them (``step_sums``,
``cached_sums``) and keeps every name importable from here.
"""

from __future__ import annotations

import torch

from probes.kernels_base import (  # noqa: F401 (re-exported: probes.kernels is the public module)
    _KEPT_EXTRA,
    _KEPT_UP,
    BLOCK_ELEMS,
    F64,
    KEEP_BYTES,
    MINIMIZER,
    STABILITY,
    KernelSums,
    _at,
    _Consts,
    _dot,
    _expm1_pair,
    _sum,
    supported,
)
from probes.kernels_eager import (  # noqa: F401
    _block,
    _blocks,
    _implemented,
    _minimizers,
    _paper,
    _Rows,
    _stability,
)
from zerolock_theory.training.hooks import ProbeCache

__all__ = ["BLOCK_ELEMS", "KernelSums", "cached_sums", "step_sums", "supported"]


@torch.no_grad()
def step_sums(
    before: torch.Tensor | None,
    after: torch.Tensor,
    labels: torch.Tensor,
    alpha: float,
    eps_g: float,
    eps_m: float,
    *,
    minimizers: bool = True,
    block_elems: int = BLOCK_ELEMS,
    keep: dict | None = None,
    skip_unchanged: bool = True,
) -> KernelSums:
    """Stability terms of the step ``before`` → ``after`` and minimizer terms at ``after``.

    ``before``/``after``: log p̃ = (log p_0, …, log p_K) at ω^t and ω^{t+1}, [K+1, N, V]
    (float32; other dtypes are converted per block). ``labels``: [N] token ids. ε_g smooths
    p_y in g_k (> 0), ε_m in m_k. Requires ``supported(alpha, eps_g)``. All K chunks of a
    block of positions are processed together ([K, b, V] arrays). ``keep`` (a dict the caller
    holds between steps): the features of ``after`` (p, g's numerator, …) are kept there, up
    to ``KEEP_BYTES``, and reused when the next call's ``before`` is the same tensor.
    Leading readout rows equal bit for bit in ``before`` and ``after`` (p_0: the frozen
    embedding readout, or uniform) have Δp = 0, so their chunks' φ, actual change and q are
    exact zeros and are not computed (``skip_unchanged=False`` computes them anyway).
    """
    if not supported(alpha, eps_g):
        raise ValueError(f"the fast kernels need 0 <= alpha < 1 and eps_g > 0, got {alpha}, {eps_g}")
    rows, n, vocab = after.shape
    if before is not None and before.shape != after.shape:
        raise ValueError(f"before {tuple(before.shape)} and after {tuple(after.shape)} differ")
    c = _Consts.make(vocab, float(alpha), float(eps_g), float(eps_m))
    acc: dict[str, torch.Tensor] = {}
    labels = labels.to(after.device).long()
    still = 0  # leading upstream rows that did not change
    while skip_unchanged and before is not None and still < rows - 1 and torch.equal(before[still], after[still]):
        still += 1
    same = keep is not None and before is not None and keep.get("of") is before and keep.get("consts") == c
    reuse = keep["features"] if same else None  # type: ignore[index]
    kept: list[tuple[dict, dict]] = []
    size = after.numel() * 4  # p and U (all rows), L_{k-1} − L_k, and o − g when it fits
    kept_up = (*_KEPT_UP, *_KEPT_EXTRA) if 4 * size <= KEEP_BYTES else _KEPT_UP if 3 * size <= KEEP_BYTES else None
    keep_now = keep is not None and kept_up is not None
    for i, sl in enumerate(_blocks(n, vocab, rows, block_elems)):
        full, upper = reuse[i] if reuse is not None else ({}, {})
        out, new, new_up = _block(
            None if before is None else before[:, sl], after[:, sl], labels[sl].unsqueeze(-1), c, still, minimizers,
            full, upper,
        )
        if keep_now:
            kept.append((new._cache, {k: v for k, v in new_up._cache.items() if k in (kept_up or ())}))
        for name, value in out.items():
            acc[name] = acc.get(name, 0.0) + value.sum(-1)
    if keep is not None:
        keep.clear()
        if keep_now:
            keep.update(of=after, consts=c, features=kept)
    return KernelSums({name: value / n for name, value in acc.items()})


def cached_sums(
    cache: ProbeCache,
    step: int,
    before: torch.Tensor | None,
    after: torch.Tensor,
    labels: torch.Tensor,
    alpha: float,
    eps_g: float,
    eps_m: float,
) -> KernelSums:
    """``step_sums`` computed once per step and settings, shared by the probes through ``cache``.

    The stability probe (with ``before``) computes the minimizer terms in the same pass, so a
    minimizer probe asking afterwards (``before=None``) at the same step reuses them; in the
    other order only the missing stability terms are computed.
    """
    key = (step, float(alpha), float(eps_g), float(eps_m))
    hit = cache.kernel_sums
    have = hit[1] if hit is not None and hit[0] == key else KernelSums()
    need_stability = before is not None and "paper_phi" not in have
    need_minimizers = "ce" not in have and (before is None or not have.values)
    if need_stability or need_minimizers:
        fresh = step_sums(
            before if need_stability else None, after, labels, alpha, eps_g, eps_m,
            minimizers=need_minimizers, keep=cache.kernel_features,
        )
        have = KernelSums({**have.values, **fresh.values})
        cache.kernel_sums = (key, have)
    return have
