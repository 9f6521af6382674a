"""Measure the step against the output's gradient at ω⁰ (and after a few training steps) over seeds, and print its tables (docs/DIAGNOSIS.md).

    OMP_NUM_THREADS=1 python3 scripts/alignment.py --config tune_embedded --seeds 0 1 2 3 4 --lr 0.2 0.4
    OMP_NUM_THREADS=1 python3 scripts/alignment.py --config tune_embedded --set optim.lr=0.2 --after-steps 0 50 200
    OMP_NUM_THREADS=1 python3 scripts/alignment.py --config tune_smollm2_cpu --set method.alpha=[0.5,0.5,0.5,0.5,1]

For each seed: the model is loaded and its adapters initialised with that seed (``run.seed``),
and a held-out batch of the validation split is drawn with that seed (``LMData.probe_batch``,
``data.batch_size × data.seq_len`` positions; the split itself is fixed by ``data.seed``). On that
batch, at ω⁰: ``training.alignment.measure_alignment`` per chunk, the first-order change of the
output CE predicted for one SGD step at each ``--lr`` and the change measured for that step,
every readout's CE, and p_0's top-1 = input-token rate. The tables give the mean over seeds with a
95% t-interval (``analyses.stats.seeds.seed_interval``) and the words of ``first_order_outcome`` from the
interval of the inner product. A recipe's ``[tune]`` table is ignored; ``--set`` overrides its
training keys (``method.direction=reverse`` needs ``method.epsilon``, e.g. 0.1).

``--after-steps N …``: the same tables at ω^N for each N, the parameters reached by N training
steps of the configured method (``optim.lr`` its η_0, the recipe's schedule) on the training
stream ordered by the seed (``data.order_seed``, as ``zerolock tune`` orders a seed's run), taken
by ``training.alignment.train_steps``; the held-out batch stays the seed's. ``--json PATH``
writes every per-seed number.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages, not an installed one

import torch  # noqa: E402

from analyses.stats.seeds import seed_interval  # noqa: E402
from zerolock_theory.config import TrainConfig, read_recipe  # noqa: E402
from zerolock_theory.config_overrides import apply_overrides  # noqa: E402
from zerolock_theory.models import resolve_device  # noqa: E402
from zerolock_theory.theory.losses import IGNORE_INDEX  # noqa: E402
from zerolock_theory.training.alignment import (  # noqa: E402
    first_order_outcome,
    measure_alignment,
    measured_change,
    step_direction,
    train_steps,
)
from zerolock_theory.training.loop import build_components  # noqa: E402
from zerolock_theory.training.steps import build_step  # noqa: E402


def _config(recipe: str, overrides: list[str], seed: int) -> TrainConfig:
    raw = {k: v for k, v in read_recipe(recipe).items() if k != "tune"}
    return TrainConfig.from_dict(apply_overrides(raw, [*overrides, f"run.seed={seed}", f"data.order_seed={seed}",
                                                       "run.progress=false"]))


@torch.no_grad()
def _readouts(chunked, batch) -> tuple[list[float], float]:
    """CE(e_y, p_k) for k = 0..K on ``batch``, and p_0's top-1 = input-token rate."""
    labels = batch["labels"]
    mask = labels != IGNORE_INDEX
    hiddens = chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
    ces = []
    for h in hiddens:
        log_p = torch.log_softmax(chunked.readout(h).float(), -1)
        ces.append(float(-log_p.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)[mask].mean()))
    top = chunked.readout(hiddens[0]).argmax(-1)
    return ces, float((top == batch["input_ids"])[mask].float().mean())


def _measure(step, chunked, batch, lrs: list[float], method) -> dict:
    chunked.eval()
    chunks = measure_alignment(step.readout, method, step.params, batch)
    direction, _ = step_direction(step.readout, method, step.params, batch)
    measured = {lr: measured_change(step.readout, method, step.params, batch, lr, direction) for lr in lrs}
    ces, copy = _readouts(chunked, batch)
    return {"chunks": chunks, "measured": measured, "ces": ces, "copy": copy}


def measure_seed(recipe: str, overrides: list[str], seed: int, lrs: list[float],
                 after_steps: list[int] = (0,)) -> dict[int, dict]:
    """Every per-seed number of the tables at ω^N for each N of ``after_steps`` (ascending)."""
    config = _config(recipe, overrides, seed)
    torch.set_num_threads(config.run.threads or torch.get_num_threads())
    device = resolve_device(config.model.device)
    chunked, _, data, stream = build_components(config, device)
    step = build_step(chunked, config.method, config.optim, config.model, max(config.run.steps, max(after_steps)))
    batch = data.probe_batch(config.data.batch_size * config.data.seq_len, seed)
    out, done = {}, 0
    for n in sorted(after_steps):
        done = train_steps(step, stream, done, n - done, device)
        out[n] = {**_measure(step, chunked, batch, lrs, config.method), "vocab": data.vocab_size, "config": config}
    return out


def _iv(values: list[float], digits: int = 3) -> str:
    iv = seed_interval(values, min_seeds=2)
    if iv is None:
        return f"{values[0]:.{digits}g}" if values else "-"
    return f"{iv.estimate:.{digits}g} [{iv.low:.{digits}g}, {iv.high:.{digits}g}]"


def _words(values: list[float]) -> str:
    iv = seed_interval(values, min_seeds=2)
    return "not testable" if iv is None else first_order_outcome(iv.low, iv.high)


def report(results: list[dict], lrs: list[float], after: int = 0) -> None:
    """Print the per-chunk table, the total, predicted against measured, the readouts and p_0."""
    config = results[0]["config"]
    K = config.model.chunks
    m = config.method
    at = "w0" if after == 0 else f"w^{after} (after {after} steps at eta_0 = {config.optim.lr:g}, {config.optim.schedule})"
    print(f"\n### at {at}\n")
    print(f"model {config.model.path}, K = {K}, {m.name} {m.direction}, alpha = {m.alpha}, eps = {m.epsilon}, "
          f"p0 = {m.p0}, frozen = {m.frozen_chunks}, detach = {m.detach}; {len(results)} seeds; "
          f"batch {config.data.batch_size} x {config.data.seq_len} held-out positions per seed; 95% t-intervals")
    lr0 = lrs[0]
    print(f"\n| chunk | cos(g_out, g_ZL) | norm g_ZL | norm g_out | <g_out, g_ZL> | predicted dCE at eta = {lr0:g} "
          "| first order |")
    print("|---|---|---|---|---|---|---|")
    for k in range(1, K + 1):
        cs = [r["chunks"][k - 1] for r in results]
        inner = [c.inner for c in cs]
        print(f"| {k} | {_iv([c.cosine for c in cs])} | {_iv([c.norm_step for c in cs])} | "
              f"{_iv([c.norm_out for c in cs])} | {_iv(inner)} | {_iv([-lr0 * v for v in inner])} | {_words(inner)} |")
    total = [sum(c.inner for c in r["chunks"]) for r in results]
    out_sq = [sum(c.norm_out ** 2 for c in r["chunks"]) for r in results]
    cos_all = [t / math.sqrt(sum(c.norm_step ** 2 for c in r["chunks"]) * o)
               if o > 0 and sum(c.norm_step ** 2 for c in r["chunks"]) > 0 else math.nan
               for t, o, r in zip(total, out_sq, results, strict=True)]
    print(f"| all | {_iv(cos_all)} | | | {_iv(total)} | {_iv([-lr0 * v for v in total])} | {_words(total)} |")
    print("\n| eta | predicted dCE (first order) | measured dCE (one SGD step) | backprop's predicted dCE |")
    print("|---|---|---|---|")
    for lr in lrs:
        print(f"| {lr:g} | {_iv([-lr * v for v in total])} | {_iv([r['measured'][lr] for r in results])} | "
              f"{_iv([-lr * v for v in out_sq])} |")
    vocab = results[0]["vocab"]
    print(f"\n| readout | CE(e_y, p_k) (log V = {math.log(vocab):.3f}) |")
    print("|---|---|")
    for k in range(K + 1):
        print(f"| p_{k} | {_iv([r['ces'][k] for r in results], 4)} |")
    print(f"\np_0 (the head's readout of h_0) top-1 = input token: {_iv([r['copy'] for r in results])} "
          "of labelled positions")


def _record(results: list[dict], seeds: list[int]) -> list[dict]:
    return [{"seed": s, "chunks": [{"chunk": c.chunk, "inner": c.inner, "norm_step": c.norm_step,
                                    "norm_out": c.norm_out} for c in r["chunks"]],
             "measured": {f"{lr:g}": v for lr, v in r["measured"].items()}, "readout_ce": r["ces"],
             "p0_copy_rate": r["copy"]} for s, r in zip(seeds, results, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="tune_embedded", help="recipe (file or packaged name)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--lr", type=float, nargs="+", default=[0.1], help="eta of the predicted / measured step")
    parser.add_argument("--after-steps", type=int, nargs="+", default=[0], metavar="N",
                        help="measure at w^N after N training steps of the method (0 = w0)")
    parser.add_argument("--json", type=Path, default=None, help="write every per-seed number here")
    args = parser.parse_args()
    if min(args.after_steps) < 0:
        parser.error("--after-steps takes N >= 0")
    steps = sorted(set(args.after_steps))
    tic = time.perf_counter()
    per_seed = [measure_seed(args.config, args.overrides, seed, args.lr, steps) for seed in args.seeds]
    for n in steps:
        report([r[n] for r in per_seed], args.lr, n)
    if args.json is not None:
        config = per_seed[0][steps[0]]["config"]
        args.json.write_text(json.dumps({"config": config.to_dict(), "seeds": args.seeds, "lr": args.lr,
                                         "after_steps": {str(n): _record([r[n] for r in per_seed], args.seeds)
                                                         for n in steps}}, indent=1, default=str))
    print(f"\n({time.perf_counter() - tic:.0f} s, {torch.get_num_threads()} thread(s))")


if __name__ == "__main__":
    main()
