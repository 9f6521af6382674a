"""``DataConfig``: where the training text comes from and how it is cut into batches.

Kept apart from ``zerolock_theory.data`` (which needs torch) so that building a config, or
printing ``--help`` with its defaults, imports no heavy module.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DataConfig"]


@dataclass
class DataConfig:
    """Where the text comes from and how it is cut into batches."""

    source: str = "embedded"
    """'embedded' (English prose of ``pydoc_data.topics``) or a path: .txt/.md, .jsonl,
    .json, .csv or .parquet (each optionally .gz), a directory saved by ``datasets``
    (save_to_disk), or a directory of such files (see :mod:`zerolock_theory.corpus`)."""
    text_field: str = "text"
    """Field (JSON) or column (CSV, Parquet, ``datasets``) holding the text."""
    seq_len: int = 128
    """Tokens per training sequence T (blocks hold T+1 tokens)."""
    batch_size: int = 8
    """Sequences per batch, for training and for the held-out batches."""
    eval_fraction: float = 0.1
    """Share of packed blocks held out from training."""
    eval_batches: int = 4
    """Number of fixed held-out batches used for eval CE."""
    test_fraction: float = 0.0
    """Share of packed blocks kept apart as a test split, disjoint from train and held-out
    (0: none, the two-way split). With it the held-out part is the validation split that
    selects η_0, and the test split (``test_batches`` fixed batches) reports."""
    seed: int = 0
    """Seed of the train/eval split, and of the training order unless order_seed is set."""
    order_seed: int | None = None
    """Seed of the training order alone (null: data.seed); verify sets it to each run's seed."""

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not self.source:
            raise ValueError(f"source must be 'embedded' or a path, got {self.source!r}")
        if not isinstance(self.text_field, str) or not self.text_field:
            raise ValueError(f"text_field must be a non-empty string, got {self.text_field!r}")
        for name in ("seq_len", "batch_size", "eval_batches"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 < float(self.eval_fraction) < 1.0:
            raise ValueError(f"eval_fraction must lie in (0, 1), got {self.eval_fraction!r}")
        if not 0.0 <= float(self.test_fraction) < 1.0 or float(self.eval_fraction) + float(self.test_fraction) >= 1.0:
            raise ValueError(f"test_fraction must lie in [0, 1) and leave train blocks beside eval_fraction "
                             f"{self.eval_fraction!r}, got {self.test_fraction!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        order = self.order_seed
        if order is not None and (isinstance(order, bool) or not isinstance(order, int) or order < 0):
            raise ValueError(f"order_seed must be a non-negative int or null, got {order!r}")

    @property
    def stream_seed(self) -> int:
        """The seed of the training order: ``order_seed``, else ``seed``."""
        return self.seed if self.order_seed is None else self.order_seed
