"""Typed run configuration: nested dataclasses validated on construction.

A recipe (TOML, YAML or JSON) loads into ``TrainConfig`` with ``load_config``; ``key=value``
overrides with dotted keys (``method.alpha=0.3``, ``config_overrides``) apply on top. ``config.json`` in a run
directory is ``TrainConfig.to_dict()``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zerolock_theory.config_overrides import apply_overrides
from zerolock_theory.config_types import check_section, show_value
from zerolock_theory.data_config import DataConfig
from zerolock_theory.probe_config import (
    SHARED_PROBE_KEYS,
    ProbeSettings,
    drop_retired,
    scaling_axes,
    split_probes,
)
from zerolock_theory.records import Layout
from zerolock_theory.vocab import (
    DTYPES,
    METHODS,
    OPTIMIZERS,
    P0,
    SCHEDULES,
    Direction,
    Dtype,
    Method,
    Optimizer,
    Schedule,
)

__all__ = [
    "LoraSettings",
    "MethodConfig",
    "ModelConfig",
    "OptimConfig",
    "RunConfig",
    "TrainConfig",
    "alpha_of",
    "check_sources",
    "load_config",
    "one_alpha",
    "read_recipe",
]

DEVICE_PATTERN = r"auto|cpu|mps|cuda(:\d+)?"


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass
class LoraSettings:
    """LoRA adapters on each chunk's layers (peft). ``target_modules=None``: per-architecture default."""

    enabled: bool = True
    """LoRA adapters; false = full-parameter training of the decoder layers."""
    rank: int = 8
    """Rank r of each adapter."""
    alpha: float = 16.0
    """peft's lora_alpha; the scaling is alpha / rank."""
    dropout: float = 0.0
    """Dropout on the adapters' input, in [0, 1)."""
    target_modules: list[str] | None = None
    """Module names that get adapters; null = the architecture's default."""
    init_b_std: float = 0.0
    """Std of a normal init of every B (seeded by run.seed); 0 = peft's B = 0 (no warm-up control)."""

    def __post_init__(self) -> None:
        _require(self.rank >= 1, f"lora.rank must be >= 1, got {self.rank}")
        _require(isinstance(self.init_b_std, (int, float)) and not isinstance(self.init_b_std, bool)
                 and math.isfinite(self.init_b_std) and self.init_b_std >= 0,
                 f"lora.init_b_std must be a finite number >= 0, got {self.init_b_std!r}")
        _require(self.alpha > 0, f"lora.alpha must be > 0, got {self.alpha}")
        _require(0.0 <= self.dropout < 1.0, f"lora.dropout must lie in [0, 1), got {self.dropout}")


@dataclass
class ModelConfig:
    """Which model, how it is split into chunks, where it runs."""

    path: str = "embedded"
    """'embedded', a local Hugging Face model directory, a .gguf file or smollm2-135m (GGUF, converted once into the model cache)."""
    chunks: int = 4
    """Number of chunks K."""
    boundaries: list[int] | None = None
    """Layer index where each chunk after the first starts; null = an even split."""
    dtype: Dtype = "float32"
    """Parameter dtype: float32, float64, bfloat16 or float16."""
    autocast: str | None = None
    """Autocast dtype (GPU): bfloat16 or float16; null = none."""
    device: str = "auto"
    """auto (cuda when present, else cpu), cpu, mps, cuda or cuda:N."""
    readout_chunk_size: int | None = None
    """Positions per readout slice (large vocabularies); null = all at once."""
    lora: LoraSettings = field(default_factory=LoraSettings)
    """The LoRA adapters of each chunk."""

    def __post_init__(self) -> None:
        if isinstance(self.lora, dict):
            self.lora = LoraSettings(**self.lora)
        _require(self.chunks >= 1, f"model.chunks must be >= 1, got {self.chunks}")
        _require(self.dtype in DTYPES, f"model.dtype must be one of {DTYPES}, got {self.dtype!r}")
        _require(
            self.autocast in (None, "bfloat16", "float16"),
            f"model.autocast must be null, 'bfloat16' or 'float16', got {self.autocast!r}",
        )
        if self.boundaries is not None:
            _require(
                len(self.boundaries) == self.chunks - 1,
                f"model.boundaries needs chunks-1 = {self.chunks - 1} entries, got {self.boundaries}",
            )
            _require(
                all(b > a for a, b in zip([0, *self.boundaries], self.boundaries, strict=False)),
                f"model.boundaries must be strictly increasing and > 0, got {self.boundaries}",
            )
        if self.readout_chunk_size is not None:
            _require(self.readout_chunk_size >= 1, "model.readout_chunk_size must be >= 1")
        _require(
            re.fullmatch(DEVICE_PATTERN, self.device) is not None,
            f"model.device must be auto, cpu, mps or cuda[:N], got {self.device!r}",
        )


@dataclass
class MethodConfig:
    """ZeroLock's local losses, or the backprop baseline (docs/MATH.md, "Local losses")."""

    name: Method = "zerolock"
    """zerolock or backprop."""
    direction: Direction = "forward"
    """forward (CE, what implementations train) or reverse (the paper's Eq. 14)."""
    alpha: float | list[float] = 0.5
    """Weight α of the task term: one number in [0, 1] for every chunk, or a list of K numbers in
    (0, 1], chunk 1 first (e.g. [0.5, 0.5, 0.5, 1.0]: α = 1 on the output chunk only)."""
    epsilon: float = 0.0
    """Label smoothing ε of p_y, in [0, 1) (reverse needs ε > 0)."""
    p0: P0 = "embedding"
    """p_0: the embedding readout of h_0, or uniform."""
    frozen_chunks: list[int] = field(default_factory=list)
    """Chunks (1-based) whose adapters never update: they run forward and report their losses, but
    no gradient is kept for them and their optimizers never step (e.g. [1, 2, 3] at K = 4: the
    output chunk alone trains; with backprop, backprop restricted to the other chunks)."""
    detach: bool = True
    """ZeroLock only. true: each chunk's local loss on the detached input h_{k-1} (ZeroLock);
    false: the un-detached twin, Σ_k w_k·ℓ_k (``loss_weights``) backpropagated through every
    chunk, each ℓ_k's target p_{k-1} still a detached constant (training/undetached.py)."""
    loss_weights: list[float] | None = None
    """The un-detached twin's weights w_k of Σ_k w_k·ℓ_k (K numbers >= 0, not all 0); null = all 1.
    Only with detach = false."""

    def __post_init__(self) -> None:
        _require(self.name in METHODS, f"method.name must be one of {METHODS}, got {self.name!r}")
        _require(
            self.direction in ("forward", "reverse"),
            f"method.direction must be 'forward' or 'reverse', got {self.direction!r}",
        )
        if isinstance(self.alpha, list):
            _require(len(self.alpha) >= 1 and all(0.0 < a <= 1.0 for a in self.alpha),
                     f"method.alpha as a list needs one number in (0, 1] per chunk, got {self.alpha}")
        else:
            _require(0.0 <= self.alpha <= 1.0, f"method.alpha must lie in [0, 1], got {self.alpha}")
        _require(all(isinstance(k, int) and k >= 1 for k in self.frozen_chunks)
                 and len(set(self.frozen_chunks)) == len(self.frozen_chunks),
                 f"method.frozen_chunks must list distinct chunk numbers >= 1, got {self.frozen_chunks}")
        _require(self.detach or self.name == "zerolock",
                 "method.detach = false is ZeroLock's un-detached twin; backprop has nothing to detach")
        _require(self.loss_weights is None or not self.detach,
                 "method.loss_weights weights the un-detached twin's sum; set method.detach = false")
        if self.loss_weights is not None:
            _require(all(w >= 0 for w in self.loss_weights) and any(w > 0 for w in self.loss_weights),
                     f"method.loss_weights must be numbers >= 0, not all 0, got {self.loss_weights}")
        _require(0.0 <= self.epsilon < 1.0, f"method.epsilon must lie in [0, 1), got {self.epsilon}")
        _require(self.p0 in ("embedding", "uniform"), f"method.p0 must be 'embedding' or 'uniform', got {self.p0!r}")
        _require(
            not (self.name == "zerolock" and self.direction == "reverse" and self.epsilon == 0.0
                 and max(_alphas(self.alpha)) > 0),
            "reverse direction with epsilon = 0 is undefined: KL(p || e_y) = +inf for every p off the "
            "one-hot label (docs/MATH.md, degenerate case); set method.epsilon > 0, e.g. 0.1",
        )


def _alphas(alpha: float | list[float]) -> list[float]:
    return list(alpha) if isinstance(alpha, list) else [alpha]


def alpha_of(method: MethodConfig, k: int) -> float:
    """α of chunk k (1-based): ``method.alpha`` itself when one number, else its k-th entry."""
    if isinstance(method.alpha, list):
        return float(method.alpha[k - 1])
    return method.alpha


def one_alpha(method: MethodConfig, what: str) -> float:
    """The single α of ``method`` for a measurement that needs one α for every chunk; a one-line
    ``ValueError`` naming ``what`` when ``method.alpha`` differs between chunks."""
    values = _alphas(method.alpha)
    _require(len(set(values)) == 1, f"{what} needs one method.alpha for every chunk, got {method.alpha}")
    return float(values[0])


@dataclass
class OptimConfig:
    """One optimizer per chunk; the learning rate η_t follows ``schedule``."""

    name: Optimizer = "adamw"
    """sgd or adamw (sgd is the theorem's setting, see recipes/theorem_sgd.toml)."""
    lr: float = 1e-3
    """Base learning rate η_0."""
    schedule: Schedule = "constant"
    """constant, cosine (with warmup) or inv_sqrt (η_0/√(t+1), Theorem 1)."""
    warmup_steps: int = 0
    """Steps of linear warmup (every schedule starts after them)."""
    min_lr_ratio: float = 0.0
    """Cosine floor as a fraction of lr."""
    momentum: float = 0.0
    """SGD momentum, in [0, 1)."""
    weight_decay: float = 0.0
    """Weight decay (torch's SGD / AdamW weight_decay)."""
    betas: tuple[float, float] = (0.9, 0.999)
    """AdamW's (β1, β2)."""
    max_grad_norm: float | None = None
    """Per-chunk gradient clipping norm; null = off."""

    def __post_init__(self) -> None:
        self.betas = tuple(self.betas)  # type: ignore[assignment]
        _require(self.name in OPTIMIZERS, f"optim.name must be one of {OPTIMIZERS}, got {self.name!r}")
        _require(self.schedule in SCHEDULES, f"optim.schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        _require(self.lr > 0, f"optim.lr must be > 0, got {self.lr}")
        _require(self.warmup_steps >= 0, "optim.warmup_steps must be >= 0")
        _require(0.0 <= self.min_lr_ratio <= 1.0, "optim.min_lr_ratio must lie in [0, 1]")
        _require(0.0 <= self.momentum < 1.0, "optim.momentum must lie in [0, 1)")
        _require(self.weight_decay >= 0, "optim.weight_decay must be >= 0")
        _require(self.max_grad_norm is None or self.max_grad_norm > 0, "optim.max_grad_norm must be > 0")


@dataclass
class RunConfig:
    """Length, seeding and bookkeeping of one run."""

    steps: int = 200
    """Number of updates."""
    seed: int = 0
    """Seed of the adapters and the training RNG."""
    eval_every: int = 20
    """Steps between held-out evaluations."""
    checkpoint_every: int = 50
    """Steps between checkpoints."""
    keep_checkpoints: int = 2
    """Checkpoints kept on disk (the newest ones)."""
    progress: bool = True
    """Show a progress bar."""
    threads: int | None = None
    """Torch intra-op threads; null = torch's choice (one per core; 1 in a sweep or verify worker).
    Give each run 1 when several share the machine: an OpenMP region waits for every one of its
    threads, so with more threads than free cores every op waits for a busy core."""
    report_to: list[str] = field(default_factory=list)
    """Also export metrics: tensorboard, wandb or both (comma-separated on the command line)."""
    global_grad_every: int = 0
    """Steps between the unbiased global Ĝ_t of the task loss from two halves of the training batch; 0 = off."""
    unbiased_grad_sq: bool = True
    """Ĝ_t of every step from two halves of the minibatch; keeps a copy of the first half's gradient (one more gradient's memory: small with LoRA, the gradients' size in full fine-tuning); false = off (null in the log)."""

    def __post_init__(self) -> None:
        if isinstance(self.report_to, str):  # "tensorboard,wandb" from a flag or --set
            self.report_to = [name.strip() for name in self.report_to.split(",") if name.strip()]
        _require(isinstance(self.report_to, list) and set(self.report_to) <= {"tensorboard", "wandb"},
                 f"run.report_to must name tensorboard and/or wandb, got {self.report_to!r}")
        _require(self.steps >= 1, f"run.steps must be >= 1, got {self.steps}")
        _require(self.eval_every >= 1, "run.eval_every must be >= 1")
        _require(self.checkpoint_every >= 1, "run.checkpoint_every must be >= 1")
        _require(self.keep_checkpoints >= 1, "run.keep_checkpoints must be >= 1")
        _require(self.threads is None or self.threads >= 1, "run.threads must be >= 1")
        _require(isinstance(self.global_grad_every, int) and not isinstance(self.global_grad_every, bool)
                 and self.global_grad_every >= 0,
                 f"run.global_grad_every must be an integer >= 0, got {self.global_grad_every!r}")
        _require(isinstance(self.unbiased_grad_sq, bool),
                 f"run.unbiased_grad_sq must be true or false, got {self.unbiased_grad_sq!r}")


_SECTIONS = {
    "model": ModelConfig,
    "data": DataConfig,
    "method": MethodConfig,
    "optim": OptimConfig,
    "run": RunConfig,
}


@dataclass
class TrainConfig:
    """Everything a run needs. ``probes`` maps a probe name to its options (see ``probes``)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    """Which model, its chunks, where it runs."""
    data: DataConfig = field(default_factory=DataConfig)
    """Where the text comes from and how it is batched."""
    method: MethodConfig = field(default_factory=MethodConfig)
    """ZeroLock's local losses or the backprop baseline."""
    optim: OptimConfig = field(default_factory=OptimConfig)
    """The per-chunk optimizers and the learning-rate schedule."""
    run: RunConfig = field(default_factory=RunConfig)
    """Length, seeding and bookkeeping."""
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Probe name → its options (see docs/PROBES.md)."""
    probe_settings: ProbeSettings = field(default_factory=ProbeSettings)
    """The scalar settings of [probes], shared by every probe."""

    def __post_init__(self) -> None:
        K, method = self.model.chunks, self.method
        if isinstance(method.alpha, list):
            _require(len(method.alpha) == K,
                     f"method.alpha as a list needs model.chunks = {K} entries, got {len(method.alpha)}: {method.alpha}")
        _require(all(k <= K for k in method.frozen_chunks),
                 f"method.frozen_chunks names chunks beyond model.chunks = {K}: {method.frozen_chunks}")
        _require(len(method.frozen_chunks) < K, f"method.frozen_chunks freezes all {K} chunks: nothing would train")
        if method.loss_weights is not None:
            _require(len(method.loss_weights) == K,
                     f"method.loss_weights needs model.chunks = {K} entries, got {method.loss_weights}")

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrainConfig:
        """Build from nested plain data; unknown sections or keys raise ``ValueError``."""
        unknown = set(raw) - set(_SECTIONS) - {"probes"}
        _require(not unknown, f"unknown config section(s): {sorted(unknown)}")
        kwargs: dict[str, Any] = {}
        for name, section in _SECTIONS.items():
            values = raw.get(name)
            _require(values is None or isinstance(values, dict),
                     f"{name}={show_value(values)}: expected a table of {name} settings")
            try:
                kwargs[name] = section(**check_section(section, dict(values or {}), name))
            except TypeError as exc:
                raise ValueError(f"[{name}]: {exc}") from exc
        probes = raw.get("probes") or {}
        _require(isinstance(probes, dict), f"probes={show_value(probes)}: expected a table of probe name -> options")
        probes = drop_retired(probes)  # e.g. probes.compile in an older run's config.json
        for key, options in probes.items():
            _require(options is None or isinstance(options, dict) or key in SHARED_PROBE_KEYS,
                     f"probes.{key}={show_value(options)}: expected a table of options for probe {key!r} "
                     f"(the shared settings are {', '.join(SHARED_PROBE_KEYS)})")
        probes = {k: {} if v is None and k not in SHARED_PROBE_KEYS else v for k, v in probes.items()}
        kwargs["probe_settings"], kwargs["probes"] = split_probes(probes)
        return cls(**kwargs)

    def layout(self) -> Layout:
        """The sizes of the run's recorded axes: K (``model.chunks``) and the step-scaling probe's
        factors and directions (none when the probe is off; a probe this version lacks adds no axis)."""
        factors, directions = scaling_axes(self.probes)
        return Layout(self.model.chunks, factors=factors, directions=directions)

    def to_dict(self) -> dict[str, Any]:
        """Nested plain data, JSON serialisable (the run's ``config.json``); shared probe settings in ``probes``."""
        out = json.loads(json.dumps(dataclasses.asdict(self)))
        settings = out.pop("probe_settings")
        if out["probes"]:
            out["probes"] = {**settings, **out["probes"]}
        return out


def _parse_error(exc: Exception) -> str:
    """One line from a TOML/YAML/JSON parser error (YAML's are several lines long)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())


def read_recipe(path: str | Path) -> dict[str, Any]:
    """Read a TOML, YAML or JSON recipe (a file, or a packaged recipe's name) into plain data, with one-line errors."""
    from zerolock_theory.recipes import list_recipes, resolve_recipe

    path = resolve_recipe(path)
    _require(not path.is_dir(), f"config file {path} is a directory")
    _require(path.is_file(), f"config file not found: {path} (packaged recipes: {', '.join(list_recipes())})")
    _require(
        path.suffix in (".toml", ".yaml", ".yml", ".json"),
        f"config file must end in .toml, .yaml, .yml or .json: {path}",
    )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"cannot parse {path}: not UTF-8 text") from exc
    try:
        if path.suffix == ".toml":
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10
                import tomli as tomllib
            data = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text) or {}
    except Exception as exc:  # parser errors of any format
        raise ValueError(f"cannot parse {path}: {_parse_error(exc)}") from exc
    _require(isinstance(data, dict), f"{path}: top level must be a table")
    return data


def check_sources(config: TrainConfig) -> None:
    """The model source (``models.loading.check_model_source``) and the data source exist:
    a one-line ``ValueError`` before any load or write."""
    from zerolock_theory.models.loading import check_model_source

    check_model_source(config.model.path)
    if config.data.source != "embedded":
        _require(Path(config.data.source).expanduser().exists(),
                 f"data source {config.data.source!r} does not exist")


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Recipe file (optional) + overrides → validated ``TrainConfig``."""
    raw = read_recipe(path) if path is not None else {}
    return TrainConfig.from_dict(apply_overrides(raw, overrides or []))
