"""The on-disk cache of converted models (dequantised GGUF files as Hugging Face directories).

Location: ``$ZEROLOCK_CACHE`` when set, else ``~/.cache/zerolock-theory/models``. Each entry is a
directory named by the first 16 hex digits of the source file's SHA-256 and holds the saved
model (``config.json``, ``model.safetensors``, tokenizer files) and, written last, the
completion marker ``zerolock-cache.json`` (source, SHA-256, display name, every file's size).

Safety:

* **Atomic build.** An entry is built in a temporary directory inside the cache
  (``.tmp-KEY-*``) and appears under its name by one ``os.rename``; a reader sees a complete
  entry or none.
* **One builder.** Builders of the same key take an exclusive ``fcntl.flock`` on ``KEY.lock``
  and look again once they hold it, so two processes converting the same file at once leave
  one entry (the second reuses the first's).
* **Torn entries.** An entry whose marker is missing or unreadable, whose files differ in size
  from the marker, or whose SHA-256 is not the source's is rebuilt; the leftovers of a build
  killed midway (``.tmp-KEY-*``) are removed by the next builder of that key.
* **Unwritable cache.** A read-only or full cache directory raises ``ModelCacheError``
  (a ``ValueError``: one line, exit 2 on the command line); the partial build is removed.

The SHA-256 of a source file is remembered in ``sources.json`` by path, size and mtime, so a
later run does not hash the file again (a changed file is hashed anew).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CACHE_ENV", "DEFAULT_CACHE", "MARKER", "CacheEntry", "ModelCacheError", "build_entry",
           "cache_dir", "clear_entries", "complete_entry", "complete_marker", "file_sha256", "known_sha256", "list_entries"]

CACHE_ENV = "ZEROLOCK_CACHE"
"""Environment variable naming the cache directory."""
DEFAULT_CACHE = "~/.cache/zerolock-theory/models"
"""The cache directory when ``ZEROLOCK_CACHE`` is not set."""
MARKER = "zerolock-cache.json"
"""Completion marker of an entry, written last."""
KEY_DIGITS = 16
"""Hex digits of the SHA-256 that name an entry."""
_SOURCES = "sources.json"
_FORMAT = 1


class ModelCacheError(ValueError):
    """The cache cannot be written (read-only, full) or holds no such entry."""


def cache_dir() -> Path:
    """``$ZEROLOCK_CACHE`` or ``~/.cache/zerolock-theory/models`` (not created here)."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


@dataclass(frozen=True)
class CacheEntry:
    """One entry: its key, directory, marker (None when torn) and size on disk."""

    key: str
    path: Path
    marker: dict[str, Any] | None
    bytes: int

    @property
    def status(self) -> str:
        """``ok`` or ``torn`` (rebuilt on next use, or removed by ``zerolock cache clear``)."""
        return "ok" if self.marker is not None else "torn"


def _stat_key(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def known_sha256(source: Path, cache: Path) -> str | None:
    """The remembered SHA-256 of ``source`` if its path, size and mtime are unchanged."""
    name, size, mtime = _stat_key(source)
    row = (_read_json(cache / _SOURCES) or {}).get(name)
    if isinstance(row, dict) and row.get("size") == size and row.get("mtime_ns") == mtime:
        return row.get("sha256")
    return None


def file_sha256(source: Path, cache: Path) -> str:
    """SHA-256 of ``source`` (remembered in ``sources.json``; an unwritable cache only skips that)."""
    known = known_sha256(source, cache)
    if known:
        return known
    digest = hashlib.sha256()
    with open(source, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    sha = digest.hexdigest()
    name, size, mtime = _stat_key(source)
    with contextlib.suppress(OSError):
        index = _read_json(cache / _SOURCES)
        index = index if isinstance(index, dict) else {}
        index[name] = {"size": size, "mtime_ns": mtime, "sha256": sha}
        _write_atomic(cache / _SOURCES, json.dumps(index, indent=1))
    return sha


def _umask_mode(mode: int) -> int:
    """``mode`` less the process's umask (``mkstemp``/``mkdtemp`` create private files)."""
    mask = os.umask(0)
    os.umask(mask)
    return mode & ~mask


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, _umask_mode(0o666))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def complete_marker(directory: Path) -> dict[str, Any] | None:
    """The entry's marker when the entry is complete (every listed file at its size), else None (torn)."""
    marker = _read_json(directory / MARKER)
    if not isinstance(marker, dict) or marker.get("format") != _FORMAT or not isinstance(marker.get("files"), dict):
        return None
    for name, size in marker["files"].items():
        try:
            if (directory / name).stat().st_size != size:
                return None
        except OSError:
            return None
    return marker


def complete_entry(sha: str, cache: Path | None = None) -> Path | None:
    """The directory of the complete entry for ``sha``; None when absent or torn."""
    directory = (cache or cache_dir()) / sha[:KEY_DIGITS]
    marker = complete_marker(directory)
    return directory if marker is not None and marker.get("sha256") == sha else None


@contextlib.contextmanager
def _writing(cache: Path, what: str) -> Iterator[None]:
    """Turn an OS error while writing the cache into one ``ModelCacheError`` line."""
    try:
        yield
    except OSError as exc:
        raise ModelCacheError(_os_line(cache, what, exc.errno, exc.strerror or str(exc))) from exc
    except Exception as exc:  # safetensors reports a full disk as its own error type
        if "os error 28" in str(exc) or "No space left" in str(exc):
            raise ModelCacheError(_os_line(cache, what, errno.ENOSPC, "No space left on device")) from exc
        raise


def _os_line(cache: Path, what: str, code: int | None, reason: str) -> str:
    hint = f"set {CACHE_ENV} to a writable directory with free space"
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"model cache {cache} is full ({reason}) while {what}; free space or {hint}"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"model cache {cache} is not writable ({reason}) while {what}; {hint}"
    return f"cannot write the model cache {cache} while {what}: {reason}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if needed) for the block."""
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _remove_tree(path: Path, cache: Path) -> None:
    """Move ``path`` aside (one rename, so it disappears at once), then delete it."""
    trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=cache))
    os.rename(path, trash / path.name)
    shutil.rmtree(trash, ignore_errors=True)


def build_entry(source: Path, sha: str, build: Callable[[Path], dict[str, Any]],
                cache: Path | None = None) -> tuple[Path, bool]:
    """(entry directory, built here) for ``source``: the complete entry, or one built by ``build``.

    ``build(tmp)`` writes the model into the empty directory ``tmp`` and returns the metadata to
    keep in the marker (``display_name``, ...). Atomic and locked (module docstring).
    """
    cache = cache or cache_dir()
    key = sha[:KEY_DIGITS]
    found = complete_entry(sha, cache)
    if found is not None:
        return found, False
    what = f"converting {source.name}"
    with _writing(cache, what):
        cache.mkdir(parents=True, exist_ok=True)
        with _locked(cache / f"{key}.lock"):
            found = complete_entry(sha, cache)
            if found is not None:  # another process built it while we waited
                return found, False
            for leftover in cache.glob(f".tmp-{key}-*"):  # builds killed midway
                shutil.rmtree(leftover, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=cache))
            try:
                meta = build(tmp)
                files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.is_file()}
                marker = {"format": _FORMAT, "sha256": sha, "source": str(source.resolve()),
                          "source_bytes": source.stat().st_size, **meta, "files": files}
                _write_atomic(tmp / MARKER, json.dumps(marker, indent=2))
                entry = cache / key
                os.chmod(tmp, _umask_mode(0o777))
                if entry.exists():  # torn or stale: replace it
                    _remove_tree(entry, cache)
                os.rename(tmp, entry)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
    return entry, True


def list_entries(cache: Path | None = None) -> list[CacheEntry]:
    """Every entry of the cache (complete or torn), by key."""
    cache = cache or cache_dir()
    if not cache.is_dir():
        return []
    out = []
    for path in sorted(cache.iterdir()):
        if path.is_dir() and not path.name.startswith("."):
            size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            out.append(CacheEntry(path.name, path, complete_marker(path), size))
    return out


def clear_entries(key: str | None = None, cache: Path | None = None) -> list[CacheEntry]:
    """Remove every entry (and the leftovers of killed builds), or the one named ``key``.

    Each removal holds the entry's lock, so a build in progress finishes first. Raises
    ``ModelCacheError`` for an unknown key or an unwritable cache.
    """
    cache = cache or cache_dir()
    entries = list_entries(cache)
    if key is not None:
        entries = [e for e in entries if e.key == key]
        if not entries:
            known = ", ".join(e.key for e in list_entries(cache)) or "none"
            raise ModelCacheError(f"no cache entry {key!r} in {cache} (entries: {known})")
    with _writing(cache, "clearing it"):
        for entry in entries:
            with _locked(cache / f"{entry.key}.lock"):  # lock files stay: a waiter may hold one
                if entry.path.exists():
                    _remove_tree(entry.path, cache)
        if key is None and cache.is_dir():
            for leftover in cache.glob(".tmp-*"):  # killed builds; a running one holds its key's lock
                with _locked(cache / f"{leftover.name.split('-')[1]}.lock"):
                    shutil.rmtree(leftover, ignore_errors=True)
            for leftover in cache.glob(".trash-*"):
                shutil.rmtree(leftover, ignore_errors=True)
    return entries
