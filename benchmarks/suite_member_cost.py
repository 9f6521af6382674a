"""Benchmark (not a test): where a full-suite ZeroLock member-step's CPU time goes, and the
population's shared pieces against their per-member forms, measured in one run.

Part 1 builds one primary group of the full suite exactly as ``zerolock verify`` does
(``recipes/verify_full.toml``: its probes at their 1000-step cadence, the proof probe every
step, the global Ĝ_t every 5 steps) as a population of ``--members`` seeds and trains it for
``--steps`` steps. It prints the CPU milliseconds per member-step of the training step, each
probe's ``after_step``, the probes' forwards shared by all members (``prepare_members``: the
proof probe's readouts and moved chunks), the global Ĝ_t and the rest (the loop's records, evaluation, the
eval-mode switches and the probes' ``before_step``), and what the ZeroLock groups' member-steps
cost at 10 and 20 seeds on two cores at that rate. A short run over-weights the probes due every
few tens of steps (the scaling probe's first scaled step falls at step 0).

Part 2 times, alternately and ``--repeats`` times on the same parameters:

* every member's global Ĝ_t: one population pass (``PopulationStep.global_grad_sq_unbiased``)
  against each member's own, inside ``Population.member(s)`` (``steps.global_grad_sq_unbiased``,
  what the loop ran per member), with the largest difference of the values;
* an eval/train switch pair: ``ChunkedLM.train`` (one flat pass over the module flags) against
  ``nn.Module.train``'s recursion on the same model;
* entering and leaving ``Population.member(s)`` (the loop does it twice a member-step), which
  grows with S: it switches every other member's adapters out of ``requires_grad``.

Times are process CPU time (one thread)::

    python3 benchmarks/suite_member_cost.py --members 3 --steps 100
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict

import torch

from probes.registry import build_probes
from zerolock_theory.allocator import keep_freed_memory
from zerolock_theory.app.workflows.suite_spec import suite_base, suite_points
from zerolock_theory.app.workflows.verify_config import load_suite
from zerolock_theory.config import TrainConfig
from zerolock_theory.config_overrides import apply_values
from zerolock_theory.training import population_loop
from zerolock_theory.training.population import PopulationStep
from zerolock_theory.training.steps import global_grad_sq_unbiased

CLOCK = time.process_time


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--members", type=int, default=3, help="seeds in the population (S)")
    p.add_argument("--steps", type=int, default=100, help="training steps of part 1")
    p.add_argument("--group", default="zerolock-forward", choices=["zerolock-forward", "zerolock-reverse"])
    p.add_argument("--lr", type=float, default=0.1, help="η_0 of the group (the full suite's pilot chose 0.1 forward)")
    p.add_argument("--repeats", type=int, default=10, help="alternating repetitions of part 2")
    args = p.parse_args()
    if args.members < 1 or args.steps < 2 or args.repeats < 1:
        p.error("--members must be >= 1, --steps >= 2 and --repeats >= 1")
    return args


def group_configs(group: str, members: int, steps: int, lr: float) -> list[TrainConfig]:
    """The full suite's configs of ``group``'s first ``members`` seeds, cut to ``steps`` steps
    (the probes keep their 1000-step cadence)."""
    spec, tables = load_suite("verify_full", values={"suite.seeds": list(range(members))})
    base = suite_base(spec, "embedded", "embedded", "cpu", "float32", None, tables)
    points = [p for p in suite_points(spec, lr) if p.name.startswith(group + "_")]
    cut = {"run.steps": steps, "run.checkpoint_every": steps, "run.progress": False}
    return [TrainConfig.from_dict(apply_values(base, {**dict(p.overrides), **cut})) for p in points]


def timed(table: dict[str, float], name: str, fn):
    """``fn`` with its CPU time added to ``table[name]``."""

    def wrapper(*args, **kwargs):
        tic = CLOCK()
        try:
            return fn(*args, **kwargs)
        finally:
            table[name] += CLOCK() - tic

    return wrapper


def part1(configs: list[TrainConfig]) -> tuple[float, population_loop.PopulationRun]:
    """Train the population; print the cost table; return the CPU ms per member-step and the run."""
    S, steps = len(configs), configs[0].run.steps
    table: dict[str, float] = defaultdict(float)
    hooks = []
    for cfg in configs:
        member = build_probes(cfg.probes, cfg.probe_settings)
        for hook in member:
            hook.after_step = timed(table, f"probe {type(hook).__name__}", hook.after_step)
        hooks.append(member)
    out = tempfile.mkdtemp(prefix="suite-member-cost-")
    prun = population_loop.setup_population(configs, [f"{out}/seed-{s}" for s in range(S)], hooks=hooks)
    step_fn = prun.step_fn
    step_fn.train_step = timed(table, "training step", step_fn.train_step)
    step_fn.global_grad_sq_unbiased = timed(table, "global G-hat_t", step_fn.global_grad_sq_unbiased)
    stacked = population_loop._prepare_members  # noqa: SLF001
    population_loop._prepare_members = timed(table, "probes' stacked forwards", stacked)  # noqa: SLF001
    tic = CLOCK()
    try:
        population_loop.execute_population(prun)
    finally:
        population_loop._prepare_members = stacked  # noqa: SLF001
    total = CLOCK() - tic
    per = 1000.0 / (S * steps)
    print(f"part 1: {configs[0].method.name} {configs[0].method.direction}, S = {S} members, {steps} steps, "
          f"{total:.1f} s CPU; per member-step (ms):")
    for name, seconds in sorted(table.items(), key=lambda kv: -kv[1]):
        print(f"  {name:34s} {seconds * per:8.1f}")
    print(f"  {'rest (loop, records, switches)':34s} {(total - sum(table.values())) * per:8.1f}")
    print(f"  {'total':34s} {total * per:8.1f}")
    for seeds in (10, 20):
        minutes = 2 * seeds * 1000 * total / (S * steps) / 2 / 60
        print(f"  the two ZeroLock groups at {seeds} seeds x 1000 steps on 2 cores, at this run's mix of probed "
              f"steps: {minutes:.0f} min")
    return total * per, prun


def part2(prun: population_loop.PopulationRun, repeats: int) -> None:
    """The batched global Ĝ_t and the flat mode switch against their per-member/recursive forms."""
    step_fn: PopulationStep = prun.step_fn
    population, members = step_fn.population, prun.members
    batches = [run.stream.next_batch() for run in members]
    chunked = members[0].chunked
    chunked.train()
    times: dict[str, list[float]] = defaultdict(list)
    worst = 0.0
    for _ in range(repeats):
        tic = CLOCK()
        together = step_fn.global_grad_sq_unbiased(batches)
        times["population"].append(CLOCK() - tic)
        tic = CLOCK()
        alone = []
        for s, (run, batch) in enumerate(zip(members, batches, strict=True)):
            with population.member(s):
                alone.append(global_grad_sq_unbiased(run.step_fn, batch))
        times["per member"].append(CLOCK() - tic)
        worst = max(worst, *(abs(a - b) / abs(b) for a, b in zip(together, alone, strict=True) if b))
        tic = CLOCK()
        chunked.train(False)
        chunked.train(True)
        times["flat"].append(CLOCK() - tic)
        tic = CLOCK()
        torch.nn.Module.train(chunked, False)
        torch.nn.Module.train(chunked, True)
        times["recursive"].append(CLOCK() - tic)
        tic = CLOCK()
        with population.member(len(members) - 1):
            pass
        times["member"].append(CLOCK() - tic)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    S = len(members)
    print(f"part 2: medians of {repeats} alternating repetitions (ms)")
    print(f"  global G-hat_t of {S} members: one population pass {med['population']:.1f}, each member's own "
          f"{med['per member']:.1f}: ratio {med['per member'] / med['population']:.2f}; "
          f"largest relative difference {worst:.1e}")
    print(f"  eval/train switch pair: flat {med['flat']:.2f}, nn.Module recursion {med['recursive']:.2f}: "
          f"ratio {med['recursive'] / med['flat']:.1f}")
    print(f"  Population.member(s) entered and left, S = {S}: {med['member']:.2f}")


def main() -> None:
    args = parse_args()
    keep_freed_memory()
    torch.set_num_threads(1)
    configs = group_configs(args.group, args.members, args.steps, args.lr)
    _, prun = part1(configs)
    part2(prun, args.repeats)


if __name__ == "__main__":
    main()
