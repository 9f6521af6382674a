"""Every relative link in README.md and docs/ points at a file or folder of the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def pages() -> list[str]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p.relative_to(ROOT).as_posix() for p in found]


def relative_links(text: str) -> list[tuple[int, str]]:
    """(line, target without its #anchor) of each relative Markdown link or image; code spans skipped."""
    links = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            path = target.split("#", 1)[0]
            if path and not EXTERNAL.match(target):
                links.append((number, path))
    return links


@pytest.mark.parametrize("name", pages())
def test_every_relative_link_resolves(name):
    page = ROOT / name
    broken = [f"{name}:{n}: {t}" for n, t in relative_links(page.read_text(encoding="utf-8"))
              if not (page.parent / t).exists()]
    assert not broken, "links to nothing:\n" + "\n".join(broken)


def test_links_are_found_and_external_ones_skipped():
    text = "[a](docs/A.md#x) ![img](pic.png) [web](https://example.org) [top](#top) `[code](no.md)`"
    assert relative_links(text) == [(1, "docs/A.md"), (1, "pic.png")]


def test_a_missing_target_is_reported(tmp_path):
    page = tmp_path / "P.md"
    page.write_text("see [there](missing.md)\n", encoding="utf-8")
    assert [t for _, t in relative_links(page.read_text()) if not (page.parent / t).exists()] == ["missing.md"]
