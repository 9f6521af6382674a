"""GPU check (not a test): a Qwen2.5-0.5B-shaped model, ZeroLock vs backprop, probes, one table.

A randomly initialised model with the shape of Qwen2.5-0.5B (24 layers, d = 896, 14 heads,
2 KV heads, FFN 4864, V = 151,936, tied embeddings; built from a ``Qwen2Config``, nothing
downloaded) is saved to a temporary directory with the packaged tokenizer (its ids are a
subset of V), and trained with LoRA at K = 4 under bf16 autocast. Measured, in one run:

1. ZeroLock vs plain backprop (its own loss only, no per-chunk readouts): median step time and
   peak CUDA memory per step (``torch.cuda.max_memory_allocated``, reset before each step), interleaved;
2. the probe overhead: training step + every probe's ``after_step`` (readouts top-k store,
   stability, minimizers every step; gradients every 10), ÷ the plain step; and the probe
   forward alone (the floor);
3. a 50-step probed training run (``probed_train``): wall time, records, first/last CE;
4. a 2-stage ZeroLock pipeline (``zerolock_theory.pipeline.launch``, K = 2, M = 2, 6 steps):
   on one GPU both stages share it and the links run on gloo through host memory (NCCL
   refuses two ranks on one device); with two GPUs or more, on NCCL, and 1F1B beside it.
   Reports the final CE, tokens/s and each stage's memory split and
   ``torch.cuda.max_memory_allocated``.

One table, each row printed as it is measured; a part that fails prints a FAILED row (its
traceback on stderr), the others still run, and the exit status is 1. Measured on one H200
(2026-12-04, docs/results/gpu_h200_2026-12-04.md): 180 s in all, the model built in 11 s.
``--tiny`` shrinks everything (2-layer-per-chunk, d = 64, V = 8192, CPU allowed) to check
the script itself in a few seconds::

    python3 benchmarks/gpu_check.py                      # on a GPU machine
    python3 benchmarks/gpu_check.py --tiny --device cpu  # smoke test (tests/benchmarks runs it)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

from probes.readout_pass import readouts
from zerolock_theory.app.workflows.runs import probed_setup, probed_train
from zerolock_theory.config import TrainConfig
from zerolock_theory.jsonio import read_records
from zerolock_theory.records import MINIMIZER
from zerolock_theory.training.loop import quiet_mode, setup

QWEN = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
            num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096)
TINY = dict(vocab_size=8192, hidden_size=64, intermediate_size=128, num_hidden_layers=8,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
PROBES = {"n_positions": 256, "readouts": {"mode": "topk"}, "stability": {}, "minimizers": {},
          "gradients": {"every": 10}}
WIDTH = 36
"""The width of the table's first column."""


def build_model(shape: dict, where: Path, device: str = "cpu") -> Path:
    """A random-init Qwen2 model of ``shape`` saved with the packaged tokenizer (initialised on
    ``device``: half a billion parameters initialise in seconds on a GPU, minutes on one core)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from zerolock_theory.embedded import embedded_path

    torch.manual_seed(0)
    config = Qwen2Config(**shape, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0, pad_token_id=1)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(where)
    del model
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(embedded_path()) / name, where / name)
    return where


def config(model: Path, method: str, device: str, steps: int, seq_len: int, batch: int, probes: dict | None = None,
           chunks: int = 4) -> TrainConfig:
    """The run config shared by every measurement (bf16 autocast on CUDA)."""
    return TrainConfig.from_dict({
        "model": {"path": str(model), "chunks": chunks, "device": device,
                  "autocast": "bfloat16" if device.startswith("cuda") else None, "readout_chunk_size": 128},
        "data": {"seq_len": seq_len, "batch_size": batch, "eval_batches": 1},
        "method": {"name": method},
        "run": {"steps": steps, "progress": False, "eval_every": max(steps, 1), "checkpoint_every": max(steps, 1),
                "threads": 1 if device == "cpu" else None},  # CPU: one thread, as verify's runs
        "probes": probes or {},
    })


def resolve(device: str) -> str:
    """``auto`` as every command resolves it (``models.resolve_device``): cuda when present, else cpu."""
    from zerolock_theory.models import resolve_device

    return str(resolve_device(device))


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed_step(run, step: int, device: str) -> tuple[float, int]:
    """(seconds, peak bytes) of one training step."""
    batch = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    _sync(device)
    tic = time.perf_counter()
    run.step_fn.train_step(batch, step)
    _sync(device)
    peak = torch.cuda.max_memory_allocated() if device.startswith("cuda") else 0
    return time.perf_counter() - tic, peak


def compare_methods(model: Path, device: str, steps: int, seq_len: int, batch: int, tmp: Path,
                    chunks: int = 4) -> dict:
    """Median step time and peak memory of ZeroLock and plain backprop (its own loss only: no
    per-chunk readouts, ``BackpropStep.readout_every = 0``) at K = ``chunks``, interleaved."""
    runs = {m: setup(config(model, m, device, 10_000, seq_len, batch, chunks=chunks), tmp / m)
            for m in ("zerolock", "backprop")}
    runs["backprop"].step_fn.readout_every = 0
    times: dict[str, list[float]] = {m: [] for m in runs}
    peaks = dict.fromkeys(runs, 0)
    for i in range(steps + 2):
        for m in (("zerolock", "backprop") if i % 2 == 0 else ("backprop", "zerolock")):
            runs[m].chunked.train()
            t, peak = timed_step(runs[m], i, device)
            if i >= 2:
                times[m].append(t)
                peaks[m] = max(peaks[m], peak)
    return {m: (statistics.median(times[m]), peaks[m]) for m in runs}


def probe_overhead(model: Path, device: str, steps: int, seq_len: int, batch: int, tmp: Path,
                   chunks: int = 4) -> dict:
    """Plain step, step + probes, and the probe forward alone (medians, seconds) at K = ``chunks``."""
    plain = setup(config(model, "zerolock", device, 10_000, seq_len, batch, chunks=chunks), tmp / "plain")
    probed = probed_setup(config(model, "zerolock", device, steps + 2, seq_len, batch, PROBES, chunks=chunks),
                          tmp / "probed")
    with quiet_mode(probed.chunked):
        for probe in probed.hooks:
            probe.on_start(probed.hook_ctx)
    out: dict[str, list[float]] = {"plain": [], "probed": [], "forward": []}
    for i in range(steps + 2):
        plain.chunked.train()
        probed.chunked.train()
        t_plain, _ = timed_step(plain, i, device)
        t_train, _ = timed_step(probed, i, device)
        ctx = probed.hook_ctx
        with quiet_mode(probed.chunked):
            tic = time.perf_counter()
            readouts(ctx, i + 1, 256, None)
            _sync(device)
            t_fwd = time.perf_counter() - tic
            for probe in probed.hooks:
                probe.after_step(ctx, i, {})
            _sync(device)
            t_hooks = time.perf_counter() - tic
        if i >= 2:
            out["plain"].append(t_plain)
            out["probed"].append(t_train + t_hooks)
            out["forward"].append(t_fwd)
    for probe in probed.hooks:
        probe.on_end(probed.hook_ctx)
    return {k: statistics.median(v) for k, v in out.items()}


def probed_run(model: Path, device: str, steps: int, seq_len: int, batch: int, tmp: Path) -> dict:
    """A probed training run of ``steps`` steps: wall time and first/last chunk-K CE."""
    tic = time.perf_counter()
    probed_train(config(model, "zerolock", device, steps, seq_len, batch, PROBES), tmp / "train")
    wall = time.perf_counter() - tic
    records = read_records(tmp / "train" / "metrics.jsonl")
    key = MINIMIZER.key(4, "ce")
    ce = [r[key] for r in records if r.get(key) is not None]
    return {"wall": wall, "records": len(records), "ce_first": ce[0] if ce else float("nan"),
            "ce_last": ce[-1] if ce else float("nan")}


def pipeline_check(model: Path, device: str, seq_len: int, batch: int, tmp: Path) -> list[tuple[str, str]]:
    """Rows of the 2-stage pipeline check (module docstring, item 4)."""
    from zerolock_theory.pipeline import PipelineOptions, launch

    gpus = torch.cuda.device_count() if device.startswith("cuda") else 0
    backend = "nccl" if gpus >= 2 else "gloo"
    rows = [("pipeline", f"K=2, M=2, 6 steps, {max(gpus, 1)} {'GPU' if gpus else 'CPU'}(s), links on {backend}")]
    for schedule in ("zerolock", "1f1b") if gpus >= 2 or device == "cpu" else ("zerolock",):
        method = "zerolock" if schedule == "zerolock" else "backprop"
        raw = config(model, method, device, 6, seq_len, batch).to_dict()
        raw["model"]["chunks"], raw["run"]["checkpoint_every"] = 2, 6
        options = PipelineOptions(schedule=schedule, micro_batches=2, backend=backend, measure_memory=True,
                                  max_restarts=0, warmup_steps=2)
        tic = time.perf_counter()
        summary = launch(TrainConfig.from_dict(raw), options, tmp / f"pipe_{schedule}")
        wall = time.perf_counter() - tic
        rate = summary.results[-1].get("tokens_per_s") or float("nan")
        ce = summary.final_train_ce if summary.final_train_ce is not None else float("nan")
        rows.append((f"{schedule} pipeline", f"{wall:.1f} s, final CE {ce:.3f}, {rate:.0f} tok/s"))
        for r in sorted(summary.results, key=lambda r: r["stage"]):
            mem, cuda = r["memory"], r.get("cuda_max_memory_allocated")
            parts = " ".join(f"{k[:4]} {mem[k] / 2**20:.0f}" for k in ("weights", "optimizer", "activations",
                                                                         "communication", "total"))
            rows.append((f"  stage {r['stage']} MiB", parts + (f", cuda max {cuda / 2**20:.0f}" if cuda else "")))
    return rows


def emit(key: str, value: str) -> None:
    """Print one row of the table at once (a run cut off by a time limit keeps its rows)."""
    print(f"{key:<{WIDTH}}  {value}", flush=True)


def attempt(label: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, or ``None`` after a row saying ``label`` failed (its traceback on
    stderr): on a device lent for minutes, one failing part must not hide the others."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 -- reported as a row, then the next part runs
        traceback.print_exc()
        emit(f"{label} FAILED", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200])
        return None


def cost_rows(methods: dict | None, overhead: dict | None, name: str) -> None:
    """The rows of ``compare_methods`` and ``probe_overhead`` (shared with gpu_check_smollm2)."""
    if methods is not None:
        zl, bp = methods["zerolock"], methods["backprop"]
        emit("zerolock step ms", f"{zl[0] * 1e3:.1f}")
        emit("backprop step ms (own loss only)", f"{bp[0] * 1e3:.1f}")
        emit("time ratio zl/bp", f"{zl[0] / bp[0]:.3f}")
        emit(f"zerolock peak MiB ({name})", f"{zl[1] / 2**20:.0f}")
        emit(f"backprop peak MiB ({name})", f"{bp[1] / 2**20:.0f}")
        emit("memory ratio zl/bp", f"{zl[1] / bp[1]:.3f}" if bp[1] else "n/a (CPU)")
    if overhead is not None:
        emit("plain step ms", f"{overhead['plain'] * 1e3:.1f}")
        emit("step + probes ms", f"{overhead['probed'] * 1e3:.1f}")
        emit("probe overhead ratio", f"{overhead['probed'] / overhead['plain']:.3f}")
        emit("floor: probe forward ms",
             f"{overhead['forward'] * 1e3:.1f} (ratio {1 + overhead['forward'] / overhead['plain']:.3f})")


def device_rows(device: str) -> str:
    """Rows naming the device and the library versions; the memory column's name."""
    import peft
    import transformers

    on_cuda = device.startswith("cuda")
    emit("device", torch.cuda.get_device_name(device) if on_cuda else "cpu")
    emit("versions", f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}, "
                     f"python {sys.version.split()[0]}")
    return "torch.cuda" if on_cuda else "cpu"


def main() -> int:
    """Run the measurements, printing each row as it is measured."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiny", action="store_true", help="tiny model, few steps: a smoke test (CPU is fine)")
    p.add_argument("--device", default="auto", help="auto (cuda when present), cuda, cpu, ...")
    p.add_argument("--steps", type=int, default=10, help="timed steps per measurement")
    p.add_argument("--train-steps", type=int, default=50, help="steps of the probed run")
    args = p.parse_args()
    try:
        args.device = resolve(args.device)
    except ValueError as exc:
        print(f"gpu_check: {exc} (use --tiny --device cpu for a smoke test)", file=sys.stderr)
        return 2
    if not args.tiny and not args.device.startswith("cuda"):
        print("gpu_check: no CUDA device (use --tiny --device cpu for a smoke test)", file=sys.stderr)
        return 2
    shape = TINY if args.tiny else QWEN
    steps, train_steps = (2, 3) if args.tiny else (args.steps, args.train_steps)
    seq_len, batch = (32, 2) if args.tiny else (512, 8)
    start = time.perf_counter()
    name = device_rows(args.device)
    emit("model", f"Qwen2-shaped random init, {shape['num_hidden_layers']} layers, d={shape['hidden_size']}, "
                  f"V={shape['vocab_size']}, K=4, batch {batch}x{seq_len}, "
                  f"bf16 autocast={args.device.startswith('cuda')}")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        model = build_model(shape, tmp / "model", args.device)
        emit("model build s", f"{time.perf_counter() - start:.1f}")
        methods = attempt("compare_methods", compare_methods, model, args.device, steps, seq_len, batch, tmp)
        overhead = attempt("probe_overhead", probe_overhead, model, args.device, steps, seq_len, batch, tmp)
        cost_rows(methods, overhead, name)
        run = attempt("probed_run", probed_run, model, args.device, train_steps, seq_len, batch, tmp)
        if run is not None:
            emit(f"probed train {train_steps} steps s", f"{run['wall']:.1f} ({run['records']} records)")
            emit("chunk-K CE first -> last", f"{run['ce_first']:.3f} -> {run['ce_last']:.3f}")
        pipeline_rows = attempt("pipeline_check", pipeline_check, model, args.device, seq_len, batch, tmp)
        for key, value in pipeline_rows or []:
            emit(key, value)
        failed = sum(x is None for x in (methods, overhead, run, pipeline_rows))
    emit("total s", f"{time.perf_counter() - start:.1f}" + (f" ({failed} part(s) FAILED)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
