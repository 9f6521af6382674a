"""Where the runs of a grid execute: this process, parallel worker processes, or Slurm.

* ``run_local_parallel``: ``jobs`` worker processes (``python -m
  zerolock_theory.app.workflows.worker``), each training runs from a shared queue. With several GPUs (and a config on
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
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PointTask", "PopulationTask", "SLURM_DEFAULTS", "run_local_parallel", "submit_slurm", "train_point"]

SLURM_DEFAULTS: dict[str, Any] = {"time": 240, "nodes": 1, "ntasks_per_node": 1, "cpus_per_task": 1}
"""sbatch parameters of every job unless overridden (``time`` in minutes)."""


@dataclass(frozen=True)
class PointTask:
    """One run to execute: the merged raw config, its directory, and whether it resumes."""

    name: str
    raw: dict[str, Any]
    run_dir: Path
    resume: bool


@dataclass(frozen=True)
class PopulationTask:
    """Runs that differ only in their seeds, trained as one population (``training.population_loop``):
    one ``PointTask`` per member, each writing its own run directory."""

    name: str
    members: tuple[PointTask, ...]


def train_point(task: PointTask | PopulationTask) -> Any:
    """Train one grid point (in whichever process runs this) and return its ``RunSummary``; a
    ``PopulationTask``: its members as one population, a list of ``RunSummary`` in member order."""
    from zerolock_theory.app.workflows.runs import probed_train, probed_train_members
    from zerolock_theory.config import TrainConfig

    if isinstance(task, PopulationTask):
        return probed_train_members([TrainConfig.from_dict(m.raw) for m in task.members],
                                    [m.run_dir for m in task.members], resume=True)
    return probed_train(TrainConfig.from_dict(task.raw), task.run_dir, resume=task.resume)


def task_to_json(task: PointTask | PopulationTask) -> dict[str, Any]:
    """The task file a worker reads (``workflows.worker``)."""
    if isinstance(task, PopulationTask):
        return {"name": task.name, "members": [task_to_json(m) for m in task.members]}
    return {"name": task.name, "raw": task.raw, "run_dir": str(task.run_dir), "resume": task.resume}


def task_from_json(spec: dict[str, Any]) -> PointTask | PopulationTask:
    """The inverse of ``task_to_json``."""
    if "members" in spec:
        return PopulationTask(spec["name"], tuple(task_from_json(m) for m in spec["members"]))
    return PointTask(spec["name"], spec["raw"], Path(spec["run_dir"]), bool(spec["resume"]))


def summary_to_json(summary: Any) -> dict[str, Any]:
    """A ``RunSummary`` (or a population's list of them) as the worker's result file holds it."""
    if isinstance(summary, list):
        return {"members": [summary_to_json(s) for s in summary]}
    return {"run_dir": str(summary.run_dir), "steps": summary.steps, "seconds": summary.seconds,
            "initial_eval_ce": summary.initial_eval_ce, "final_eval_ce": summary.final_eval_ce}


def summary_from_json(data: dict[str, Any]) -> Any:
    """The inverse of ``summary_to_json``."""
    from zerolock_theory.training.loop import RunSummary

    if "members" in data:
        return [summary_from_json(m) for m in data["members"]]
    return RunSummary(Path(data["run_dir"]), data["steps"], data["initial_eval_ce"], data["final_eval_ce"],
                      data["seconds"])


def _gpu_slots(jobs: int, device: str) -> list[str | None]:
    """One GPU id per worker slot (round robin) with several GPUs, else no pinning."""
    import torch

    count = torch.cuda.device_count() if device in ("auto", "cuda") else 0
    return [str(i % count) for i in range(jobs)] if count >= 2 else [None] * jobs


def _env(gpu: str | None) -> dict[str, str]:
    """The worker's environment: this package importable, and its GPU when pinned."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


class _Worker:
    """One ``python -m zerolock_theory.app.workflows.worker`` process, reused for several runs."""

    def __init__(self, gpu: str | None, scratch: Path, slot: int) -> None:
        self.log = (scratch / f"worker-{slot}.log").open("w")
        read, write = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "zerolock_theory.app.workflows.worker", str(write)], env=_env(gpu),
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT, text=True, pass_fds=(write,))
        os.close(write)
        self.done = os.fdopen(read)
        self.scratch = scratch

    def run(self, task: PointTask | PopulationTask) -> Any:
        """Train ``task`` in this process; ``RuntimeError`` (one line) if it fails."""
        spec = self.scratch / f"{task.name}.task.json"
        result = self.scratch / f"{task.name}.result.json"
        spec.write_text(json.dumps(task_to_json(task)))
        try:
            self.proc.stdin.write(f"{spec} {result}\n")
            self.proc.stdin.flush()
            finished = bool(self.done.readline())
        except BrokenPipeError:
            finished = False
        if not finished or not result.is_file():
            self.log.flush()
            try:  # an interrupt may have removed the scratch folder already
                lines = [x for x in Path(self.log.name).read_text().splitlines() if x.strip()]
            except OSError:
                lines = []
            raise RuntimeError(f"run {task.name}: worker process died: {lines[-1] if lines else 'no output'}")
        data = json.loads(result.read_text())
        if "error" in data:
            raise RuntimeError(f"run {task.name} failed: {data['error']}")
        return summary_from_json(data)

    def close(self) -> None:
        """End the process (stdin closed: it finishes its loop) and release the files."""
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:  # the process died with a request unread
                pass
        self.proc.wait()
        self.done.close()
        self.log.close()


def _serve(slot: int, gpu: str | None, tasks: queue.Queue, scratch: Path, report: Callable,
           stop: threading.Event, procs: list) -> None:
    """Worker slot: train tasks from the queue until it is empty (a new process after a crash)
    or until ``stop`` is set (an interrupt: the parent kills the processes in ``procs``)."""
    worker = _Worker(gpu, scratch, slot)
    procs.append(worker.proc)
    try:
        while not stop.is_set():
            try:
                task = tasks.get_nowait()
            except queue.Empty:
                return
            try:
                report(task, worker.run(task), None)
            except RuntimeError as exc:
                if stop.is_set():
                    return
                report(task, None, exc)
                if worker.proc.poll() is not None:  # the process is gone: start another
                    worker.close()
                    worker = _Worker(gpu, scratch, slot)
                    procs.append(worker.proc)
    finally:
        worker.close()


def run_local_parallel(tasks: Sequence[PointTask | PopulationTask], jobs: int, device: str,
                       log: Callable[[str], None]) -> dict[str, Any]:
    """Run ``tasks`` on at most ``jobs`` worker processes; run name → ``RunSummary`` (a
    ``PopulationTask``'s members each under their own name).

    Every run is attempted even if another fails; the first failure is then raised.
    """
    workers = min(jobs, len(tasks))
    pending: queue.Queue = queue.Queue()
    for task in tasks:
        pending.put(task)
    summaries: dict[str, Any] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def report(task: PointTask, summary: Any, error: BaseException | None) -> None:
        with lock:
            if error is not None:
                errors.append(error)
                log(f"{task.name}: failed: {error}")
            elif isinstance(task, PopulationTask):
                for member, one in zip(task.members, summary, strict=True):
                    summaries[member.name] = one
                    log(f"{member.name}: done, {describe(one)}")
            else:
                summaries[task.name] = summary
                log(f"{task.name}: done, {describe(summary)}")

    stop, procs = threading.Event(), []
    with tempfile.TemporaryDirectory(prefix="zerolock-sweep-") as scratch:
        threads = [threading.Thread(target=_serve, args=(i, gpu, pending, Path(scratch), report, stop, procs))
                   for i, gpu in enumerate(_gpu_slots(workers, device))]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        except BaseException:  # Ctrl-C: end the workers (their runs resume on a re-run), then re-raise
            stop.set()
            for proc in list(procs):
                proc.kill()
            for thread in threads:
                thread.join()
            raise
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
