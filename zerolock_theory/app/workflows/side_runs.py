"""The suite's side runs: Lemma 2's fixed-point experiment, the systems row's memory runs and the
tuned comparison (``zerolock tune`` into ``tuned/``, the "ZeroLock against backprop" row).

Each writes its result files under the verify directory (``fixed_point/chunk-K/controls.json`` and
``fixed_point.json``,
``systems/systems.json`` and ``systems/memory_map.json``, ``tuned/tune.json``) and is skipped when that file
exists, so a resumed verify does not redo it (the tune resumes run by run). With ``--jobs`` >= 2 the
fixed points run in a process of their own beside the training runs (``fixed_points_beside``). ``spec`` is the suite's ``SuiteSpec`` (its ``fixed_point_*`` and ``memory_*`` fields);
``base`` the runs' base config.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["fixed_point_settings", "fixed_points", "fixed_points_beside", "memory_runs", "memory_settings", "model_placement", "run_chunks",
           "run_config", "run_data", "tune_recipe", "tuned_runs"]

SUITE_TUNE_KEYS = (("model", "path"), ("model", "chunks"), ("model", "device"), ("model", "dtype"),
                   ("model", "autocast"), ("model", "lora"), ("data", "source"), ("data", "text_field"), ("data", "seq_len"),
                   ("data", "batch_size"), ("run", "steps"), ("method", "alpha"))
"""The keys a suite's tune takes from the suite's runs: the same model, corpus, sizes and budget."""


def model_placement(base: dict[str, Any]) -> dict[str, Any]:
    """The runs' device, parameter dtype and autocast (``base["model"]``): every side run uses them,
    so ``auto`` resolves as it does for the runs (``models.resolve_device``)."""
    model = base["model"]
    return {"device": str(model.get("device", "auto")), "dtype": str(model.get("dtype", "float32")),
            "autocast": model.get("autocast")}


def run_data(base: dict[str, Any]) -> dict[str, Any]:
    """The runs' data settings (``base["data"]`` over ``DataConfig``'s defaults) as side-run fields:
    the side runs read the same corpus, field, sequence length, batches and split as the runs."""
    from dataclasses import asdict

    from zerolock_theory.data_config import DataConfig

    data = {**asdict(DataConfig()), **base["data"]}
    return {"data": str(data["source"]), "text_field": str(data["text_field"]), "seq_len": int(data["seq_len"]),
            "batch_size": int(data["batch_size"]), "eval_batches": int(data["eval_batches"]),
            "eval_fraction": float(data["eval_fraction"]), "data_seed": int(data["seed"])}


def run_chunks(spec: Any, base: dict[str, Any]) -> int:
    """K of the suite's runs: the merged base config's ``model.chunks`` (a recipe's [model] table or
    ``--set model.chunks`` override ``suite.chunks``), so the side runs split the model as the runs do."""
    return int(base["model"].get("chunks", spec.chunks))


def run_config(spec: Any, base: dict[str, Any], variant: str = "zerolock-reverse"):
    """The typed ``TrainConfig`` of the suite's first run of ``variant`` (``suite_spec.VARIANTS``):
    the one source the side runs read every setting they share with the runs from."""
    from zerolock_theory.app.workflows.suite_spec import VARIANTS, replicate
    from zerolock_theory.config import TrainConfig
    from zerolock_theory.config_overrides import apply_values

    return TrainConfig.from_dict(apply_values(base, dict((*VARIANTS[variant](spec), *replicate(min(spec.seeds))))))


def fixed_point_settings(spec: Any, base: dict[str, Any], chunk: int):
    """The ``FixedPointSettings`` of the experiment on ``chunk``: the suite's sizes (seeds, steps,
    probe positions) and, from the reverse runs' own config (``run_config``), α, ε, K, the LoRA
    rank, the model, data, device and dtypes."""
    from zerolock_theory.app.workflows.fixed_point import FixedPointSettings

    runs = run_config(spec, base)
    return FixedPointSettings(
        model=str(base["model"]["path"]), chunks=runs.model.chunks, chunk=chunk, seeds=len(spec.seeds),
        first_seed=min(spec.seeds), alpha=runs.method.alpha, epsilon=runs.method.epsilon,
        lora_rank=runs.model.lora.rank, steps_max=spec.fixed_point_steps, n_positions=spec.probe_positions,
        **run_data(base), **model_placement(base))


def memory_settings(spec: Any, base: dict[str, Any]):
    """The ``MemorySettings`` of the memory runs: the suite's sizes, the runs' model, data, device and dtypes."""
    from zerolock_theory.app.workflows.systems import MemorySettings

    # the runs' corpus, field, seq_len and split; the batch is the suite's (its micro-batches divide
    # suite.batch_size, checked when the suite loads); one held-out batch: memory runs do not evaluate
    data = {**run_data(base), "batch_size": spec.batch_size}
    del data["eval_batches"]
    return MemorySettings(model=str(base["model"]["path"]), stages=spec.memory_stages,
                          micro_batches=spec.memory_micro_batches, steps=4, warmup=1,
                          repeats=spec.memory_repeats, lora_rank=run_config(spec, base).model.lora.rank,
                          **data, **model_placement(base))


def _chunk_done(out: Path, chunk: int) -> bool:
    """Whether ``chunk``'s fixed point (with its controls) is already written under ``out``."""
    return (out / f"chunk-{chunk}" / "controls.json").is_file()


def fixed_points(spec: Any, base: dict[str, Any], out: Path, log=print) -> list[Path]:
    """Lemma 2's fixed-point experiment with its controls (``workflows.fixed_point_controls``) on
    ``spec.fixed_point_chunks``, one directory per chunk holding ``controls.json`` and
    ``fixed_point.json`` (the experiment, written from the controls' run when missing); a chunk
    whose ``controls.json`` exists is skipped (resume), one with only ``fixed_point.json`` (an older
    suite) gets its controls."""
    from zerolock_theory.app.workflows.fixed_point_controls import run_fixed_point_controls
    from zerolock_theory.training.resume import write_text_atomic

    dirs = []
    for chunk in spec.fixed_point_chunks:
        where = out / f"chunk-{chunk}"
        dirs.append(where)
        if _chunk_done(out, chunk):
            log(f"fixed point, chunk {chunk}: done, skipped")
            continue
        settings = fixed_point_settings(spec, base, chunk)
        log(f"fixed point, chunk {chunk}: {settings.seeds} seeds, each loss until it stops falling, on the labels "
            "and on permuted labels, and the label-free move ...")
        result = run_fixed_point_controls(settings)
        where.mkdir(parents=True, exist_ok=True)
        if not (where / "fixed_point.json").is_file():
            write_text_atomic(where / "fixed_point.json", result.main.to_json() + "\n")
        write_text_atomic(where / "controls.json", result.to_json() + "\n")
        verdict = "calibrated" if result.calibrated else "NOT calibrated: " + "; ".join(result.failed_controls)
        log(f"fixed point, chunk {chunk}: {result.main.outcome} (label part {result.main.label_contrast}); "
            f"controls {verdict}")
    return dirs


def _fixed_points_alone(conn: Any, spec: Any, base: dict[str, Any], out: Path) -> None:
    """``fixed_points`` in a process of its own, on one thread (the training workers hold one each): sends
    ``(directories, log lines)`` or ``(None, the error's line)`` down ``conn``."""
    from zerolock_theory.app.workflows.worker import die_with_parent

    die_with_parent()
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(1)
    lines: list[str] = []
    try:
        conn.send((fixed_points(spec, base, out, log=lines.append), lines))
    except Exception as exc:  # noqa: BLE001 (re-raised by the parent, as one line)
        conn.send((None, f"{type(exc).__name__}: {exc}"))


@contextlib.contextmanager
def fixed_points_beside(spec: Any, base: dict[str, Any], out: Path, jobs: int,
                        log=print) -> Iterator[Callable[[], list[Path]]]:
    """Lemma 2's fixed points (``fixed_points``) beside the block's training runs; the yielded function
    returns their directories, after the block.

    With ``jobs`` >= 2 and chunks to run, they start at once in one spawned process (one thread): the
    training's worker slots leave a core idle whenever one group finishes before another, and the
    fixed points fill it instead of running after every run. The function waits for that process,
    prints its log lines and raises ``RuntimeError`` (one line) if it failed or died; leaving the
    block ends the process. Otherwise (``jobs`` = 1, no chunks, or every chunk already done) the
    function runs ``fixed_points`` in this process, as a serial suite always did. The results are
    the same either way, up to the thread count's rounding (the serial path uses this process's threads).
    """
    pending = [c for c in spec.fixed_point_chunks if not _chunk_done(out, c)]
    if jobs < 2 or not pending:
        yield lambda: fixed_points(spec, base, out, log=log)
        return
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    proc = context.Process(target=_fixed_points_alone, args=(send, spec, base, out), daemon=True)
    proc.start()
    send.close()

    def finish() -> list[Path]:
        try:
            dirs, lines = receive.recv()
        except EOFError:
            proc.join()
            raise RuntimeError(f"the fixed points' process died (exit code {proc.exitcode})") from None
        if dirs is None:
            raise RuntimeError(f"the fixed points failed: {lines}")
        for line in lines:
            log(line)
        return dirs

    try:
        yield finish
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        receive.close()


def memory_runs(spec: Any, base: dict[str, Any], out: Path, log=print) -> Path | None:
    """The systems row's memory runs (``workflows.systems``): ZeroLock, GPipe and 1F1B pipelines at
    ``spec.memory_stages``; ``out/systems.json``, skipped when already written (resume)."""
    if not spec.memory_stages:
        return None
    from zerolock_theory.app.workflows.memory_map import measure_memory_map
    from zerolock_theory.app.workflows.systems import measure_memory

    settings = memory_settings(spec, base)
    if (out / "systems.json").is_file():
        log("memory runs: done, skipped")
    else:
        log(f"memory runs: ZeroLock, GPipe and 1F1B pipelines at K = {list(spec.memory_stages)}, "
            f"{spec.memory_repeats} repeats ...")
        measure_memory(settings, out, log=log)
    if (out / "memory_map.json").is_file():
        log("memory map: done, skipped")
    else:  # the ratio against tokens per micro-batch (workflows.memory_map), run on resume when missing
        log(f"memory map: ZeroLock and 1F1B at K = {max(spec.memory_stages)}, four micro-batch sizes ...")
        measure_memory_map(settings, out, log=log)
    return out


def tune_recipe(spec: Any, base: dict[str, Any]) -> dict[str, Any]:
    """The tune recipe ``spec.tune`` (a file or a packaged name) at the suite's model, corpus, K,
    sizes and steps (``SUITE_TUNE_KEYS`` taken from ``base``) and the reverse runs' ε, so its
    comparison answers for the suite's runs. Raises a one-line ``ValueError`` on a bad recipe."""
    import copy

    from zerolock_theory.config import read_recipe

    raw = copy.deepcopy(read_recipe(spec.tune))
    if "tune" not in raw:
        raise ValueError(f"suite.tune={spec.tune!r}: not a tune recipe (it has no [tune] table; try tune_embedded)")
    for table, key in SUITE_TUNE_KEYS:
        if key in base.get(table, {}):
            raw.setdefault(table, {})[key] = base[table][key]
    if "zerolock-reverse" in raw["tune"].get("methods", ("zerolock-reverse",)):  # the reverse runs' ε
        reverse = raw["tune"].setdefault("zerolock-reverse", {})
        reverse.setdefault("method", {})["epsilon"] = run_config(spec, base).method.epsilon
    return raw


def tuned_runs(spec: Any, base: dict[str, Any], out: Path, log=print) -> Path | None:
    """The tuned comparison (``workflows.tune.run_tune``) of ``spec.tune`` into ``out``; ``None``
    when the suite has none. Finished runs are skipped, so a resumed verify continues the tune."""
    if not spec.tune:
        return None
    from zerolock_theory.app.workflows.tune import run_tune

    out.mkdir(parents=True, exist_ok=True)
    log(f"tuned comparison ({spec.tune}): every method over one eta_0 grid, chosen on a validation split ...")
    summary = run_tune(tune_recipe(spec, base), out, log=log)
    log("tuned comparison: chosen eta_0 " + ", ".join(f"{m} {lr:g}" for m, lr in summary["chosen"].items()))
    return out
