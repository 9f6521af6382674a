"""The suite's sizes and the runs they make: ``SuiteSpec``, its presets, the base config and the points.

``SuiteSpec`` holds the sizes of ``zerolock verify`` (``QUICK`` and ``FULL`` are the shipped presets;
a verify recipe's ``[suite]`` table loads into it, ``workflows.verify_config``). ``base_config`` turns
a spec into the config every run of the suite starts from, and ``suite_points`` into the runs of the
primary groups, the matched-η_0 group and the sweep (the suite's parts: ``workflows.verify``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from zerolock_theory.app.workflows.sweep import GridPoint
from zerolock_theory.config_overrides import merge_tables

__all__ = ["FULL", "PRIMARY", "QUICK", "VARIANTS", "SuiteSpec", "base_config", "replicate", "suite_base",
           "suite_points"]

PRIMARY = ("zerolock-forward", "zerolock-reverse", "backprop")


@dataclass(frozen=True)
class SuiteSpec:
    """Sizes of the suite; ``QUICK`` and ``FULL`` are the shipped presets."""

    steps: int
    seq_len: int
    batch_size: int
    seeds: tuple[int, ...]
    lr_grid: tuple[float, ...]  # candidate η_0 of SGD for the pilot, any order
    lr_factors: tuple[float, ...]  # the sweep: η_0 × factor, seed seeds[0]
    pilot_steps: int = 30
    sweep_steps: int | None = None  # None: ``steps``
    chunks: int = 4
    eval_every: int = 10
    probe_positions: int = 128
    gradient_every: int = 5
    stability_every: int = 1
    minimizer_every: int = 1
    readout_records: int = 20
    alpha: float = 0.5
    epsilon_reverse: float = 0.1
    smoke: bool = False  # a smoke test: too short for the bound test
    lr: float | None = None  # fixes η_0 and skips the pilot (tests, ``--lr``)
    pilot_backoff: float = 0.5  # η_0 = pilot_backoff × the largest stable η_0 of the pilot (workflows.verify)
    scaled_steps: int = 30  # Assumption 5: scaled steps per run (the share's minimum per seed is 30)
    random_baseline: bool = True  # Assumption 5: the random-direction baseline at every scaled step
    proof_every: int = 1  # Theorem 1 (b): the proof probe's cadence (0: off; the rule needs 1)
    global_every: int = 5  # ZeroLock against backprop: the global G-hat_t every so many steps (0: off)
    matched_seeds: int = 0  # R against R-bar at a matched eta_0: forward runs at the reverse group's eta_0
    fixed_point_chunks: tuple[int, ...] = (1,)  # Lemma 2's fixed-point experiment on these chunks (): off)
    fixed_point_steps: int = 400  # its step limit per training (it stops earlier when the loss stops falling)
    memory_stages: tuple[int, ...] = ()  # the systems row: pipelined peak memory at these K (): off)
    memory_repeats: int = 3  # its repeats per method and K (the spread)
    memory_micro_batches: int = 4  # micro-batches per step of the memory runs (1F1B needs >= K; divides batch_size)
    name: str | None = None  # the suite's name in the scope line (default: "full", or "--quick (smoke test)")
    scaling_groups: tuple[str, ...] = PRIMARY  # primary groups that run the step-scaling probe (the
    # Assumption 5 rows read only the ZeroLock groups; backprop's scaled steps are descriptive)
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)  # extra probes / options by name
    variants: tuple[str, ...] = ()  # "KEY=VALUE" each: the sensitivity suite (workflows.sensitivity); needs lr
    tune: str | None = None  # a tune recipe run at the suite's sizes into tuned/ (the tuned versus row; None: off)
    seeds_by_power: bool = False  # the primary groups' seed count from a pilot's power (workflows.power)
    max_seeds: int = 20  # its cap
    power_pilot_seeds: int = 3  # seeds of its pilot group (1000, 1001, ...: never in a verdict)


# The packaged recipes verify_quick.toml / verify_full.toml hold the same values (tests check it).
QUICK = SuiteSpec(steps=32, seq_len=32, batch_size=4, seeds=(0, 1, 2), lr_grid=(0.1, 0.025), lr_factors=(),
                  pilot_steps=10, eval_every=10, probe_positions=64, gradient_every=5, readout_records=16, smoke=True,
                  scaled_steps=32, scaling_groups=("zerolock-forward", "zerolock-reverse"), random_baseline=True,
                  proof_every=1, global_every=5,
                  fixed_point_chunks=(1,), fixed_point_steps=200, memory_stages=(2,), memory_repeats=2)
FULL = SuiteSpec(steps=1000, seq_len=32, batch_size=8, seeds=(0, 1, 2, 3, 4), matched_seeds=3,
                 scaling_groups=("zerolock-forward", "zerolock-reverse"),
                 fixed_point_chunks=(1, 2), memory_stages=(2, 4), memory_repeats=3,
                 lr_grid=(0.4, 0.2, 0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125), lr_factors=(),
                 pilot_steps=50,
                 sweep_steps=200, eval_every=125, probe_positions=64,
                 gradient_every=25, stability_every=20, minimizer_every=20, tune="tune_embedded")


def base_config(spec: SuiteSpec, model: str, data: str, device: str, dtype: str, autocast: str | None) -> dict[str, Any]:
    """The config every run of the suite starts from (before its own overrides).

    The probe table holds the built-in probes; ``spec.probes`` adds probes (e.g. a
    ``scaling`` probe) or overrides options by name.
    """
    n = spec.probe_positions
    probes = {
        "stability": {"n_positions": n, "every": spec.stability_every},
        "minimizers": {"n_positions": n, "every": spec.minimizer_every},
        "gradients": {"n_positions": n, "every": spec.gradient_every},
        "readouts": {"n_positions": n, "every": max(1, spec.steps // spec.readout_records)},
        # Assumption 5 by step scaling at the seven factors 1 ... 1/64, ``scaled_steps`` scaled steps a run,
        # with the random-direction baseline (its own forwards at every factor: docs/PROBES.md, scaling)
        "scaling": {"n_positions": n, "every": max(1, spec.steps // spec.scaled_steps),
                    "random_baseline": spec.random_baseline},
    }
    # Lemma 2 on the model: TV(m_k, g_k) at the exact readouts, untrained and trained, and the
    # entropy-matched null of the descriptive tracking statistic at the last step
    probes["lemma2"] = {"n_positions": n, "every": max(1, spec.steps // spec.readout_records), "null": True}
    if spec.proof_every:  # Theorem 1 (b): descent_t and drift_t of both surrogates, every step
        probes["proof"] = {"n_positions": n, "every": spec.proof_every}
    for name, options in spec.probes.items():
        probes.setdefault(name, {}).update(options)
    return {
        "model": {"path": model, "chunks": spec.chunks, "device": device, "dtype": dtype, "autocast": autocast},
        "data": {"source": data, "seq_len": spec.seq_len, "batch_size": spec.batch_size},
        "method": {"alpha": spec.alpha},
        "optim": {"name": "sgd", "lr": spec.lr_grid[0] if spec.lr is None else spec.lr, "schedule": "inv_sqrt"},
        "run": {"steps": spec.steps, "eval_every": spec.eval_every, "checkpoint_every": spec.steps,
                "keep_checkpoints": 1, "progress": False, "global_grad_every": spec.global_every,
                # One intra-op thread on CPU: the embedded model's ops are too small to gain from
                # more, and an OpenMP region stalls every op whenever a core is busy.
                "threads": 1 if device == "cpu" or (device == "auto" and not torch.cuda.is_available()) else None},
        "probes": probes,
    }


def suite_base(spec: SuiteSpec, model: str, data: str, device: str, dtype: str, autocast: str | None,
               tables: dict[str, Any] | None = None) -> dict[str, Any]:
    """``base_config`` with a recipe's run-config ``tables`` merged on top (key by key)."""
    return merge_tables(base_config(spec, model, data, device, dtype, autocast), tables or {})


VARIANTS = {
    "zerolock-forward": lambda spec: (("method.name", "zerolock"), ("method.direction", "forward"),
                                      ("method.epsilon", 0.0)),
    "zerolock-reverse": lambda spec: (("method.name", "zerolock"), ("method.direction", "reverse"),
                                      ("method.epsilon", spec.epsilon_reverse)),
    "backprop": lambda spec: (("method.name", "backprop"), ("method.direction", "forward"), ("method.epsilon", 0.0)),
}


def replicate(seed: int) -> tuple[tuple[str, int], ...]:
    """The overrides of one replicate: ``seed`` draws the adapters' init, the training RNG AND the
    training order (``data.order_seed``); the train/eval split (``data.seed``) stays shared.

    Seeds that shared one data order would share its batch-to-batch noise: on the embedded
    model Ĝ_t at the same step correlates 0.76–0.90 between backprop runs that differ only in
    η_0, so such "seeds" are not independent replicates and a seed-level interval over them
    is too narrow (docs/MATH.md, "Statistics for every verdict").
    """
    return (("run.seed", seed), ("data.order_seed", seed))


def suite_points(spec: SuiteSpec, lrs: float | dict[str, float] | None = None) -> list[GridPoint]:
    """The primary groups and the sweep, named ``{method}-{direction}_lr-{η}_seed-{s}``.

    ``lrs``: η_0 per primary method (a number: the same for all; default ``spec.lr`` or the
    grid's first value). The sweep is η_0 × ``lr_factors`` of each ZeroLock direction.
    """
    if lrs is None:
        lrs = spec.lr if spec.lr is not None else spec.lr_grid[0]
    if not isinstance(lrs, dict):
        lrs = dict.fromkeys(PRIMARY, float(lrs))
    points = []
    for label in PRIMARY:
        for seed in spec.seeds:
            off = () if label in spec.scaling_groups else (("probes.scaling.enabled", False),)
            if label == "backprop":  # its surrogate is the fixed loss (drift 0): Theorem 1 (b) reads ZeroLock only
                off += (("probes.proof.enabled", False),)
            points.append(GridPoint(f"{label}_lr-{lrs[label]:g}_seed-{seed}",
                                    (*VARIANTS[label](spec), *replicate(seed), ("optim.lr", lrs[label]), *off)))
    for seed in spec.seeds[: spec.matched_seeds]:  # forward at reverse's eta_0: R-bar against R, same step size
        lr = lrs["zerolock-reverse"]
        points.append(GridPoint(f"zerolock-forward-matched_lr-{lr:g}_seed-{seed}",
                                (*VARIANTS["zerolock-forward"](spec), *replicate(seed), ("optim.lr", lr),
                                 ("probes.scaling.enabled", False), ("probes.proof.enabled", False))))
    sweep_steps = spec.sweep_steps or spec.steps
    for label in ("zerolock-forward", "zerolock-reverse"):
        for factor in spec.lr_factors:
            swept = lrs[label] * factor
            points.append(GridPoint(f"{label}_lr-{swept:g}_seed-{spec.seeds[0]}",
                                    (*VARIANTS[label](spec), *replicate(spec.seeds[0]), ("optim.lr", swept),
                                     ("run.steps", sweep_steps), ("run.checkpoint_every", sweep_steps),
                                     ("run.eval_every", min(spec.eval_every, sweep_steps)))))
    return points
