"""Bad inputs across every command: exit status, one stderr line, no traceback, nothing changed.

Each case prepares files in a scratch directory (the working directory of the call), runs
``zerolock_theory.app.cli.main(argv)`` in-process, and asserts

* the exit status (2 for usage and input errors);
* exactly one line on stderr, containing the expected phrase, and no traceback;
* every file and directory under the scratch directory unchanged (SHA-256 before and after),
  and nothing created.

Almost every case fails before a model loads. Resume cases copy one tiny trained run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from zerolock_theory.app.cli import main

TINY = ["--chunks", "2", "--seq-len", "32", "--batch-size", "2", "--set", "data.eval_batches=1", "--no-progress"]


@dataclass(frozen=True)
class Case:
    """One bad input: files to prepare, the argv, the status and a phrase of the error line."""

    name: str
    argv: tuple[str, ...]
    phrase: str
    setup: Callable[[Path, Path], None] | None = None  # (scratch dir, trained run) -> None
    code: int = 2
    cwd: str = "."  # working directory of the call, relative to the scratch dir


def user_dir(name: str, files: dict[str, str] | None = None) -> Callable[[Path, Path], None]:
    """A user's own directory with files (not one of our runs)."""
    def make(root: Path, _run: Path) -> None:
        for rel, text in (files or {"notes.txt": "precious"}).items():
            (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / name / rel).write_text(text)
    return make


def write(rel: str, text: str) -> Callable[[Path, Path], None]:
    def make(root: Path, _run: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return make


def run_copy(name: str = "run", edit: Callable[[Path], None] | None = None) -> Callable[[Path, Path], None]:
    """A copy of the trained 2-step run, optionally edited."""
    def make(root: Path, run: Path) -> None:
        shutil.copytree(run, root / name)
        if edit is not None:
            edit(root / name)
    return make


def both(*makers: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def make(root: Path, run: Path) -> None:
        for maker in makers:
            maker(root, run)
    return make


def _edit_config(**changes) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        cfg = json.loads((run / "config.json").read_text())
        for dotted, value in changes.items():
            section, key = dotted.split("__")
            cfg[section][key] = value
        (run / "config.json").write_text(json.dumps(cfg, indent=2))
    return edit


def _break_line(path: Path, index: int) -> None:
    """Replace line ``index`` (0-based) of a JSON-lines file with a torn record, mid-file."""
    lines = path.read_text().splitlines(keepends=True)
    lines[index] = lines[index][: len(lines[index]) // 2] + "\n"
    path.write_text("".join(lines))


def model_dir(name: str, config_text: str | None) -> Callable[[Path, Path], None]:
    """A model directory: a garbage config.json, or the embedded config and tokenizer but no weights."""
    def make(root: Path, _run: Path) -> None:
        from zerolock_theory.embedded import embedded_path

        (root / name).mkdir()
        if config_text is not None:
            (root / name / "config.json").write_text(config_text)
            return
        for file in ("config.json", "tokenizer.json", "tokenizer_config.json"):
            shutil.copy(embedded_path() / file, root / name / file)
    return make


T = ("train", "--out")
CASES = [
    # --- train: directories that are not ours are never touched --------------------------------
    Case("resume-user-dir", (*T, "u", "--resume", "--steps", "2"), "not a zerolock run directory",
         user_dir("u", {"metrics.jsonl": '{"step": 0}\n'})),
    Case("start-in-user-dir", (*T, "u", "--steps", "1"), "not empty", user_dir("u")),
    Case("overwrite-user-dir", (*T, "u", "--overwrite"), "only replaces our own runs", user_dir("u")),
    Case("overwrite-cwd-user", (*T, ".", "--overwrite", "--steps", "1"), "only replaces our own runs",
         user_dir("d"), cwd="d"),
    Case("overwrite-cwd-run", (*T, ".", "--overwrite", "--steps", "1"), "working directory", run_copy(), cwd="run"),
    Case("overwrite-parent-run", (*T, "..", "--overwrite"), "working directory",
         run_copy(edit=lambda r: (r / "sub").mkdir()), cwd="run/sub"),
    Case("overwrite-pipeline-into-train", (*T, "run", "--resume"), "a pipeline directory",
         run_copy(edit=lambda r: (r / "manifest.json").write_text(json.dumps(
             {"format": "zerolock-run/1", "kind": "pipeline"})))),
    Case("start-in-own-run", (*T, "run"), "--resume to continue", run_copy()),
    Case("out-is-file", (*T, "f"), "exists and is not a directory", write("f", "x")),
    Case("out-under-file", (*T, "f/x"), "is a file", write("f", "x")),
    # --- train: resume validates before it writes -------------------------------------------
    Case("resume-fewer-steps", (*T, "run", "--resume", "--steps", "1"), "already completed 2 steps", run_copy()),
    Case("resume-other-lr", (*T, "run", "--resume", "--lr", "0.5"), "optim.lr", run_copy()),
    Case("resume-other-method", (*T, "run", "--resume", "--method", "backprop"), "method.name", run_copy()),
    Case("resume-cosine-steps", (*T, "run", "--resume", "--steps", "5"), "cosine",
         run_copy(edit=_edit_config(optim__schedule="cosine"))),
    Case("resume-corrupt-config", (*T, "run", "--resume"), "not valid JSON",
         run_copy(edit=lambda r: (r / "config.json").write_text("{garbage"))),
    Case("resume-config-list", (*T, "run", "--resume"), "not an object",
         run_copy(edit=lambda r: (r / "config.json").write_text("[]"))),
    Case("resume-config-bad-type", (*T, "run", "--resume"), "run.steps=2.5",
         run_copy(edit=_edit_config(run__steps=2.5))),
    Case("resume-corrupt-checkpoint", (*T, "run", "--resume", "--steps", "3"), "cannot read checkpoint",
         run_copy(edit=lambda r: (r / "checkpoints" / "step_00000002" / "state.pt").write_bytes(b"torn"))),
    Case("resume-model-gone", (*T, "run", "--resume", "--steps", "3"), "model directory 'gone' does not exist",
         run_copy(edit=_edit_config(model__path="gone"))),
    Case("resume-data-gone", (*T, "run", "--resume", "--steps", "3"), "data source 'gone.txt' does not exist",
         run_copy(edit=_edit_config(data__source="gone.txt"))),
    Case("resume-and-overwrite", (*T, "run", "--resume", "--overwrite"), "not allowed with"),
    Case("resume-metrics-broken-mid-file", (*T, "run", "--resume", "--steps", "3"), "line 2: invalid JSON",
         run_copy(edit=lambda r: _break_line(r / "metrics.jsonl", 1))),
    # --- train: config values are type-checked ---------------------------------------------
    Case("set-steps-float", (*T, "r", "--set", "run.steps=2.5"), "run.steps=2.5: expected an integer"),
    Case("set-steps-1e20", (*T, "r", "--set", "run.steps=1e20"), "run.steps=1e+20: expected an integer"),
    Case("set-chunks-bool", (*T, "r", "--set", "model.chunks=true"), "model.chunks=true: expected an integer"),
    Case("set-lora-int", (*T, "r", "--set", "model.lora=5"), "model.lora=5: expected a table"),
    Case("set-lora-rank-float", (*T, "r", "--set", "model.lora.rank=1.5"), "model.lora.rank=1.5"),
    Case("set-probe-int", (*T, "r", "--set", "probes.readouts=5"), "probes.readouts=5"),
    Case("set-keep-bool", (*T, "r", "--set", "run.keep_checkpoints=true"), "run.keep_checkpoints=true"),
    Case("set-alpha-nan", (*T, "r", "--set", "method.alpha=NaN"), "method.alpha=NaN: expected a number"),
    Case("set-progress-str", (*T, "r", "--set", "run.progress=yes"), 'run.progress="yes": expected true or false'),
    Case("set-seq-len-str", (*T, "r", "--set", 'data.seq_len="a"'), "data.seq_len"),
    Case("set-betas-short", (*T, "r", "--set", "optim.betas=[0.9]"), "optim.betas=[0.9]: expected a list of 2"),
    Case("set-boundaries-str", (*T, "r", "--set", 'model.boundaries=["x"]'), "model.boundaries"),
    Case("set-unknown-key", (*T, "r", "--set", "model.bogus=1"), "unknown key(s) in [model]"),
    Case("set-unknown-section", (*T, "r", "--set", "bogus.key=1"), "unknown config section"),
    Case("set-no-dot", (*T, "r", "--set", "steps=3"), "section.key=value"),
    Case("set-section-scalar", (*T, "r", "--set", "run=3"), "section.key=value"),
    Case("steps-float-flag", (*T, "r", "--steps", "2.5"), "invalid int value"),
    Case("steps-zero", (*T, "r", "--steps", "0"), "run.steps must be >= 1"),
    Case("lr-negative", (*T, "r", "--lr", "-1"), "optim.lr must be > 0"),
    Case("bad-schedule", (*T, "r", "--schedule", "linear"), "invalid choice: 'linear' (choose from"),
    Case("reverse-no-epsilon", (*T, "r", "--divergence", "reverse"), "epsilon"),
    Case("device-foo", (*T, "r", "--device", "foo"), "model.device"),
    Case("dtype-bad", (*T, "r", "--dtype", "float8"), "invalid choice: 'float8' (choose from"),
    Case("no-out", ("train", "--steps", "1"), "required: --out"),
    # --- train: inputs that do not exist or do not parse ---------------------------------------
    Case("model-missing", (*T, "r", "--model", "nope"), "does not exist"),
    Case("model-is-file", (*T, "r", "--model", "f"), "not a directory", write("f", "x")),
    Case("model-no-config", (*T, "r", "--model", "m"), "no config.json", user_dir("m")),
    Case("model-garbage-config", (*T, "r", "--model", "m", *TINY), "cannot load the model",
         model_dir("m", "garbage")),
    Case("model-no-weights", (*T, "r", "--model", "m", *TINY), "cannot load the model", model_dir("m", None)),
    Case("data-missing", (*T, "r", "--data", "nope.txt"), "data source 'nope.txt' does not exist"),
    Case("data-one-token", (*T, "r", "--data", "a.txt", *TINY), "the corpus is too short", write("a.txt", "x")),
    Case("config-missing", (*T, "r", "--config", "nope.toml"), "config file not found"),
    Case("config-dir", (*T, "r", "--config", "d"), "is a directory", user_dir("d")),
    Case("config-suffix", (*T, "r", "--config", "c.ini"), "must end in", write("c.ini", "x")),
    Case("config-bad-yaml", (*T, "r", "--config", "c.yaml"), "cannot parse c.yaml", write("c.yaml", "model:\n  chunks: [1\n")),
    Case("config-bad-toml", (*T, "r", "--config", "c.toml"), "cannot parse c.toml", write("c.toml", "[run\nsteps=")),
    Case("config-bad-json", (*T, "r", "--config", "c.json"), "cannot parse c.json", write("c.json", "{")),
    Case("config-yaml-bool", (*T, "r", "--config", "c.yaml"), "model.chunks=true",
         write("c.yaml", "model:\n  chunks: true\n")),
    Case("config-toml-float", (*T, "r", "--config", "c.toml"), "run.steps=2.5", write("c.toml", "[run]\nsteps = 2.5\n")),
    Case("config-json-scalar-section", (*T, "r", "--config", "c.json"), "run=5: expected a table",
         write("c.json", '{"run": 5}')),
    Case("config-yaml-list", (*T, "r", "--config", "c.yaml"), "top level must be a table", write("c.yaml", "- 1\n")),
    # --- sweep --------------------------------------------------------------------------------
    Case("sweep-user-dir", ("sweep", "--out", "u", "--grid", "run.seed=0,1"), "not a sweep directory", user_dir("u")),
    Case("sweep-user-run-dir", ("sweep", "--out", "s", "--grid", "run.seed=0,1"), "not a train directory",
         both(write("s/manifest.json", json.dumps({"format": "zerolock-run/1", "kind": "sweep"})),
              user_dir("s/seed-0"))),
    Case("sweep-bad-axis", ("sweep", "--out", "s", "--grid", "bogus"), "must look like section.key=v1,v2"),
    Case("sweep-axis-type", ("sweep", "--out", "s", "--grid", "run.steps=1.5,2"), "run.steps=1.5"),
    Case("sweep-duplicate-names", ("sweep", "--out", "s", "--grid", "run.seed=0,0"), "duplicate run names"),
    Case("sweep-data-missing", ("sweep", "--out", "s", "--set", 'data.source="nope.txt"', "--grid", "run.seed=0,1"),
         "does not exist"),
    Case("sweep-out-file", ("sweep", "--out", "f", "--grid", "run.seed=0,1"), "not a directory", write("f", "x")),
    Case("sweep-resume-other-config", ("sweep", "--out", "s", "--grid", "run.seed=0", "--set", "optim.lr=0.5"),
         "optim.lr", both(write("s/manifest.json", json.dumps({"format": "zerolock-run/1", "kind": "sweep"})),
                          run_copy("s/seed-0"))),
    # --- verify -------------------------------------------------------------------------------
    Case("verify-user-dir", ("verify", "--quick", "--out", "u"), "not a verify directory", user_dir("u")),
    Case("verify-overwrite-user-dir", ("verify", "--quick", "--out", "u", "--overwrite"), "only replaces our own",
         user_dir("u")),
    Case("verify-few-steps", ("verify", "--quick", "--out", "v", "--steps", "2"), "at least 5"),
    Case("verify-no-seeds", ("verify", "--quick", "--out", "v", "--seeds", "0"), "--seeds must be >= 1"),
    Case("verify-device-foo", ("verify", "--quick", "--out", "v", "--device", "foo"), "model.device"),
    Case("verify-data-missing", ("verify", "--quick", "--out", "v", "--data", "nope.txt"), "does not exist"),
    Case("verify-out-file", ("verify", "--quick", "--out", "f"), "not a directory", write("f", "x")),
    # --- pipeline -----------------------------------------------------------------------------
    Case("pipe-one-stage", ("pipeline", "--stages", "1", "--out", "p"), "at least 2 stages"),
    Case("pipe-chunks-contradict", ("pipeline", "--stages", "2", "--chunks", "3", "--out", "p"), "contradicts"),
    Case("pipe-user-dir", ("pipeline", "--stages", "2", "--out", "u"), "not empty", user_dir("u")),
    Case("pipe-resume-user-dir", ("pipeline", "--stages", "2", "--out", "u", "--resume"), "not a zerolock run",
         user_dir("u")),
    Case("pipe-resume-train-run", ("pipeline", "--stages", "2", "--out", "run", "--resume"), "a train directory",
         run_copy()),
    Case("pipe-overwrite-user-dir", ("pipeline", "--stages", "2", "--out", "u", "--overwrite"), "only replaces",
         user_dir("u")),
    Case("pipe-micro-batches", ("pipeline", "--stages", "2", "--micro-batches", "3", "--out", "p"), "not divisible"),
    Case("pipe-fail-half", ("pipeline", "--stages", "2", "--fail-stage", "1", "--out", "p"), "both"),
    Case("pipe-method", ("pipeline", "--stages", "2", "--pipeline-schedule", "gpipe", "--method", "zerolock",
                         "--out", "p"), "trains method"),
    Case("pipe-data-missing", ("pipeline", "--stages", "2", "--data", "nope.txt", "--out", "p"), "does not exist"),
    Case("pipe-set-type", ("pipeline", "--stages", "2", "--set", "run.steps=2.5", "--out", "p"), "run.steps=2.5"),
    Case("pipe-out-file", ("pipeline", "--stages", "2", "--out", "f"), "exists and is not a directory", write("f", "x")),
    Case("pipe-out-under-file", ("pipeline", "--stages", "2", "--out", "f/p"), "is a file", write("f", "x")),
    Case("sweep-out-under-file", ("sweep", "--out", "f/s", "--grid", "run.seed=0,1"), "is a file", write("f", "x")),
    Case("verify-out-under-file", ("verify", "--quick", "--out", "f/v"), "is a file", write("f", "x")),
    Case("pipe-resume-overwrite", ("pipeline", "--stages", "2", "--out", "p", "--resume", "--overwrite"),
         "not allowed with"),
    # --- analyze / report / theory / top level --------------------------------------------------
    Case("analyze-duplicate", ("analyze", "R", "./R", "--out", "o"), "given twice", run_copy("R")),
    Case("analyze-min-horizon-negative", ("analyze", "rate", "--table", "t.csv", "--column", "g",
                                          "--min-horizon", "-5"),
         "--min-horizon must be >= 1", write("t.csv", "step,g\n0,1\n1,0.5\n")),
    Case("analyze-seed-column-missing", ("analyze", "rate", "--table", "t.csv", "--column", "g",
                                         "--seed-column", "seed"), "missing seed column 'seed'",
         write("t.csv", "step,g\n0,1\n1,0.5\n2,1\n3,1\n4,1\n")),
    Case("analyze-nan-literal", ("analyze", "R", "--out", "o"), "non-standard JSON literal NaN",
         both(write("R/config.json", "{}"), write("R/metrics.jsonl", '{"step": 0, "train/final_ce": NaN}\n'))),
    Case("analyze-missing-run", ("analyze", "nope", "--out", "o"), "nope"),
    Case("analyze-out-file", ("analyze", "R", "--out", "f"), "not a directory", both(run_copy("R"), write("f", "x"))),
    Case("analyze-rate-no-table", ("analyze", "rate", "--column", "g"), "needs --table"),
    Case("analyze-rate-missing-table", ("analyze", "rate", "--table", "t.csv", "--column", "g"), "no such file"),
    Case("analyze-n-boot", ("analyze", "R", "--out", "o", "--n-boot", "0"), "--n-boot must be >= 1"),
    Case("report-duplicate", ("report", "R", "R", "--out", "o"), "given twice", run_copy("R")),
    Case("report-missing", ("report", "nope", "--out", "o"), "no such directory"),
    Case("report-overwrite-user-dir", ("report", "R", "--out", "u", "--overwrite"), "only replaces our own",
         both(run_copy("R"), user_dir("u"))),
    Case("analyze-overwrite-user-dir", ("analyze", "R", "--out", "u", "--overwrite"), "only replaces our own",
         both(run_copy("R"), user_dir("u"))),
    Case("analyze-overwrite-report-dir", ("analyze", "R", "--out", "u", "--overwrite"), "only replaces our own",
         both(run_copy("R"), user_dir("u", {"report.html": "mine"}))),
    Case("theory-alpha", ("theory", "toy", "--alpha", "2"), "--alpha must lie in [0, 1]"),
    Case("theory-p-y-sum", ("theory", "minimizers", "--p-y", "0.5,0.6", "--p-prev", "0.2,0.8"), "sum to 1"),
    Case("no-command", (), "required: COMMAND"),
    Case("unknown-command", ("bogus",), "invalid choice"),
]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    """One tiny 2-step train run (K = 2), copied by the resume cases."""
    out = tmp_path_factory.mktemp("trained") / "run"
    assert main(["train", "--out", str(out), "--steps", "2", "--checkpoint-every", "1", *TINY]) == 0
    return out


def snapshot(root: Path) -> dict[str, str]:
    """Relative path → SHA-256 of every file ("dir" for directories) under ``root``."""
    return {str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))}


def call(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse usage errors
        return int(exc.code)


def test_the_table_is_large_and_names_are_unique() -> None:
    assert len(CASES) >= 60
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(case: Case, tmp_path, trained_run, monkeypatch, capsys) -> None:
    root = tmp_path / "scratch"
    root.mkdir()
    if case.setup is not None:
        case.setup(root, trained_run)
    before = snapshot(root)
    monkeypatch.chdir(root / case.cwd)
    capsys.readouterr()
    code = call(list(case.argv))
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == case.code, (code, err)
    assert len(lines) == 1, err
    assert "Traceback" not in err and "Traceback" not in out
    assert case.phrase in lines[0], lines[0]
    assert lines[0].startswith("zerolock"), lines[0]
    assert snapshot(root) == before, "files changed"


@pytest.mark.parametrize("argv", [["train", "--steps", "1"], ["pipeline", "--stages", "2"],
                                  ["verify", "--quick"], ["sweep", "--grid", "run.seed=0,1"]],
                         ids=["train", "pipeline", "verify", "sweep"])
def test_read_only_out_is_one_line(argv, tmp_path, monkeypatch, capsys) -> None:
    """A read-only parent (mocked: the tests may run as root) is refused before anything loads."""
    from zerolock_theory.training import rundir

    monkeypatch.setattr(rundir.os, "access", lambda path, mode: False)
    assert call([*argv, "--out", str(tmp_path / "ro" / "x")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "Permission denied" in lines[0] and "not writable" in lines[0], lines
    assert not (tmp_path / "ro").exists()


@pytest.fixture(scope="module")
def readout_run(tmp_path_factory) -> Path:
    """A tiny 3-step run with the readout store on (4 shards: steps 0..3)."""
    out = tmp_path_factory.mktemp("readouts") / "run"
    assert main(["train", "--out", str(out), "--steps", "3", *TINY, "--set", "probes.readouts.every=1",
                 "--set", "probes.n_positions=8"]) == 0
    return out


@pytest.mark.parametrize(("command", "step"), [("analyze", 1), ("analyze", 0), ("report", 3)],
                         ids=["analyze-middle", "analyze-first", "report-last"])
def test_damaged_readout_shard_warns(command, step, readout_run, tmp_path, monkeypatch, capsys) -> None:
    """A shard whose footer is cut (anywhere in the store) is named on stderr; the run is left as it was."""
    run = tmp_path / "R"
    shutil.copytree(readout_run, run)
    shard = run / "readouts" / f"step-{step:08d}.parquet"
    shard.write_bytes(shard.read_bytes()[:-20])
    before = snapshot(run)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert call([command, "R", "--out", "o", "--n-boot", "20"]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"zerolock {command}: warning: ") and f"R/readouts/{shard.name}" in lines[0], lines
    assert "footer" in lines[0], lines
    assert snapshot(run) == before
