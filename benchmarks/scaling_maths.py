"""Benchmark (not a test): the step-scaling probe's float64 maths per probed step, against the definition.

After its forwards, a probed step of ``ScalingProbe`` computes, for both objectives and every
(factor, direction) point, φ, q, ρ and the drift from [K+1, N, V] readouts. The probe builds what
depends on ω^t once (``FirstOrder``, ``Drift``), shares Δ and log p between the objectives and
regroups the drift's sums. The definition's form evaluates each point on its own:
``stability_terms`` for φ, q, ρ and R by ``chunk_divergence`` before and after for the drift.
On readouts of the suite's shape (embedded model: K = 4, N = 64 probe positions, V = 4096;
default factors, three directions), timed alternately, it prints the median seconds of each per
probed step, their ratio and the largest difference of the values::

    python3 benchmarks/scaling_maths.py --threads 1 --repeats 3
    python3 benchmarks/scaling_maths.py --vocab 49152 --chunks 5   # SmolLM2's vocabulary
"""

from __future__ import annotations

import argparse
import statistics
import time
from types import SimpleNamespace

import torch

from probes.readout_pass import objective_targets
from probes.scaling import ScalingProbe
from zerolock_theory.config import MethodConfig
from zerolock_theory.records import SCALING
from zerolock_theory.theory.stability import chunk_divergence, stability_terms

DIRECTIONS = ("actual", "random", "antithetic")


def _readouts(args: argparse.Namespace, gen: torch.Generator, factors) -> tuple[torch.Tensor, list[dict]]:
    shape = (args.chunks + 1, args.positions, args.vocab)
    logits = 3.0 * torch.randn(shape, generator=gen, dtype=torch.float64)
    points = [{c: torch.log_softmax(logits + c * args.step * torch.randn(shape, generator=gen, dtype=torch.float64), -1)
               for c in factors} for _ in DIRECTIONS]
    return torch.softmax(logits, -1), points


def _definition(before: torch.Tensor, points: list[dict], targets: dict, alpha: float) -> dict[str, float]:
    """Every point's φ and drift by the definition, one point at a time."""
    out = {}
    for direction, scaled in zip(DIRECTIONS, points, strict=True):
        for objective, p_y in targets.items():
            for c, log_p in scaled.items():
                p = log_p.exp()
                terms = stability_terms(before[:-1], p[:-1], before[1:], p_y, alpha, objective)
                r_after = sum(chunk_divergence(p[k - 1], p[k], p_y, alpha, objective).mean() for k in range(1, p.shape[0]))
                r_before = sum(chunk_divergence(before[k - 1], p[k], p_y, alpha, objective).mean()
                               for k in range(1, p.shape[0]))
                out[SCALING.key(objective, c, "phi", direction)] = float(terms.phi_total)
                out[SCALING.key(objective, c, "drift", direction)] = float(r_after - r_before)
    return out


def _probe(probe: ScalingProbe, ctx, before: torch.Tensor, points: list[dict]) -> dict:
    shared = probe._start(ctx, before)
    out = {}
    for direction, scaled in zip(DIRECTIONS, points, strict=True):
        out.update(probe._metrics(shared, before, scaled, direction))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=4, help="K (default 4, the embedded suite's)")
    parser.add_argument("--positions", type=int, default=64, help="N probe positions (the suite's probe_positions)")
    parser.add_argument("--vocab", type=int, default=4096, help="V (default 4096, the embedded model's)")
    parser.add_argument("--step", type=float, default=0.01, help="size of the logits' move at c = 1")
    args = parser.parse_args()
    if min(args.threads, args.repeats, args.chunks, args.positions, args.vocab) < 1:
        parser.error("--threads, --repeats, --chunks, --positions and --vocab must be >= 1")
    torch.set_num_threads(args.threads)
    probe = ScalingProbe()
    gen = torch.Generator().manual_seed(0)
    before, points = _readouts(args, gen, probe.factors)
    labels = torch.randint(0, args.vocab, (args.positions,), generator=gen)
    probe.targets = objective_targets(labels, args.vocab, 0.0, probe.epsilon)
    ctx = SimpleNamespace(config=SimpleNamespace(method=MethodConfig(alpha=0.5)))
    times: dict[str, list[float]] = {"probe": [], "definition": []}
    for _ in range(args.repeats):
        tic = time.perf_counter()
        fast = _probe(probe, ctx, before, points)
        times["probe"].append(time.perf_counter() - tic)
        tic = time.perf_counter()
        slow = _definition(before, points, probe.targets, 0.5)
        times["definition"].append(time.perf_counter() - tic)
    gap = max(abs(fast[key] - value) for key, value in slow.items())
    probe_s, definition_s = (statistics.median(times[name]) for name in ("probe", "definition"))
    n = len(probe.factors) * len(DIRECTIONS)
    print(f"K = {args.chunks}, N = {args.positions}, V = {args.vocab}, {n} points x 2 objectives a probed step, "
          f"{args.threads} thread(s), median of {args.repeats}")
    print(f"probe {probe_s:.3f} s   definition {definition_s:.3f} s   ratio {definition_s / probe_s:.2f}   "
          f"largest |difference| of phi and drift {gap:.1e}")


if __name__ == "__main__":
    main()
