"""Load a causal LM and its tokenizer from a local source (never from a hub).

``--model`` (``model.path``) takes ``embedded`` (the packaged tiny model), a local Hugging Face
directory, a ``.gguf`` file or ``smollm2-135m`` (``models.gguf_files``). Every command that
takes a model goes through ``resolve_model_path``: a GGUF source is converted once into the
model cache (``models.model_cache``) and its cached directory is returned from then on.
``check_model_source`` checks a source without writing anything (before a run's first write)
and ``model_display_name`` is how reports name the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

import zerolock_theory.models.gguf_files as gguf_files
import zerolock_theory.models.model_cache as model_cache

__all__ = ["check_model_source", "load_model", "model_display_name", "resolve_device", "resolve_model_path"]

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
    """The local Hugging Face directory of ``--model path``.

    "embedded" → the packaged tiny model; a GGUF source → its cache entry, converted on first
    use; otherwise a local directory with config.json. One-line ``ValueError`` otherwise
    (``ModelCacheError`` when the cache cannot be written).
    """
    if path == "embedded":
        from zerolock_theory.embedded import embedded_path

        return embedded_path()
    if gguf_files.is_gguf_source(path):
        return _gguf_entry(path)[0]
    directory = Path(path).expanduser()
    if not (directory / "config.json").is_file():
        raise ValueError(
            f"model path {path!r} is not a local Hugging Face model directory (no config.json); "
            "models are never downloaded at run time"
        )
    return directory


_INSPECTED: dict[tuple[str, int, int], gguf_files.GgufInfo] = {}


def _cached(file: Path) -> Path | None:
    """The complete cache entry of ``file`` when its checksum is remembered (no hashing, no reading)."""
    cache = model_cache.cache_dir()
    sha = model_cache.known_sha256(file, cache)
    return model_cache.complete_entry(sha, cache) if sha else None


def _inspect(file: Path, path: str) -> gguf_files.GgufInfo:
    """``inspect_gguf``, once per process and file version."""
    st = file.stat()
    key = (str(file.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _INSPECTED:
        _INSPECTED[key] = gguf_files.inspect_gguf(file, path if path in gguf_files.ALIASES else None)
    return _INSPECTED[key]


def _gguf_entry(path: str) -> tuple[Path, bool]:
    """(cache entry, built now) of a GGUF source."""
    file = gguf_files.gguf_file(path)
    found = _cached(file)
    if found is not None:
        return found, False
    info = _inspect(file, path)
    cache = model_cache.cache_dir()
    sha = model_cache.file_sha256(file, cache)

    def build(tmp: Path) -> dict[str, Any]:
        gguf_files.convert_gguf(file, tmp)
        return {"display_name": info.display_name, "architecture": info.architecture,
                "quantization": info.quantization, "family": info.family}

    return model_cache.build_entry(file, sha, build, cache)


def check_model_source(path: str) -> None:
    """One-line ``ValueError`` unless ``path`` is a usable model source; writes nothing.

    A GGUF source is checked for the ``gguf`` package, the file, its header and architecture
    (skipped when its cache entry exists); a directory for ``config.json``.
    """
    if path == "embedded":
        return
    if gguf_files.is_gguf_source(path):
        file = gguf_files.gguf_file(path)
        if _cached(file) is None:
            _inspect(file, path)
        return
    directory = Path(path).expanduser()
    if not directory.exists():
        raise ValueError(f"model directory {path!r} does not exist")
    if not directory.is_dir():
        raise ValueError(f"model path {path!r} is not a directory (nor a .gguf file)")
    if not (directory / "config.json").is_file():
        raise ValueError(f"model directory {path!r} has no config.json (not a Hugging Face model directory)")


def model_display_name(path: str) -> str:
    """How a report names the model of ``--model path``.

    A GGUF source: "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to float32)" (its title and
    quantisation); the embedded model: "embedded Llama (8 layers, d=128, V=4096)"; a directory:
    its name and model type. Reads headers and configs only.
    """
    if gguf_files.is_gguf_source(path):
        file = gguf_files.gguf_file(path)
        found = _cached(file)
        marker = model_cache.complete_marker(found) if found is not None else None
        if marker and marker.get("display_name"):
            return str(marker["display_name"])
        return _inspect(file, path).display_name
    directory = resolve_model_path(path)
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    if path == "embedded":
        return (f"embedded {config.get('model_type', 'model').capitalize()} ({config.get('num_hidden_layers')} layers, "
                f"d={config.get('hidden_size')}, V={config.get('vocab_size')})")
    return f"{directory.name} ({config.get('model_type', 'unknown model type')}, local directory)"


def load_model(path: str, dtype: str = "float32", device: str = "cpu") -> tuple[Any, Any]:
    """(model, tokenizer) from a local directory, in ``dtype``, eval mode, on ``device``.

    Hub kernels stay off (``use_kernels=False``; transformers 5 turns them on whenever the
    ``kernels`` package is installed): they would be fetched at run time, and every switch
    between train and eval mode, two per probed step, re-ran ``kernelize`` over the model
    (3–7% of a 99-step probed run of the embedded model; the metrics are the same either way).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = resolve_model_path(path)
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
    try:
        try:
            model = AutoModelForCausalLM.from_pretrained(
                directory, dtype=_DTYPES[dtype], local_files_only=True, use_kernels=False
            )
        except TypeError:  # transformers < 4.56 names it torch_dtype
            model = AutoModelForCausalLM.from_pretrained(
                directory, torch_dtype=_DTYPES[dtype], local_files_only=True, use_kernels=False
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
