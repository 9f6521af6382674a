"""The report page: a self-contained HTML file and the same content in Markdown.

``write_report(suite, out_dir)`` writes ``figures/NAME.{png,svg}``, ``report.md`` (figures
linked as files) and ``report.html`` (figures embedded as base64 PNG). Both render the same
list of blocks (``report_blocks``): the verdict table first, one row per claim with the
measured figure behind it, then the systems claims, one section per analysis, the skipped
analyses with reasons, and the configs and environment of the runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyses.outcome import OutcomeComparison
from analyses.suite import SuiteAnalysis
from analyses.systems import SystemsComparison
from reports import render
from reports.blocks import Block, pct, table
from reports.figures import render_figures
from reports.sections import depth_blocks, lemma2_blocks, stability_blocks
from reports.theorem1 import CAPTION as CONVERGENCE_CAPTION
from reports.theorem1 import convergence_blocks, scope_line
from reports.wording import figure, fmt, reason

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
    "drift": "Drift check: D_T = sum of phi_t^+, sum of q_t and the signed sum of phi_t against T, per run.",
    "convergence": CONVERGENCE_CAPTION,
    "depth": "Task CE by chunk: final values per run and over training.",
    "outcome": "Held-out CE of the final chunk over training.",
}


def _verdict_blocks(suite: SuiteAnalysis) -> list[Block]:
    rows = [[v.claim, v.verdict, figure(v), reason(v)] for v in suite.claims]
    css = tuple("verdict-" + v.verdict.replace(" ", "-") for v in suite.claims)
    return [Block("h2", "Verdicts"), Block("p", scope_line(suite)),
            table(["claim", "verdict", "measured", "reason"], rows, css)]


def _systems_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [
        Block("h2", "Systems claims (26.5% lower peak memory, 4.9% higher throughput than 1F1B)")
    ]
    sys_ = suite.get("systems")
    if not isinstance(sys_, SystemsComparison):
        return out + [Block("p", f"Not measured: {suite.skipped.get('systems', 'no data')}.")]
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
    return out + [table(headers, rows), Block("p", f"Source: {sys_.source}")]


def _convergence_blocks(suite: SuiteAnalysis) -> list[Block]:
    return convergence_blocks(suite, Block)  # reports/theorem1.py


def _outcome_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Outcome: held-out CE of the final chunk")]
    outcome = suite.get("outcome")
    if not isinstance(outcome, OutcomeComparison):
        return out + [Block("p", f"Not measured: {suite.skipped.get('outcome', 'no data')}.")]
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
    return out


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
    blocks = [Block("h1", TITLE)]
    for part in (
        _verdict_blocks,
        _systems_blocks,
        lemma2_blocks,
        stability_blocks,
        _convergence_blocks,
        depth_blocks,
        _outcome_blocks,
    ):
        blocks.extend(part(suite))
    if suite.skipped:
        blocks.append(Block("h2", "Skipped analyses"))
        blocks.append(
            table(["analysis", "reason"], [[k, v] for k, v in sorted(suite.skipped.items())])
        )
    return blocks + _runs_blocks(suite)


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
    return ReportFiles(html_path, md_path, figures)
