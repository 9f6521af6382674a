"""Synthetic run directories with known answers (config.json, manifest.json, metrics.jsonl).

Import from tests in other folders with::

    sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
    from synthetic_runs import write_run, write_suite

Known answers: E[Ā_T] = c·T^{−β} exactly (G_t has mean c·(T^{1−β} − (T−1)^{1−β}) and
mean-one lognormal AR(1) noise; the biased ``train/grad_norm_sq`` adds a floor ``FLOOR``);
the proof probe's drift is first or second order in η_t (``proof_record``); log ρ_t = log C + s·log ‖Δp̃_t‖ + noise; chunk CE strictly
decreasing in k when ``monotone``; the minimizer probe makes chunks move toward m_k or g_k
(``tracks``: that target's distance shrinks over training, the other's stays flat), and
``minimizer_frame`` builds a bare ``probe/minimizer`` table with chosen levels and movement.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from zerolock_theory.records import (
    CHUNK,
    EVAL_CHUNK,
    MINIMIZER,
    PROOF,
    SCALING,
    SCALING_STEP,
    STABILITY,
    STABILITY_FLAG,
    Layout,
    with_layout,
)

__all__ = ["laid_out", "minimizer_frame", "power_law_series", "proof_record", "write_run", "write_suite", "write_systems"]


def power_law_series(
    rng: np.random.Generator,
    n: int,
    beta: float,
    c: float = 2.0,
    sigma: float = 0.4,
    phi: float = 0.5,
) -> np.ndarray:
    """G_t, t = 0..n-1, with E[(1/T) Σ_{t<T} G_t] = c·T^{−β} and AR(1) lognormal noise."""
    t = np.arange(1, n + 1, dtype=float)
    mean = c * (t ** (1 - beta) - (t - 1) ** (1 - beta))
    z = np.empty(n)
    e = rng.normal(size=n)
    z[0] = e[0]
    for i in range(1, n):
        z[i] = phi * z[i - 1] + math.sqrt(1 - phi**2) * e[i]
    return mean * np.exp(sigma * z - sigma**2 / 2)


def _config(
    method: str,
    direction: str,
    lr: float,
    seed: int,
    steps: int,
    chunks: int,
    schedule: str,
    alpha: float,
    epsilon: float,
) -> dict[str, Any]:
    return {
        "model": {
            "path": "tiny-random-llama",
            "chunks": chunks,
            "dtype": "float32",
            "device": "cpu",
            "lora": {"rank": 4, "alpha": 8},
        },
        "data": {"source": "synthetic", "seq_len": 16, "batch_size": 2, "seed": seed},
        "method": {
            "name": method,
            "direction": direction or "forward",  # backprop's config keeps the default direction
            "alpha": alpha,
            "epsilon": epsilon,
            "p0": "embedding",
        },
        "optim": {"name": "sgd", "lr": lr, "schedule": schedule},
        "run": {"steps": steps, "seed": seed, "eval_every": 10},
        "probes": {"stability": {}, "minimizers": {}, "gradients": {"every": 5},
                   "scaling": {"factors": list(FACTORS), "antithetic": False}},
    }


def _stability(rng, rec, obj, chunks, lr_t, slope, defined):
    if not defined:
        rec[STABILITY_FLAG.key(obj, "defined")] = False
        rec[STABILITY_FLAG.key(obj, "reason")] = "one-hot labels: KL(p || p_y) is infinite"
        for k in [*map(str, range(1, chunks + 1)), "total"]:
            for f in ("phi", "q", "ratio", "actual", "remainder"):
                rec[STABILITY.key(obj, k, f)] = None
        return
    rec[STABILITY_FLAG.key(obj, "defined")] = True
    for k in [*map(str, range(1, chunks + 1)), "total"]:
        dp = lr_t * 10.0 * math.exp(0.3 * rng.normal())
        rho = 0.5 * dp**slope * math.exp(0.3 * rng.normal())
        positive = rng.random() > 0.2
        phi = rho * dp * dp if positive else -0.1 * dp
        remainder = 0.3 * dp * dp * rng.normal()
        rec[STABILITY.key(obj, k, "phi")] = phi
        rec[STABILITY.key(obj, k, "q")] = dp * dp
        rec[STABILITY.key(obj, k, "ratio")] = max(phi, 0.0) / (dp * dp)
        rec[STABILITY.key(obj, k, "actual")] = phi + remainder
        rec[STABILITY.key(obj, k, "remainder")] = remainder


def _minimizer(rng, rec, chunks, t, tracks, base):
    """The tracked target's distance shrinks toward ``near``; the other stays at ``far``."""
    near, far = (0.03, 0.2) if tracks == "m" else (0.2, 0.03)
    for k in range(1, chunks + 1):
        shrink = 1.0 + 1.0 / (1 + t)
        move_m, move_g = (shrink, 1.0) if tracks == "m" else (1.0, shrink)
        rec[MINIMIZER.key(k, "tv_m")] = near * move_m * math.exp(0.1 * rng.normal())
        rec[MINIMIZER.key(k, "tv_g")] = far * move_g * math.exp(0.1 * rng.normal())
        rec[MINIMIZER.key(k, "kl_m_p")] = 2 * rec[MINIMIZER.key(k, "tv_m")] ** 2
        rec[MINIMIZER.key(k, "kl_p_g")] = 2 * rec[MINIMIZER.key(k, "tv_g")] ** 2
        rec[MINIMIZER.key(k, "gap")] = 0.1 * shrink / k
        rec[MINIMIZER.key(k, "ce")] = base - 0.2 * k


def laid_out(frame: pd.DataFrame, chunks: int, *, random: bool = True) -> pd.DataFrame:
    """``frame`` with the layout of a run of K = ``chunks`` whose scaling probe used ``FACTORS``
    (and the random direction, without the antithetic one, when ``random``), as ``load_run`` attaches."""
    return with_layout(frame, Layout(chunks, factors=FACTORS, directions=("actual", "random") if random else ("actual",)))


def minimizer_frame(
    steps: int = 60,
    *,
    chunks: int = 3,
    tv_m: float = 0.05,
    tv_g: float = 0.05,
    move_m: float = 0.0,
    move_g: float = 0.0,
    noise: float = 0.05,
    seed: int = 0,
) -> pd.DataFrame:
    """``step`` and ``probe/minimizer/{k}/{tv_m, tv_g, kl_m_p, kl_p_g}`` for t < ``steps``.

    TV to target x at step t is ``tv_x · (1 + move_x · exp(−5t/steps))`` times mean-free
    lognormal noise of scale ``noise``: it falls by a relative amount ≈ move_x/(1 + move_x)
    from the first steps to the trained level ``tv_x``, and is flat when ``move_x = 0``.
    KL = 2·TV² (Pinsker's bound at equality).
    """
    rng = np.random.default_rng(seed)
    t = np.arange(steps, dtype=float)
    decay = np.exp(-5.0 * t / steps)
    data: dict[str, Any] = {"step": np.arange(steps)}
    for k in range(1, chunks + 1):
        for name, level, move, kl_name in (
            ("tv_m", tv_m, move_m, "kl_m_p"),
            ("tv_g", tv_g, move_g, "kl_p_g"),
        ):
            tv = level * (1 + move * decay) * np.exp(noise * rng.normal(size=steps) - noise**2 / 2)
            data[MINIMIZER.key(k, name)] = tv
            data[MINIMIZER.key(k, kl_name)] = 2 * tv**2
    return laid_out(pd.DataFrame(data), chunks)


FACTORS = tuple(2.0**-i for i in range(7))


def _scaled_values(rng, order: str, share: float, noise: float) -> tuple[float, list[float]]:
    """q″ and φ(c) at ``FACTORS`` for one direction: φ(c) = c·φ′ + c²·b ("first", φ′ > 0 with
    probability ``share``) or φ(c) = c²·a with 0 < a ≤ 2·q″ ("bounded": φ′ = 0, ρ(c) ≤ 2)."""
    q2 = math.exp(noise * rng.normal()) * 1e-3
    positive = rng.random() < share
    phi1 = (1 if positive else -1) * 1e-3 * math.exp(noise * rng.normal())
    b = 1e-4 * rng.normal()
    a = q2 * rng.uniform(0.1, 2.0)
    return q2, [c * phi1 + c * c * b if order == "first" else c * c * a for c in FACTORS]


def scaling_record(
    rng, rec, obj: str, order: str, share: float = 0.7, noise: float = 0.2, random_share: float | None = 0.5
) -> None:
    """Step-scaling keys of one step for the actual update (``order``, ``share``) and, unless
    ``random_share`` is None, the random baseline: first order with φ′ > 0 at rate ``random_share``."""
    directions = [("actual", order, share)] + ([] if random_share is None else [("random", "first", random_share)])
    for direction, kind, p in directions:
        q2, phis = _scaled_values(rng, kind, p, noise)
        for c, phi in zip(FACTORS, phis, strict=True):
            q = c * c * q2
            rec[SCALING.key(obj, c, "phi", direction)] = phi
            rec[SCALING.key(obj, c, "q", direction)] = q
            rec[SCALING.key(obj, c, "ratio", direction)] = max(phi, 0.0) / q
        rec[SCALING_STEP.key(obj, "phi_prime", direction)] = phis[-1] / FACTORS[-1]
        rec[SCALING_STEP.key(obj, "defined", direction)] = True


def scaling_frame(order: str, seed: int, steps: int = 30, **kw: Any) -> pd.DataFrame:
    """A run's scaled steps only (one per row), for the scaling analysis."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(steps):
        rec: dict[str, Any] = {"step": 10 * t}
        scaling_record(rng, rec, "implemented", order, **kw)
        rows.append(rec)
    return laid_out(pd.DataFrame(rows), 3, random=kw.get("random_share", 0.5) is not None)


def write_readouts(run: Path, seed: int, toward: str, steps: int, chunks: int, alpha: float, epsilon: float) -> None:
    """A full readout store at steps 0 and ``steps`` (p_k moved all the way to its m_k or g_k) and the probe batch."""
    from zerolock_theory.readout_store import ReadoutWriter

    rng = np.random.default_rng(seed + 99)
    vocab, n, eps = 6, 8, epsilon if epsilon > 0 else 0.1
    labels = rng.integers(0, vocab, n)
    p_y = np.full((n, vocab), eps / vocab)
    p_y[np.arange(n), labels] += 1 - eps
    start = rng.dirichlet(np.ones(vocab), size=(chunks + 1, n))
    end = start.copy()
    for k in range(1, chunks + 1):
        m = alpha * p_y + (1 - alpha) * end[k - 1]
        g = p_y**alpha * end[k - 1] ** (1 - alpha)
        end[k] = m if toward == "m" else g / g.sum(-1, keepdims=True)
    meta = {"format": "zerolock-readouts", "version": 1, "rows": chunks + 1, "n_positions": n,
            "vocab_size": vocab, "mode": "full", "dtype": "float32"}
    writer = ReadoutWriter(run / "readouts", meta)
    writer.append(0, {"probs": start.astype(np.float32)})
    writer.append(steps, {"probs": end.astype(np.float32)})
    writer.close()
    (run / "probe_batch.json").write_text(json.dumps({"labels": labels.tolist(), "n_positions": n}))


def write_run(
    root: Path,
    name: str,
    *,
    method: str = "zerolock",
    direction: str = "forward",
    lr: float = 1e-3,
    seed: int = 0,
    steps: int = 120,
    chunks: int = 3,
    schedule: str = "inv_sqrt",
    alpha: float = 0.5,
    epsilon: float = 0.1,
    beta: float = 0.5,
    beta_global: float = 0.5,
    global_every: int = 5,
    eval_every: int = 10,
    stability_slope: float = -1.0,
    scaling: str = "first",
    tracks: str = "m",
    monotone: bool = True,
    probes: bool = True,
    final_ce_drop: float = 1.0,
    proof: str | None = "second",
    scaling_every: int = 2,
    scaling_share: float = 0.9,
    floor_beta: float = 0.0,
) -> Path:
    """Write one synthetic run directory ``root/name`` and return its path."""
    rng = np.random.default_rng(seed * 1000 + int(round(lr * 1e6)) + (direction == "reverse"))
    run = Path(root) / name
    run.mkdir(parents=True, exist_ok=True)
    config = _config(method, direction, lr, seed, steps, chunks, schedule, alpha, epsilon)
    (run / "config.json").write_text(json.dumps(config, indent=2))
    manifest = {
        "versions": {"python": "3.11", "torch": "2.13"},
        "git_commit": "abc1234",
        "device": "cpu",
        "start_time": "2025-01-01T00:00:00",
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    g_local = power_law_series(rng, steps, beta)
    g_global = power_law_series(rng, steps, beta_global, c=5.0)
    scaling_rng = np.random.default_rng(rng.bit_generator.seed_seq.entropy + 7)  # own stream: other keys unchanged
    proof_rng = np.random.default_rng(rng.bit_generator.seed_seq.entropy + 11)
    floor_rng = np.random.default_rng(rng.bit_generator.seed_seq.entropy + 13)
    # the noise floor tr Σ_t/B of the biased norm: FLOOR·T^-floor_beta with 20% noise (0: flat)
    floor = FLOOR * np.arange(1, steps + 1) ** -floor_beta * (1 + 0.2 * floor_rng.standard_normal(steps))
    lines = []
    for t in range(steps):
        lr_t = lr / math.sqrt(t + 1) if schedule == "inv_sqrt" else lr
        base = 4.0 - final_ce_drop * (1 - 1 / math.sqrt(1 + t / 10))
        sign = -1.0 if monotone else 1.0
        ce = [base + sign * 0.2 * k + 0.01 * rng.normal() for k in range(1, chunks + 1)]
        rec: dict[str, Any] = {
            "step": t,
            "train/lr": lr_t,
            "train/tokens": 32,
            "train/grad_norm_sq": float(g_local[t] + floor[t]),  # the biased norm: Ĝ_t plus the noise floor
            "train/grad_sq_unbiased": float(g_local[t]),  # same known mean path (Ĝ_t)
            "train/final_ce": ce[-1],
        }
        for k in range(1, chunks + 1):
            rec[CHUNK.key(k, "ce")] = ce[k - 1]
            rec[CHUNK.key(k, "grad_norm_sq")] = float(g_local[t]) / chunks
        rec["probe/gradient/global_sq"] = (
            float(g_global[t]) if method == "backprop" or t % global_every == 0 else None
        )
        if t % global_every == 0:
            rec["train/global_grad_sq_unbiased"] = float(g_global[t])
        if t == 0:
            rec["eval/ce_initial"] = 4.1
        if t % eval_every == eval_every - 1:
            rec["eval/ce"] = ce[-1] + 0.05
            for k in range(1, chunks + 1):
                rec[EVAL_CHUNK.key(k, "ce")] = ce[k - 1] + 0.05
        if probes and method == "zerolock":
            _stability(rng, rec, "implemented", chunks, lr_t, stability_slope, True)
            _stability(rng, rec, "paper", chunks, lr_t, stability_slope, epsilon > 0)
            if t % 2 == 0:
                _minimizer(rng, rec, chunks, t, tracks, base)
            if t % scaling_every == 0:
                scaling_record(scaling_rng, rec, "implemented", scaling, share=scaling_share)
                if epsilon > 0:
                    scaling_record(scaling_rng, rec, "paper", scaling, share=scaling_share)
            if proof is not None:
                proof_record(proof_rng, rec, lr_t, proof)
        lines.append(json.dumps(rec))
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    if probes and method == "zerolock":
        write_readouts(run, seed, tracks, steps, chunks, alpha, epsilon)
    return run


FLOOR = 1.0
"""The noise floor of the synthetic biased ``train/grad_norm_sq``."""


def proof_record(rng: np.random.Generator, rec: dict[str, Any], lr_t: float, order: str) -> None:
    """The proof probe's totals for both objectives: descent_t = −η_t·(1 + noise) and drift_t =
    η_t·(1 + noise) (``order`` "first") or η_t²·(1 + noise) ("second"), noise N(0, 1)."""
    for obj in ("paper", "implemented"):
        scale = lr_t if order == "first" else lr_t**2
        rec[PROOF.key(obj, "drift")] = float(scale * (1 + rng.normal()))
        rec[PROOF.key(obj, "descent")] = float(-lr_t * (1 + 0.3 * rng.normal()))


def write_systems(directory: Path) -> Path:
    """A ``systems.json`` in the nested layout with a 20% memory cut and 5% throughput gain, and a
    per-stage memory split (two repeats) whose totals give ZeroLock / 1F1B = 0.8."""
    directory.mkdir(parents=True, exist_ok=True)

    def split(weights: float, activations: float) -> dict[str, float]:
        parts = {"weights": weights, "gradients": 10.0, "optimizer": 20.0, "activations": activations,
                 "communication": 5.0}
        return {**parts, "total": sum(parts.values())}

    zl_split = [[split(500, 215), split(500, 115)]] * 2  # max-stage totals 750 and 1F1B's 937.5
    bp_split = [[split(500, 402.5), split(500, 300)]] * 2
    data = {
        "zerolock": {
            "4": {"peak_saved_activation_bytes": [800, 600, 400, 200], "tokens_per_s": 1050.0, "memory": zl_split}
        },
        "1f1b": {
            "4": {"peak_saved_activation_bytes": [1000, 900, 800, 700], "tokens_per_s": 1000.0, "memory": bp_split}
        },
        "gpipe": {"4": {"peak_saved_activation_bytes": [2000] * 4, "tokens_per_s": 900.0}},
    }
    path = directory / "systems.json"
    path.write_text(json.dumps(data))
    return path


def write_suite(
    root: Path, *, steps: int = 120, seeds=(0, 1), lrs=(1e-3, 3e-3, 1e-2), reverse_seeds=(0, 1, 2)
) -> list[Path]:
    """A forward lr sweep × seeds, reverse runs (one per reverse seed), one backprop run, and a systems dir."""
    runs = [
        write_run(root, f"zl_fwd_lr{lr:g}_s{seed}", lr=lr, seed=seed, steps=steps)
        for lr in lrs
        for seed in seeds
    ]
    runs.extend(write_run(root, f"zl_rev_s{s}", direction="reverse", tracks="g", seed=s, steps=steps)
                for s in reverse_seeds)
    runs.append(
        write_run(root, "bp_s0", method="backprop", direction="", steps=steps, probes=False)
    )
    write_systems(root / "systems")
    runs.append(root / "systems")
    return runs
