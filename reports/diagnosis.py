"""Why ZeroLock falls behind backprop: the factorial's section of the report, and its Markdown.

One table of the controls at their own best η_0 (test CE, paired differences to backprop and to
plain ZeroLock with their Holm-adjusted p), one of the registered predictions with their readings
and when their thresholds were written, and each mechanism's reading (``analyses.versus.factorial``).
The same rows make the HTML section (``why_blocks``) and ``zerolock diagnose``'s Markdown.
"""

from __future__ import annotations

from pathlib import Path

from analyses.results import Interval
from analyses.suite import SuiteAnalysis
from analyses.versus.factorial import (
    CONTROLS,
    FACTORIAL,
    MECHANISMS,
    MIN_PAIRED,
    PLAIN,
    PREDICTIONS,
    Factorial,
)
from reports.blocks import Block, table
from reports.wording import fmt, md_row

__all__ = ["alignment_table", "compact_markdown", "control_alignment_table", "control_table", "intro", "markdown", "mechanism_rows", "prediction_table",
           "publish", "stable_line", "stable_table", "why_blocks", "written_line"]

TITLE = "Why ZeroLock falls behind backprop: the factorial of method controls"


def _iv(iv: Interval | None) -> str:
    return "—" if iv is None else f"{fmt(iv.estimate)} [{fmt(iv.low)}, {fmt(iv.high)}]"


def _p(p: float | None, adjusted: float | None) -> str:
    return "—" if p is None else f"p {p:.2g}, Holm {adjusted:.2g}"


def intro(f: Factorial) -> str:
    """What the table is, on which model, budget and seeds."""
    interior = ("every control's η_0 is interior to its grid" if f.all_interior
                else "some control's η_0 is on its grid's edge (marked)")
    return (f"{f.model or 'the model'} (K = {f.chunks}), {f.steps} steps: each control at the η_0 its validation "
            f"split chose, test-split CE at the budget over the seeds run there, paired differences with "
            f"{fmt(100 * f.level)}% t-intervals over seeds and Holm over every difference of the table; {interior}.")


def _choice(row, bold: str = "") -> str:
    """The chosen η_0 (between ``bold`` marks), the grid's validation score per η_0, and a grid-edge mark."""
    scores = " / ".join(f"{lr:g}: {'diverged' if v == float('inf') else fmt(v)}" for lr, v in sorted(row.scores.items()))
    return f"{bold}{row.lr:g}{bold}" + (", grid edge" if row.on_boundary else "") + (f" ({scores})" if len(row.scores) > 1 else "")


def control_table(f: Factorial, bold: str = "") -> tuple[list[str], list[list[str]]]:
    headers = ["control", "η_0 (validation CE per η_0)", "test CE", "− backprop", "− ZeroLock α = ½", "p (− backprop)", "p (− ZeroLock)",
               "seeds"]
    rows = [[r.label, _choice(r, bold), _iv(r.test), _iv(r.minus_backprop),
             _iv(r.minus_plain), _p(r.p_backprop, r.holm_backprop), _p(r.p_plain, r.holm_plain),
             ", ".join(map(str, sorted(r.test_by_seed)))] for r in f.rows]
    rows += [[name, "—", why, "", "", "", "", ""] for name, why in f.missing.items()]
    return headers, rows


def prediction_table(f: Factorial, readings: tuple | None = None) -> tuple[list[str], list[list[str]]]:
    """One row per registered prediction (or per one of ``readings``); the "thresholds written" column
    only when they differ (``written_line`` says it once otherwise)."""
    readings = f.predictions if readings is None else readings
    one = len({p.written for p in readings}) <= 1
    headers = ["mechanism", "if it is the cause", "contrast", "reading"] + ([] if one else ["thresholds written"])
    rows = []
    for p in readings:
        threshold = f"{'>' if p.side == 'above' else '<'} {p.threshold:g}"
        level = "" if p.estimate is None or p.level == f.level else f" at {p.level:.4g}"
        reading = p.reading + (f" ({p.reason})" if p.reason and p.reading != "not run" else "")
        rows.append([p.mechanism + (" (decisive)" if p.decisive else ""), p.text,
                     f"{_iv(p.estimate)}{level} ({threshold})", reading] + ([] if one else [p.written]))
    return headers, rows


def written_line(f: Factorial) -> str:
    """Each prediction read from its contrast's interval, and when its thresholds were written."""
    when = {p.written for p in f.predictions}
    stamp = f" The thresholds were written {when.pop()}." if len(when) == 1 else ""
    return ("Registered predictions, each read from its contrast's interval: supported when the interval lies past "
            "the threshold, refuted when it lies on the other side, undecided when it holds the threshold; a "
            "mechanism takes the reading of its decisive prediction." + stamp + " " + READ_RULE)


READ_RULE = ("A share of the gap is Fieller's interval of the ratio of the seed means (not testable without an "
             f"interval of plain − backprop above 0); a contrast with fewer than {MIN_PAIRED} paired seeds, or with a "
             "control chosen on its grid's edge, is not testable; the decisive predictions are read at the Bonferroni "
             f"level over the {sum(p.decisive for p in PREDICTIONS)} of them. This way of reading was written 2026-12-07, after backprop's diverged SmolLM2 "
             "seed had been seen and before any SmolLM2 prediction could be read (docs/breaks/factorial.md).")


def stable_line(f: Factorial) -> str:
    """What the second reading of the shares is, when backprop's chosen η_0 is unstable; "" otherwise."""
    if f.stable_lr is None:
        return ""
    n = f.stable_runs
    edge = (f" It sits just below the unstable {f.stable_above:g}, where a better stable backprop may lie: a "
            f"share read \"supported\" there must also be supported with its runs moved by the mean difference of "
            f"{f.stable_above:g}'s stable runs to them."
            if f.stable_above is not None else "")
    return (f"Backprop's chosen η_0 is unstable (a run at it ended at a test CE not below its start). The shares "
            f"of the gap read again against backprop at its stable η_0, {f.stable_lr:g}"
            + (", on its grid's edge" if f.stable_on_boundary else "")
            + f" (the least validation CE among the η_0 whose every run ended below its start), by the same rule. "
            f"{n} run{'s' if n != 1 else ''} stand behind \"stable\": none failed, which leaves a failure rate up "
            f"to {100 * (1 - 0.05 ** (1 / max(n, 1))):.0f}% not excluded at 95%.{edge} This second reading was "
            f"registered {f.stable_readings[0].written}; each mechanism keeps its registered reading above.")


def stable_table(f: Factorial) -> tuple[list[str], list[list[str]]] | None:
    """The share predictions read against the stable backprop (``stable_line``), when there is one."""
    return prediction_table(f, f.stable_readings) if f.stable_readings else None


def mechanism_rows(f: Factorial) -> list[list[str]]:
    """Each mechanism and its reading; M5 (the step size) is not a cell of the factorial."""
    rows = []
    for key, what in MECHANISMS.items():
        reading = f.mechanisms.get(key, "not run")
        if key == "M5":
            reading = ("not tested by the factorial; every control at an interior η_0 of its grid" if f.all_interior
                       else "not tested by the factorial; a choice on its grid's edge leaves it open")
        rows.append([f"{key}, {what}", reading])
    return rows


def alignment_table(f: Factorial) -> tuple[list[str], list[list[str]]] | None:
    """cos(g_out, g_ZL) per chunk (columns) at each step along plain ZeroLock's run (rows), when given."""
    plain = [p for p in f.alignment if p.control == PLAIN]
    if not plain:
        return None
    chunks = sorted({p.chunk for p in plain if p.chunk})
    headers = ["after step"] + [f"chunk {k}" for k in chunks] + ["all chunks", "seeds"]
    rows = []
    for step in sorted({p.step for p in plain}):
        at = {p.chunk: p for p in plain if p.step == step}
        rows.append([str(step)] + [_iv(at[k].cosine) if k in at else "—" for k in [*chunks, 0]] + [str(at[0].seeds)])
    return headers, rows


ALIGNMENT_TEXT = ("The alignment along plain ZeroLock's run: the cosine between the output CE's gradient and "
                  "ZeroLock's step, per chunk and over all (positive: the step lowers the output CE at first order).")


def control_alignment_table(f: Factorial) -> tuple[list[str], list[list[str]]] | None:
    """Chunk 1's cosine and the total's at each step (columns) along each control's run (rows, in the
    factorial's order), when an alignment file of a control other than plain ZeroLock was given."""
    if not any(p.control != PLAIN for p in f.alignment):
        return None
    steps = sorted({p.step for p in f.alignment})
    headers = ["control", "η_0", *(f"chunk 1, after step {t}" for t in steps), f"all chunks, after step {steps[-1]}",
               "seeds"]
    rows = []
    for control in CONTROLS:
        at = {(p.step, p.chunk): p for p in f.alignment if p.control == control.name}
        if not at:
            continue
        first = next(iter(at.values()))
        rows.append([control.label, "—" if first.lr is None else fmt(first.lr),
                     *(_iv(at[t, 1].cosine) if (t, 1) in at else "—" for t in steps),
                     _iv(at[steps[-1], 0].cosine) if (steps[-1], 0) in at else "—", str(first.seeds)])
    return headers, rows


CONTROL_ALIGNMENT_TEXT = ("Chunk 1's step against the output's gradient along each control's run: the cosine between "
                          "the output CE's gradient on chunk 1's adapters and the control's step there, and over all "
                          "chunks at the last step measured; each control at the η_0 of its alignment run "
                          "(docs/DIAGNOSIS.md, sections 2 and 2c).")


def why_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The section, when a factorial directory was among the inputs; nothing otherwise."""
    f = suite.get(FACTORIAL)
    if not isinstance(f, Factorial):
        return []
    return [Block("h2", TITLE), Block("p", intro(f)), table(*control_table(f)),
            Block("p", written_line(f)),
            table(*prediction_table(f)), table(["mechanism", "reading"], mechanism_rows(f)),
            *_stable_blocks(f), *_alignment_blocks(f)]


def _stable_blocks(f: Factorial) -> list[Block]:
    found = stable_table(f)
    return [] if found is None else [Block("h3", STABLE_TITLE), Block("p", stable_line(f)), table(*found)]


STABLE_TITLE = "The shares against backprop at its stable η_0 (a second reading)"


def _alignment_parts(f: Factorial) -> list[tuple[str, tuple[list[str], list[list[str]]]]]:
    """The alignment tables that ``f`` has (plain ZeroLock's per chunk, the controls' chunk 1), each with its text."""
    parts = [(ALIGNMENT_TEXT, alignment_table(f)), (CONTROL_ALIGNMENT_TEXT, control_alignment_table(f))]
    return [(text, found) for text, found in parts if found is not None]


def _alignment_md(f: Factorial) -> list[str]:
    return [part for text, found in _alignment_parts(f) for part in (text, _md_table(*found))]


def _alignment_blocks(f: Factorial) -> list[Block]:
    return [block for text, found in _alignment_parts(f) for block in (Block("p", text), table(*found))]


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    return "\n".join([md_row(headers), "|" + "---|" * len(headers), *(md_row(row) for row in rows)])


def markdown(f: Factorial) -> str:
    """The section as Markdown (``zerolock diagnose``)."""
    return "\n\n".join([f"## {TITLE}", intro(f), _md_table(*control_table(f, "**")), written_line(f),
                        _md_table(*prediction_table(f)),
                        "\n".join(f"- {what}: **{reading}**" for what, reading in mechanism_rows(f)),
                        *([f"### {STABLE_TITLE}", stable_line(f), _md_table(*stable_table(f))] if f.stable_readings else []),
                        *_alignment_md(f)]) + "\n"


def compact_markdown(f: Factorial) -> str:
    """README's form: each control's test CE and its differences, then the mechanisms' readings."""
    rows = [[r.label, f"{r.lr:g}" + (" (edge)" if r.on_boundary else ""), _iv(r.test), _iv(r.minus_backprop),
             _iv(r.minus_plain)] for r in f.rows]
    table_md = _md_table(["control", "η_0", "test CE", "− backprop", "− ZeroLock α = ½"], rows)
    readings = "; ".join(f"{what.split(',')[0]} **{reading}**" for what, reading in mechanism_rows(f)[:4])
    stable = "; ".join(f"{r.mechanism} {r.reading}" + (f" (share {_iv(r.estimate)} at {r.level:.4g})" if r.estimate else "")
                       for r in f.stable_readings)
    tail = ([f"Against backprop at its stable η_0 {f.stable_lr:g} (its chosen η_0 diverged on a seed; registered "
             f"{f.stable_readings[0].written}): {stable}."] if f.stable_readings else [])
    return "\n\n".join([f"**{intro(f)}**", table_md, f"Mechanisms (M1 output teacher, M2 early objectives, M3 "
                          f"detaching, M4 p_0): {readings}; M5 (the step size) is not a cell of the factorial.",
                          *tail]) + "\n"


def _markers(model: str) -> tuple[str, str]:
    return (f"<!-- zerolock diagnose --publish {model}: begin -->", f"<!-- zerolock diagnose --publish {model}: end -->")


def publish(f: Factorial, path: Path, command: str) -> Path:
    """Replace ``path``'s block for this model (``_markers``) with the compact table and its provenance, or
    write a new page; a one-line ``ValueError`` for an existing file without the block (nothing written)."""
    import datetime as dt

    from reports.publish import package_commit

    path = Path(path)
    begin, end = _markers(f.model or "model")
    lines = [f"- command: `{command}`", f"- commit: `{package_commit()}`",
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d')}", ""]
    block = "\n".join([begin, *lines, compact_markdown(f) + end])
    if path.is_dir():
        raise ValueError(f"--publish {path}: a directory; give a file")
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if not (begin in text and end in text and text.index(begin) < text.index(end)):
            raise ValueError(f"--publish {path}: the file exists and holds no {begin} ... {end} block; not overwriting it")
        head, rest = text.split(begin, 1)
        path.write_text(head + block + rest.split(end, 1)[1], encoding="utf-8")
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {TITLE}\n\n{block}\n", encoding="utf-8")
    return path
