"""README.md and docs/ describe the code as it is: no sentence compares it with an earlier version.

How a number changed from one commit to the next is in git; the pages under docs/results/ are
generated with their command, commit and date and are not scanned. Each pattern below is a phrase
that only narrates history ("previously", "(was 3)", "the previous table", "on this main"); a hit
fails the test with file:line and the phrase.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HISTORY = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bpreviously\b",
    r"\bused to\b",
    r"\bformerly\b",
    r"\(was [^)]*\)",
    r"\bthe previous (table|main|run|version|session|measurement|commit)s?\b",
    r"\bno longer\b",
    r"\bany ?more\b",
    r"\b(on|of|at) this main\b",
    r"\bthis main's\b",
    r"\bbefore this change\b",
    r"\bnow reads\b",
    r"\bwhere it read\b",
    r"\blast week\b",
    r"\bchanged from\b",
    r"\b(an?|the) earlier (version|main|run|session|measurement|rule|table|commit)s?\b",
    r"\bearlier versions\b",
    r"\bthe old (version|code|rule|table|rows?|main|run|split|one|time-slope rule)\b",
    r"\buntil this version\b",
    r"\b(on|at) this version\b",
    r"\bwas (removed|replaced|added|renamed|dropped|rewritten)\b",
    r"\b(not )?re-?run since\b",
    r"\bthe time before\b",
    r"\bthen → today\b",
    r"→ today\b",
))

# Pages left out of the scan (none: every page is swept).
EXCLUDED_FOR_NOW: tuple[str, ...] = ()


def pages() -> list[str]:
    """README.md and every Markdown page under docs/ but the generated docs/results/."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    names = [p.relative_to(ROOT).as_posix() for p in found]
    return [n for n in names if not n.startswith("docs/results/") and n not in EXCLUDED_FOR_NOW]


def history_hits(text: str, name: str) -> list[str]:
    """``name:line: phrase`` for each history phrase in ``text`` (one entry per line and pattern)."""
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in HISTORY:
            match = pattern.search(line)
            if match:
                hits.append(f"{name}:{number}: {match.group(0)!r}")
    return hits


@pytest.mark.parametrize("name", pages())
def test_the_page_narrates_no_history(name):
    hits = history_hits((ROOT / name).read_text(encoding="utf-8"), name)
    assert not hits, "history in a page that should describe the code as it is:\n" + "\n".join(hits)


@pytest.mark.parametrize("line", [
    "The table was previously computed on 3 seeds.",
    "The rate rule (was 0.9) reads 0.95.",
    "Against the previous table every row is the same.",
    "Rerun from scratch on this main: 410 s.",
    "The meter no longer counts the logits.",
    "The row now reads 'grows' where it read 'not testable'.",
    "The step times are from an earlier version (autograd loss).",
    "The compiled kernel was removed.",
    "ZeroLock 873ba9e → today",
])
def test_each_kind_of_history_sentence_is_caught(line):
    assert history_hits(line, "page.md"), line


@pytest.mark.parametrize("line", [
    "The fit window (T/20, T] skips the warm-up.",
    "Each chunk is trained alone on a fixed batch, with its old inputs h^t_{k-1} held.",
    "A run directory holds config.json, written when the run starts.",
    "commit: `ae8658de899f`",
    "The probe batch is used for every step.",
])
def test_a_sentence_about_the_code_as_it_is_passes(line):
    assert not history_hits(line, "page.md"), line


def test_every_excluded_page_exists():
    """A page renamed or removed leaves the allow-list: a stale entry fails here."""
    assert [name for name in EXCLUDED_FOR_NOW if not (ROOT / name).exists()] == []
