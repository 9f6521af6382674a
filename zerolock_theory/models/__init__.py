"""Models: loading local Hugging Face causal LMs and GGUF files, chunking them, attaching adapters."""

from zerolock_theory.models.adapters import attach_adapters, trainable_state_dict
from zerolock_theory.models.chunking import ChunkContext, ChunkedLM, UnsupportedArchitectureError
from zerolock_theory.models.families import FAMILIES, Family
from zerolock_theory.models.loading import (
    check_model_source,
    load_model,
    model_display_name,
    resolve_device,
    resolve_model_path,
)

__all__ = [
    "FAMILIES",
    "ChunkContext",
    "ChunkedLM",
    "Family",
    "UnsupportedArchitectureError",
    "attach_adapters",
    "check_model_source",
    "load_model",
    "model_display_name",
    "resolve_device",
    "resolve_model_path",
    "trainable_state_dict",
]
