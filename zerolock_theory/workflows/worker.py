"""One grid point in its own process: ``python -m zerolock_theory.workflows.worker TASK RESULT``.

``TASK`` is a JSON file with ``name``, ``raw`` (the merged config), ``run_dir`` and ``resume``;
the summary of the run is written to ``RESULT`` as JSON. ``launch.run_local_parallel`` starts
these processes; a plain entry point (rather than ``multiprocessing``) means the caller's main
module is never re-imported, so any script, notebook or console entry point may call it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """Train the task of ``argv[0]``, write its summary to ``argv[1]``."""
    import torch

    from zerolock_theory.workflows.launch import PointTask, train_point

    spec = json.loads(Path(argv[0]).read_text())
    if not torch.cuda.is_available():
        torch.set_num_threads(1)  # one worker per core; run.threads, when set, still applies
    task = PointTask(spec["name"], spec["raw"], Path(spec["run_dir"]), bool(spec["resume"]))
    summary = train_point(task)
    result = {"run_dir": str(summary.run_dir), "steps": summary.steps, "seconds": summary.seconds,
              "initial_eval_ce": summary.initial_eval_ce, "final_eval_ce": summary.final_eval_ce}
    Path(argv[1]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
