"""Models: loading local Hugging Face causal LMs, chunking them, attaching adapters."""

from zerolock_theory.models.adapters import attach_adapters, trainable_state_dict
from zerolock_theory.models.chunking import ChunkContext, ChunkedLM, UnsupportedArchitectureError
from zerolock_theory.models.loading import load_model, resolve_device, resolve_model_path

__all__ = [
    "ChunkContext",
    "ChunkedLM",
    "UnsupportedArchitectureError",
    "attach_adapters",
    "load_model",
    "resolve_device",
    "resolve_model_path",
    "trainable_state_dict",
]
