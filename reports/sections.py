"""Report sections of the verdicts on Lemma 2, Assumption 5 and Proposition 1."""

from __future__ import annotations

from analyses.assumption5.scaling import SCALING, StepScaling
from analyses.descriptive.depth import DEPTH, DepthSet
from analyses.descriptive.drift import DRIFT, DriftCheck
from analyses.descriptive.movement import MINIMIZERS, MinimizerTable, ToyCheck
from analyses.descriptive.proposition_pairs import PROPOSITION, PropositionSet
from analyses.descriptive.stability import STABILITY_SUMMARY, StabilitySummary
from analyses.descriptive.toy import TOY_CHECK
from analyses.lemma2.fixed_point import FIXED_POINT, ArmDecision, FixedPointResult
from analyses.lemma2.fixed_point_controls import CONTROLS, FixedPointControls
from analyses.lemma2.targets import MISMATCH, Lemma2Mismatch, Lemma2Tracking
from analyses.lemma2.targets import TRACKING as LEMMA2_TRACKING
from analyses.proposition1.identity import IDENTITY, Proposition1Identity
from analyses.suite import SuiteAnalysis
from reports.blocks import Block, pct, vec
from reports.blocks import table as grid
from reports.wording import drift_line, fmt
from zerolock_theory.vocab import OBJECTIVES

__all__ = ["depth_blocks", "lemma2_blocks", "stability_blocks"]


def lemma2_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Lemma 2: which target does a trained chunk track?")]
    toy = suite.get(TOY_CHECK)
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
                vec(r.p_y),
                vec(r.m),
                vec(r.g),
                fmt(r.kl_p_py),
                fmt(r.ce_py_p),
                fmt(r.reverse_loss),
                fmt(r.forward_loss),
                fmt(r.tv_m_g),
            ]
            for r in toy.rows
        ]
        out.append(
            grid(
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
    out.extend(_tracking_blocks(suite))
    table = suite.get(MINIMIZERS)
    if isinstance(table, MinimizerTable):
        out.append(Block("h3", "Descriptive: movement of each objective's own gap (not a verdict)"))
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
        out.append(grid(headers, rows))
        rows = [[t.trained, t.measure.upper(), str(t.difference), t.toward] for t in table.tracking]
        out.append(grid(["trained", "measure", "r(m_k) - r(g_k)", "moves toward"], rows))
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
            out.append(grid(headers, rows))
        else:
            out.append(Block("p", "No forward/reverse contrast: runs of only one direction."))
        out.append(Block("figure", "minimizers"))
    else:
        out.append(
            Block(
                "p", f"On-model table not measured: {suite.why(MINIMIZERS, 'no data')}."
            )
        )
    return out


def stability_blocks(suite: SuiteAnalysis) -> list[Block]:
    out = [Block("h2", "Assumption 5: the stability ratio rho_t = max(phi_t, 0) / q_t")]
    for obj, name in (
        ("paper", "R (paper objective)"),
        ("implemented", "R̄ (implemented objective)"),
    ):
        out.append(Block("h3", name))
        summary = suite.get(STABILITY_SUMMARY[obj])
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
                    pct(c.share_phi_positive),
                    fmt(c.remainder_ratio_median),
                ]
                for c in summary.chunks
            ]
            out.append(
                grid(
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
                Block("p", f"Not measured: {suite.why(STABILITY_SUMMARY[obj], 'no data')}.")
            )
        out.extend(_scaling_blocks(suite, obj))
    if any(suite.get(SCALING[o]) is not None for o in OBJECTIVES):
        out.extend([Block("figure", "along"), Block("figure", "stability")])
    if any(suite.get(DRIFT[o]) is not None for o in OBJECTIVES):
        out.append(Block("figure", "drift"))
    return out


def _scaling_blocks(suite: SuiteAnalysis, obj: str) -> list[Block]:
    """The step-scaling table (one row per group, the primary first) and the drift line."""
    scaling = suite.get(SCALING[obj])
    if not isinstance(scaling, StepScaling):
        return [Block("p", f"Step scaling not measured: {suite.why(SCALING[obj], 'no data')}.")]
    def share(x) -> str:
        return "n/a" if x is None else f"{x.estimate:.0%} [{x.low:.0%}, {x.high:.0%}]"

    def gamma(g) -> str:
        if g.along is None:
            return "n/a"
        return f"{g.along.gamma if g.along.gamma else 'n/a'} (first order: {g.along.kappa:.2g})"

    def pairs(g) -> str:
        return f"{g.antithetic_one_positive}/{g.antithetic_pairs}" if g.antithetic_pairs else "not recorded"

    rows = [
        [("primary: " if i == 0 else "") + g.group, g.trained, str(len(g.seeds)), gamma(g), g.outcome,
         str(g.n_resolved), share(g.share_positive), g.chance, g.uniform, pairs(g),
         g.order.outcome if g.order else "n/a", str(g.slope) if g.slope else "n/a"]
        for i, g in enumerate(scaling.groups)
    ]
    out = [grid(["group", "trained", "seeds", "gamma of rho_t along the run", "along the run (the row)",
                 "resolved steps", "share phi'>0", "against chance (1/2)", "uniform in the step",
                 "antithetic pairs with one positive", "drift order (Theorem 1 (b))",
                 "slope log rho(c) on log c (smoothness)"], rows)]
    drift = suite.get(DRIFT[obj])
    if isinstance(drift, DriftCheck):
        out.append(Block("p", f"{drift_line(len(drift.runs), drift.d_exponent, drift.q_exponent)} ({drift.group}); D_T / sum q_t at the end: "
                     f"{drift.end_ratio if drift.end_ratio else 'n/a'}."))
    if scaling.excluded:
        out.append(Block("p", "Excluded as diverged: " + "; ".join(scaling.excluded) + "."))
    return out


def depth_blocks(suite: SuiteAnalysis) -> list[Block]:
    """Proposition 1 as algebra (the row), then the task CE by chunk and the unscaled transcription's
    rising pairs on this run (descriptive: a run adds no evidence to an identity)."""
    out = [Block("h2", "Proposition 1: algebra, and the task CE by depth (descriptive)")]
    out += _identity_blocks(suite) + _proposition_blocks(suite)
    depth = suite.get(DEPTH)
    if not isinstance(depth, DepthSet):
        return out + [Block("p", f"Not measured: {suite.why(DEPTH, 'no data')}.")]
    rows = [
        [
            p.run,
            p.source,
            p.n_evaluated,
            pct(p.share_holds),
            ", ".join(map(fmt, p.final_ce)),
            ", ".join(map(fmt, p.gap_final)) or "-",
        ]
        for p in depth.profiles
    ]
    out.append(
        grid(
            ["run", "source", "evaluated", "non-increasing", "final CE by k", "final delta_k"], rows
        )
    )
    out.append(Block("figure", "depth"))
    return out


def _tracking_blocks(suite: SuiteAnalysis) -> list[Block]:
    """Lemma 2 on the model, from exact readouts: the mismatch per chunk, the fixed-point
    experiment per chunk, and the tracking statistic against its entropy-matched null (descriptive)."""
    out = [Block("h3", "On the model: TV(m_k, g_k) at the exact readouts (untrained -> trained)")]
    mismatch = suite.get(MISMATCH)
    if isinstance(mismatch, Lemma2Mismatch):
        out.append(grid(["chunk", "untrained", "trained"],
                        [[c.chunk, str(c.untrained_interval or "n/a"), str(c.trained_interval or "n/a")]
                         for c in mismatch.chunks]))
    else:
        out.append(Block("p", f"Not measured: {suite.why(MISMATCH, 'no data')}."))
    out.extend(_fixed_point_blocks(suite))
    tracking = suite.get(LEMMA2_TRACKING)
    out.append(Block("h3", "Descriptive only: r(m) - r(g) against its entropy-matched null"))
    if isinstance(tracking, Lemma2Tracking) and tracking.runs:
        out.append(Block("p", "r(target) = relative reduction of TV to the target from the untrained to the trained "
                              "readouts; the null flattens the untrained readouts to the trained entropy, with no "
                              "label information. Flattening alone moves a readout toward g_k when p_(k-1) is nearly "
                              "uniform, so only the excess over the null says anything, and it decides no row."))
        out.append(grid(["run", "r(m) - r(g)", "null", "excess"],
                        [[r.run, fmt(r.difference), fmt(r.null_difference), fmt(r.excess)] for r in tracking.runs]))
        out.append(Block("p", f"Over seeds: r(m) - r(g) = {tracking.difference or 'n/a'}, null "
                              f"{tracking.null_difference or 'n/a'}, excess {tracking.excess or 'n/a'}."))
    else:
        out.append(Block("p", f"Not measured: {suite.why(LEMMA2_TRACKING, 'no entropy-matched null')}."))
    return out


def _fixed_points(suite: SuiteAnalysis) -> list[tuple[FixedPointResult, FixedPointControls | None]]:
    """Per chunk, the experiment (with its controls when run), lowest chunk first."""
    found: dict[int, tuple[FixedPointResult, FixedPointControls | None]] = {}
    for r in suite.each(FIXED_POINT):
        found.setdefault(r.chunk, (r, None))
    for r in suite.each(CONTROLS):
        found[r.chunk] = (r.main, r)
    return [found[k] for k in sorted(found)]


def _arm(a: ArmDecision | None) -> str:
    if a is None:
        return "not recorded"
    holm = f", Holm p {a.adjusted:.2g}" if a.adjusted is not None else ""
    return f"{a.outcome} ({a.interval or 'n/a'}{holm})"


def _fixed_point_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The fixed-point experiment per chunk: each arm's outcome, each seed's arm statistics and progress."""
    out = [Block("h3", "Which target does training move toward? One chunk trained alone on a fixed batch")]
    fixed = _fixed_points(suite)
    if not fixed:
        return [*out, Block("p", "Not measured: no fixed_point.json or controls.json given.")]
    out.append(Block("p", "Each arm is decided on its own: the CE arm toward m_k rather than g_k, the reverse arm "
                          "toward g_k rather than m_k (the part of the change in TV(.,m_k) - TV(.,g_k) that the "
                          "labels add, > 0 toward the arm's own optimum, against the floor that label-free moves "
                          "reach; Holm over the two arms). Progress: the move p^d - p^0 written as x (m_k - p^0) + "
                          "y (g_k - p^0) in probability space; x = 1 is m_k reached, y = 1 is g_k reached, and a "
                          "coefficient can be negative."))
    out.append(grid(["chunk", "row", "CE arm (own: m_k)", "reverse arm (own: g_k)", "floor", "seeds counted"],
                    [[r.chunk, r.outcome, _arm(r.forward_arm), _arm(r.reverse_arm), fmt(r.arm_floor), r.counted]
                     for r, _ in fixed]))
    rows = [[r.chunk, s.seed, fmt(s.arm("forward")), fmt(s.arm("reverse")), pct(s.progress_forward),
             pct(s.forward.toward_g), pct(s.progress_reverse), pct(s.reverse.toward_m), fmt(s.contrast),
             "yes" if s.label_blind(r.residual_floor) else "no"]
            for r, _ in fixed for s in r.seeds]
    out.append(grid(["chunk", "seed", "CE arm statistic", "reverse arm statistic", "CE: toward m_k",
                     "CE: toward g_k", "reverse: toward g_k", "reverse: toward m_k", "contrast C (descriptive)",
                     "label-blind (left out)"], rows))
    for r, controls in fixed:
        if controls is None:
            out.append(Block("p", f"Chunk {r.chunk}: no controls run (not calibrated)."))
            continue
        state = "calibrated" if controls.calibrated else "NOT calibrated: " + "; ".join(controls.failed_controls)
        out.append(Block("p", f"Chunk {r.chunk} controls ({state}): labels permuted: {controls.permuted.outcome} "
                              f"(CE arm {_arm(controls.permuted.forward_arm)}; reverse arm "
                              f"{_arm(controls.permuted.reverse_arm)}); label-free move at s = "
                              f"{controls.label_free_step:g}: {controls.label_free.outcome}."))
    return out


def _identity_blocks(suite: SuiteAnalysis) -> list[Block]:
    """The analytic row's checks: per loss, the readout pairs and the largest excess; the counterexample."""
    found = suite.get(IDENTITY)
    if not isinstance(found, Proposition1Identity):
        return [Block("p", f"Not measured: {suite.why(IDENTITY, 'no data')}.")]
    c = found.transcription
    rows = [[x.direction, x.cases, x.at_optimum, f"{x.max_violation:.1e}", f"{x.max_residual:.1e}"]
            for x in (found.forward, found.reverse)]
    return [Block("h3", "What the losses imply, for every pair of readouts (an identity: delta_k/alpha)"),
            grid(["loss", "readout pairs", "exactly at the optimum", "largest excess over delta_k/alpha",
                  "identity residual"], rows),
            Block("p", f"As transcribed, CE_k <= CE_(k-1) + delta_k is false: a reverse chunk exactly at g_k "
                       f"(delta_k = 0) after p_(k-1)(y) = {c.p_prev_label:g} (eps = {c.epsilon:g}, alpha = "
                       f"{c.alpha:g}, V = {c.vocab}) has CE_(k-1) = {fmt(c.ce_prev)} < CE_k = {fmt(c.ce)}.")]


def _proposition_blocks(suite: SuiteAnalysis) -> list[Block]:
    out: list[Block] = []
    test = suite.get(PROPOSITION)
    if isinstance(test, PropositionSet):
        out.append(Block("h3", "Descriptive: the unscaled transcription CE_k <= CE_(k-1) + delta_k at the pairs "
                               "where CE rises with depth (not evidence: it is false as algebra, whatever the run)"))
        rows = [
            [g.group, r.run, str(r.pairs.n_pairs), str(r.pairs.n_rising), str(r.pairs.n_violations),
             f"{r.baseline.n_rising}/{r.baseline.n_pairs}", fmt(r.min_margin)]
            for g in test.groups
            for r in g.runs
        ]
        out.append(grid(["group", "run", "pairs", "rising", "violating", "rising at the untrained model",
                         "smallest margin"], rows))
        out.extend(Block("p", f"{g.group}: {g.pairs.n_violations} of {g.pairs.n_rising} rising pairs exceed the "
                              "unscaled gap.") for g in test.groups)
    else:
        out.append(Block("p", f"Proposition 1 not measured: {suite.why(PROPOSITION, 'no data')}."))
    return out
