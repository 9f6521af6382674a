"""The upstream replay buffer: activations a stage sent downstream, kept for a restart.

Stage k sends h_k^{t,m} (step t, micro-batch m) to stage k+1. If stage k+1 dies it restarts
from its own last checkpoint c and must see h_k^{t,m} again for every t ≥ c, computed with
the same ω_k^t, which stage k no longer has. So stage k keeps what it sent, per step, and
drops a step once stage k+1 reports (in its acknowledgements) a restart point past it.

Bound. Stage k may start step t only after stage k+1 completed c ≥ t − L steps
(``max_lead`` L). Stage k+1's acknowledgement of c carries its restart point r: the newest
multiple of the checkpoint interval W that is ≤ what its own downstream has completed, which
is ≥ c − 1 − L by the same credit rule; so r ≥ c − L − W ≥ t − 2L − W and the buffer holds
at most W + 2L + 1 steps (M tensors of B/M·T·d each). ``put`` raises
``ReplayOverflowError`` past that bound: it would mean a broken invariant, never a full
buffer to silently evict. Tensors are kept in host memory, off the accelerator.
"""

from __future__ import annotations

from collections import OrderedDict

import torch

__all__ = ["ReplayBuffer", "ReplayGapError", "ReplayOverflowError"]

Position = tuple[int, int]  # (step, micro-batch)


class ReplayGapError(RuntimeError):
    """A restarted downstream stage needs activations this stage no longer holds."""


class ReplayOverflowError(RuntimeError):
    """More than ``capacity`` steps would be held: the flow-control invariant is broken."""


class ReplayBuffer:
    """Sent activations by step and micro-batch, trimmed at downstream's checkpoint."""

    def __init__(self, capacity_steps: int) -> None:
        if capacity_steps < 1:
            raise ValueError(f"capacity_steps must be >= 1, got {capacity_steps}")
        self.capacity = capacity_steps
        self._steps: OrderedDict[int, list[torch.Tensor]] = OrderedDict()
        self.produced: Position | None = None  # newest position put
        self.trimmed_before = 0  # steps < this were dropped
        self.peak_steps = 0
        self.peak_bytes = 0

    def __len__(self) -> int:
        """Number of steps held."""
        return len(self._steps)

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return sum(t.numel() * t.element_size() for ts in self._steps.values() for t in ts)

    def put(self, step: int, micro: int, tensor: torch.Tensor) -> None:
        """Keep a host copy of what was sent at (step, micro); positions must increase by one."""
        if self.produced is not None and (step, micro) <= self.produced:
            raise ValueError(f"replay positions must increase: {(step, micro)} after {self.produced}")
        if step < self.trimmed_before:  # downstream checkpointed past it (a restarted stage)
            self.produced = (step, micro)
            return
        if step not in self._steps and len(self._steps) >= self.capacity:
            raise ReplayOverflowError(
                f"replay buffer would hold {len(self._steps) + 1} steps; its capacity is "
                f"{self.capacity} (checkpoint_every + 2·max_lead + 1)")
        entries = self._steps.setdefault(step, [])
        if micro != len(entries):
            raise ValueError(f"step {step}: micro-batch {micro} put after {len(entries)} entries")
        entries.append(tensor.detach().to("cpu", copy=tensor.device.type != "cpu"))
        self.produced = (step, micro)
        self.peak_steps = max(self.peak_steps, len(self._steps))
        self.peak_bytes = max(self.peak_bytes, self.nbytes)

    def trim(self, before_step: int) -> None:
        """Drop steps < ``before_step`` (downstream checkpointed at ``before_step``)."""
        self.trimmed_before = max(self.trimmed_before, before_step)
        for step in [s for s in self._steps if s < before_step]:
            del self._steps[step]

    def replay_from(self, step: int, micro: int) -> list[tuple[int, int, torch.Tensor]]:
        """Entries at positions ≥ (step, micro), oldest first; empty if nothing was produced there.

        Raises ``ReplayGapError`` when (step, micro) was produced but is no longer held.
        """
        if self.produced is None or (step, micro) > self.produced:
            return []
        held = self._steps.get(step)
        if held is None or micro >= len(held):
            oldest = next(iter(self._steps), None)
            raise ReplayGapError(
                f"downstream needs step {step} micro-batch {micro}; the replay buffer holds steps "
                f"{oldest}..{self.produced[0]} (trimmed before {self.trimmed_before}); a second "
                "failure before downstream's next checkpoint cannot be replayed")
        out = []
        for s, tensors in self._steps.items():
            if s < step:
                continue
            out.extend((s, m, t) for m, t in enumerate(tensors) if (s, m) >= (step, micro))
        return out
