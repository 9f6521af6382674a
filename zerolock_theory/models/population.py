"""A population of LoRA adapters on one frozen base model: S members in one forward.

Only the adapters train, so S runs that differ in seed, data order and RNG differ only in their
adapters. ``stack_adapters`` replaces every peft LoRA layer of a chunked model (after
``attach_adapters``) by a ``StackedLora``: the frozen base layer, shared, and per member s its own
(A_s, B_s). A forward takes S·m rows grouped by member (rows ``[s·m, (s+1)·m)`` are member s's)
and applies, per LoRA layer, one batched matmul over the population axis:

    y = W x + scaling · B_s A_s dropout_s(x)      for the rows of member s.

Each member keeps its own ``nn.Parameter`` per tensor (stacked for the matmul, so autograd splits
the gradient back per member): its optimizers, clipping and gradient norms are a single run's.
Dropout draws member s's mask from member s's own ``torch.Generator`` (``Population.generators``),
so a member sees the masks a single run would draw from the global RNG seeded alike.

peft refuses mixed-adapter batches in training mode and loops over adapters per layer; this
module is the batched layer instead. A member's adapters load and save under the names of a
single run's ``trainable_state_dict`` (``member_state_dict``), hence as today's peft adapter
(``adapters.peft_state_dict``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from zerolock_theory.models.chunking import ChunkedLM

__all__ = ["Population", "StackedLora", "stack_adapters"]

ADAPTER = "default"
"""peft's adapter name, as in a single run's parameter names (``lora_A.default.weight``)."""


@dataclass(eq=False)
class MemberRng:
    """The members' dropout generators, shared by every ``StackedLora`` of one population."""

    generators: list[torch.Generator] = field(default_factory=list)
    active: int | None = None  # the member every row belongs to inside ``Population.member``; None: S groups


class _LoraProduct(torch.autograd.Function):
    """B_s A_s x_s for every member at once: x [S, rows, in], A [S, r, in], B [S, out, r].

    Forward and backward are batched matmuls laid out as ``F.linear``'s own forward and backward
    (grad A_s = (gh_s)ᵀ x_s, not (x_sᵀ gh_s)ᵀ as autograd's ``bmm`` would form it): each member's
    result and gradients then equal a single run's bit for bit on a CPU, not merely to rounding
    (which Adam amplifies along a run). Under autocast the backward's products run in the forward's
    autocast dtype, as peft's layer's would."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        h = torch.bmm(x, a.transpose(1, 2))
        ctx.save_for_backward(x, a, b, h)
        return torch.bmm(h, b.transpose(1, 2))

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
        x, a, b, h = ctx.saved_tensors
        # Under autocast the forward's products ran in h's dtype (bfloat16, float16); the backward runs
        # outside it, so its products are cast alike (a no-op without autocast). Autograd casts the
        # factors' gradients back to their own dtype.
        x, a, b = (t.to(h.dtype) for t in (x, a, b))
        gh = torch.bmm(gy.to(h.dtype), b)
        gx = torch.bmm(gh, a) if ctx.needs_input_grad[0] else None
        return gx, torch.bmm(gh.transpose(1, 2), x), torch.bmm(gy.transpose(1, 2), h)


class StackedLora(nn.Module):
    """A peft LoRA linear layer with S adapters: one batched matmul over the population axis.

    ``lora_A[s]`` is member s's A ([r, in]) and ``lora_B[s]`` its B ([out, r]), with peft's
    ``scaling`` and dropout probability. The input's leading dimension is S·m rows, member by member.
    """

    def __init__(self, layer: nn.Module, members: list[tuple[torch.Tensor, torch.Tensor]], rng: MemberRng) -> None:
        super().__init__()
        self.base_layer = layer.base_layer
        self.scaling = float(layer.scaling[ADAPTER])
        dropout = layer.lora_dropout[ADAPTER]
        self.dropout = float(dropout.p) if isinstance(dropout, nn.Dropout) else 0.0
        self.lora_A = nn.ParameterList([nn.Parameter(a.detach().clone()) for a, _ in members])
        self.lora_B = nn.ParameterList([nn.Parameter(b.detach().clone()) for _, b in members])
        self.rng = rng

    @property
    def size(self) -> int:
        """S, the number of members."""
        return len(self.lora_A)

    def factors(self) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
        """Every member's A and B, in member order: the lists' own storage, read without
        ``ParameterList``'s per-item ``getattr``, which costs about 6 µs an item (13 ms a forward
        and 14 ms a ``Population.member`` at S = 20)."""
        return list(self.lora_A._parameters.values()), list(self.lora_B._parameters.values())  # noqa: SLF001

    def _dropout(self, x: torch.Tensor) -> torch.Tensor:
        """Each member's rows ([S, rows, in]) times its own mask / (1 − p), as ``F.dropout`` draws it."""
        if not self.training or self.dropout == 0.0:
            return x
        keep = 1.0 - self.dropout
        gens = self.rng.generators
        if len(gens) != self.size:
            raise ValueError(f"LoRA dropout needs one generator per member: {len(gens)} for {self.size} members")
        masks = [torch.empty_like(x[s]).bernoulli_(keep, generator=g).div_(keep) for s, g in enumerate(gens)]
        return x * torch.stack(masks)

    def _member_forward(self, x: torch.Tensor, result: torch.Tensor, s: int) -> torch.Tensor:
        """W x + scaling · B_s A_s dropout(x) with every row member s's; dropout from the global RNG,
        as a single run's peft layer draws it (``Population.member`` sets that RNG to member s's)."""
        a, b = self.lora_A[s].unsqueeze(0), self.lora_B[s].unsqueeze(0)
        rows = x.to(a.dtype).reshape(1, -1, x.shape[-1])
        if self.training and self.dropout > 0.0:
            keep = 1.0 - self.dropout
            rows = rows * torch.empty_like(rows[0]).bernoulli_(keep).div_(keep).unsqueeze(0)
        delta = _LoraProduct.apply(rows, a, b)
        return (result + delta.reshape(result.shape) * self.scaling).to(result.dtype)

    def forward(self, x: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        """W x, plus scaling · B_s A_s x on member s's rows (one ``bmm`` per factor)."""
        result = self.base_layer(x, *args, **kwargs)
        if self.rng.active is not None:
            return self._member_forward(x, result, self.rng.active)
        S = self.size
        if x.shape[0] % S:
            raise ValueError(f"{x.shape[0]} rows do not split into {S} members")
        factors_a, factors_b = self.factors()
        a = torch.stack(factors_a)  # [S, r, in]
        b = torch.stack(factors_b)  # [S, out, r]
        rows = self._dropout(x.to(a.dtype).reshape(S, -1, x.shape[-1]))
        delta = _LoraProduct.apply(rows, a, b)
        return (result + delta.reshape(result.shape) * self.scaling).to(result.dtype)


@dataclass(eq=False)
class Population:
    """S members' adapters stacked into one chunked model (``stack_adapters``)."""

    chunked: ChunkedLM
    layers: dict[str, StackedLora]  # module path in ``chunked.model`` → its stacked layer
    rng: MemberRng

    @property
    def size(self) -> int:
        """S."""
        return next(iter(self.layers.values())).size

    def member_state_dict(self, s: int) -> dict[str, torch.Tensor]:
        """Member s's adapters under a single run's parameter names (``trainable_state_dict``)."""
        out = {}
        for path, layer in self.layers.items():
            out[f"{path}.lora_A.{ADAPTER}.weight"] = layer.lora_A[s].detach()
            out[f"{path}.lora_B.{ADAPTER}.weight"] = layer.lora_B[s].detach()
        return out

    @torch.no_grad()
    def load_member(self, s: int, state: Mapping[str, torch.Tensor]) -> None:
        """Copy a single run's adapters (``trainable_state_dict`` names) into member s."""
        mine = self.member_state_dict(s)
        if set(mine) != set(state):
            raise ValueError(f"member state names differ from the population's: {sorted(set(mine) ^ set(state))[:4]}")
        for name, value in state.items():
            mine[name].copy_(value)

    def member_blocks(self, s: int) -> list[list[nn.Parameter]]:
        """ω_k of member s, per chunk, in a single run's parameter order (A then B per layer)."""
        blocks = []
        for k in range(1, self.chunked.num_chunks + 1):
            params = []
            for module in self.chunked.chunk_modules(k):
                for sub in module.modules():
                    if isinstance(sub, StackedLora):
                        params += [sub.lora_A[s], sub.lora_B[s]]
            blocks.append(params)
        return blocks

    @contextlib.contextmanager
    def member(self, s: int) -> Iterator[None]:
        """The population as member s's single run: every row is member s's, only its adapters
        require gradients (so ``chunk_parameters`` and a model's trainable parameters are its
        own, in a single run's order), and the global RNG holds member s's dropout stream.

        What runs inside (evaluation, probes, a gradient at ω^t) sees what it sees in the single
        run. On exit the global RNG, every generator and ``requires_grad`` are as before: the
        member's stream advances only in the population's own training step, as a single run's
        does only in its step (the loop runs everything else under a forked RNG)."""
        if not 0 <= s < self.size:
            raise ValueError(f"no member {s} in a population of {self.size}")
        gens = self.rng.generators
        others = [p for layer in self.layers.values() for factors in layer.factors()
                  for i, p in enumerate(factors) if i != s and p.requires_grad]
        devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=devices):
            if gens:
                _set_global_rng(gens[s])
            for p in others:
                p.requires_grad_(False)
            self.rng.active = s
            try:
                yield
            finally:
                self.rng.active = None
                for p in others:
                    p.requires_grad_(True)

    def seed_dropout(self, seeds: list[int]) -> None:
        """One dropout generator per member, seeded by ``seeds[s]``."""
        self.rng.generators = [torch.Generator().manual_seed(int(seed)) for seed in seeds]


def _set_global_rng(gen: torch.Generator) -> None:
    """The global RNG of ``gen``'s device set to ``gen``'s state."""
    if gen.device.type == "cuda":
        torch.cuda.set_rng_state(gen.get_state(), gen.device)
    else:
        torch.set_rng_state(gen.get_state())


def _lora_layers(model: nn.Module) -> dict[str, nn.Module]:
    from peft.tuners.lora import LoraLayer

    return {name: m for name, m in model.named_modules() if isinstance(m, LoraLayer)}


def stack_adapters(chunked: ChunkedLM, members: list[Mapping[str, torch.Tensor]]) -> Population:
    """Replace every peft LoRA layer of ``chunked`` (in place) by a ``StackedLora`` of S = len(members).

    ``members[s]`` is member s's adapters as a single run's ``trainable_state_dict`` (every LoRA
    tensor of the model, named as after ``attach_adapters``). Base weights stay frozen and shared.
    """
    if not members:
        raise ValueError("a population needs at least one member")
    found = _lora_layers(chunked.model)
    if not found:
        raise ValueError("no peft LoRA layer in the model: call attach_adapters first")
    rng = MemberRng()
    layers = {}
    for path, layer in found.items():
        names = [f"{path}.lora_A.{ADAPTER}.weight", f"{path}.lora_B.{ADAPTER}.weight"]
        pairs = []
        for s, state in enumerate(members):
            missing = [n for n in names if n not in state]
            if missing:
                raise ValueError(f"member {s} has no {missing[0]}")
            pairs.append((state[names[0]], state[names[1]]))
        stacked = StackedLora(layer, pairs, rng).to(layer.base_layer.weight.device)
        stacked.train(layer.training)
        parent_path, _, child = path.rpartition(".")
        parent = chunked.model.get_submodule(parent_path) if parent_path else chunked.model
        setattr(parent, child, stacked)
        layers[path] = stacked
    return Population(chunked, layers, rng)
