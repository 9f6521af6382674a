"""Checks that run before a command writes or spawns anything.

Each check reads configs, a model's ``config.json`` and the corpus, and raises ONE-line
``ValueError`` naming the setting and its allowed range; none writes a file:

* ``check_chunks``: K against the model's decoder layers ("K must lie in 1 to 8");
* ``check_data``: every run's corpus gives enough packed blocks for its batch size, held-out
  batches and probe positions (the rule of ``data.LMData`` and ``LMData.probe_batch``),
  tokenizing only as much text as the largest need;
* ``suite_checks``: both for every run and side run of a verify suite (``check_runs``: for a
  list of runs, as each setting of the sensitivity suite);
* ``check_verify_resume``: a resumed verify directory holds the same suite.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zerolock_theory.config import TrainConfig
from zerolock_theory.data_config import DataConfig

__all__ = ["DataNeed", "blocks_needed", "check_chunks", "check_data", "check_runs", "check_verify_resume",
           "model_layers", "run_needs", "suite_checks"]


def model_layers(path: str) -> int | None:
    """Decoder layers of the model at ``path`` from its ``config.json``; None when not known
    without converting it (a GGUF file not yet in the cache)."""
    from zerolock_theory.models.gguf_files import is_gguf_source
    from zerolock_theory.models.loading import _cached, resolve_model_path

    try:  # a source that is not usable is reported by the model check itself (config.check_sources)
        if is_gguf_source(path):
            from zerolock_theory.models.gguf_files import gguf_file

            directory = _cached(gguf_file(path))
            if directory is None:
                return None
        else:
            directory = resolve_model_path(path)
        config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    return int(layers) if isinstance(layers, int) else None


def check_chunks(path: str, chunks: int, what: str = "model.chunks") -> None:
    """``ValueError`` unless K = ``chunks`` lies in 1 to the model's layer count."""
    layers = model_layers(path)
    if layers is not None and not 1 <= chunks <= layers:
        given = f"{what} {chunks}" if what.startswith("--") else f"{what}={chunks}"
        raise ValueError(f"{given}: the model has {layers} decoder layers, so K must lie in 1 to {layers}")


@dataclass(frozen=True)
class DataNeed:
    """What one run (or side run) asks of its corpus."""

    who: str  # "run zerolock-forward_lr-0.1_seed-0", "fixed point, chunk 1", ...
    data: DataConfig
    positions: int = 0  # held-out positions of a probe batch (0: none)


def blocks_needed(data: DataConfig, positions: int = 0) -> int:
    """The fewest packed blocks with which ``LMData(data)`` builds and ``probe_batch(positions)``
    draws: ``batch_size`` train blocks and ``eval_batches x batch_size`` held-out blocks (the
    held-out part is ``ceil(eval_fraction x n)``, at least 1), and ``positions / seq_len`` rows."""
    batches = data.eval_batches * data.batch_size
    need_eval = max(batches, math.ceil(positions / data.seq_len))
    test = float(getattr(data, "test_fraction", 0.0) or 0.0)  # a test split, where the config has one

    def enough(n: int) -> bool:
        n_eval, n_test = max(1, math.ceil(data.eval_fraction * n)), math.ceil(test * n) if test > 0 else 0
        return n_eval >= need_eval and not 0 < n_test < batches and n - n_eval - n_test >= data.batch_size

    n = data.batch_size + need_eval
    while not enough(n):
        n += 1
    return n


def _tokens_per_doc(tokenizer: Any, texts: list[str], enough: int) -> int:
    """Tokens of the packed corpus (each document plus its eos), counted until ``enough``."""
    total, step = 0, 64
    for start in range(0, len(texts), step):
        ids = tokenizer(texts[start:start + step], add_special_tokens=False, verbose=False)["input_ids"]
        total += sum(len(x) + 1 for x in ids)
        if total >= enough:
            break
    return total


def check_data(model: str, needs: Iterable[DataNeed]) -> None:
    """``ValueError`` (one line: who, how many blocks the corpus gives, what to change) unless every
    need is met. Reads each distinct corpus once and tokenizes it with ``model``'s tokenizer (skipped
    for a GGUF file not yet in the cache: the run itself then checks)."""
    from zerolock_theory.data import load_texts

    by_corpus: dict[tuple[str, str], list[DataNeed]] = {}
    for need in needs:
        by_corpus.setdefault((need.data.source, need.data.text_field), []).append(need)
    tokenizer = _tokenizer(model) if by_corpus else None
    if tokenizer is None:
        return
    for (source, field), group in by_corpus.items():
        enough = max(blocks_needed(n.data, n.positions) * (n.data.seq_len + 1) for n in group)
        tokens = _tokens_per_doc(tokenizer, load_texts(source, field), enough)
        for need in group:
            width, blocks = need.data.seq_len + 1, blocks_needed(need.data, need.positions)
            if tokens // width < blocks:
                d = need.data
                raise ValueError(
                    f"{need.who}: the corpus {source!r} gives {tokens // width} blocks of {width} tokens, it needs "
                    f"{blocks} (batch_size {d.batch_size}, eval_batches {d.eval_batches}, eval_fraction "
                    f"{d.eval_fraction:g}{f', {need.positions} probe positions' if need.positions else ''}); "
                    "use more text or a smaller data.seq_len, data.batch_size or data.eval_batches")


def _tokenizer(model: str) -> Any:
    """The model's tokenizer, or None when it cannot be had without converting a GGUF file."""
    from zerolock_theory.models.gguf_files import gguf_file, is_gguf_source
    from zerolock_theory.models.loading import _cached, resolve_model_path

    if is_gguf_source(model):
        directory = _cached(gguf_file(model))
        if directory is None:
            return None
    else:
        directory = resolve_model_path(model)
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(directory, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"cannot load the tokenizer in {directory}: {' '.join(str(exc).split())}") from exc


def suite_checks(spec: Any, base: dict[str, Any], runs: list[tuple[str, TrainConfig]]) -> None:
    """Every check a verify suite can fail, before its first write: K for the runs and the memory
    runs, the fixed-point chunks, and the corpus of every run and side run."""
    from zerolock_theory.app.workflows.side_runs import (
        fixed_point_settings,
        memory_settings,
        run_chunks,
    )
    from zerolock_theory.app.workflows.systems import memory_config

    model = str(base["model"]["path"])
    k = run_chunks(spec, base)  # named as the user set it: --chunks (suite.chunks) or model.chunks
    check_chunks(model, k, "suite.chunks" if k == spec.chunks else "model.chunks")
    for stages in spec.memory_stages:
        check_chunks(model, stages, "suite.memory_stages")
    needs = run_needs(runs)
    for chunk in spec.fixed_point_chunks:
        settings = fixed_point_settings(spec, base, chunk)  # ValueError for a chunk outside 1..K
        config = settings.config(settings.first_seed)
        needs.append(DataNeed(f"fixed point, chunk {chunk}", config.data, settings.n_positions))
    if spec.memory_stages:
        memory = memory_settings(spec, base)
        needs.append(DataNeed("memory runs", memory_config(memory, "zerolock", max(spec.memory_stages)).data))
    if spec.tune:  # the tuned comparison: its recipe at the suite's sizes, every grid run's config
        from zerolock_theory.app.workflows.side_runs import tune_recipe
        from zerolock_theory.app.workflows.tune import check_tune

        needs += [DataNeed(f"tuned run {name}", config.data) for name, config in check_tune(tune_recipe(spec, base))[:1]]
    check_data(model, _distinct(needs))


def run_needs(runs: list[tuple[str, TrainConfig]]) -> list[DataNeed]:
    """What each named run asks of its corpus (its data config and its probes' positions)."""
    return [DataNeed(f"run {name}", config.data, _probe_positions(config)) for name, config in runs]


def check_runs(runs: list[tuple[str, TrainConfig]]) -> None:
    """K against the model's layers and the corpus's size, for runs that share one model."""
    if not runs:
        return
    model = runs[0][1].model.path
    for chunks in sorted({config.model.chunks for _, config in runs}):
        check_chunks(model, chunks)
    check_data(model, _distinct(run_needs(runs)))


def _probe_positions(config: TrainConfig) -> int:
    """The most held-out positions any enabled probe of ``config`` draws (0: no probe)."""
    shared = config.probe_settings.n_positions
    counts = [int(options.get("n_positions", shared)) for options in config.probes.values()
              if isinstance(options, dict) and options.get("enabled", True)]
    return max(counts, default=0)


def _distinct(needs: list[DataNeed]) -> list[DataNeed]:
    """One need per distinct (data config, positions): the first run that has it names it."""
    seen: dict[tuple[Any, ...], DataNeed] = {}
    for need in needs:
        d = need.data
        key = (d.source, d.text_field, d.seq_len, d.batch_size, d.eval_batches, d.eval_fraction, need.positions)
        seen.setdefault(key, need)
    return list(seen.values())


def _flat(tree: Any, prefix: str) -> dict[str, Any]:
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def check_verify_resume(out: Path, spec: Any, base: dict[str, Any]) -> None:
    """``ValueError`` (one line) when ``out`` holds a verify suite whose ``verify.json`` has other
    settings than ``spec`` and ``base``: a resume would be refused run by run, so refuse it here,
    before anything is written. Keys only one side knows (a field added since) are not compared;
    the run keys a resume may change (``training.resume.RESUMABLE_CHANGES``) are allowed."""
    from dataclasses import asdict

    from zerolock_theory.training.resume import RESUMABLE_CHANGES

    path = Path(out) / "verify.json"
    if not path.is_file():
        return
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); cannot resume this verify directory") from exc
    old = {**_flat(saved.get("spec", {}), "suite"), **_flat(saved.get("base", {}), "")}
    new = {**_flat(json.loads(json.dumps(asdict(spec))), "suite"), **_flat(json.loads(json.dumps(base)), "")}
    changed = sorted((k for k in old.keys() & new.keys() if old[k] != new[k] and k not in RESUMABLE_CHANGES),
                     key=lambda k: (not k.startswith("suite."), k))  # the suite's own settings first
    if changed:
        shown = ", ".join(f"{k} {_short(old[k])} -> {_short(new[k])}" for k in changed[:3])
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        raise ValueError(f"--out {out} holds a verify suite with other settings ({shown}{more}); nothing was "
                         "changed: rerun with its settings to resume it, or choose another --out")


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 24 else text[:21] + "..."
