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

import datetime
import json
import multiprocessing
import os
import time
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

__all__ = ["PipelineError", "PipelineSummary", "launch", "launch_torchrun", "prepare_run"]

# Imported once by the fork server, so a stage (or a restarted stage) starts in ~1 s.
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


def prepare_run(config: TrainConfig, options: PipelineOptions, out: str | Path, overwrite: bool = False) -> Path:
    """Validate, create ``out`` and write ``config.json``, ``pipeline.json``, ``manifest.json``.

    ``out`` must be new, empty, or (with ``overwrite``) one of our runs (``training/rundir.py``).
    """
    from zerolock_theory.config import check_sources
    from zerolock_theory.training.manifest import write_manifest
    from zerolock_theory.training.rundir import prepare_out

    options.check_against(config)
    check_sources(config)
    out = Path(out)
    prepare_out(out, "pipeline", overwrite=overwrite)
    (out / "config.json").write_text(json.dumps(config.to_dict(), indent=2))
    (out / "pipeline.json").write_text(json.dumps(options.to_dict(), indent=2))
    write_manifest(out, config.model.device if config.model.device != "auto" else "cpu", "pipeline")
    return out


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    return ctx


class _Supervisor:
    """Starts, watches and restarts the stage processes of one local run."""

    def __init__(self, run_dir: Path, K: int, options: PipelineOptions, store: Any, port: int) -> None:
        self.run_dir, self.K, self.options, self.store, self.port = run_dir, K, options, store, port
        self.ctx = _context()
        self.procs: dict[int, Any] = {}
        self.restarts: dict[int, int] = dict.fromkeys(range(1, K + 1), 0)

    def spawn(self, k: int, recovering: bool) -> None:
        spec = WorkerSpec(str(self.run_dir), k, "127.0.0.1", self.port, recovering, inject=not recovering)
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
        for proc in self.procs.values():
            if proc.exitcode is None:
                proc.terminate()
                proc.join(2.0)
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
        lines = [self._describe(k, failed[k]) for k in causes]
        raise PipelineError("pipelined run failed:\n  " + "\n  ".join(lines))

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


def launch(config: TrainConfig, options: PipelineOptions, out: str | Path, *, overwrite: bool = False) -> PipelineSummary:
    """Run a pipelined training locally, one process per stage; merge the stages' files."""
    tic = time.perf_counter()
    run_dir = prepare_run(config, options, out, overwrite)
    timeout = datetime.timedelta(seconds=options.comm_timeout_s)
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timeout)
    supervisor = _Supervisor(run_dir, config.model.chunks, options, store, store.port)
    try:
        supervisor.run()
    finally:  # an interrupted launcher (Ctrl-C, a test timeout) leaves no stage behind
        supervisor.stop_all()
    merged = merge_outputs(run_dir, config.model.chunks)
    return PipelineSummary(run_dir, config.model.chunks, config.run.steps, time.perf_counter() - tic,
                           supervisor.restarts, merged["results"], merged["recoveries"],
                           merged["final_train_ce"])


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
        prepare_run(config, options, out, overwrite)
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
