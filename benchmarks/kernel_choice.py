"""Benchmark (not a test): the eager and the compiled float32 kernels against each other and float64.

For each model (default: the embedded one, K = 4, V = 4,096; SmolLM2-135M, K = 5, V = 49,152)
the readouts log p̃ [K+1, N, V] of ``--rows`` × 32 tokens (default 8: N = 256) of the embedded
corpus are taken before and after one Adam-like step (lr·sign(g), Adam's first step; lr per
model, chosen so that the mean |Δ log p| is about 1e-2) on the chunks' layers, readout frozen.
Then, for each (α, ε_m) of ``--configs`` (ε_g = 0.1):

* the float64 references (``theory.stability.stability_terms`` for the paper and implemented
  objectives, ``probes.minimizers.minimizer_metrics``) and their time;
* ``step_sums`` four ways, interleaved (the order rotates every repeat), median of
  ``--repeats``: eager without kept features, eager with the features of ``before`` kept
  from the previous call (as in the probed loop, where ``cached_sums`` keeps them), compiled
  (``compiled=True``), and the compiled path's one-pass formulas without ``torch.compile``
  (what a compiled run executes once dynamo gives up); the first compiled call's time minus
  a steady call's is the warm-up (compiling, in a fresh inductor cache directory), and the
  same after ``torch._dynamo.reset()`` the warm-up with inductor's cache filled ("cached");
* the max relative error of each against the references, and where: every per-chunk value
  of R before and after, φ, the actual change and q per objective (remainder = actual − φ
  relative to |actual| + |φ|), and every minimizer metric.

``--no-compiler`` runs the compiled path with no C++ compiler to be found (set ``CXX`` to a
missing file) and prints what happens; ``--recompiles N`` calls it at N values of α in one
process (dynamo's recompile limit is 8). Times are process CPU time (``--clock cpu``)::

    python3 benchmarks/kernel_choice.py --threads 1 --repeats 5
    CXX=/nonexistent/g++ python3 benchmarks/kernel_choice.py --no-compiler
    python3 benchmarks/kernel_choice.py --recompiles 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
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
    p.add_argument("--no-compiler", action="store_true", help="only: the compiled path without a C++ compiler")
    p.add_argument("--recompiles", type=int, default=0, metavar="N", help="only: compiled calls at N values of alpha")
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
    """Times (s) and errors of the four ways, and the reference's time."""
    from probes.kernels import _COMPILED, _one_pass, step_sums

    eps_g = 0.1
    t_ref, refs = _timed(lambda: references(before, after, labels, alpha, eps_g, eps_m))

    def eager():
        return step_sums(before, after, labels, alpha, eps_g, eps_m)

    def kept():
        keep: dict = {}
        step_sums(None, before, labels, alpha, eps_g, eps_m, keep=keep)  # the previous step's call (untimed)
        return lambda: step_sums(before, after, labels, alpha, eps_g, eps_m, keep=keep)

    def compiled():
        return step_sums(before, after, labels, alpha, eps_g, eps_m, compiled=True)

    def one_pass():  # the compiled path's formulas without torch.compile
        fn, _COMPILED["fn"] = _COMPILED["fn"], _one_pass
        try:
            return compiled()
        finally:
            _COMPILED["fn"] = fn

    eager()  # untimed: touches the buffers
    warm, first = _timed(compiled)
    fell_back = _COMPILED.get("failed")
    ways = [("eager", eager), ("eager kept", None), ("compiled", compiled), ("one-pass", one_pass)]
    times: dict[str, list[float]] = {name: [] for name, _ in ways}
    outs = {"compiled": first}
    for r in range(repeats):
        for name, fn in ways[r % 4:] + ways[:r % 4]:
            t, outs[name] = _timed(kept()) if fn is None else _timed(fn)
            times[name].append(t)
    med = {name: statistics.median(v) for name, v in times.items()}
    torch._dynamo.reset()  # compile again: dynamo traces anew, inductor's cache (from the first compile) hits
    cached, _ = _timed(compiled)
    return {"ref": t_ref, "warm": warm, "cached": cached, "med": med, "fell_back": fell_back,
            "err": {name: errors(out, refs, alpha) for name, out in outs.items()}}


def _small():
    torch.manual_seed(0)
    before = torch.log_softmax(torch.randn(5, 64, 4096), -1)
    after = torch.log_softmax(before + 1e-2 * torch.randn_like(before), -1)
    after[0] = before[0]
    return before, after, torch.randint(0, 4096, (64,))


def no_compiler() -> None:
    """The compiled path with ``CXX`` pointing nowhere: time to the outcome and the package's warning."""
    from probes.kernels import _COMPILED, step_sums

    before, after, labels = _small()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t, _ = _timed(lambda: step_sums(before, after, labels, 0.5, 0.1, 0.0, compiled=True))
        t2, _ = _timed(lambda: step_sums(before, after, labels, 0.5, 0.1, 0.0, compiled=True))
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    print(f"no C++ compiler (CXX={os.environ.get('CXX')}): first call {t:.2f} s, second {t2:.3f} s; "
          f"compiled failed: {_COMPILED.get('failed')!r}; RuntimeWarnings: {said}")


def recompiles(count: int) -> None:
    """Compiled calls at ``count`` values of α in one process (V = 4,096, N = 64, K = 4): the first call's
    and a later call's time, next to eager, and whether the package saw a failure."""
    from probes.kernels import _COMPILED, step_sums

    before, after, labels = _small()
    for i in range(count):
        alpha = round(0.05 + 0.05 * i, 2)
        first, _ = _timed(lambda: step_sums(before, after, labels, alpha, 0.1, 0.0, compiled=True))  # noqa: B023
        later = min(_timed(lambda: step_sums(before, after, labels, alpha, 0.1, 0.0, compiled=True))[0]  # noqa: B023
                    for _ in range(3))
        eager = min(_timed(lambda: step_sums(before, after, labels, alpha, 0.1, 0.0))[0] for _ in range(3))  # noqa: B023
        print(f"alpha {alpha:4}: compiled first call {first:6.2f} s, then {later * 1e3:6.1f} ms; eager "
              f"{eager * 1e3:6.1f} ms; failure seen by the package: {_COMPILED.get('failed')}", flush=True)


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    if args.clock == "wall":
        CLOCK[0] = time.perf_counter
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")  # cold compiles
    if args.no_compiler:
        no_compiler()
        return
    if args.recompiles:
        recompiles(args.recompiles)
        return
    print(f"threads {torch.get_num_threads()}, {args.clock} clock, {args.repeats} interleaved repeats, eps_g = 0.1, "
          f"torch {torch.__version__}; times: median ms per step_sums call (before -> after, with minimizers)")
    print(f"{'model':>14} {'V':>6} {'K':>2} {'alpha':>5} {'eps_m':>5} | {'eager':>7} {'kept':>7} {'compiled':>8} "
          f"{'1-pass':>7} | {'eager/comp':>10} {'kept/comp':>9} | {'warm-up s':>9} {'cached s':>8} | {'f64 ms':>7}")
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
            print(f"{path:>14} {after.shape[-1]:>6} {int(chunks):>2} {alpha:>5} {eps_m:>5} | {med['eager']:>7.1f} "
                  f"{med['eager kept']:>7.1f} {med['compiled']:>8.1f} {med['one-pass']:>7.1f} | "
                  f"{med['eager'] / med['compiled']:>10.2f} {med['eager kept'] / med['compiled']:>9.2f} | "
                  f"{m['warm'] - m['med']['compiled']:>9.1f} {m['cached'] - m['med']['compiled']:>8.1f} | "
                  f"{m['ref'] * 1e3:>7.0f}" + ("" if m["fell_back"] is None else f" COMPILE FAILED: {m['fell_back']}"),
                  flush=True)
            for name, e in m["err"].items():
                print(f"{'':>16}max rel. error {name:>10}: " + ", ".join(
                    f"{part} {value:.1e} ({where})" for part, (value, where) in e.items()))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
