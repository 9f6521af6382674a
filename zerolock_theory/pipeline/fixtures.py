"""Small inputs for pipeline tests and benchmarks: a short local corpus and a seconds-long config.

Every stage process loads the model by path; tests and benchmarks use the embedded model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["small_config", "small_corpus"]

def small_corpus(out: str | Path, topics_count: int = 12) -> Path:
    """A short .txt corpus (the first pydoc topics): tokenized in a blink by every stage."""
    from pydoc_data.topics import topics

    path = Path(out)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(topics[key] for key in sorted(topics)[:topics_count]), encoding="utf-8")
    return path


def small_config(model_path: str, chunks: int, steps: int = 6, method: str = "zerolock",
                 data_source: str = "embedded", **run: Any):
    """A seconds-long run: seq_len 32, batch 2, SGD at 0.05, checkpoints every 2 steps."""
    from zerolock_theory.config import TrainConfig

    return TrainConfig.from_dict({
        "model": {"path": model_path, "chunks": chunks, "device": "cpu"},
        "data": {"source": data_source, "seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "method": {"name": method},
        "optim": {"name": "sgd", "lr": 0.05},
        "run": {"steps": steps, "checkpoint_every": 2, "eval_every": 1000, "progress": False, **run},
    })
