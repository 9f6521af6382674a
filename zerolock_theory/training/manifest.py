"""The run manifest: versions, git commit and device, for reproducibility."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from zerolock_theory.training.rundir import write_marker

__all__ = ["environment", "tokenizer_identity", "write_manifest"]

PACKAGES = ("torch", "transformers", "peft", "tokenizers", "numpy", "scipy", "zerolock-theory")


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment(device: torch.device | str = "cpu") -> dict[str, object]:
    """Versions, git commit, device and platform facts."""
    dev = torch.device(device)
    info: dict[str, object] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {name: _version(name) for name in PACKAGES},
        "git_commit": _git_commit(),
        "device": str(dev),
        "torch_threads": torch.get_num_threads(),
    }
    if dev.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(dev)
    return info


def tokenizer_identity(tokenizer: Any) -> dict[str, object]:
    """What tells two tokenizers apart: its size and a SHA-256 of its sorted vocabulary and
    special tokens (``zerolock analyze`` refuses runs whose fingerprints differ)."""
    vocab = sorted(tokenizer.get_vocab().items())
    special = sorted(str(t) for t in getattr(tokenizer, "all_special_tokens", []))
    digest = hashlib.sha256(json.dumps([vocab, special], ensure_ascii=False).encode("utf-8")).hexdigest()
    return {"name": str(getattr(tokenizer, "name_or_path", "")), "size": len(tokenizer), "sha256": digest}


def write_manifest(run_dir: Path, device: torch.device | str, kind: str = "train", tokenizer: Any = None) -> Path:
    """Write ``manifest.json`` with the run-directory marker (``rundir.py``) of ``kind``.

    Keeps the first start time across resumes and counts the resumes; ``tokenizer`` adds its
    ``tokenizer_identity``.
    """
    path = Path(run_dir) / "manifest.json"
    try:
        previous = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        previous = {}
    data = {**environment(device), "started": previous.get("started", time.strftime("%Y-%m-%dT%H:%M:%S"))}
    if tokenizer is not None:
        data["tokenizer"] = tokenizer_identity(tokenizer)
    if previous:
        data["resumed"] = previous.get("resumed", 0) + 1
    return write_marker(run_dir, kind, data)
