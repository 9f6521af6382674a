"""Data safety of runs: a full disk, resumes that extend or do nothing, a torn probe store,
and a command line that answers --help without importing torch, pandas or matplotlib."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from zerolock_theory.app.cli import COMMANDS, main
from zerolock_theory.jsonio import read_records
from zerolock_theory.training import state as state_module
from zerolock_theory.training.state import complete_checkpoints, latest_checkpoint, load_checkpoint

TINY = ["--chunks", "2", "--seq-len", "32", "--batch-size", "2", "--set", "data.eval_batches=1",
        "--checkpoint-every", "1", "--eval-every", "100", "--no-progress"]


def test_disk_full_mid_run_is_one_line_and_keeps_the_last_checkpoint(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    real = state_module._write_bytes

    def full_disk(path, data):
        if "step_00000002" in str(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(state_module, "_write_bytes", full_disk)
    assert main(["train", "--out", str(out), "--steps", "3", *TINY]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0] and "step_00000002" in lines[0], lines
    assert [p.name for p in complete_checkpoints(out)] == ["step_00000001"]
    assert load_checkpoint(latest_checkpoint(out)).step == 1  # whole and loadable
    assert not list((out / "checkpoints").glob(".tmp-*"))  # the torn one was cleaned up
    monkeypatch.setattr(state_module, "_write_bytes", real)  # space freed: resume finishes the run
    assert main(["train", "--out", str(out), "--steps", "3", "--resume", *TINY]) == 0
    assert [r["step"] for r in read_records(out / "metrics.jsonl")] == [0, 1, 2]


def test_resume_may_extend_and_a_no_op_resume_writes_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), "--steps", "2", *TINY]) == 0
    files = {name: (out / name).read_bytes() for name in ("config.json", "manifest.json", "metrics.jsonl")}
    assert json.loads(files["manifest.json"])["format"] == "zerolock-run/1"
    assert main(["train", "--out", str(out), "--resume", *TINY[-1:]]) == 0  # nothing left to do
    assert "nothing to do" in capsys.readouterr().out
    assert {name: (out / name).read_bytes() for name in files} == files
    assert main(["train", "--out", str(out), "--resume", "--steps", "3", "--no-progress"]) == 0  # extension
    err = capsys.readouterr().err
    assert "Loading weights" not in err and "%|" not in err  # no progress bars of ours or transformers'
    assert json.loads((out / "config.json").read_text())["run"]["steps"] == 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["resumed"] == 1 and manifest["kind"] == "train"
    assert [r["step"] for r in read_records(out / "metrics.jsonl")] == [0, 1, 2]


def test_torn_probe_store_warns(tmp_path):
    import numpy as np

    from zerolock_theory.readout_store import ReadoutStore, ReadoutWriter, shard_name

    meta = {"format": "zerolock-readouts", "version": 2, "rows": 2, "n_positions": 3, "vocab_size": 8,
            "mode": "full", "dtype": "float32"}
    writer = ReadoutWriter(tmp_path / "r", meta)
    for step in range(2):
        writer.append(step, {"log_probs": np.full((2, 3, 8), -np.log(8), dtype=np.float32)})
    writer.close()
    data = tmp_path / "r" / shard_name(1)
    with open(data, "r+b") as fh:
        fh.truncate(data.stat().st_size - 5)
    with pytest.warns(RuntimeWarning, match="step-00000001.parquet: unreadable"):
        store = ReadoutStore(tmp_path / "r")
    assert store.steps == [0]


HEAVY = ("torch", "pandas", "matplotlib", "transformers", "scipy")


def test_parser_and_every_help_import_no_heavy_module():
    script = (
        "import sys, contextlib, io\n"
        "from zerolock_theory.app.cli import COMMANDS, build_parser, main\n"
        "build_parser()\n"
        "for cmd in [[], *[[c] for c in COMMANDS]]:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try:\n"
        "            main([*cmd, '--help'])\n"
        "        except SystemExit as exc:\n"
        "            assert exc.code == 0, (cmd, exc.code)\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
    assert len(COMMANDS) >= 7
