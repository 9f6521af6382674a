"""Benchmark (not a test): the float32 stability/minimizer kernel against the float64 references.

The version of this file at commit 79260f0 chose the kernel: it timed the eager kernel (kept)
against the compiled one (removed since) and measured both against float64; its numbers are
in docs/PROBES.md, "Cost". This version times and checks the kept kernel at the same shapes.

For each model (default: the embedded one, K = 4, V = 4,096; SmolLM2-135M, K = 5, V = 49,152)
the readouts log p̃ [K+1, N, V] of ``--rows`` × 32 tokens (default 8: N = 256) of the embedded
corpus are taken before and after one Adam-like step (lr·sign(g), Adam's first step; lr per
model, chosen so that the mean |Δ log p| is about 1e-2) on the chunks' layers, readout frozen.
Then, for each (α, ε_m) of ``--configs`` (ε_g = 0.1):

* the float64 references (``theory.stability.stability_terms`` for the paper and implemented
  objectives, ``probes.minimizers.minimizer_metrics``) and their time;
* ``step_sums`` two ways, interleaved (the order alternates), median of ``--repeats``: without
  kept features, and with the features of ``before`` kept from the previous call (as in the
  probed loop, where ``cached_sums`` keeps them, up to ``KEEP_BYTES``);
* the max relative error against the references, and where: every per-chunk value of R
  before and after, φ, the actual change and q per objective (remainder = actual − φ relative
  to |actual| + |φ|), and every minimizer metric.

Times are process CPU time (``--clock cpu``)::

    python3 benchmarks/kernel_choice.py --threads 1 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages

CLOCK = [time.process_time]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="*", default=["embedded:4:1e-5", "smollm2-135m:5:1e-6"],
                   metavar="PATH:K:LR", help="model, chunks and the lr of the step between the two readouts")
    p.add_argument("--configs", nargs="*", default=["0.5:0", "0.3:0.05"], metavar="ALPHA:EPS_M")
    p.add_argument("--rows", type=int, default=8, help="sequences of 32 tokens (N = 32 * rows positions)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    return p.parse_args()


def step_readouts(path: str, chunks: int, rows: int = 8, width: int = 32, lr: float = 1e-4):
    """log p̃ before and after one lr·sign(g) step of CE on the chunks' layers, and the labels."""
    from probes.readout_pass import log_readouts
    from zerolock_theory.corpus import load_texts
    from zerolock_theory.data import _tokenize, pack_blocks
    from zerolock_theory.models.chunking import ChunkedLM
    from zerolock_theory.models.loading import load_model

    model, tok = load_model(path)
    chunked = ChunkedLM(model, chunks)
    chunked.freeze_readout()
    blocks = pack_blocks(_tokenize(tok, load_texts("embedded")[:40]), tok.eos_token_id, width + 1)
    ids = blocks[torch.randperm(len(blocks), generator=torch.Generator().manual_seed(0))[:rows]]
    inputs, labels = ids[:, :-1], ids[:, 1:].flatten()
    mask = torch.ones_like(inputs, dtype=torch.bool)
    before = log_readouts(chunked, inputs, None, mask)
    loss = torch.nn.functional.cross_entropy(chunked(inputs).flatten(0, 1), labels)
    loss.backward()
    with torch.no_grad():
        for p in chunked.layers.parameters():
            if p.grad is not None:
                p -= lr * p.grad.sign()
        after = log_readouts(chunked, inputs, None, mask)
    return before, after, labels


def references(before, after, labels, alpha: float, eps_g: float, eps_m: float) -> dict[str, dict]:
    """float64 reference values by objective (and "minimizers")."""
    from probes.minimizers import minimizer_metrics
    from probes.readout_pass import label_targets
    from zerolock_theory.theory.stability import stability_terms

    out = {"minimizers": minimizer_metrics(after, labels, eps_g, eps_m, alpha, "forward")}
    vocab = after.shape[-1]
    for objective, eps in (("paper", eps_g), ("implemented", eps_m)):
        p_y = label_targets(labels, vocab, eps).log()
        out[objective] = stability_terms(before[:-1], after[:-1], before[1:], p_y, alpha, objective, log_input=True)
    return out


FIELDS = ("r_before", "r_after", "phi", "actual", "q")


def _rel(got: torch.Tensor, ref: torch.Tensor) -> float:
    got, ref = got.double().flatten(), ref.double().flatten()
    err = (got - ref).abs()
    if bool(((ref == 0) & (err > 0)).any()):
        return float("inf")
    return float((err / ref.abs().clamp_min(1e-300)).where(ref != 0, torch.zeros_like(err)).max())


def errors(sums, refs: dict, alpha: float) -> dict[str, tuple[float, str]]:
    """(max relative error, where) per objective ("paper", "implemented": every field of ``FIELDS``;
    the remainder relative to |actual| + |φ|) and over the minimizer metrics."""
    from probes.minimizers import kernel_minimizer_metrics
    from probes.stability import kernel_terms

    out = {}
    for objective in ("paper", "implemented"):
        ref, fast = refs[objective], kernel_terms(sums, alpha, objective)
        out[objective] = max((_rel(getattr(fast, name), getattr(ref, name)), name) for name in FIELDS)
        scale = ref.actual.abs() + ref.phi.abs()
        rem = float(((fast.remainder - ref.remainder).abs() / scale.clamp_min(1e-300)).where(scale > 0, 0.0).max())
        out[f"{objective} remainder"] = (rem, "remainder")
    got = kernel_minimizer_metrics(sums, "forward")
    out["minimizers"] = max((_rel(torch.tensor(got[k], dtype=torch.float64), torch.tensor(v, dtype=torch.float64)),
                             k.split("/")[-1]) for k, v in refs["minimizers"].items())
    return out


def _timed(fn):
    tic = CLOCK[0]()
    out = fn()
    return CLOCK[0]() - tic, out


def measure(before, after, labels, alpha: float, eps_m: float, repeats: int) -> dict:
    """Times (s) and errors of the kernel without and with kept features, and the reference's time."""
    from probes.kernels import step_sums

    eps_g = 0.1
    t_ref, refs = _timed(lambda: references(before, after, labels, alpha, eps_g, eps_m))

    def plain():
        return step_sums(before, after, labels, alpha, eps_g, eps_m)

    def kept():
        keep: dict = {}
        step_sums(None, before, labels, alpha, eps_g, eps_m, keep=keep)  # the previous step's call (untimed)
        return lambda: step_sums(before, after, labels, alpha, eps_g, eps_m, keep=keep)

    plain()  # untimed: touches the buffers
    times: dict[str, list[float]] = {"kernel": [], "kept": []}
    outs = {}
    for r in range(repeats):
        for name in ("kernel", "kept") if r % 2 == 0 else ("kept", "kernel"):
            t, outs[name] = _timed(plain if name == "kernel" else kept())
            times[name].append(t)
    return {"ref": t_ref, "med": {name: statistics.median(v) for name, v in times.items()},
            "err": {name: errors(out, refs, alpha) for name, out in outs.items()}}


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    if args.clock == "wall":
        CLOCK[0] = time.perf_counter
    print(f"threads {torch.get_num_threads()}, {args.clock} clock, {args.repeats} interleaved repeats, eps_g = 0.1, "
          f"torch {torch.__version__}; times: median ms per step_sums call (before -> after, with minimizers)")
    print(f"{'model':>14} {'V':>6} {'K':>2} {'alpha':>5} {'eps_m':>5} | {'kernel':>7} {'kept':>7} | {'f64 ms':>7}")
    for spec in args.models:
        path, chunks, lr = spec.split(":")
        tic = time.perf_counter()
        before, after, labels = step_readouts(path, int(chunks), rows=args.rows, lr=float(lr))
        move = (after - before)[1:].abs()
        print(f"# {path}: readouts {tuple(after.shape)} in {time.perf_counter() - tic:.1f} s; one lr*sign(g) step, "
              f"lr {lr}: |Δ log p| mean {float(move.mean()):.1e}, max {float(move.max()):.1e}", flush=True)
        for config in args.configs:
            alpha, eps_m = map(float, config.split(":"))
            m = measure(before, after, labels, alpha, eps_m, args.repeats)
            med = {k: v * 1e3 for k, v in m["med"].items()}
            print(f"{path:>14} {after.shape[-1]:>6} {int(chunks):>2} {alpha:>5} {eps_m:>5} | {med['kernel']:>7.1f} "
                  f"{med['kept']:>7.1f} | {m['ref'] * 1e3:>7.0f}", flush=True)
            for name, e in m["err"].items():
                print(f"{'':>16}max rel. error {name:>6}: " + ", ".join(
                    f"{part} {value:.1e} ({where})" for part, (value, where) in e.items()))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
