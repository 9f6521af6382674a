"""The report page: a self-contained HTML file and the same content in Markdown.

``write_report(suite, out_dir)`` writes ``figures/NAME.{png,svg}``, ``report.md`` (figures
linked as files), ``report.html`` (figures embedded as base64 PNG) and ``verdicts.md`` (the
scope line and the verdict table as README shows it). Both render the same
list of blocks (``report_blocks``). The first screen answers the question: the scope line, the
key to the outcome colours (``reports.legend``) and one card per registered claim
(``analyses.registry``: the question, the outcome word, the headline figure or, without an
answer, the reason, a small figure). Everything else is collapsible and keyed to the cards: the
whole verdict table with reasons, each claim's evidence (the paper's statement, the primary
group, what the outcome means, why the rule gave it), then the systems claims, one section per
analysis, the skipped analyses and the configs and environment of the runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyses.descriptive.outcome import OUTCOME, OutcomeComparison
from analyses.registry import claim as claim_of
from analyses.suite import SuiteAnalysis
from analyses.systems.memory import MEMORY, SYSTEMS, SystemsComparison
from analyses.systems.throughput import THROUGHPUT
from analyses.verdict import Verdict
from analyses.versus.tuned_versus import TUNED
from reports import render
from reports.blocks import Block, Card, pct, table
from reports.diagnosis import why_blocks
from reports.figures import render_figures
from reports.legend import legend_block
from reports.scope import scope_line
from reports.sections import depth_blocks, lemma2_blocks, stability_blocks
from reports.sensitivity import sensitivity_blocks
from reports.theorem1 import CAPTION as CONVERGENCE_CAPTION
from reports.theorem1 import convergence_blocks
from reports.wording import (
    CORRECTION,
    bottom_line,
    correction,
    figure,
    fmt,
    reason,
    verdict_markdown,
)

__all__ = [
    "Block",
    "ReportFiles",
    "render_html",
    "render_markdown",
    "report_blocks",
    "write_report",
]

TITLE = "ZeroLock (arXiv 2608.07974): do the claims hold?"
CAPTIONS = {
    "minimizers": (
        "Relative reduction (head - tail)/head of each trained chunk's distance to m_k and g_k "
        "over training (mean over chunks and runs; 95% intervals)."
    ),
    "stability": (
        "Step scaling: c·rho(c) at omega^t + c·Delta omega_t against c (median over scaled steps; line: "
        "median over seeds, band: range over seeds). Flat means phi is first order (rho ~ 1/c, unbounded); "
        "proportional to c means rho stays bounded."
    ),
    "along": (
        "Assumption 5 along the run (the row): each seed's block means of rho_t against t + 1, log-log; "
        "hollow: the burn-in block, left out of the fit of gamma; dotted: the growth (t+1)^(kappa/2) that a "
        "positive first-order drift gives; dashed: no growth."
    ),
    "drift": "Drift check: D_T = sum of phi_t^+, sum of q_t and the signed sum of phi_t against T, per run.",
    "convergence": CONVERGENCE_CAPTION,
    "depth": "Task CE by chunk: final values per run and over training.",
    "outcome": "Held-out CE of the final chunk over training.",
    "versus": "ZeroLock against backprop: with a tuned comparison, test-split CE against steps and measured "
    "training seconds, each method at the eta_0 its validation split chose (band: range over seeds; dotted: "
    "backprop's CE at the budget); without one, the suite's held-out CE curves at the pilot's eta_0.",
    "tuned_chunks": "Every chunk's readout through the frozen head, test split, each method at its own best eta_0 "
    "(mean over seeds): do the intermediate readouts improve while the output does not?",
    "systems_memory": "Per-stage peak memory split, ZeroLock against 1F1B (the peak stage of the first repeat).",
    "systems_throughput": "Modelled throughput, ZeroLock / 1F1B, over stages K and micro-batches m; outlined: "
    "where the paper's +4.9% holds.",
}


def _card(verdict: Verdict) -> Card:
    row = claim_of(verdict.claim)
    tone = row.outcomes[verdict.outcome].tone if verdict.counted else "mixed"  # a decision Holm does not keep
    return Card(anchor=f"claim-{row.key}", title=row.title, question=row.question, outcome=verdict.outcome,
                tone=tone, headline=_card_headline(verdict), figure=row.figure)


def _card_headline(verdict: Verdict) -> str:
    """The claim's headline, then the row's place in the table's Holm correction when it has a p.
    A card without an answer (not measured, not testable, ...) says why: its reason."""
    row = claim_of(verdict.claim)
    text = row.headline(verdict.evidence)
    if row.outcomes[verdict.outcome].tone == "none":
        why = reason(verdict)
        text = why if text.strip() in ("", "-") else f"{text}; {why}"
    return text if verdict.correction is None else f"{text}; Holm: {verdict.correction.label}"


def _glance_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The first screen: the scope line, the bottom line, the key to the colours, one card per claim,
    then how the correction counts."""
    return [Block("p", scope_line(suite)), Block("p", bottom_line(suite.claims), css=("bottom",)), legend_block(),
            Block("cards", cards=tuple(_card(v) for v in suite.claims)), Block("p", CORRECTION)]


def _verdict_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The whole verdict table, then each claim's evidence, each collapsible."""
    rows = [[claim_of(v.claim).title, v.outcome, figure(v), correction(v), reason(v)] for v in suite.claims]
    css = tuple("tone-" + claim_of(v.claim).outcomes[v.outcome].tone for v in suite.claims)
    out = [Block("details", "The verdict table: every row with its figure and reason", css=("verdicts",)),
           table(["claim", "outcome", "measured", "Holm", "reason"], rows, css), Block("end")]
    for v in suite.claims:
        row = claim_of(v.claim)
        out += [Block("details", f"{row.title}: {v.outcome}", css=(f"claim-{row.key}",)),
                table(["", ""], [["question", row.question], ["the paper", row.paper], ["primary group", row.primary],
                                 ["outcome", f"{v.outcome}: {row.outcomes[v.outcome].meaning}"],
                                 ["measured", figure(v)], ["Holm", correction(v)], ["reason", reason(v)]]),
                Block("end")]
    return out


def _collapsed(part):
    """A report section inside a collapsible part; its first heading becomes the summary; a part with
    nothing to show (no blocks) is left out."""
    def wrapped(suite: SuiteAnalysis) -> list[Block]:
        blocks = part(suite)
        if not blocks:
            return []
        head, rest = (blocks[0], blocks[1:]) if blocks and blocks[0].kind == "h2" else (Block("h2", "Details"), blocks)
        return [Block("details", head.text, css=(part.__name__.strip("_"),)), *rest, Block("end")]
    return wrapped


def _systems_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [
        Block("h2", "Systems claims (26.5% lower peak memory, 4.9% higher throughput than 1F1B)")
    ]
    sys_ = suite.get(SYSTEMS)
    if not isinstance(sys_, SystemsComparison):
        return out + [Block("p", f"Not measured: {suite.why(SYSTEMS, 'no data')}."), *_systems_figures(suite)]
    rows = [
        [
            r.chunks,
            r.baseline,
            pct(r.memory_reduction),
            pct(sys_.claimed_memory_reduction),
            pct(r.throughput_gain),
            pct(sys_.claimed_throughput_gain),
        ]
        for r in sys_.ratios
    ]
    headers = ["K", "baseline", "memory reduction", "claimed", "throughput gain", "claimed"]
    return out + [table(headers, rows), Block("p", f"Source: {sys_.source}"), *_systems_figures(suite)]


def _systems_figures(suite: SuiteAnalysis) -> list[Block]:
    """The memory split and the modelled throughput over (K, m), when their rows have data."""
    return [Block("figure", key.name) for key in (MEMORY, THROUGHPUT) if suite.get(key) is not None]


def _outcome_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Outcome: held-out CE of the final chunk")]
    outcome = suite.get(OUTCOME)
    if not isinstance(outcome, OutcomeComparison):
        return out + [Block("p", f"Not measured: {suite.why(OUTCOME, 'no data')}.")]
    rows = [
        [
            g.group,
            g.method,
            len(g.runs),
            fmt(g.start),
            fmt(g.end),
            fmt(g.best),
            pct(g.relative_improvement),
        ]
        for g in outcome.groups
    ]
    out.append(table(["group", "method", "runs", "start", "end", "best", "improvement"], rows))
    out.append(Block("figure", "outcome"))
    return out + _tuned_blocks(suite)


def _tuned_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The tuned comparison (``analyses.versus.tuned_versus``): each method at its own best η_0, in words and
    figures; nothing without a tune directory among the inputs."""
    from analyses.versus.tuned import describe
    from analyses.versus.tuned_versus import TunedVersus

    tuned = suite.get(TUNED)
    if not isinstance(tuned, TunedVersus):
        return []
    lines = describe(tuned).splitlines()
    return [Block("h2", "ZeroLock against backprop, each method at its own best eta_0"), Block("p", lines[0]),
            table(["method or comparison", "measured"], [line.strip().split(": ", 1) for line in lines[1:]]),
            Block("figure", "versus"), Block("figure", "tuned_chunks")]


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = json.dumps(value, ensure_ascii=False)
    return flat


def _runs_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Runs")]
    rows = [[r.name, r.group, r.seed, r.n_records, r.last_step, r.path] for r in suite.runs]
    out.append(table(["run", "group", "seed", "records", "last step", "path"], rows))
    out.extend(Block("p", f"{r.name}: {w}") for r in suite.runs for w in r.warnings)
    flats = [_flatten(r.config) for r in suite.runs]
    base = flats[0] if flats else {}
    out.append(Block("h3", f"Config of {suite.runs[0].name}" if suite.runs else "Config"))
    out.append(table(["key", "value"], [[k, v] for k, v in sorted(base.items())]))
    keys = sorted({k for f in flats for k in f if any(g.get(k) != base.get(k) for g in flats)})
    if keys:
        out.append(Block("h3", "Config differences between runs"))
        out.append(
            table(
                ["run", *keys],
                [
                    [r.name, *[f.get(k, "-") for k in keys]]
                    for r, f in zip(suite.runs, flats, strict=True)
                ],
            )
        )
    out.append(Block("h3", "Environment"))
    envs: dict[str, list[str]] = {}
    for r in suite.runs:
        text = (
            "; ".join(f"{k}={v}" for k, v in sorted(_flatten(r.manifest).items())) or "no manifest"
        )
        envs.setdefault(text, []).append(r.name)
    out.append(table(["runs", "manifest"], [[", ".join(n), e] for e, n in envs.items()]))
    settings = ", ".join(f"{k}={v}" for k, v in sorted(suite.settings.items()))
    out.append(Block("p", f"Analysis settings: {settings}."))
    return out


def report_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The page content in order (module docstring)."""
    blocks = [Block("h1", TITLE), *_glance_blocks(suite), *sensitivity_blocks(suite), *_verdict_blocks(suite)]
    for part in (
        _systems_blocks,
        lemma2_blocks,
        stability_blocks,
        convergence_blocks,
        depth_blocks,
        _outcome_blocks,
        why_blocks,  # only when a factorial directory was among the inputs
        _skipped_blocks,
        _runs_blocks,
    ):
        blocks.extend(_collapsed(part)(suite))
    return blocks


def _skipped_blocks(suite: SuiteAnalysis) -> list[Block]:
    rows = [[k, v] for k, v in sorted(suite.skipped.items())]
    return [Block("h2", "Skipped analyses"), table(["analysis", "reason"], rows) if rows else Block("p", "None.")]


def render_html(blocks: list[Block], figures_png: Mapping[str, bytes]) -> str:
    """A self-contained HTML page of ``blocks``; figures embedded as base64 PNG (missing ones skipped)."""
    return render.render_html(blocks, figures_png, title=TITLE, captions=CAPTIONS)


def render_markdown(blocks: list[Block], figure_files: Mapping[str, str]) -> str:
    """The same content in Markdown; ``figure_files`` maps figure names to relative paths."""
    return render.render_markdown(blocks, figure_files, captions=CAPTIONS)


@dataclass(frozen=True)
class ReportFiles:
    """Paths written by ``write_report``."""

    html: Path
    markdown: Path
    figures: dict[str, dict[str, Path]]


def write_report(suite: SuiteAnalysis, out_dir: str | Path) -> ReportFiles:
    """Write figures, ``report.md`` and ``report.html`` under ``out_dir``; return their paths."""
    out = Path(out_dir)
    figures = render_figures(suite, out / "figures")
    blocks = report_blocks(suite)
    png = {name: paths["png"].read_bytes() for name, paths in figures.items() if "png" in paths}
    html_path = out / "report.html"
    html_path.write_text(render_html(blocks, png), encoding="utf-8")
    files = {
        name: f"figures/{paths['png'].name}" for name, paths in figures.items() if "png" in paths
    }
    md_path = out / "report.md"
    md_path.write_text(render_markdown(blocks, files), encoding="utf-8")
    (out / "verdicts.md").write_text(verdict_markdown(suite.claims, scope_line(suite)), encoding="utf-8")
    return ReportFiles(html_path, md_path, figures)
