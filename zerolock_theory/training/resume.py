"""What a resume may change, checked before anything is written.

A resumed run continues the *same experiment*: every config key must equal the saved
``config.json`` except the bookkeeping keys of ``RESUMABLE_CHANGES``. ``run.steps`` is a
documented extension: it may grow (train further) or shrink down to the steps already done,
except under the cosine schedule, whose learning rates depend on the total (changing it would
change the rest of the schedule). Fewer steps than the checkpoint already holds is refused.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from zerolock_theory.config import TrainConfig
from zerolock_theory.jsonio import TornLineWarning, read_jsonl

__all__ = [
    "RESUMABLE_CHANGES", "check_metrics", "check_resume", "config_differences", "read_saved_config",
    "write_text_atomic",
]

RESUMABLE_CHANGES = (
    "run.steps", "run.progress", "run.eval_every", "run.checkpoint_every", "run.keep_checkpoints", "run.threads",
    "run.report_to",
)


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and key != "probes":
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_differences(saved: TrainConfig, config: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Every flattened key whose value differs: key → (saved, new)."""
    old, new = _flatten(saved.to_dict()), _flatten(config.to_dict())
    return {k: (old.get(k), new.get(k)) for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)}


def check_resume(saved: TrainConfig, config: TrainConfig, done: int) -> None:
    """Raise ``ValueError`` naming the first forbidden difference; ``done`` = completed steps."""
    diff = config_differences(saved, config)
    forbidden = {k: v for k, v in diff.items() if k not in RESUMABLE_CHANGES}
    if forbidden:
        text = "; ".join(f"{k}: {json.dumps(a)} -> {json.dumps(b)}" for k, (a, b) in forbidden.items())
        raise ValueError(f"cannot resume with a different config ({text}); only {', '.join(RESUMABLE_CHANGES)} "
                         "may change")
    steps = config.run.steps
    if steps < done:
        raise ValueError(f"cannot resume with run.steps = {steps}: the run has already completed {done} steps")
    if "run.steps" in diff and config.optim.schedule == "cosine":
        raise ValueError(f"cannot change run.steps ({saved.run.steps} -> {steps}) on resume with the cosine "
                         "schedule: its learning rates depend on the total")


def read_saved_config(out: Path) -> TrainConfig | None:
    """The run's ``config.json`` (None when absent); a corrupt one is a one-line ``ValueError``."""
    path = Path(out) / "config.json"
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("the top level is not an object")
        return TrainConfig.from_dict(raw)
    except ValueError as exc:  # JSONDecodeError is a ValueError
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{path} is not a valid run config: {first}") from exc


def check_metrics(out: Path) -> None:
    """The run's ``metrics.jsonl`` must parse (a torn last line is allowed: the logger drops it).

    Called before a resume writes anything, so a run whose log is broken mid-file is refused
    with ``config.json`` and ``manifest.json`` untouched; raises ``JsonlError`` (a ``ValueError``)
    naming the line.
    """
    path = Path(out) / "metrics.jsonl"
    if path.is_file():
        with warnings.catch_warnings():  # the logger reports a torn last line when it drops it
            warnings.simplefilter("ignore", TornLineWarning)
            read_jsonl(path)


def start_ce(out: Path, initial: dict[str, float] | None) -> float | None:
    """The held-out CE at ω^0: from this call's evaluation ``initial``, or, on a resume (which does
    not evaluate ω^0 again), as the run's first record logged it (``eval/ce_initial``); None if neither."""
    from zerolock_theory.records import EVAL_CE, EVAL_CE_INITIAL

    if initial is not None:
        return initial[EVAL_CE]
    path = Path(out) / "metrics.jsonl"
    if not path.is_file():
        return None
    with path.open(encoding="utf-8") as fh:
        first = fh.readline()
    try:
        value = json.loads(first).get(EVAL_CE_INITIAL)
    except (json.JSONDecodeError, AttributeError):
        return None
    return None if value is None else float(value)


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and rename, so a crash never leaves half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
