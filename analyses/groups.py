"""The primary group of a claim, pre-registered before looking at outcomes.

Among the groups of one method (and ZeroLock direction) trained with SGD and η_t ∝ 1/√t
(``optim.schedule = inv_sqrt``), the one with the most runs (seeds), diverged ones included;
ties go to the smaller η_0, then the first group label. Its diverged runs
(``analyses.stats.seeds.diverged``) are excluded, never replaced by another group's runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from analyses.runinfo import RunInfo
from analyses.stats.seeds import diverged

__all__ = ["PrimaryGroup", "primary_group"]


@dataclass(frozen=True)
class PrimaryGroup:
    """The primary group's label, its runs kept as ``(name, frame)`` with their seeds, and the
    excluded ``"name: reason"``."""

    label: str
    runs: list[tuple[str, pd.DataFrame]]
    seeds: list[int]
    excluded: list[str]


def primary_group(table: Sequence[tuple[RunInfo, pd.DataFrame]], method: str, direction: str = "",
                  schedule: str = "inv_sqrt") -> PrimaryGroup | None:
    """The primary group of ``method`` (and ``direction``) under the theorem's schedule, or None."""
    members: dict[str, list[tuple[RunInfo, pd.DataFrame]]] = {}
    for info, frame in table:
        if info.method == method and (not direction or info.direction == direction) \
                and info.optimizer == "sgd" and info.schedule == schedule:
            members.setdefault(info.group, []).append((info, frame))
    if not members:
        return None
    label = min(members, key=lambda g: (-len(members[g]), members[g][0][0].lr, g))
    kept, seeds, excluded = [], [], []
    for info, frame in members[label]:
        why = diverged(frame)
        if why is None:
            kept.append((info.name, frame))
            seeds.append(info.seed)
        else:
            excluded.append(f"{info.name}: {why.reason}")
    return PrimaryGroup(label, kept, seeds, excluded)
