"""A new user's first hour: each bad input of issue 36 exits 2 with one line and changes nothing.

Each case lists every path and the SHA-256 of every file under a scratch directory before and
after the call (``zerolock_theory.app.cli.main`` in-process, that directory the working directory):
the listing and the checksums must be equal. None of these calls trains or spawns anything.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import zerolock_theory.app.workflows.verify as verify_module
from zerolock_theory.app.cli import main
from zerolock_theory.app.workflows.verify_config import load_suite
from zerolock_theory.training.rundir import write_marker


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root``: a directory as "dir", a file as its SHA-256."""
    return {str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))}


def refused(argv: list[str], root: Path, monkeypatch, capsys) -> str:
    """Run ``argv`` in ``root``; assert exit 2, one stderr line and an unchanged ``root``; the line."""
    monkeypatch.chdir(root)
    before = snapshot(root)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and len(err) < 400, err
    assert snapshot(root) == before, "files changed"
    return err


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    root = tmp_path / "scratch"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "keep.txt").write_text("precious")
    return root


def test_verify_chunks_beyond_the_layers_names_the_allowed_k(scratch, monkeypatch, capsys):
    err = refused(["verify", "--quick", "--chunks", "12", "--out", "D"], scratch, monkeypatch, capsys)
    assert "zerolock verify: error: suite.chunks=12" in err and "1 to 8" in err


def test_pipeline_stages_beyond_the_layers_spawns_nothing(scratch, monkeypatch, capsys):
    err = refused(["pipeline", "--stages", "12", "--out", "P"], scratch, monkeypatch, capsys)
    assert "--stages 12" in err and "1 to 8" in err


def test_train_chunks_beyond_the_layers(scratch, monkeypatch, capsys):
    err = refused(["train", "--chunks", "9", "--out", "T"], scratch, monkeypatch, capsys)
    assert "model.chunks=9" in err and "1 to 8" in err


def test_verify_corpus_too_small_for_a_side_run_is_refused_before_training(scratch, monkeypatch, capsys):
    """A corpus big enough for the runs (seq_len 32) but not for the suite at seq_len 512."""
    corpus = scratch / "notes" / "small.jsonl"
    corpus.write_text("".join(json.dumps({"body": f"line {i} of a small corpus. " * 20}) + "\n" for i in range(40)))
    err = refused(["verify", "--quick", "--data", str(corpus), "--text-field", "body", "--set", "data.seq_len=512",
                   "--out", "D"], scratch, monkeypatch, capsys)
    assert "blocks of 513 tokens" in err and "use more text" in err


def test_verify_text_field_missing_is_one_line(scratch, monkeypatch, capsys):
    corpus = scratch / "notes" / "c.jsonl"
    corpus.write_text(json.dumps({"body": "some text"}) + "\n")
    err = refused(["verify", "--quick", "--data", str(corpus), "--out", "D"], scratch, monkeypatch, capsys)
    assert "no field 'text'" in err and "--text-field" in err


def _verify_dir(root: Path, monkeypatch) -> Path:
    """A verify directory as a suite leaves it after its marker and verify.json (the runs skipped)."""
    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(verify_module, "run_points", stop)
    spec, tables = load_suite("verify_quick", ["suite.lr=0.05"])
    with pytest.raises(Stop):
        verify_module.verify(spec, root / "D", tables=tables, log=lambda _: None)
    monkeypatch.undo()
    return root / "D"


def test_resume_with_other_settings_changes_nothing(scratch, monkeypatch, capsys):
    out = _verify_dir(scratch, monkeypatch)
    assert (out / "verify.json").is_file()
    err = refused(["verify", "--quick", "--lr", "0.05", "--steps", "16", "--out", "D"], scratch, monkeypatch, capsys)
    assert "holds a verify suite with other settings" in err and "suite.steps 32 -> 16" in err
    assert "nothing was changed" in err


def test_verify_out_a_train_run_says_what_it_is(scratch, monkeypatch, capsys):
    run = scratch / "R"
    run.mkdir()
    (run / "config.json").write_text("{}")
    write_marker(run, "train")
    err = refused(["verify", "--quick", "--out", "R"], scratch, monkeypatch, capsys)
    assert "holds a train run, not a verify directory" in err


def test_verify_steps_below_the_minimum_states_it(scratch, monkeypatch, capsys):
    err = refused(["verify", "--quick", "--steps", "4", "--out", "D"], scratch, monkeypatch, capsys)
    assert "at least 5 steps" in err


@pytest.mark.parametrize("argv, command, suggestion", [
    (["train", "--stpes", "3", "--out", "T"], "zerolock train", "--steps"),
    (["verify", "--quick", "--out", "D", "--jbos", "2"], "zerolock verify", "--jobs"),
    (["probe", "fixed-point", "--chnk", "2", "--out", "F"], "zerolock probe fixed-point", "--chunk"),
])
def test_typo_names_the_command_and_the_closest_option(argv, command, suggestion, scratch, monkeypatch, capsys):
    monkeypatch.chdir(scratch)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"{command}: error: unrecognized arguments") and f"did you mean {suggestion}?" in err
