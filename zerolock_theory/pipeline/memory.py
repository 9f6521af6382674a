"""Peak activation memory of a stage: bytes saved for backward, counted while alive.

``SavedTensorMeter`` installs ``torch.autograd.graph.saved_tensors_hooks``: every tensor
autograd saves for backward is wrapped in a handle that adds its storage's bytes to a running
total and subtracts them when the graph releases it. Parameters and buffers are excluded
(they are weights, not activations); a storage saved several times counts once. ``peak`` is
the largest total seen: the activation memory the schedule needs, independent of allocator
caching. On CUDA, ``cuda_peak_bytes`` adds ``torch.cuda.max_memory_allocated``.

``memory_split`` reports a stage's memory by component (bytes): ``weights`` (the parameters
and buffers the schedule needs on stage k, counted once per storage: chunk k's layers; the
embedding on stage 1; the norm and head on the last stage, and on every stage for ZeroLock,
whose local losses read out everywhere), ``weights_held`` (what this implementation keeps:
every stage also holds the embedding, norm and head), ``gradients`` (the adapters' ``.grad``), ``optimizer`` (optimizer state
tensors), ``activations`` (the meter's peak: measured while the steps ran), ``communication``
(receive buffers and in-flight messages) and ``replay`` (ZeroLock's fault-tolerance replay
buffer, held in host memory, so outside the device total). Everything but ``activations`` is
accounted from tensor sizes at the end of the run; ``total`` = weights + gradients +
optimizer + activations + communication, an upper bound on the simultaneous peak.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

__all__ = ["MEMORY_PARTS", "SavedTensorMeter", "cuda_peak_bytes", "memory_split", "storage_bytes", "unneeded_weights"]

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "communication")
"""The components summed into a stage's ``total`` (``replay`` is reported beside them)."""


class _Held:
    """A saved tensor plus the meter that counts it (``key`` None: not counted, e.g. a parameter);
    uncounted when garbage collected.

    It keeps a detached alias of the tensor (same storage and version counter): an op's own output,
    saved with its ``grad_fn``, would otherwise make a cycle (graph node -> this -> tensor -> graph
    node) that neither reference counting nor the garbage collector frees, so the graph's memory
    and the meter's count would outlive the step (after an exception or a forward without
    backward). Autograd skips its in-place check for tensors saved through hooks, so unpacking
    does it: a saved tensor modified in place since it was saved is an error, as without a meter.
    """

    __slots__ = ("key", "meter", "tensor", "version")

    def __init__(self, tensor: torch.Tensor, key: int | None, meter: SavedTensorMeter) -> None:
        self.tensor, self.version, self.key, self.meter = tensor.detach(), tensor._version, key, meter

    def unpack(self) -> torch.Tensor:
        if self.tensor._version != self.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: a saved {self.tensor.dtype} tensor of shape {list(self.tensor.shape)} is at version "
                f"{self.tensor._version}; expected version {self.version} instead (checked by SavedTensorMeter: "
                "autograd does not check tensors saved through hooks)")
        return self.tensor

    def __del__(self) -> None:
        if self.key is not None:
            self.meter._release(self.key)


class SavedTensorMeter:
    """Context manager counting live saved-for-backward bytes; ``peak`` after use."""

    def __init__(self, exclude: Iterable[torch.Tensor] = ()) -> None:
        self._exclude = {self._key(t) for t in exclude}
        self._live: dict[int, list[int]] = {}  # storage key -> [references, bytes]
        self.current = 0
        self.peak = 0
        self._hooks: Any = None

    @staticmethod
    def _key(tensor: torch.Tensor) -> int:
        return tensor.untyped_storage().data_ptr()

    def _pack(self, tensor: torch.Tensor) -> Any:
        if tensor.device.type == "meta" or tensor.layout != torch.strided:
            return tensor
        key = self._key(tensor)
        if key == 0 or key in self._exclude:
            return _Held(tensor, None, self)
        entry = self._live.get(key)
        if entry is None:
            nbytes = tensor.untyped_storage().nbytes()
            self._live[key] = [1, nbytes]
            self.current += nbytes
            self.peak = max(self.peak, self.current)
        else:
            entry[0] += 1
        return _Held(tensor, key, self)

    @staticmethod
    def _unpack(packed: Any) -> torch.Tensor:
        return packed.unpack() if isinstance(packed, _Held) else packed

    def _release(self, key: int) -> None:
        entry = self._live.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            self.current -= entry[1]
            del self._live[key]

    def __enter__(self) -> SavedTensorMeter:
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._hooks.__exit__(*exc)
        self._hooks = None

    @classmethod
    def for_module(cls, module: torch.nn.Module) -> SavedTensorMeter:
        """A meter that ignores ``module``'s parameters and buffers."""
        return cls([*module.parameters(), *module.buffers()])


def cuda_peak_bytes(device: torch.device) -> int | None:
    """``torch.cuda.max_memory_allocated`` on a CUDA device, else ``None``."""
    if device.type != "cuda":
        return None
    return int(torch.cuda.max_memory_allocated(device))


def storage_bytes(tensors: Iterable[torch.Tensor | None]) -> int:
    """Bytes of the distinct non-empty storages behind ``tensors``."""
    seen: dict[int, int] = {}
    for t in tensors:
        if t is None or not isinstance(t, torch.Tensor) or t.numel() == 0 or t.device.type == "meta":
            continue
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def unneeded_weights(chunked: Any, k: int, K: int, readout_everywhere: bool) -> list[torch.Tensor]:
    """Embedding / norm / head tensors stage k holds but its schedule never uses (module docstring)."""
    embed = list(chunked.model.get_input_embeddings().parameters())
    head = [*chunked.head.parameters(), *chunked.norm.parameters()]
    needed = (embed if k == 1 else []) + (head if readout_everywhere or k == K else [])
    keep = {t.untyped_storage().data_ptr() for t in needed}
    return [t for t in embed + head if t.untyped_storage().data_ptr() not in keep]


def memory_split(module: torch.nn.Module, optimizers: Iterable[torch.optim.Optimizer], activations: int | None,
                 communication: int = 0, replay: int = 0,
                 unneeded: Iterable[torch.Tensor] = ()) -> dict[str, int | None]:
    """A stage's memory by component in bytes (module docstring); ``total`` when all are known."""
    params = list(module.parameters())
    optimizers = list(optimizers)
    state = [v for opt in optimizers for per in opt.state.values() for v in per.values() if isinstance(v, torch.Tensor)]
    held = storage_bytes([*params, *module.buffers()])
    split: dict[str, int | None] = {
        "weights": held - storage_bytes(unneeded),
        "weights_held": held,
        "gradients": storage_bytes(p.grad for p in params),
        "optimizer": storage_bytes(state),
        "activations": activations,
        "communication": int(communication),
        "replay": int(replay),
    }
    split["total"] = None if activations is None else sum(int(split[k] or 0) for k in MEMORY_PARTS)
    return split
