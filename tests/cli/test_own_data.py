"""``zerolock verify --quick`` on a user's own corpus whose text field is not ``text``.

The corpus is ~100 kB of the standard library's own sources (the ``email`` package), one JSON
line per file under the field ``body``: no download. Every run and both side runs (the
fixed-point experiment and the memory runs) must read it with the suite's settings.
"""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import pytest

from zerolock_theory.app.cli import main


def stdlib_corpus(path: Path, field: str = "body", size: int = 100_000) -> Path:
    """About ``size`` characters of the standard library's ``email`` sources as JSON lines."""
    sources = sorted((Path(sysconfig.get_paths()["stdlib"]) / "email").glob("*.py"))
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for source in sources:
            text = source.read_text(encoding="utf-8")
            out.write(json.dumps({field: text}) + "\n")
            written += len(text)
            if written >= size:
                break
    assert written >= size * 0.9
    return path


@pytest.mark.slow
def test_verify_quick_on_own_corpus_with_body_field(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    corpus = stdlib_corpus(tmp_path / "stdlib.jsonl")
    out = tmp_path / "D"
    code = main(["verify", "--quick", "--data", str(corpus), "--set", "data.text_field=body", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert (out / "report" / "report.html").is_file()
    assert (out / "fixed_point" / "chunk-1" / "fixed_point.json").is_file()
    assert (out / "systems" / "systems.json").is_file()
    saved = json.loads((out / "verify.json").read_text())
    assert saved["base"]["data"] == {**saved["base"]["data"], "source": str(corpus), "text_field": "body"}
