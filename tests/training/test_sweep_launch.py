"""Scale-out of sweeps: parallel workers equal --jobs 1, finished runs skipped, Slurm dry run."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from zerolock_theory.app.cli import main
from zerolock_theory.app.workflows.sweep import expand_grid, is_complete, parse_axis, run_grid
from zerolock_theory.formatting import human
from zerolock_theory.jsonio import read_records
from zerolock_theory.training.state import latest_checkpoint

BASE = {
    "model": {"chunks": 2},
    "data": {"seq_len": 16, "batch_size": 2, "eval_batches": 1},
    "run": {"steps": 3, "eval_every": 3, "checkpoint_every": 3, "progress": False, "threads": 1},
}
POINTS = expand_grid([parse_axis("run.seed=0,1")])
TIMING = ("train/tokens_per_s", "train/step_time_s")


def _run_record(run: Path) -> tuple[list[dict], dict[str, torch.Tensor]]:
    metrics = [{k: v for k, v in r.items() if k not in TIMING} for r in read_records(run / "metrics.jsonl")]
    return metrics, load_file(str(latest_checkpoint(run) / "adapters.safetensors"))


def test_parallel_workers_equal_one_job_and_skip_finished(tmp_path: Path) -> None:
    serial = run_grid(BASE, POINTS, tmp_path / "serial", log=lambda _: None)
    lines: list[str] = []
    parallel = run_grid(BASE, POINTS, tmp_path / "parallel", log=lines.append, jobs=2)
    assert sum("done, held-out CE" in line for line in lines) == 2
    for a, b in zip(serial, parallel, strict=True):
        (ma, wa), (mb, wb) = _run_record(a), _run_record(b)
        assert ma == mb and len(ma) == 3
        assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    again: list[str] = []
    run_grid(BASE, POINTS, tmp_path / "parallel", log=again.append, jobs=2)
    assert sum("complete, skipped" in line for line in again) == 2 and len(again) == 2


def test_a_failing_worker_run_is_one_line_and_the_others_finish(tmp_path: Path, capsys) -> None:
    out, tiny = tmp_path / "sweep", tmp_path / "tiny.txt"
    tiny.write_text("too short to train on")  # passes the up-front checks, fails in the worker
    argv = ["sweep", "--out", str(out), "--grid", f"data.source=embedded,{tiny}",
            "--jobs", "2", "--set", "run.steps=2", "--set", "data.seq_len=16", "--set", "model.chunks=2",
            "--set", "data.eval_batches=1", "--set", "run.progress=false"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tiny.txt failed: ValueError: the corpus is too short" in err[0]
    assert is_complete(out / "source-embedded", 2)


def test_bad_jobs_and_launcher(tmp_path: Path, capsys) -> None:
    with pytest.raises(ValueError, match="jobs"):
        run_grid(BASE, POINTS, tmp_path, jobs=0)
    with pytest.raises(ValueError, match="launcher"):
        run_grid(BASE, POINTS, tmp_path, launcher="lsf")
    assert main(["sweep", "--out", str(tmp_path), "--grid", "run.seed=0", "--jobs", "0"]) == 2
    assert "--jobs must be >= 1" in capsys.readouterr().err


def test_slurm_submission_dry_run(tmp_path: Path, monkeypatch) -> None:
    """Each run becomes one sbatch job whose pickled call trains exactly that run."""
    submitit = pytest.importorskip("submitit")
    submitted: list[list[str]] = []

    def fake_sbatch(self, *args, **kwargs) -> str:
        submitted.append(list(self.command))
        return f"Submitted batch job {1000 + len(submitted)}\n"

    monkeypatch.setattr(submitit.core.utils.CommandFunction, "__call__", fake_sbatch)
    monkeypatch.setattr(submitit.SlurmExecutor, "affinity", classmethod(lambda cls: 1))  # "srun" present
    out = tmp_path / "sweep"
    code = main(["sweep", "--out", str(out), "--grid", "run.seed=0,1", "--launcher", "slurm",
                 "--slurm", "partition=dev", "--slurm", "time=30", "--set", "run.steps=2",
                 "--set", "data.seq_len=16", "--set", "data.eval_batches=1", "--set", "model.chunks=2"])
    assert code == 0 and [c[0] for c in submitted] == ["sbatch", "sbatch"]
    folder = out / "slurm"
    for job_id, name in ((1001, "seed-0"), (1002, "seed-1")):
        script = (folder / f"{job_id}_submission.sh").read_text()
        for line in (f"#SBATCH --job-name=zerolock-{name}", "#SBATCH --partition=dev",
                     "#SBATCH --time=30", "#SBATCH --cpus-per-task=1", "-m submitit.core._submit"):
            assert line in script, line
        with (folder / f"{job_id}_submitted.pkl").open("rb") as handle:
            delayed = pickle.load(handle)
        assert delayed.function.__name__ == "train_point"
        assert delayed.args[0].run_dir == out / name and delayed.args[0].raw["run"]["seed"] == int(name[-1])
    assert not (out / "seed-0").exists()  # nothing trains at submission time
    summary = delayed.function(*delayed.args)  # what the cluster job would run
    assert is_complete(out / "seed-1", 2) and summary.steps == 2


def test_human_format() -> None:
    assert [human(5.260634899139404), human(None), human(float("inf")), human(1234567.0)] == [
        "5.261", "n/a", "inf", "1.235e+06"]


def test_slurm_without_a_cluster_is_one_line(tmp_path: Path, capsys) -> None:
    pytest.importorskip("submitit")
    import shutil

    if shutil.which("srun"):
        pytest.skip("srun is present")
    assert main(["sweep", "--out", str(tmp_path), "--grid", "run.seed=0", "--launcher", "slurm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "srun" in err[0] and "--launcher slurm" in err[0]


def test_worker_slots_pin_one_gpu_each(monkeypatch) -> None:
    from zerolock_theory.app.workflows import launch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert launch._gpu_slots(3, "auto") == ["0", "1", "0"]
    assert launch._gpu_slots(2, "cpu") == [None, None]
    assert launch._env("1")["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert launch._gpu_slots(2, "cuda") == [None, None]  # one GPU: shared, not pinned
