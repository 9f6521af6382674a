"""A worker process that trains grid points: ``python -m zerolock_theory.app.workflows.worker FD``.

It reads one line per task from stdin, ``TASK_JSON RESULT_JSON`` (two file paths), trains the
task, writes its summary (or ``{"error": ...}``) to ``RESULT_JSON`` and then a line to file
descriptor ``FD`` to say so. A task file holds ``name``, ``raw`` (the merged config),
``run_dir`` and ``resume``, or ``name`` and ``members`` (a population: one such entry per member,
whose result holds ``members``, one summary each). ``launch.run_local_parallel`` keeps one such process per worker
slot, so torch is imported once per slot; a plain entry point (rather than
``multiprocessing``) means the caller's main module is never re-imported.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def die_with_parent() -> None:
    """On Linux, have the kernel kill this process when its parent dies (even by SIGKILL), so an
    interrupted suite leaves no run half-trained by an orphan while it is resumed; elsewhere a
    no-op. Also turns Ctrl-C into a quiet exit (130): the parent prints the one line."""
    import ctypes
    import signal

    signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(1)


def _train(task_file: Path) -> dict:
    from zerolock_theory.app.workflows.launch import summary_to_json, task_from_json, train_point

    return summary_to_json(train_point(task_from_json(json.loads(task_file.read_text()))))


def main(argv: list[str]) -> int:
    """Serve tasks from stdin until it closes; report each on file descriptor ``argv[0]``."""
    die_with_parent()
    from zerolock_theory.allocator import keep_freed_memory

    keep_freed_memory()  # inherited through the environment already; this also covers a worker started by hand
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(1)  # one worker per core; run.threads, when set, still applies
    with os.fdopen(int(argv[0]), "w") as done:
        for line in sys.stdin:
            if not line.strip():
                continue
            task_file, result_file = (Path(p) for p in line.split())
            try:
                result = _train(task_file)
            except Exception as exc:  # reported by the parent as one line
                result = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
            result_file.write_text(json.dumps(result))
            done.write("done\n")
            done.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
