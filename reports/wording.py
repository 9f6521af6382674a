"""The verdict table's cells, written from each row's evidence by its claim (``analyses.claims``).

``figure(verdict)`` is the "measured" cell (the headline figure with its interval, seeds and
horizon) and ``reason(verdict)`` the "reason" cell (why the rule gave that outcome, then the runs
excluded as diverged). ``fmt`` is the number format of every report section.
"""

from __future__ import annotations

from collections.abc import Sequence

from analyses.claims import claim, measured_text, reason_text
from analyses.claims.text import drift_line, fmt
from analyses.verdict import Verdict

__all__ = ["drift_line", "figure", "fmt", "reason", "verdict_lines", "verdict_markdown"]


def figure(verdict: Verdict) -> str:
    """The "measured" cell: the figure behind the outcome (the claim's ``measured``)."""
    return measured_text(verdict)


def reason(verdict: Verdict) -> str:
    """The "reason" cell: the rule that applied (the claim's ``reason``), then the excluded runs."""
    return reason_text(verdict)


def verdict_markdown(verdicts: Sequence[Verdict], scope: str) -> str:
    """The verdict table as README prints it: the scope line, then claim | outcome | measured."""
    rows = [f"| {claim(v.claim).title} | {v.outcome} | {figure(v)} |".replace("\n", " ") for v in verdicts]
    return "\n".join([f"**{scope}**", "", "| claim | outcome | measured |", "|---|---|---|", *rows]) + "\n"


def verdict_lines(verdicts: Sequence[Verdict], *, measured: bool = True) -> list[str]:
    """The verdict table as aligned text lines (the commands print it): claim, outcome, headline."""
    titles = [claim(v.claim).title for v in verdicts]
    width = max([len("claim"), *map(len, titles)])
    owidth = max([len("outcome"), *(len(v.outcome) for v in verdicts)])
    head = f"{'claim':<{width}}  {'outcome':<{owidth}}" + ("  measured" if measured else "")
    rows = [f"{t:<{width}}  {v.outcome:<{owidth}}" + (f"  {claim(v.claim).headline(v.evidence)}" if measured else "")
            for t, v in zip(titles, verdicts, strict=True)]
    return [head, *rows]
