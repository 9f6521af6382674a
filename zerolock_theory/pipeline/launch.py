"""Start a pipelined run: K local stage processes under a supervisor, or one stage per
``torchrun`` process.

Local (``zerolock pipeline --stages K ...``): the launcher hosts the ``TCPStore`` on a free
port of 127.0.0.1 and starts one process per stage (multiprocessing ``forkserver``: the
heavy imports happen once in the fork server, every stage and every restart is a cheap fork
of it). It then supervises: a stage that exits abnormally is restarted (up to
``max_restarts``) after its two links' generations are bumped, so only its neighbours
re-form their links and nobody else loses work; otherwise the launcher sets the store's
``abort`` key, gives the others a moment to stop with their own ``PeerFailureError``, ends
any that do not (by process id) and raises ``PipelineError`` with every stage's error.

torchrun (``torchrun --nproc-per-node K -m zerolock_theory pipeline ...``): each process is
stage RANK+1 over torchrun's rendezvous store; no supervisor, so a dead peer ends the run
with a clear ``PeerFailureError`` (torchrun restarts whole groups, not single stages).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch.distributed as dist

from zerolock_theory.config import TrainConfig
from zerolock_theory.pipeline.links import ABORT_KEY
from zerolock_theory.pipeline.options import PipelineOptions
from zerolock_theory.pipeline.outputs import merge_outputs
from zerolock_theory.pipeline.runtime import PEER_EXIT
from zerolock_theory.pipeline.worker import WorkerSpec, run_worker, worker_main

__all__ = ["PipelineError", "PipelineSummary", "launch", "launch_torchrun", "prepare_run", "warm_fork_server"]

# Imported once by the fork server, so a stage (or a restarted stage) starts without importing them again.
PRELOAD = ["torch", "torch.distributed.pipelining", "safetensors.torch", "tokenizers", "transformers",
           "transformers.models.auto.modeling_auto", "transformers.models.auto.tokenization_auto",
           "transformers.models.llama.modeling_llama", "transformers.masking_utils",
           "transformers.tokenization_utils_fast", "peft", "peft.tuners.lora",
           "zerolock_theory.data", "zerolock_theory.models", "zerolock_theory.training.steps",
           "zerolock_theory.pipeline.worker", "zerolock_theory.pipeline.zerolock",
           "zerolock_theory.pipeline.baselines", "zerolock_theory.pipeline.stage"]


class PipelineError(RuntimeError):
    """A pipelined run failed; the message names each failed stage and its error."""


@dataclass
class PipelineSummary:
    """What a finished pipelined run reports."""

    run_dir: Path
    stages: int
    steps: int
    seconds: float
    restarts: dict[int, int] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    recoveries: list[dict[str, Any]] = field(default_factory=list)
    final_train_ce: float | None = None


def prepare_run(config: TrainConfig, options: PipelineOptions, out: str | Path, overwrite: bool = False,
                resume: bool = False) -> int:
    """Validate everything, then create ``out`` and write ``config.json``, ``pipeline.json``,
    ``manifest.json``; returns the step every stage starts from (``resume``: the newest step
    all stages have a checkpoint for).

    ``out`` must be new, empty, one of our pipeline runs (``resume``) or, with ``overwrite``,
    one of our runs (``training/rundir.py``). A no-op resume (all steps done) writes nothing.
    """
    from zerolock_theory.config import check_sources
    from zerolock_theory.pipeline.checkpoints import common_resume_step
    from zerolock_theory.training.manifest import write_manifest
    from zerolock_theory.training.resume import check_resume, read_saved_config, write_text_atomic
    from zerolock_theory.training.rundir import check_out, prepare_out

    options.check_against(config)
    check_sources(config)
    out = Path(out)
    start, saved = 0, None
    if check_out(out, "pipeline", resume=resume, overwrite=overwrite) == "resume":
        saved = read_saved_config(out)
        start = common_resume_step(out, config.model.chunks)
        if saved is not None:
            check_resume(saved, config, start)
            check_same_options(out, options)
    if start >= config.run.steps:
        return start
    prepare_out(out, "pipeline", resume=resume, overwrite=overwrite)
    if saved is None or saved.to_dict() != config.to_dict():
        write_text_atomic(out / "config.json", json.dumps(config.to_dict(), indent=2))
    write_text_atomic(out / "pipeline.json", json.dumps(options.to_dict(), indent=2))
    from zerolock_theory.models import resolve_device

    write_manifest(out, resolve_device(config.model.device), "pipeline")  # auto: as every other run resolves it
    return start


RESUMABLE_OPTIONS = ("threads", "comm_timeout_s", "recovery_timeout_s", "max_restarts", "fail_stage",
                     "fail_at_step", "fail_mode", "measure_memory", "warmup_steps", "backend")


def check_same_options(out: Path, options: PipelineOptions) -> None:
    """A resumed pipeline keeps its schedule, micro-batches and lead (``ValueError`` otherwise)."""
    path = out / "pipeline.json"
    if not path.is_file():
        return
    try:
        saved = PipelineOptions.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not valid pipeline options: {exc}") from exc
    old, new = saved.to_dict(), options.to_dict()
    diff = [f"{k}: {old[k]!r} -> {new[k]!r}" for k in old if old[k] != new[k] and k not in RESUMABLE_OPTIONS]
    if diff:
        raise ValueError(f"cannot resume with different pipeline options ({'; '.join(diff)})")


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    return ctx


def warm_fork_server() -> bool:
    """Start the fork server now (where the local launcher uses one), so that it imports ``PRELOAD``
    while this process does other work and the first stage starts without waiting for the imports.
    Returns whether a fork server is running; nothing is started where the launcher spawns."""
    ctx = _context()
    if ctx.get_start_method() != "forkserver":
        return False
    from multiprocessing import forkserver

    forkserver.ensure_running()  # spawns the server and returns; the server imports PRELOAD on its own
    return True


class _Supervisor:
    """Starts, watches and restarts the stage processes of one local run."""

    def __init__(self, run_dir: Path, K: int, options: PipelineOptions, store: Any, port: int,
                 resume_step: int = 0) -> None:
        self.run_dir, self.K, self.options, self.store, self.port = run_dir, K, options, store, port
        self.resume_step = resume_step
        self.ctx = _context()
        self.procs: dict[int, Any] = {}
        self.restarts: dict[int, int] = dict.fromkeys(range(1, K + 1), 0)

    def spawn(self, k: int, recovering: bool) -> None:
        spec = WorkerSpec(str(self.run_dir), k, "127.0.0.1", self.port, recovering, inject=not recovering,
                          resume_step=0 if recovering else self.resume_step, launcher_pid=os.getpid())
        proc = self.ctx.Process(target=worker_main, args=(spec,), name=f"zerolock-stage-{k}", daemon=True)
        proc.start()
        self.procs[k] = proc

    def _restartable(self, k: int, code: int) -> bool:
        """A ZeroLock stage that failed after joining the pipeline (not a configuration error)."""
        opts = self.options
        return (opts.schedule == "zerolock" and code != PEER_EXIT and self.store.check([f"ready/{k}"])
                and sum(self.restarts.values()) < opts.max_restarts)

    def _restart(self, k: int, code: int) -> None:
        self.store.set(f"dead/{k}", str(code))
        for link in (k - 1, k):  # link i joins stages i and i+1
            if 1 <= link < self.K:
                self.store.add(f"gen/{link}", 1)
        self.restarts[k] += 1
        self.spawn(k, recovering=True)

    def _describe(self, k: int, code: int) -> str:
        text = f"stage {k} exited with status {code}"
        if self.store.check([f"failure/{k}"]):
            failure = json.loads(self.store.get(f"failure/{k}").decode())
            text += f" (injected failure at step {failure['step']})"
        if self.store.check([f"error/{k}"]):
            text += f": {self.store.get(f'error/{k}').decode()}"
        return text

    def stop_all(self) -> None:
        """End every stage process still running (by its own handle, i.e. its pid)."""
        alive = [proc for proc in self.procs.values() if proc.exitcode is None]
        for proc in alive:
            proc.terminate()
        deadline = time.monotonic() + 2.0
        for proc in alive:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in alive:
            if proc.exitcode is None:
                proc.kill()
                proc.join(2.0)

    def _abort(self, failed: dict[int, int]) -> None:
        causes = sorted(failed, key=lambda k: (failed[k] == PEER_EXIT, k))
        self.store.set(ABORT_KEY, self._describe(causes[0], failed[causes[0]]))
        deadline = time.monotonic() + min(10.0, self.options.comm_timeout_s)
        while time.monotonic() < deadline and any(p.exitcode is None for p in self.procs.values()):
            time.sleep(0.05)
        self.stop_all()
        for k, proc in self.procs.items():
            if proc.exitcode not in (0, None):
                failed.setdefault(k, proc.exitcode)
        causes = sorted(failed, key=lambda k: (failed[k] == PEER_EXIT, k))
        groups: dict[str, list[int]] = {}  # stages that failed the same way share one line
        for k in causes:
            groups.setdefault(self._describe(k, failed[k]).split(" exited", 1)[1], []).append(k)
        lines = [f"stage{'s' if len(ks) > 1 else ''} {', '.join(map(str, ks))} exited{rest}"
                 for rest, ks in groups.items()]
        raise PipelineError("pipelined run failed: " + "\n  ".join(lines))  # at most one line per failed stage

    def run(self) -> None:
        for k in range(1, self.K + 1):
            self.spawn(k, recovering=False)
        done: set[int] = set()
        while len(done) < self.K:
            failed = {}
            for k, proc in self.procs.items():
                if k in done or proc.exitcode is None:
                    continue
                if proc.exitcode == 0:
                    done.add(k)
                elif self._restartable(k, proc.exitcode):
                    self._restart(k, proc.exitcode)
                else:
                    failed[k] = proc.exitcode
            if failed:
                self._abort(failed)
            time.sleep(0.05)
        for proc in self.procs.values():
            proc.join()


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (and SIGHUP) raise ``KeyboardInterrupt`` in the launcher, so its ``finally`` ends
    every stage; SIGINT already does. Only in the main thread (signals go there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def launch(config: TrainConfig, options: PipelineOptions, out: str | Path, *, overwrite: bool = False,
           resume: bool = False) -> PipelineSummary:
    """Run a pipelined training locally, one process per stage; merge the stages' files.

    ``resume``: continue ``out`` from the newest step every stage has a checkpoint for.
    SIGTERM, SIGINT or the launcher's death end every stage (``worker.watch_parent``).
    """
    tic = time.perf_counter()
    start = prepare_run(config, options, out, overwrite, resume)
    run_dir = Path(out)
    if start < config.run.steps:
        timeout = datetime.timedelta(seconds=options.comm_timeout_s)
        store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timeout)
        supervisor = _Supervisor(run_dir, config.model.chunks, options, store, store.port, start)
        with _terminate_as_interrupt():
            try:
                supervisor.run()
            finally:  # an interrupted launcher (Ctrl-C, SIGTERM, a test timeout) leaves no stage behind
                supervisor.stop_all()
        restarts = supervisor.restarts
    else:
        restarts = {}
    merged = merge_outputs(run_dir, config.model.chunks)
    return PipelineSummary(run_dir, config.model.chunks, config.run.steps, time.perf_counter() - tic,
                           restarts, merged["results"], merged["recoveries"], merged["final_train_ce"])


def launch_torchrun(config: TrainConfig, options: PipelineOptions, out: str | Path, *,
                    overwrite: bool = False) -> PipelineSummary | None:
    """This process's stage under torchrun (RANK, WORLD_SIZE); rank 0 merges at the end."""
    tic = time.perf_counter()
    timeout = datetime.timedelta(seconds=options.comm_timeout_s)
    store, rank, world = next(dist.rendezvous("env://", timeout=timeout))
    store = dist.PrefixStore("zerolock-pipeline", store)
    if world != config.model.chunks:
        raise ValueError(f"torchrun started {world} processes for {config.model.chunks} stages")
    if rank == 0:
        prepare_run(config, options, out, overwrite)  # (torchrun restarts whole groups: no --resume)
        store.set("prepared", "1")
    else:
        store.wait(["prepared"])
    spec = WorkerSpec(str(out), rank + 1, "", 0, supervised=False)
    run_worker(spec, store)
    if rank != 0:
        return None
    store.wait([f"done/{k}" for k in range(1, world + 1)])
    merged = merge_outputs(Path(out), world)
    return PipelineSummary(Path(out), world, config.run.steps, time.perf_counter() - tic, {},
                           merged["results"], merged["recoveries"], merged["final_train_ce"])


def under_torchrun() -> bool:
    """True inside a process started by torchrun."""
    return "TORCHELASTIC_RUN_ID" in os.environ or ("RANK" in os.environ and "WORLD_SIZE" in os.environ)
