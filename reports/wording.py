"""The verdict table's cells, written from each row's evidence by its claim (``analyses.registry``).

``figure(verdict)`` is the "measured" cell (the headline figure with its interval, seeds and
horizon) and ``reason(verdict)`` the "reason" cell (why the rule gave that outcome, then the runs
excluded as diverged). ``fmt`` is the number format of every report section.
``correction(verdict)`` is the "Holm" cell (whether an interval-decided row's decision survives
the table's correction, ``analyses.stats.multiplicity``) and ``bottom_line(verdicts)`` the sentence
that counts the outcomes, survivors only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from analyses.registry import claim, measured_text, reason_text
from analyses.text import drift_line, fmt
from analyses.verdict import Verdict

__all__ = ["CORRECTION", "bottom_line", "correction", "drift_line", "figure", "fmt", "reason", "verdict_lines",
           "md_cell", "md_row", "verdict_markdown"]

CORRECTION = ("Multiplicity: Holm's step-down correction over every row that ran a seed-level test (each row's "
              "two-sided p of its decisive test), family-wise error at 1 - level; a row whose decision does not "
              "survive it reads as undecided and is not counted. A row whose test ran is in the family whatever its "
              "outcome, not-testable rows whose interval could not tell the outcomes apart included (they reject "
              "nothing and make the correction stricter for the others). Analytic, descriptive and not-measured "
              "rows, and not-testable rows without a test, state no p and are not in the family.")


def figure(verdict: Verdict) -> str:
    """The "measured" cell: the figure behind the outcome (the claim's ``measured``)."""
    return measured_text(verdict)


def reason(verdict: Verdict) -> str:
    """The "reason" cell: the rule that applied (the claim's ``reason``), then the excluded runs."""
    return reason_text(verdict)


def correction(verdict: Verdict) -> str:
    """The "Holm" cell: "-" for a row without a statistical decision, else survives / does not survive /
    nothing rejected, with p and the Holm-adjusted p."""
    return "-" if verdict.correction is None else verdict.correction.label


def bottom_line(verdicts: Sequence[Verdict]) -> str:
    """One sentence: the claims' outcomes counted by tone, only rows whose decision survives the
    correction (controls of a rule are not claims and are not counted)."""
    rows = [v for v in verdicts if not claim(v.claim).control]
    tones = Counter(claim(v.claim).outcomes[v.outcome].tone for v in rows if v.counted)
    dropped = [claim(v.claim).title for v in rows if not v.counted]
    family = sum(v.correction is not None for v in rows)
    words = {"holds": "hold", "fails": "fail", "mixed": "mixed or undecided", "none": "without an answer"}
    counts = ", ".join(f"{tones.get(t, 0)} {w}" for t, w in words.items())
    text = (f"Bottom line ({len(rows)} rows; Holm over the {family} with a seed-level test, only survivors counted): "
            f"{counts}")
    return text + (f"; not counted, their decision does not survive the correction: {'; '.join(dropped)}."
                   if dropped else ".")


def md_cell(text: str) -> str:
    """``text`` as one Markdown table cell: its ``|`` escaped (``|a_t|`` would split the cell), on one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_row(cells: Sequence[str]) -> str:
    """One Markdown table row of ``cells``, each escaped by :func:`md_cell`."""
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def verdict_markdown(verdicts: Sequence[Verdict], scope: str, *, headline: bool = False) -> str:
    """The verdict table as README prints it: the scope line, claim | outcome | measured | Holm, the
    correction stated and the bottom line. ``headline``: each row's headline figure instead of
    its full measured figure (the column is named ``headline``)."""
    def cell(v: Verdict) -> str:
        return claim(v.claim).headline(v.evidence) if headline else figure(v)

    rows = [md_row([claim(v.claim).title, v.outcome, cell(v), correction(v)]) for v in verdicts]
    column = "headline" if headline else "measured"
    return "\n".join([f"**{scope}**", "", f"| claim | outcome | {column} | Holm |", "|---|---|---|---|", *rows, "",
                      CORRECTION, "", bottom_line(verdicts)]) + "\n"


def verdict_lines(verdicts: Sequence[Verdict], *, measured: bool = True) -> list[str]:
    """The verdict table as aligned text lines (the commands print it): claim, outcome, headline."""
    titles = [claim(v.claim).title for v in verdicts]
    width = max([len("claim"), *map(len, titles)])
    owidth = max([len("outcome"), *(len(v.outcome) for v in verdicts)])
    head = f"{'claim':<{width}}  {'outcome':<{owidth}}" + ("  measured" if measured else "")
    rows = [f"{t:<{width}}  {v.outcome:<{owidth}}" + (f"  {claim(v.claim).headline(v.evidence)}" if measured else "")
            for t, v in zip(titles, verdicts, strict=True)]
    return [head, *rows]
