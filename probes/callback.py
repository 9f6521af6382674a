"""``ProbeCallback``: the probes of ``probes.session.ProbeSession`` inside a Hugging Face ``Trainer``.

At the start of training it wraps the trained model in a ``ProbeSession`` and probes the
initial parameters (step 0); after every ``every``-th optimizer step it calls
``session.step(state.global_step)``. Each record (a dict of ``probe/...`` metrics and
``step``) is appended to ``history`` and, when ``jsonl`` is set (default
``{args.output_dir}/probes.jsonl``), written as one JSON line; a file that already holds
records is never appended to (``FileExistsError``: pass a new ``jsonl`` when resuming).
Stability terms compare consecutive probed steps. Options are ``ProbeSession``'s.

In a multi-process run (DDP) only the main process (``state.is_world_process_zero``) probes
and writes; the others do nothing. Models sharded across processes (FSDP, DeepSpeed ZeRO-3)
are not supported: no single process holds their whole parameters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from probes.session import ProbeSession
from zerolock_theory.jsonio import dumps

__all__ = ["ProbeCallback"]


class ProbeCallback(TrainerCallback):
    """Run a ``ProbeSession`` every ``every`` optimizer steps of a ``Trainer``.

    ``batch``: the fixed probe batch (``input_ids`` [B, T], per-position ``labels``: see
    ``ProbeSession.shift_labels``); ``every``: probe after every ``every``-th optimizer step (and
    at step 0); ``jsonl``: where the records go (default ``{output_dir}/probes.jsonl``, never
    appended to); ``options``: ``ProbeSession``'s (``chunks``, ``alpha``, ``direction``,
    ``epsilon``, ``store``, ``autocast``). ``history`` holds the records. A complete example:
    docs/PROBES.md.
    """

    def __init__(
        self, batch: dict[str, Any], *, every: int = 1, jsonl: str | Path | None = None, **options: Any
    ) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.batch, self.every, self.options = batch, every, options
        self.jsonl = None if jsonl is None else Path(jsonl)
        self.session: ProbeSession | None = None
        self.history: list[dict[str, Any]] = []

    def _record(self, step: int) -> None:
        assert self.session is not None
        metrics = self.session.step(step)
        self.history.append(metrics)
        if self.jsonl is not None:
            with open(self.jsonl, "a", encoding="utf-8") as fh:
                fh.write(dumps(metrics) + "\n")  # NaN → null, ±inf → "inf"/"-inf" (jsonio)

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        """Wrap the model and probe the initial parameters (on the main process only)."""
        if not getattr(state, "is_world_process_zero", True):
            return  # the other processes of a multi-process run hold the same replicated parameters
        if self.jsonl is None:
            self.jsonl = Path(args.output_dir) / "probes.jsonl"
        if self.jsonl.is_file() and self.jsonl.stat().st_size > 0:
            raise FileExistsError(
                f"{self.jsonl} already holds probe records (an earlier run?); move it away or pass "
                "ProbeCallback(jsonl=...) a new path"
            )
        self.jsonl.parent.mkdir(parents=True, exist_ok=True)
        self.session = ProbeSession(model, self.batch, **self.options)
        self._record(state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Probe after every ``every``-th optimizer step."""
        if self.session is not None and state.global_step % self.every == 0:
            self._record(state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Close the session."""
        if self.session is not None:
            self.session.close()
            self.session = None
