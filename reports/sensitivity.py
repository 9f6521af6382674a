"""The report's sensitivity section: the verdict map of claims × settings, a figure and a table.

Reads the ``sensitivity`` result of a suite (``analyses.sensitivity.SensitivityMap``, written by
the sensitivity suite). The figure colours each cell by the tone of its outcome (``reports.legend``:
holds green, fails violet, mixed amber, no answer grey) and prints the outcome word and the claim's headline
figure; the table gives the same per setting; a sentence names each claim whose outcome word
changes across settings. Importing this module adds the figure to ``reports.figures.FIGURES``.
"""

from __future__ import annotations

import textwrap

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from analyses.sensitivity import SENSITIVITY, SensitivityMap
from analyses.suite import SuiteAnalysis
from reports.blocks import Block, table
from reports.figures import FIGURES
from reports.legend import TONE_COLORS  # the page's key: one colour per tone

__all__ = ["TONE_COLORS", "changed_sentence", "sensitivity_blocks", "sensitivity_figure", "shown_claims"]

def _map(suite: SuiteAnalysis) -> SensitivityMap | None:
    return suite.get(SENSITIVITY)


def shown_claims(found: SensitivityMap) -> list[int]:
    """Indices of the claims with an answer (a tone other than "none") in at least one setting."""
    return [i for i, key in enumerate(found.claims)
            if any(found.cell(key, s).tone != "none" for s in found.settings)]


def changed_sentence(found: SensitivityMap) -> str:
    """One sentence naming each claim whose outcome changes across settings, with its outcomes."""
    if not found.sensitive:
        return (f"No claim's outcome changes across the {len(found.settings)} settings: each row reads the same "
                "in every setting.")
    parts = []
    for key in found.sensitive:
        title = found.titles[found.claims.index(key)]
        by = found.outcomes_of(key)
        groups: dict[str, list[str]] = {}
        for setting, change in zip(found.settings, found.changes, strict=True):
            groups.setdefault(by[setting], []).append(change)
        where = "; ".join(f"{outcome}: " + ", ".join(changes) for outcome, changes in groups.items())
        parts.append(f"{title} ({where})")
    return f"The outcome changes across settings for {len(parts)} claim(s): " + "; ".join(parts) + "."


def sensitivity_figure(suite: SuiteAnalysis) -> Figure | None:
    """Claims (rows, those with an answer somewhere) × settings (columns), cells coloured by tone."""
    found = _map(suite)
    if found is None:
        return None
    rows = shown_claims(found) or list(range(len(found.claims)))
    n_rows, n_cols = len(rows), len(found.settings)
    fig = Figure(figsize=(2.6 + 1.55 * n_cols, 0.9 + 0.62 * n_rows), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for r, i in enumerate(rows):
        key = found.claims[i]
        for c, setting in enumerate(found.settings):
            cell = found.cell(key, setting)
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=TONE_COLORS.get(cell.tone, "#ffffff"), edgecolor="white"))
            headline = textwrap.shorten(cell.headline, 70, placeholder="...") if cell.headline != "-" else ""
            ax.text(c + 0.5, r + 0.32, cell.outcome, ha="center", va="center", fontsize=6.5, weight="bold")
            ax.text(c + 0.5, r + 0.68, textwrap.fill(headline, 26), ha="center", va="center", fontsize=4.5)
    ax.set_xlim(0, n_cols)
    ax.set_ylim(n_rows, 0)
    ax.set_xticks([c + 0.5 for c in range(n_cols)], [textwrap.fill(s, 22) for s in found.changes], fontsize=6)
    ax.xaxis.tick_top()
    ax.set_yticks([r + 0.5 for r in range(n_rows)], [textwrap.fill(found.titles[i], 34) for i in rows], fontsize=6)
    ax.grid(False)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    return fig


FIGURES.setdefault(SENSITIVITY.name, sensitivity_figure)


def sensitivity_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The section: the sentence on changed outcomes, the figure, and the map as a table."""
    found = _map(suite)
    if found is None:
        return []
    hidden = [found.titles[i] for i in range(len(found.claims)) if i not in shown_claims(found)]
    out = [Block("h2", f"Sensitivity map: {len(found.claims)} claims x {len(found.settings)} settings "
                       f"(one setting changed at a time): {found.outcome}"),
           Block("p", changed_sentence(found)),
           Block("figure", SENSITIVITY.name),
           Block("p", "Each cell: the claim's outcome in that setting (green holds, red fails, amber mixed, grey no "
                      "answer) and its headline figure. Runs per setting: "
                      + ", ".join(f"{c} {n}" for c, n in zip(found.changes, found.runs, strict=True)) + "."
                      + (f" Rows with no answer in any setting (not drawn): {'; '.join(hidden)}." if hidden else "")
                      + " The cards above and the verdict table below are the default setting's.")]
    rows = [[found.titles[i], *[f"{found.cell(key, s).outcome}: {found.cell(key, s).headline}" for s in found.settings]]
            for i, key in enumerate(found.claims)]
    out.append(table(["claim", *found.changes], rows))
    return out
