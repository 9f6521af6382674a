"""``ProbeSettings``: the scalars of a run's ``[probes]`` table, shared by every probe.

Kept apart from ``zerolock_theory.config`` (which builds ``TrainConfig`` from it) so that each
module stays one concept; like ``data_config``, it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_FACTORS", "RETIRED_PROBE_KEYS", "SHARED_PROBE_KEYS", "ProbeSettings", "drop_retired", "scaling_axes",
           "scaling_directions", "split_probes"]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


SHARED_PROBE_KEYS = ("n_positions", "seed", "epsilon")
DEFAULT_FACTORS: tuple[float, ...] = tuple(2.0**-i for i in range(7))
"""The step-scaling probe's factors c when its table sets none: 1, 1/2, …, 1/64."""
RETIRED_PROBE_KEYS = {
    "compile": "the stability and minimizer kernels are not compiled (one float32 kernel runs on every "
               "device, docs/PROBES.md)",
}
"""Retired ``[probes]`` settings → why. A config that holds one (a run's ``config.json``, a
recipe) loads: ``drop_retired`` drops these keys, which change nothing.
``--set`` refuses them with that line (``config_overrides.apply_overrides``)."""


@dataclass
class ProbeSettings:
    """The scalars of ``[probes]``, shared by every probe: the probe batch B and ε of g_k.

    ``n_positions`` labelled positions chosen by ``seed`` (None: the run seed); ``epsilon``
    smooths p_y in g_k and the paper's R when ``method.epsilon`` = 0. Each probe's own table
    (``[probes.NAME]``) holds ``every`` and its other options.
    """

    n_positions: int = 256
    """Labelled positions in the probe batch B."""
    seed: int | None = None
    """Seed that chooses B; null = the run seed."""
    epsilon: float = 0.1
    """ε of p_y in g_k and the paper's R when method.epsilon = 0, in [0, 1)."""

    def __post_init__(self) -> None:
        n, seed, eps = self.n_positions, self.seed, self.epsilon
        _require(isinstance(n, int) and not isinstance(n, bool) and n >= 1,
                 f"probes.n_positions must be an integer >= 1, got {n!r}")
        _require(seed is None or (isinstance(seed, int) and not isinstance(seed, bool)),
                 f"probes.seed must be an integer, got {seed!r}")
        _require(isinstance(eps, (int, float)) and not isinstance(eps, bool) and 0.0 <= eps < 1.0,
                 f"probes.epsilon must lie in [0, 1), got {eps!r}")
        self.epsilon = float(eps)


def drop_retired(raw: dict[str, Any]) -> dict[str, Any]:
    """``[probes]`` without the ``RETIRED_PROBE_KEYS``, shared or in a probe's table (a new dict)."""
    return {k: {o: v for o, v in value.items() if o not in RETIRED_PROBE_KEYS} if isinstance(value, dict) else value
            for k, value in raw.items() if k not in RETIRED_PROBE_KEYS}


def split_probes(raw: Any) -> tuple[ProbeSettings, dict[str, dict[str, Any]]]:
    """``[probes]`` → shared settings and per-probe tables.

    Scalars of ``[probes]`` are the shared settings; tables are probes. Older recipes set
    n_positions / seed / epsilon in each probe's table: those are lifted to the shared
    settings when they agree, and a mismatch is an error here, not at run time.
    """
    _require(isinstance(raw, dict), "[probes] must be a table of probe name -> options")
    shared = {str(k): v for k, v in raw.items() if not isinstance(v, dict)}
    tables = {str(k): dict(v) for k, v in raw.items() if isinstance(v, dict)}
    bad = set(shared) - set(SHARED_PROBE_KEYS)
    _require(not bad, f"[probes]: {sorted(bad)} must be tables [probes.NAME] or one of {list(SHARED_PROBE_KEYS)}")
    for key in SHARED_PROBE_KEYS:
        seen = {name: t.pop(key) for name, t in tables.items() if key in t}
        values = {*seen.values(), *([shared[key]] if key in shared else [])}
        _require(len(values) <= 1, f"[probes]: {key} must be the same for every probe (set it once in "
                                   f"[probes]), got {dict(seen, **({'probes': shared[key]} if key in shared else {}))}")
        if values:
            shared[key] = values.pop()
    return ProbeSettings(**shared), tables


def scaling_directions(random_baseline: bool = True, antithetic: bool = True) -> tuple[str, ...]:
    """The directions the step-scaling probe scales each probed step (``records.SCALING_DIRECTIONS``):
    the update alone, or with a random direction of the same norms, or with its mirror too."""
    if not random_baseline:
        return ("actual",)
    return ("actual", "random", "antithetic") if antithetic else ("actual", "random")


def scaling_axes(table: dict[str, dict[str, Any]]) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """The step-scaling probe's factors (largest first) and directions from a run's per-probe
    tables (``TrainConfig.probes``); none when the probe is absent or ``enabled = false``."""
    options = table.get("scaling")
    if options is None or not options.get("enabled", True):
        return (), ("actual",)
    factors = tuple(sorted((float(c) for c in options.get("factors", DEFAULT_FACTORS)), reverse=True))
    return factors, scaling_directions(bool(options.get("random_baseline", True)), bool(options.get("antithetic", True)))
