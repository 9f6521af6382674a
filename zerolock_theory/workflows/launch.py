"""Where the runs of a grid execute: this process, parallel worker processes, or Slurm.

* ``run_local_parallel``: at most ``jobs`` worker processes at a time, one per run
  (``python -m zerolock_theory.workflows.worker``). With several GPUs (and a config on
  device ``auto``/``cuda``) each worker slot sees one GPU through ``CUDA_VISIBLE_DEVICES``
  (round robin); on CPU each worker uses one torch thread. A run's result does not depend on
  which worker ran it, so with a fixed ``run.threads`` the runs equal those of ``jobs = 1``
  bit for bit.
* ``submit_slurm``: one Slurm job per run through submitit (``pip install
  'zerolock-theory[slurm]'``); each job calls ``train_point``, the same function the workers
  run. Jobs are submitted and not waited for; run the sweep again to skip finished runs.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PointTask", "SLURM_DEFAULTS", "run_local_parallel", "submit_slurm", "train_point"]

SLURM_DEFAULTS: dict[str, Any] = {"time": 240, "nodes": 1, "ntasks_per_node": 1, "cpus_per_task": 1}
"""sbatch parameters of every job unless overridden (``time`` in minutes)."""


@dataclass(frozen=True)
class PointTask:
    """One run to execute: the merged raw config, its directory, and whether it resumes."""

    name: str
    raw: dict[str, Any]
    run_dir: Path
    resume: bool


def train_point(task: PointTask) -> Any:
    """Train one grid point (in whichever process runs this) and return its ``RunSummary``."""
    from zerolock_theory.config import TrainConfig
    from zerolock_theory.workflows.runs import probed_train

    return probed_train(TrainConfig.from_dict(task.raw), task.run_dir, resume=task.resume)


def _gpu_slots(jobs: int, device: str) -> list[str | None]:
    """One GPU id per worker slot (round robin) with several GPUs, else no pinning."""
    import torch

    count = torch.cuda.device_count() if device in ("auto", "cuda") else 0
    return [str(i % count) for i in range(jobs)] if count >= 2 else [None] * jobs


def _env(gpu: str | None) -> dict[str, str]:
    """The worker's environment: this package importable, and its GPU when pinned."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


def _run_in_worker(task: PointTask, slots: queue.Queue, scratch: Path) -> Any:
    """Train ``task`` in a fresh ``python -m zerolock_theory.workflows.worker`` process."""
    from zerolock_theory.training.loop import RunSummary

    spec, result = scratch / f"{task.name}.task.json", scratch / f"{task.name}.result.json"
    spec.write_text(json.dumps({"name": task.name, "raw": task.raw, "run_dir": str(task.run_dir),
                                "resume": task.resume}))
    gpu = slots.get()
    try:
        proc = subprocess.run([sys.executable, "-m", "zerolock_theory.workflows.worker", str(spec), str(result)],
                              env=_env(gpu), capture_output=True, text=True, check=False)
    finally:
        slots.put(gpu)
    if proc.returncode != 0 or not result.is_file():
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        raise RuntimeError(f"run {task.name} failed (exit {proc.returncode}): "
                           f"{lines[-1] if lines else 'no output'}")
    data = json.loads(result.read_text())
    return RunSummary(Path(data["run_dir"]), data["steps"], data["initial_eval_ce"],
                      data["final_eval_ce"], data["seconds"])


def run_local_parallel(tasks: Sequence[PointTask], jobs: int, device: str,
                       log: Callable[[str], None]) -> dict[str, Any]:
    """Run ``tasks`` in at most ``jobs`` worker processes at a time; name → ``RunSummary``.

    Every started run finishes even if another fails; the first failure is then raised.
    """
    workers = min(jobs, len(tasks))
    slots: queue.Queue = queue.Queue()
    for gpu in _gpu_slots(workers, device):
        slots.put(gpu)
    summaries: dict[str, Any] = {}
    errors: list[BaseException] = []
    with tempfile.TemporaryDirectory(prefix="zerolock-sweep-") as scratch, \
            ThreadPoolExecutor(workers) as pool:
        futures = {pool.submit(_run_in_worker, task, slots, Path(scratch)): task for task in tasks}
        for future in as_completed(futures):
            task = futures[future]
            try:
                summaries[task.name] = future.result()
            except Exception as exc:  # report after the other runs finish
                log(f"{task.name}: failed: {exc}")
                errors.append(exc)
                continue
            log(f"{task.name}: done, {describe(summaries[task.name])}")
    if errors:
        raise errors[0]
    return summaries


def describe(summary: Any) -> str:
    """``held-out CE 5.261 -> 5.372 in 12.3s`` (4 significant digits)."""
    from zerolock_theory.formatting import human

    return (f"held-out CE {human(summary.initial_eval_ce)} -> {human(summary.final_eval_ce)} "
            f"in {summary.seconds:.1f}s")


def submit_slurm(tasks: Sequence[PointTask], folder: Path, parameters: dict[str, Any],
                 log: Callable[[str], None]) -> list[str]:
    """Submit one Slurm job per task with submitit; returns the job ids (does not wait)."""
    try:
        import submitit
    except ImportError as err:
        raise ValueError("--launcher slurm needs submitit: pip install 'zerolock-theory[slurm]'") from err
    try:
        executor = submitit.SlurmExecutor(folder=str(folder))
    except RuntimeError as err:  # no srun on this machine
        raise ValueError(f"--launcher slurm: {err}") from err
    ids = []
    for task in tasks:
        executor.update_parameters(**{**SLURM_DEFAULTS, "job_name": f"zerolock-{task.name}", **parameters})
        job = executor.submit(train_point, task)
        ids.append(str(job.job_id))
        log(f"{task.name}: submitted as Slurm job {job.job_id}")
    return ids
