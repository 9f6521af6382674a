"""Load a causal LM and its tokenizer from a local directory (never from a hub)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

__all__ = ["load_model", "resolve_device", "resolve_model_path"]

_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def resolve_device(device: str) -> torch.device:
    """"auto" → cuda when present, else cpu; explicit names are checked."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"unknown device {device!r}: expected auto, cpu, cuda or cuda:N") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available")
    return dev


def resolve_model_path(path: str) -> Path:
    """"embedded" → the packaged tiny model; otherwise a local directory with config.json."""
    if path == "embedded":
        from zerolock_theory.embedded import embedded_path

        return embedded_path()
    directory = Path(path).expanduser()
    if not (directory / "config.json").is_file():
        raise ValueError(
            f"model path {path!r} is not a local Hugging Face model directory (no config.json); "
            "models are never downloaded at run time"
        )
    return directory


def load_model(path: str, dtype: str = "float32", device: str = "cpu") -> tuple[Any, Any]:
    """(model, tokenizer) from a local directory, in ``dtype``, eval mode, on ``device``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = resolve_model_path(path)
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
    try:
        try:
            model = AutoModelForCausalLM.from_pretrained(
                directory, dtype=_DTYPES[dtype], local_files_only=True
            )
        except TypeError:  # transformers < 4.56 names it torch_dtype
            model = AutoModelForCausalLM.from_pretrained(
                directory, torch_dtype=_DTYPES[dtype], local_files_only=True
            )
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:  # garbage config.json, no weights, no tokenizer
        first = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"cannot load the model in {directory}: {first}") from exc
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.use_cache = False
    return model.to(resolve_device(device)).eval(), tokenizer


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype for a config name."""
    return _DTYPES[name]
