"""The page's building blocks: ``Block`` and the small formatters every section uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reports.wording import fmt

__all__ = ["Block", "Card", "pct", "table", "vec"]


@dataclass(frozen=True)
class Card:
    """One claim at a glance: its question, outcome word (and tone), headline figure, a small
    figure, and the anchor of its evidence below."""

    anchor: str
    title: str
    question: str
    outcome: str
    tone: str
    headline: str
    figure: str | None = None


@dataclass(frozen=True)
class Block:
    """One element of the page: heading, paragraph, table, figure, the claim cards, or the start
    (``details``, ``text`` its summary, ``css`` its anchor) and ``end`` of a collapsible part."""

    kind: str
    text: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    css: tuple[str, ...] = field(default=())
    cards: tuple[Card, ...] = ()


def pct(x: float) -> str:
    return f"{fmt(100 * x)}%"


def vec(values: list[float]) -> str:
    return "(" + ", ".join(map(fmt, values)) + ")"


def table(headers: list[str], rows: list[list[Any]], css: tuple[str, ...] = ()) -> Block:
    return Block(
        "table", headers=tuple(headers), rows=tuple(tuple(map(str, r)) for r in rows), css=css
    )
