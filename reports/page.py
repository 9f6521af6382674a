"""The report page: a self-contained HTML file and the same content in Markdown.

``write_report(suite, out_dir)`` writes ``figures/NAME.{png,svg}``, ``report.md`` (figures
linked as files) and ``report.html`` (figures embedded as base64 PNG). Both render the same
list of blocks (``report_blocks``): the verdict table first, one row per claim with the
measured figure behind it, then the systems claims, one section per analysis, the skipped
analyses with reasons, and the configs and environment of the runs.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyses.claims import fmt
from analyses.convergence import RateSet
from analyses.depth import DepthSet
from analyses.minimizers import MinimizerTable, ToyCheck
from analyses.outcome import OutcomeComparison
from analyses.drift import DriftCheck
from analyses.scaling import StepScaling
from analyses.stability import StabilitySummary
from analyses.suite import SuiteAnalysis
from analyses.systems import SystemsComparison
from reports.figures import render_figures

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
    "convergence": "Running mean of squared gradient norms with fitted power laws (dashed).",
    "depth": "Task CE by chunk: final values per run and over training.",
    "outcome": "Held-out CE of the final chunk over training.",
}


@dataclass(frozen=True)
class Block:
    """One element of the page: heading, paragraph, table, preformatted text or figure."""

    kind: str
    text: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    css: tuple[str, ...] = field(default=())


def _pct(x: float) -> str:
    return f"{fmt(100 * x)}%"


def _vec(values: list[float]) -> str:
    return "(" + ", ".join(map(fmt, values)) + ")"


def _table(headers: list[str], rows: list[list[Any]], css: tuple[str, ...] = ()) -> Block:
    return Block(
        "table", headers=tuple(headers), rows=tuple(tuple(map(str, r)) for r in rows), css=css
    )


def _verdict_blocks(suite: SuiteAnalysis) -> list[Block]:
    rows = [[v.claim, v.verdict, v.figure, v.reason] for v in suite.claims]
    css = tuple("verdict-" + v.verdict.replace(" ", "-") for v in suite.claims)
    return [Block("h2", "Verdicts"), _table(["claim", "verdict", "measured", "reason"], rows, css)]


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
            _pct(r.memory_reduction),
            _pct(sys_.claimed_memory_reduction),
            _pct(r.throughput_gain),
            _pct(sys_.claimed_throughput_gain),
        ]
        for r in sys_.ratios
    ]
    headers = ["K", "baseline", "memory reduction", "claimed", "throughput gain", "claimed"]
    return out + [_table(headers, rows), Block("p", f"Source: {sys_.source}")]


def _lemma2_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Lemma 2: which target does a trained chunk track?")]
    toy = suite.get("toy_check")
    if isinstance(toy, ToyCheck):
        out.append(
            Block(
                "p",
                f"Two-token check: p_y = e_1, p_(k-1) = p = (0.5, 0.5), alpha = {fmt(toy.alpha)}.",
            )
        )
        rows = [
            [
                fmt(r.epsilon),
                _vec(r.p_y),
                _vec(r.m),
                _vec(r.g),
                fmt(r.kl_p_py),
                fmt(r.ce_py_p),
                fmt(r.reverse_loss),
                fmt(r.forward_loss),
                fmt(r.tv_m_g),
            ]
            for r in toy.rows
        ]
        out.append(
            _table(
                [
                    "eps",
                    "p_y",
                    "m_k",
                    "g_k",
                    "KL(p||p_y)",
                    "CE(p_y,p)",
                    "l^R(p)",
                    "l^F(p)",
                    "TV(m_k,g_k)",
                ],
                rows,
            )
        )
    table = suite.get("minimizers")
    if isinstance(table, MinimizerTable):
        out.append(
            Block(
                "p",
                "Movement over training: head = first "
                f"{fmt(100 * table.head)}% of probed steps, tail = last {fmt(100 * table.tail)}%; "
                "relative reduction = (head - tail)/head (> 0: moved toward the target). "
                "KL is KL(m_k||p_k) for m_k and KL(p_k||g_k) for g_k. Levels are for display: "
                "m_k carries mass alpha on the label, so TV to m_k is large for any model.",
            )
        )
        rows = [
            [
                c.trained,
                f"{c.target}_k",
                str(c.kl_reduction),
                str(c.tv_reduction),
                f"{fmt(c.kl_head.estimate)} -> {fmt(c.kl.estimate)}",
                f"{fmt(c.tv_head.estimate)} -> {fmt(c.tv.estimate)}",
                f"{c.n_head_steps} / {c.n_steps}",
                c.n_runs,
            ]
            for c in table.cells
        ]
        headers = [
            "trained",
            "target",
            "KL rel. reduction",
            "TV rel. reduction",
            "KL head -> tail",
            "TV head -> tail",
            "head / tail steps",
            "runs",
        ]
        out.append(_table(headers, rows))
        rows = [[t.trained, t.measure.upper(), str(t.difference), t.toward] for t in table.tracking]
        out.append(_table(["trained", "measure", "r(m_k) - r(g_k)", "moves toward"], rows))
        if table.contrasts:
            rows = [
                [c.measure.upper(), str(c.m_column), str(c.g_column), str(c.did), c.toward]
                for c in table.contrasts
            ]
            headers = [
                "measure",
                "r_F(m) - r_R(m)",
                "r_R(g) - r_F(g)",
                "DiD",
                "forward loss pulls toward",
            ]
            out.append(_table(headers, rows))
        else:
            out.append(Block("p", "No forward/reverse contrast: runs of only one direction."))
        out.append(Block("figure", "minimizers"))
    else:
        out.append(
            Block(
                "p", f"On-model table not measured: {suite.skipped.get('minimizers', 'no data')}."
            )
        )
    return out


def _stability_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Assumption 5: the stability ratio rho_t = max(phi_t, 0) / q_t")]
    for obj, name in (
        ("paper", "R (paper objective)"),
        ("implemented", "R̄ (implemented objective)"),
    ):
        out.append(Block("h3", name))
        summary = suite.get(f"stability_{obj}")
        if isinstance(summary, StabilitySummary):
            rows = [
                [
                    c.chunk,
                    c.n_probe,
                    c.n_defined,
                    c.n_undefined,
                    fmt(c.median),
                    fmt(c.p95),
                    fmt(c.max),
                    _pct(c.share_phi_positive),
                    fmt(c.remainder_ratio_median),
                ]
                for c in summary.chunks
            ]
            out.append(
                _table(
                    [
                        "chunk",
                        "probed",
                        "defined",
                        "undefined",
                        "median",
                        "p95",
                        "max",
                        "phi>0",
                        "median |rem|/q",
                    ],
                    rows,
                )
            )
        else:
            out.append(
                Block("p", f"Not measured: {suite.skipped.get(f'stability_{obj}', 'no data')}.")
            )
        out.extend(_scaling_blocks(suite, obj))
    if any(isinstance(suite.get(f"scaling_{o}"), StepScaling) for o in ("paper", "implemented")):
        out.append(Block("figure", "stability"))
    if any(isinstance(suite.get(f"drift_{o}"), DriftCheck) for o in ("paper", "implemented")):
        out.append(Block("figure", "drift"))
    return out


def _scaling_blocks(suite: SuiteAnalysis, obj: str) -> list[Block]:
    """The step-scaling table (one row per group, the primary first) and the drift line."""
    scaling = suite.get(f"scaling_{obj}")
    if not isinstance(scaling, StepScaling):
        return [Block("p", f"Step scaling not measured: {suite.skipped.get(f'scaling_{obj}', 'no data')}.")]
    rows = [
        [("primary: " if i == 0 else "") + g.group, g.trained, str(len(g.seeds)),
         str(g.share_positive) if g.share_positive else "n/a", str(g.slope) if g.slope else "n/a", g.statement]
        for i, g in enumerate(scaling.groups)
    ]
    out = [_table(["group", "trained", "seeds", "share phi'>0", "slope log rho(c) on log c", "finding"], rows)]
    drift = suite.get(f"drift_{obj}")
    if isinstance(drift, DriftCheck):
        out.append(Block("p", f"{drift.describe()} ({drift.group}); D_T / sum q_t at the end: "
                     f"{drift.end_ratio if drift.end_ratio else 'n/a'}."))
    if scaling.excluded:
        out.append(Block("p", "Excluded as diverged: " + "; ".join(scaling.excluded) + "."))
    return out


def _convergence_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Theorem 1: the convergence rate of A_T = (1/T) sum G_t ~ c T^-beta")]
    rows, notes = [], []
    for name in ("convergence_local", "convergence_global", "convergence_backprop"):
        rates = suite.get(name)
        if not isinstance(rates, RateSet):
            notes.append(f"{name}: not measured: {suite.skipped.get(name, 'no data')}")
            continue
        notes.extend(f"{name}: {n}" for n in rates.notes)
        for fit, sched in zip(rates.fits, rates.schedules, strict=True):
            rows.append(
                [
                    rates.quantity,
                    fit.label,
                    sched,
                    fit.n_series,
                    f"[{fit.t0}, {fit.t_max}]",
                    fit.n_points,
                    str(fit.beta),
                    str(fit.gamma),
                    "yes" if fit.holds else "no",
                ]
            )
    if rows:
        out.append(
            _table(
                [
                    "quantity",
                    "group",
                    "schedule",
                    "seeds",
                    "T window",
                    "points",
                    "beta",
                    "gamma",
                    "reaches 0.5",
                ],
                rows,
            )
        )
        out.append(Block("figure", "convergence"))
    out.extend(Block("p", n) for n in notes)
    return out


def _depth_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Proposition 1: task CE by chunk")]
    depth = suite.get("depth")
    if not isinstance(depth, DepthSet):
        return out + [Block("p", f"Not measured: {suite.skipped.get('depth', 'no data')}.")]
    rows = [
        [
            p.run,
            p.source,
            p.n_evaluated,
            _pct(p.share_holds),
            ", ".join(map(fmt, p.final_ce)),
            ", ".join(map(fmt, p.gap_final)) or "-",
        ]
        for p in depth.profiles
    ]
    out.append(
        _table(
            ["run", "source", "evaluated", "non-increasing", "final CE by k", "final delta_k"], rows
        )
    )
    out.append(Block("figure", "depth"))
    return out


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
            _pct(g.relative_improvement),
        ]
        for g in outcome.groups
    ]
    out.append(_table(["group", "method", "runs", "start", "end", "best", "improvement"], rows))
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
    out.append(_table(["run", "group", "seed", "records", "last step", "path"], rows))
    out.extend(Block("p", f"{r.name}: {w}") for r in suite.runs for w in r.warnings)
    flats = [_flatten(r.config) for r in suite.runs]
    base = flats[0] if flats else {}
    out.append(Block("h3", f"Config of {suite.runs[0].name}" if suite.runs else "Config"))
    out.append(_table(["key", "value"], [[k, v] for k, v in sorted(base.items())]))
    keys = sorted({k for f in flats for k in f if any(g.get(k) != base.get(k) for g in flats)})
    if keys:
        out.append(Block("h3", "Config differences between runs"))
        out.append(
            _table(
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
    out.append(_table(["runs", "manifest"], [[", ".join(n), e] for e, n in envs.items()]))
    settings = ", ".join(f"{k}={v}" for k, v in sorted(suite.settings.items()))
    out.append(Block("p", f"Analysis settings: {settings}."))
    return out


def report_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The page content in order (module docstring)."""
    blocks = [Block("h1", TITLE)]
    for part in (
        _verdict_blocks,
        _systems_blocks,
        _lemma2_blocks,
        _stability_blocks,
        _convergence_blocks,
        _depth_blocks,
        _outcome_blocks,
    ):
        blocks.extend(part(suite))
    if suite.skipped:
        blocks.append(Block("h2", "Skipped analyses"))
        blocks.append(
            _table(["analysis", "reason"], [[k, v] for k, v in sorted(suite.skipped.items())])
        )
    return blocks + _runs_blocks(suite)


STYLE = """
body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.85em}
th,td{border:1px solid #ccc;padding:0.3em 0.5em;text-align:left;vertical-align:top}
th{background:#f3f3f3} img{max-width:100%} figure{margin:1em 0}
.verdict-supported td:nth-child(2){background:#d9f2d9}
.verdict-refuted td:nth-child(2){background:#f7d4d4}
.verdict-inconclusive td:nth-child(2){background:#fbefc8}
.verdict-not-measured td:nth-child(2){background:#e6e6e6}
"""


def render_html(blocks: list[Block], figures_png: Mapping[str, bytes]) -> str:
    """A self-contained HTML page; figures embedded as base64 PNG (missing ones skipped)."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(TITLE)}</title><style>{STYLE}</style></head><body>",
    ]
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            parts.append(f"<{b.kind}>{esc(b.text)}</{b.kind}>")
        elif b.kind == "p":
            parts.append(f"<p>{esc(b.text)}</p>")
        elif b.kind == "table":
            head = "".join(f"<th>{esc(h)}</th>" for h in b.headers)
            body = []
            for i, row in enumerate(b.rows):
                cls = f' class="{b.css[i]}"' if i < len(b.css) else ""
                body.append(f"<tr{cls}>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>")
            parts.append(
                f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            )
        elif b.kind == "figure" and b.text in figures_png:
            data = base64.b64encode(figures_png[b.text]).decode("ascii")
            caption = esc(CAPTIONS.get(b.text, b.text))
            parts.append(
                f'<figure><img alt="{esc(b.text)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{caption}</figcaption></figure>"
            )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: list[Block], figure_files: Mapping[str, str]) -> str:
    """The same content in Markdown; ``figure_files`` maps figure names to relative paths."""
    lines: list[str] = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            lines += ["#" * int(b.kind[1]) + " " + b.text, ""]
        elif b.kind == "p":
            lines += [b.text, ""]
        elif b.kind == "table":
            lines.append("| " + " | ".join(map(_md_cell, b.headers)) + " |")
            lines.append("|" + "---|" * len(b.headers))
            lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in b.rows]
            lines.append("")
        elif b.kind == "figure" and b.text in figure_files:
            lines += [f"![{CAPTIONS.get(b.text, b.text)}]({figure_files[b.text]})", ""]
    return "\n".join(lines)


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
