"""The embedded default model: a tiny Llama pretrained on the Python standard library.

The directory holds a Hugging Face checkpoint (``config.json``, ``model.safetensors`` in
float16, ``tokenizer.json``, ``tokenizer_config.json``) and ``pretrain_report.json``, all
written by ``scripts/pretrain_embedded.py``. Load it with an explicit float32 dtype::

    AutoModelForCausalLM.from_pretrained(embedded_path(), dtype=torch.float32,
                                         local_files_only=True)
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["EMBEDDED_DIR", "REQUIRED_FILES", "embedded_path"]

EMBEDDED_DIR: Path = Path(__file__).resolve().parent
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def embedded_path() -> Path:
    """Directory of the embedded checkpoint; ``FileNotFoundError`` if files are missing."""
    missing = [name for name in REQUIRED_FILES if not (EMBEDDED_DIR / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"embedded model files {missing} are missing from {EMBEDDED_DIR}; rebuild them "
            "with `python3 scripts/pretrain_embedded.py --out zerolock_theory/embedded`"
        )
    return EMBEDDED_DIR
