"""Count saved-for-backward activation bytes with ``torch.autograd.graph.saved_tensors_hooks``.

Every tensor autograd saves for the backward pass goes through the pack hook. The counter
records the bytes packed in total and the peak of bytes alive at once (a packed tensor dies
when its graph is freed after backward). Parameters saved by reference are counted too, as
autograd holds them; they are the same for every method, so ratios stay comparable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch

__all__ = ["ActivationCounter", "count_saved_activations"]


@dataclass
class ActivationCounter:
    """Running totals of saved-for-backward bytes."""

    total_bytes: int = 0
    alive_bytes: int = 0
    peak_bytes: int = 0

    def _release(self, nbytes: int) -> None:
        self.alive_bytes -= nbytes


class _Packed:
    """Holds one saved tensor and gives its bytes back to the counter when freed."""

    __slots__ = ("counter", "nbytes", "tensor")

    def __init__(self, tensor: torch.Tensor, counter: ActivationCounter) -> None:
        self.tensor = tensor
        self.counter = counter
        self.nbytes = tensor.numel() * tensor.element_size()
        counter.total_bytes += self.nbytes
        counter.alive_bytes += self.nbytes
        counter.peak_bytes = max(counter.peak_bytes, counter.alive_bytes)

    def __del__(self) -> None:
        self.counter._release(self.nbytes)


@contextlib.contextmanager
def count_saved_activations() -> Iterator[ActivationCounter]:
    """Context manager: every autograd graph built inside is counted."""
    counter = ActivationCounter()

    def pack(tensor: torch.Tensor) -> _Packed:
        return _Packed(tensor, counter)

    def unpack(packed: _Packed) -> torch.Tensor:
        return packed.tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        yield counter
