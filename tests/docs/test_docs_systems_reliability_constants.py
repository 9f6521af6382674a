"""docs/SYSTEMS.md, docs/RELIABILITY.md and docs/ANALYSES.md state the code's constants with the code's values.

Each phrase is built from the constant the code uses, so changing a constant without its doc (or
the doc without the code) fails here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from analyses.stats import bootstrap, seeds
from analyses.systems import memory, throughput
from analyses.theorem1 import convergence
from zerolock_theory.app.workflows import memory_map, progress, verify
from zerolock_theory.pipeline import schedule_model

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _read(name: str) -> str:
    return re.sub(r"\s+", " ", (DOCS / name).read_text(encoding="utf-8"))


SYSTEMS, RELIABILITY, ANALYSES = _read("SYSTEMS.md"), _read("RELIABILITY.md"), _read("ANALYSES.md")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _weight(**overrides: str) -> float:
    """The method weight per step of ``workflows.verify._cost``."""
    return verify._cost({"run": {"steps": 1}}, SimpleNamespace(overrides=tuple(overrides.items())))


@pytest.mark.parametrize("phrase", [
    f"**{_pct(memory.CLAIMED_MEMORY_REDUCTION)} lower peak memory** (ZeroLock ÷ 1F1B = {memory.CLAIMED_MEMORY_RATIO:g})",
    f"**{_pct(memory.CLAIMED_THROUGHPUT_GAIN)} higher throughput** (ZeroLock ÷ 1F1B = "
    f"{throughput.CLAIMED_THROUGHPUT_RATIO:g})",
    f"the total ratio ≤ {memory.CLAIMED_MEMORY_RATIO:g}** (`CLAIMED_MEMORY_RATIO`)",
    f"With at least {memory.MIN_MAP_POINTS} sizes (`MIN_MAP_POINTS`)",
    f"at {', '.join(map(str, memory_map.FACTORS[:-1]))} and {memory_map.FACTORS[-1]} times the suite's sequences "
    "per micro-batch",
    f"the paper states no tokens per micro-batch (`PAPER_TOKENS` is {memory.PAPER_TOKENS})",
    f"how many within {round(100 * throughput.VALIDATED_WITHIN)}%, `VALIDATED_WITHIN`",
    f"`SETTING` ({throughput.SETTING['model']}, K = {throughput.SETTING['chunks']}, "
    f"m = {throughput.SETTING['micro_batches']})",
    f"L = `max_lead` = {inspect.signature(schedule_model.simulate).parameters['lead'].default}",
    f"K ∈ {{{', '.join(map(str, throughput.REAL_CHUNKS))}}}",
    *(f"`{word}`" for word in memory.MAP_OUTCOMES + memory.MEMORY_OUTCOMES + throughput.THROUGHPUT_OUTCOMES),
])
def test_systems_states_the_code_constant(phrase):
    assert phrase in SYSTEMS, phrase


def test_the_systems_doc_names_no_map_outcome_the_code_lacks():
    """Every backticked outcome word of the memory rule in the doc is one the code can give."""
    words = set(memory.MAP_OUTCOMES + memory.MEMORY_OUTCOMES)
    quoted = set(re.findall(r"`((?:as the paper claims|lower than 1F1B|not lower than 1F1B|short of|rises above)[^`]*)`",
                            SYSTEMS))
    assert quoted <= words, quoted - words


@pytest.mark.parametrize("phrase", [
    f"`SETUP_STEPS` = {progress.SETUP_STEPS:g}",
    f"`UNPROBED` = {progress.UNPROBED:g}",
    f"`START_STEPS` = {progress.START_STEPS:g}",
    f"ZeroLock reverse {_weight(**{'method.direction': 'reverse'}):g}, forward "
    f"{_weight(**{'method.direction': 'forward'}):g}, backprop {_weight(**{'method.name': 'backprop'}):g}",
])
def test_reliability_states_the_code_constant(phrase):
    assert phrase in RELIABILITY, phrase


@pytest.mark.parametrize("phrase", [
    f"`MIN_HORIZON` = {convergence.MIN_HORIZON} steps",
    f"with fewer than {seeds.MIN_SEEDS} seeds",
    f"`--n-boot` replicates (default {1000})",
    f"shown next to the paper's {_pct(memory.CLAIMED_MEMORY_REDUCTION)} and {_pct(memory.CLAIMED_THROUGHPUT_GAIN)}",
])
def test_analyses_states_the_code_constant(phrase):
    assert phrase in ANALYSES, phrase


def test_the_stated_defaults_are_the_code_defaults():
    """ANALYSES.md's 95% level, 1000 replicates and L = round(n^{1/3}) blocks are the code's."""
    from zerolock_theory.app.cli import analyze

    assert "All intervals are 95% (`--level`)" in ANALYSES and "L = round(n^{1/3})" in ANALYSES
    assert inspect.signature(seeds.seed_interval).parameters["level"].default == 0.95
    assert [bootstrap.block_length(n) for n in (1, 27, 1000, 1331)] == [1, 3, 10, 11]
    assert "default=1000" in inspect.getsource(analyze)
