"""The body of one stage process, however it was started (local launcher or torchrun).

``worker_main`` is the multiprocessing target of the local launcher: it runs the stage and
leaves with ``os._exit`` and a status the launcher understands (0 done, ``PEER_EXIT`` a
neighbour failed, ``FAIL_EXIT`` an injected failure, 1 any other error), writing the error to
``stages/stage_{k}/error.txt`` and the store first. ``run_worker`` is the same body for an
existing store (torchrun), raising instead of exiting.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from zerolock_theory.config import TrainConfig
from zerolock_theory.pipeline.checkpoints import stage_dir
from zerolock_theory.pipeline.links import LinkSettings, PeerFailureError
from zerolock_theory.pipeline.options import PipelineOptions
from zerolock_theory.pipeline.runtime import PEER_EXIT, Runtime

__all__ = ["WorkerSpec", "read_run", "resolve_backend", "run_worker", "worker_main"]


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a stage process needs to find its run and its peers (picklable)."""

    run_dir: str
    stage: int  # 1-based
    store_host: str
    store_port: int
    recovering: bool = False
    inject: bool = True
    supervised: bool = True
    resume_step: int = 0  # ``--resume``: restore this stage-local checkpoint first
    launcher_pid: int | None = None  # the supervising launcher: the stage ends when it dies


def read_run(run_dir: Path) -> tuple[TrainConfig, PipelineOptions]:
    """The run's ``config.json`` and ``pipeline.json``."""
    config = TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text()))
    options = PipelineOptions.from_dict(json.loads((run_dir / "pipeline.json").read_text()))
    return config, options


def resolve_backend(name: str, device: torch.device) -> str:
    """auto → nccl on CUDA, gloo on CPU."""
    if name == "auto":
        return "nccl" if device.type == "cuda" else "gloo"
    return name


def _quiet_progress_bars() -> None:
    """K stages loading at once would interleave K progress bars (and leak tqdm's locks)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def run_worker(spec: WorkerSpec, store: Any) -> dict[str, Any]:
    """Build stage k, train it under its schedule, write ``result.json``, mark it done."""
    from zerolock_theory.pipeline.baselines import run_baseline_stage
    from zerolock_theory.pipeline.stage import build_stage, stage_device
    from zerolock_theory.pipeline.zerolock import run_zerolock_stage

    run_dir, k = Path(spec.run_dir), spec.stage
    config, options = read_run(run_dir)
    _quiet_progress_bars()
    torch.set_num_threads(options.threads)
    device = stage_device(config, k)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.cuda.reset_peak_memory_stats(device)
    backend = resolve_backend(options.backend, device)
    settings = LinkSettings(backend, options.comm_timeout_s, options.recovery_timeout_s, spec.supervised)
    wire = device if backend == "nccl" else torch.device("cpu")
    stage_dir(run_dir, k).mkdir(parents=True, exist_ok=True)
    stage = build_stage(config, k, device)
    rt = Runtime(run_dir, store, options, settings, wire, spec.recovering, spec.inject, spec.resume_step)
    if options.schedule == "zerolock":
        result = run_zerolock_stage(stage, rt)
    else:
        result = run_baseline_stage(stage, rt)
    _write_json(stage_dir(run_dir, k) / "result.json", result)
    store.set(f"done/{k}", "1")
    return result


def _report(spec: WorkerSpec, store: Any, exc: BaseException) -> None:
    """Leave the error where the launcher looks: ``error.txt`` and the store."""
    text = "".join(traceback.format_exception(exc))
    line = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    try:
        directory = stage_dir(Path(spec.run_dir), spec.stage)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "error.txt").write_text(text)
        if store is not None:
            store.set(f"error/{spec.stage}", line)
    except Exception:  # the store may be gone; the exit status still tells
        pass


PR_SET_PDEATHSIG = 1


def _process_identity(pid: int) -> tuple[str, str] | None:
    """(state, start time) of a live process from /proc; None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] in ("Z", "X") else (fields[0], fields[19])


def _alive(pid: int, start: str | None) -> bool:
    if sys.platform.startswith("linux"):
        ident = _process_identity(pid)
        return ident is not None and (start is None or ident[1] == start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else: pid reused
        return False
    return True


def watch_parent(launcher: int | None = None, poll_s: float = 0.5) -> None:
    """End this stage when its launcher (or the process that forked it) dies.

    Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` against the forking process; everywhere: a
    daemon thread that ends the stage within ``poll_s`` once the launcher is gone (a zombie or
    a reused pid counts as gone) or this process was re-parented. Ctrl-C is left to the
    launcher, which stops every stage itself.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl
            pass
    ident = _process_identity(launcher) if launcher is not None and sys.platform.startswith("linux") else None
    start = ident[1] if ident else None

    def gone() -> bool:
        return os.getppid() != parent or (launcher is not None and not _alive(launcher, start))

    if gone():
        os._exit(PEER_EXIT)

    def watch() -> None:
        while not gone():
            time.sleep(poll_s)
        os._exit(PEER_EXIT)

    threading.Thread(target=watch, name="zerolock-parent-watch", daemon=True).start()


def worker_main(spec: WorkerSpec) -> None:
    """Multiprocessing target: run the stage, then ``os._exit`` with a meaningful status."""
    code, store = 0, None
    watch_parent(spec.launcher_pid)
    try:
        timeout = datetime.timedelta(seconds=120)
        store = dist.TCPStore(spec.store_host, spec.store_port, is_master=False, timeout=timeout)
        run_worker(spec, store)
    except PeerFailureError as exc:
        code = PEER_EXIT
        _report(spec, store, exc)
    except BaseException as exc:  # noqa: BLE001 -- every failure must become an exit status
        code = 1
        _report(spec, store, exc)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
