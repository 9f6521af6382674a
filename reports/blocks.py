"""The page's building blocks: ``Block`` and the small formatters every section uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reports.wording import fmt

__all__ = ["Block", "pct", "table", "vec"]


@dataclass(frozen=True)
class Block:
    """One element of the page: heading, paragraph, table, preformatted text or figure."""

    kind: str
    text: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    css: tuple[str, ...] = field(default=())


def pct(x: float) -> str:
    return f"{fmt(100 * x)}%"


def vec(values: list[float]) -> str:
    return "(" + ", ".join(map(fmt, values)) + ")"


def table(headers: list[str], rows: list[list[Any]], css: tuple[str, ...] = ()) -> Block:
    return Block(
        "table", headers=tuple(headers), rows=tuple(tuple(map(str, r)) for r in rows), css=css
    )
