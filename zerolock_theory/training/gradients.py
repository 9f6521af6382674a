"""Gradient measurements shared by the steps, the probes, the pipeline and the tests.

* ``count_labelled`` / ``labelled_tokens``: the labelled-token count, n of every loss;
* ``grad_sq``: ‖∇_{ω_k}‖² of the accumulated ``.grad`` of one chunk (``grad_sq_tensor``: on the device);
* ``half_inner``: Ĝ_t's ⟨g^{(1)}_k, g^{(2)}_k⟩ per chunk (docs/MATH.md, "Theorem 1"), on the device;
* ``snapshot`` / ``snapshot_bytes``: the copy of the first half's gradient Ĝ_t keeps (flat, in
  ``flat_groups``: a few kernels per step, not a few per tensor), and its size;
* ``global_gradient`` / ``local_gradients``: ∇_{ω_k} L and ∇_{ω_k} ℓ_k by autograd, without
  touching ``.grad`` or any optimizer; ``global_and_local_gradients``: both from one forward.
"""

from __future__ import annotations

import torch

from zerolock_theory.config import MethodConfig
from zerolock_theory.theory.losses import IGNORE_INDEX
from zerolock_theory.training.losses import LossSpec, Readout, chunk_loss

__all__ = [
    "Blocks", "count_labelled", "global_and_local_gradients", "global_gradient", "grad_of", "grad_sq",
    "flat_groups", "grad_sq_tensor", "grad_sums", "half_inner", "labelled_tokens", "local_gradients", "snapshot", "snapshot_bytes",
]

Blocks = list[list[torch.Tensor]]
"""One list of tensors per chunk (parameters or their gradients)."""


def count_labelled(labels: torch.Tensor) -> int:
    """Positions with a label (not ``IGNORE_INDEX``)."""
    return int((labels != IGNORE_INDEX).sum())


def labelled_tokens(batch: dict[str, torch.Tensor]) -> int:
    """The normaliser n of a step's loss: the batch's labelled positions, at least 1."""
    return max(1, count_labelled(batch["labels"]))


def grad_of(p: torch.nn.Parameter) -> torch.Tensor:
    """``p.grad`` (detached), or zeros when ``p`` has no gradient yet."""
    return p.grad.detach() if p.grad is not None else torch.zeros_like(p)


GROUP_ELEMENTS = 1 << 22
"""Elements per flat buffer when a per-tensor sum is batched (``flat_groups``): few kernel launches
per step on a GPU (about 6 per group instead of 6 per tensor), and a transient float64 copy of at
most 32 MiB however large the model."""


def flat_groups(params: list[torch.nn.Parameter]) -> list[list[int]]:
    """Indices of ``params`` in consecutive groups of at most ``GROUP_ELEMENTS`` elements (a larger
    tensor alone): the batches of ``grad_sq_tensor``, ``snapshot`` and ``half_inner``."""
    groups: list[list[int]] = []
    size = 0
    for i, p in enumerate(params):
        if not groups or size + p.numel() > GROUP_ELEMENTS:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += p.numel()
    return groups


def _flat_grad(params: list[torch.nn.Parameter], group: list[int]) -> torch.Tensor:
    """The gradients of ``params[group]`` as one flat tensor (a view when the group is one tensor)."""
    if len(group) == 1:
        return grad_of(params[group[0]]).reshape(-1)
    return torch.cat([grad_of(params[i]).reshape(-1) for i in group])


def _chunk_sums(ps: list[torch.nn.Parameter], firsts: list[torch.Tensor] | None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One chunk's ‖∇‖² (float32) and, given the first half's ``snapshot``, Σ⟨g1, g − g1⟩ (float64),
    from one flat copy of each ``flat_groups`` group's gradient."""
    sq: torch.Tensor | None = None
    inner: torch.Tensor | None = None
    for i, group in enumerate(flat_groups(ps)):
        flat = _flat_grad(ps, group)
        wide = flat.float()
        dot = torch.dot(wide, wide)
        sq = dot if sq is None else sq + dot
        if firsts is not None:
            g1 = firsts[i].double()
            dot = torch.dot(g1, flat.double() - g1)
            inner = dot if inner is None else inner + dot
    if sq is None:  # no parameters
        sq = torch.zeros((), device=ps[0].device if ps else None)
    return sq, inner


def grad_sq_tensor(params: list[torch.nn.Parameter]) -> torch.Tensor:
    """‖∇‖² of the accumulated ``.grad`` of ``params`` as a float32 scalar on their device (parameters
    without one count 0); no host synchronisation, a few kernels per ``flat_groups`` group."""
    return _chunk_sums(params, None)[0]


def grad_sq(params: list[torch.nn.Parameter]) -> float:
    """‖∇‖² of the accumulated ``.grad`` of ``params`` (parameters without one count 0)."""
    return float(grad_sq_tensor(params))


def snapshot(params: Blocks) -> Blocks:
    """A copy of the current gradients, per chunk one flat tensor per ``flat_groups`` group (what
    ``half_inner`` reads as the first half's gradient)."""
    return [[_flat_grad(ps, group).clone() if len(group) == 1 else _flat_grad(ps, group)
             for group in flat_groups(ps)] for ps in params]


def snapshot_bytes(params: Blocks) -> int:
    """Bytes of ``snapshot(params)``: one more copy of every trainable parameter's gradient (the
    price of Ĝ_t; ``run.unbiased_grad_sq = false`` saves it)."""
    return sum(p.numel() * p.element_size() for ps in params for p in ps)


def grad_sums(params: Blocks, first: Blocks | None, counts: list[int], n: int
              ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """Per chunk ``grad_sq_tensor`` and ``half_inner``, reading each gradient once (what a step
    measures before its update)."""
    use = first is not None and min(counts) > 0
    sums = [_chunk_sums(ps, firsts if use else None)
            for ps, firsts in zip(params, first if use else [None] * len(params), strict=True)]
    if not use:
        return [sq for sq, _ in sums], None
    scale = n * n / (counts[0] * counts[1])
    return [sq for sq, _ in sums], [inner * scale for _, inner in sums]


def half_inner(params: Blocks, first: Blocks | None, counts: list[int], n: int) -> list[torch.Tensor] | None:
    """⟨g^{(1)}_k, g^{(2)}_k⟩ per chunk, from the first half's gradient (``snapshot``) and the full
    accumulated one.

    With S_i the summed half gradients (``.grad`` = (S_1 + S_2)/n) and n_i the halves' labelled
    tokens, g^{(i)} = S_i/n_i. Each is a float64 scalar on the device: the dot products of the
    ``flat_groups`` groups in float64, added in order, without a synchronisation. None without
    two halves or when a half has no labelled token.
    """
    return grad_sums(params, first, counts, n)[1]


def _global_from(readout: Readout, method: MethodConfig, params: Blocks, batch: dict[str, torch.Tensor],
                  hiddens: list[torch.Tensor], retain_graph: bool) -> Blocks:
    loss = chunk_loss(readout, LossSpec.global_(method), hiddens[-1], None, batch["labels"],
                      readout.chunked.num_chunks, labelled_tokens(batch)).loss
    grads = torch.autograd.grad(loss, [p for ps in params for p in ps], retain_graph=retain_graph)
    out, i = [], 0
    for ps in params:
        out.append(list(grads[i : i + len(ps)]))
        i += len(ps)
    return out


def global_gradient(readout: Readout, method: MethodConfig, params: Blocks, batch: dict[str, torch.Tensor]) -> Blocks:
    """Blocks ∇_{ω_k} L of L = CE(p_y^ε, p_K) by full backprop, per chunk."""
    hiddens = readout.chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
    return _global_from(readout, method, params, batch, hiddens, retain_graph=False)


def global_and_local_gradients(
    readout: Readout, method: MethodConfig, params: Blocks, batch: dict[str, torch.Tensor]
) -> tuple[Blocks, Blocks]:
    """``global_gradient`` and ``local_gradients`` from one forward pass: the same values.

    ℓ_k reads h_k of the connected forward with the detached h_{k-1} as its target; ω_k
    enters h_k only through chunk k, so ∇_{ω_k} ℓ_k is the detached chain's. The target p_{k-1}
    is chunk k−1's own readout (``ChunkLoss.prev``: the same computation as reading h_{k-1}
    out again, as ``local_gradients`` does, autocast or not).
    """
    chunked, n = readout.chunked, labelled_tokens(batch)
    hiddens = chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
    glob = _global_from(readout, method, params, batch, hiddens, retain_graph=True)
    local, prev = [], None
    for k in range(1, chunked.num_chunks + 1):
        part = chunk_loss(readout, LossSpec.local(method, k), hiddens[k], hiddens[k - 1].detach(), batch["labels"], k, n,
                          prev)
        local.append(list(torch.autograd.grad(part.loss, params[k - 1], retain_graph=k < chunked.num_chunks)))
        prev = part.prev
    return glob, local


def local_gradients(readout: Readout, method: MethodConfig, params: Blocks, batch: dict[str, torch.Tensor]) -> Blocks:
    """Blocks ∇_{ω_k} ℓ_k of each chunk's local loss on detached inputs."""
    chunked, n = readout.chunked, labelled_tokens(batch)
    hidden, ctx = chunked.embed(batch["input_ids"], batch.get("attention_mask"))
    out = []
    for k in range(1, chunked.num_chunks + 1):
        h_in = hidden.detach()
        hidden = chunked.forward_chunk(k, h_in, ctx)
        loss = chunk_loss(readout, LossSpec.local(method, k), hidden, h_in, batch["labels"], k, n).loss
        out.append(list(torch.autograd.grad(loss, params[k - 1])))
    return out
