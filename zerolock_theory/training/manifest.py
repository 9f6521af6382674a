"""The run manifest: versions, git commit and device, for reproducibility."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import torch

from zerolock_theory.training.rundir import write_marker

__all__ = ["environment", "write_manifest"]

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


def write_manifest(run_dir: Path, device: torch.device | str, kind: str = "train") -> Path:
    """Write ``manifest.json`` with the run-directory marker (``rundir.py``) of ``kind``.

    Keeps the first start time across resumes and counts the resumes.
    """
    path = Path(run_dir) / "manifest.json"
    try:
        previous = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        previous = {}
    data = {**environment(device), "started": previous.get("started", time.strftime("%Y-%m-%dT%H:%M:%S"))}
    if previous:
        data["resumed"] = previous.get("resumed", 0) + 1
    return write_marker(run_dir, kind, data)
