"""Run-directory ownership: every directory the package writes carries a marker.

The marker is ``manifest.json`` with ``"format": "zerolock-run/1"`` and a ``"kind"``
(``train``, ``pipeline``, ``sweep`` or ``verify``). Commands that write, resume or overwrite
an output directory go through ``prepare_out``, which

* refuses a path that exists and is not a directory;
* refuses a non-empty directory that is not a run of the same kind (resume, plain start)
  or not one of ours at all (``--overwrite``), in one line;
* never deletes the working directory, one of its parents, or the filesystem root.

``prepare_out`` only *checks* (``check_out``) or checks and then creates/clears
(``prepare_out``), so callers validate everything before the first write.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = [
    "FORMAT",
    "KINDS",
    "MANIFEST",
    "OutDirError",
    "check_out",
    "marker",
    "prepare_kind",
    "prepare_out",
    "run_kind",
    "write_marker",
]

FORMAT = "zerolock-run/1"
MANIFEST = "manifest.json"
KINDS = ("train", "pipeline", "sweep", "verify")


class OutDirError(FileExistsError):
    """An output directory the command may not use (one line, names the path)."""


def marker(kind: str) -> dict[str, str]:
    """The two keys that make a ``manifest.json`` ours."""
    if kind not in KINDS:
        raise ValueError(f"unknown run kind {kind!r}")
    return {"format": FORMAT, "kind": kind}


def _legacy_kind(out: Path, data: dict[str, Any]) -> str | None:
    """Runs written before the marker existed: a manifest with versions and a start time."""
    if "versions" in data and "started" in data and (out / "config.json").is_file():
        return "pipeline" if (out / "pipeline.json").is_file() else "train"
    return None


def _legacy_sweep(out: Path) -> str | None:
    """A sweep directory written before the marker: nothing but train runs in it."""
    try:
        children = list(out.iterdir()) if out.is_dir() and not (out / MANIFEST).exists() else []
    except OSError:
        return None
    if children and all(c.is_dir() and run_kind(c) == "train" for c in children):
        return "sweep"
    return None


def run_kind(out: str | Path) -> str | None:
    """The kind of run ``out`` holds, or None when it is not one of ours."""
    out = Path(out)
    if (out / "verify.json").is_file() and not (out / MANIFEST).is_file():
        return "verify"  # verify directories written before the marker
    path = out / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _legacy_sweep(out)
    if not isinstance(data, dict):
        return None
    if data.get("format") == FORMAT and data.get("kind") in KINDS:
        return str(data["kind"])
    return _legacy_kind(out, data)


def write_marker(out: str | Path, kind: str, extra: dict[str, Any] | None = None) -> Path:
    """Write ``manifest.json`` holding the marker (plus ``extra``), atomically."""
    path = Path(out) / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.tmp")
    tmp.write_text(json.dumps({**(extra or {}), **marker(kind)}, indent=2), encoding="utf-8")
    os.replace(tmp, path)
    return path


def _is_protected(out: Path) -> bool:
    """The working directory, a parent of it, the root or the home directory."""
    target = out.resolve()
    cwd = Path.cwd().resolve()
    return target == cwd or target in cwd.parents or target == Path(target.anchor) or target == Path.home()


def _check_writable(out: Path, flag: str) -> None:
    """``out`` (or, if it does not exist yet, its nearest existing parent) must be writable."""
    target = next((p for p in (out, *out.parents) if p.exists()), None)
    if target is not None and not os.access(target, os.W_OK | os.X_OK):
        where = "" if target == out else f" ({target} is read-only)"
        raise OutDirError(f"{flag} {out} is not writable{where}: {os.strerror(errno.EACCES)}")


def _non_empty(out: Path) -> bool:
    return out.is_dir() and any(out.iterdir())


def check_out(out: str | Path, kind: str, *, resume: bool = False, overwrite: bool = False,
              flag: str = "--out") -> str:
    """Decide what to do with ``out`` without touching it: ``"fresh"``, ``"resume"`` or ``"clear"``.

    Raises ``OutDirError`` (one line) when the directory may not be used.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutDirError(f"{flag} {out} exists and is not a directory")
    for parent in out.parents:
        if parent.exists() and not parent.is_dir():
            raise OutDirError(f"{flag} {out}: {parent} is a file, not a directory")
    _check_writable(out, flag)
    if not _non_empty(out):
        return "fresh"
    found = run_kind(out)
    if resume:
        if found != kind:
            what = f"a {found} directory" if found else "not a zerolock run directory"
            raise OutDirError(f"{flag} {out} is {what} ({MANIFEST} with format {FORMAT!r} and "
                              f"kind {kind!r} missing); refusing to resume into it")
        return "resume"
    if not overwrite:
        if found == kind:
            raise OutDirError(f"{flag} {out} already holds a {kind} run; pass --resume to continue "
                              "it or --overwrite to replace it")
        if found is not None:
            raise OutDirError(f"{flag} {out} holds a {found} run, not a {kind} directory; choose another path")
        raise OutDirError(f"{flag} {out} is not empty and is not a {kind} directory (no zerolock "
                          f"{MANIFEST}); choose another path")
    if found is None:
        raise OutDirError(f"{flag} {out} is not a zerolock run directory; --overwrite only replaces "
                          "our own runs, nothing was deleted")
    if _is_protected(out):
        raise OutDirError(f"{flag} {out} is the working directory or one of its parents; "
                          "refusing to delete it")
    return "clear"


def prepare_kind(out: str | Path, kind: str, *, overwrite: bool = False, flag: str = "--out") -> str:
    """For commands that continue their own directory on a re-run (sweep, verify): resume one of
    kind ``kind``, refuse anything else (``overwrite`` replaces only our own runs); then create it."""
    out = Path(out)
    same = out.is_dir() and run_kind(out) == kind
    return prepare_out(out, kind, resume=same, overwrite=overwrite and not same, flag=flag)


def prepare_out(out: str | Path, kind: str, *, resume: bool = False, overwrite: bool = False,
                flag: str = "--out") -> str:
    """``check_out``, then create ``out`` (clearing one of our runs for ``"clear"``)."""
    out = Path(out)
    action = check_out(out, kind, resume=resume, overwrite=overwrite, flag=flag)
    if action == "clear":
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    return action
