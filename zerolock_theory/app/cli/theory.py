"""``zerolock theory``: the local-loss theory, checked exactly and numerically.

Sub-commands (all print text, or one JSON object with ``--json``):

``zerolock theory toy [--alpha A] [--epsilon E] [--json]``
    The two-token check: p_y = (1, 0), p_{k-1} = p = (0.5, 0.5), at α = A
    (default 0.5), with the one-hot target and with label smoothing ε = E (default 0.1).
    JSON keys: ``alpha``, ``p``, ``p_prev``, and two cases ``one_hot`` and ``smoothed``,
    each with ``epsilon``, ``p_y`` (the target used), ``kl_p_py`` = KL(p ‖ p_y),
    ``ce_py_p`` = CE(p_y, p), ``reverse_loss_at_p`` = ℓ^R(p), ``forward_loss_at_p`` = ℓ^F(p),
    ``forward_minimizer`` = m_k, ``reverse_minimizer`` = g_k and ``reverse_degenerate``
    (ℓ^R is +inf for every p with mass where p_y = 0).

``zerolock theory minimizers --p-y 0.7,0.2,0.1 --p-prev 0.2,0.5,0.3 --alpha 0.3 [--epsilon E] [--json]``
    Closed-form minimizers (arithmetic m_k of ℓ^F, geometric g_k of ℓ^R) next to numerical
    minimizers (``zerolock_theory.theory.minimize``, which never uses the closed forms). p_y is
    label-smoothed with ε = E (default 0). JSON keys: ``alpha``, ``epsilon``, ``p_y`` (after
    smoothing), ``p_prev``, and ``forward`` / ``reverse``, each with ``closed_form_name``,
    ``closed_form``, ``numerical``, ``max_abs_error``, ``converged``, ``loss_at_minimum``,
    ``loss_at_p_prev``, ``degenerate`` and ``note``. A one-hot p_y with ε = 0 reports
    g_k = e_y and ``degenerate: true`` (ℓ^R = +inf off e_y). ``closed_form`` is null when
    g_k is undefined (p_y and p_{k-1} with disjoint supports).

``zerolock theory derive [--pretty]``
    The sympy derivations of ``zerolock_theory.theory.symbolic``, each marked PASS or FAIL; exit
    status 1 if any fails.

In JSON, infinities are the strings "inf" / "-inf" and undefined values are null.
Invalid input (unparsable numbers, negative entries, sums off 1 by more than 1e-6, fewer
than 2 entries, different lengths, α or ε outside [0, 1]) is one line on stderr, status 2.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from zerolock_theory.app.cli import CLIError
from zerolock_theory.jsonio import dumps, to_json_value

__all__ = ["parse_distribution", "parse_unit_interval", "register"]


def parse_unit_interval(text: str, name: str) -> float:
    """A number in [0, 1] from the command line, or ``CLIError``."""
    try:
        value = float(text)
    except ValueError:
        raise CLIError(f"{name}: cannot parse {text!r} as a number") from None
    if not 0.0 <= value <= 1.0:
        raise CLIError(f"{name} must lie in [0, 1], got {text}")
    return value


def parse_distribution(text: str, name: str) -> list[float]:
    """Comma-separated probabilities (≥ 2, non-negative, sum 1 within 1e-6), renormalized."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) < 2:
        raise CLIError(f"{name}: need at least 2 comma-separated entries, got {len(parts)}")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise CLIError(f"{name}: cannot parse {part!r} as a number") from None
        if not math.isfinite(value):
            raise CLIError(f"{name}: {part!r} is not a finite number")
        if value < 0:
            raise CLIError(f"{name}: entries must be non-negative, got {part}")
        values.append(value)
    total = math.fsum(values)
    if abs(total - 1.0) > 1e-6:
        raise CLIError(f"{name}: entries must sum to 1 (within 1e-6), they sum to {total:.10g}")
    return [v / total for v in values]


def _fmt(value: Any) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, list):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)


def _toy_case(alpha: float, epsilon: float) -> dict[str, Any]:
    """``theory.toy.two_token_case`` as the CLI prints it."""
    from zerolock_theory.theory.toy import two_token_case

    case = two_token_case(alpha, epsilon)
    return {
        "epsilon": epsilon,
        "p_y": case.p_y,
        "kl_p_py": case.kl_p_py,
        "ce_py_p": case.ce_py_p,
        "reverse_loss_at_p": case.reverse_loss,
        "forward_loss_at_p": case.forward_loss,
        "forward_minimizer": case.m,
        "reverse_minimizer": case.g,
        "reverse_degenerate": case.reverse_degenerate,
    }


def run_toy(args: argparse.Namespace) -> int:
    """The two-token check (p_y = (1, 0), p = (0.5, 0.5)), one-hot and label-smoothed."""
    alpha = parse_unit_interval(args.alpha, "--alpha")
    epsilon = parse_unit_interval(args.epsilon, "--epsilon")
    result = to_json_value(
        {
            "alpha": alpha,
            "p": [0.5, 0.5],
            "p_prev": [0.5, 0.5],
            "one_hot": _toy_case(alpha, 0.0),
            "smoothed": _toy_case(alpha, epsilon),
        }
    )
    if args.json:
        print(dumps(result, indent=2))
        return 0
    print(f"two-token check: p_prev = p = (0.5, 0.5), alpha = {_fmt(alpha)}")
    for case in ("one_hot", "smoothed"):
        print(f"\n{case} (epsilon = {_fmt(result[case]['epsilon'])}):")
        for key, value in result[case].items():
            if key != "epsilon":
                print(f"  {key:<20} {_fmt(value)}")
    return 0


def _minimizer_report(y, q, alpha: float, direction: str) -> dict[str, Any]:
    """Closed form, numerical minimizer, their gap and loss values for one direction."""
    import torch

    from zerolock_theory.theory.losses import local_loss
    from zerolock_theory.theory.minimize import minimize_local_loss
    from zerolock_theory.theory.targets import arithmetic_target, geometric_target

    degenerate = direction == "reverse" and alpha > 0 and bool((y == 0).any())
    report: dict[str, Any] = {"closed_form_name": "arithmetic m_k", "degenerate": degenerate}
    if direction == "forward":
        closed = arithmetic_target(y, q, alpha)
    else:
        report["closed_form_name"] = "geometric g_k"
        log_g, log_z = geometric_target(y, q, alpha)
        closed = log_g.exp() if bool(torch.isfinite(log_z)) else None
    report["closed_form"] = closed
    report["loss_at_p_prev"] = float(local_loss(q, y, q, alpha, direction))
    if closed is None:
        report.update(numerical=None, max_abs_error=None, converged=None, loss_at_minimum=math.inf)
        report["note"] = "p_y and p_prev have disjoint supports: loss is +inf on the whole simplex"
        return report
    numerical = minimize_local_loss(y, q, alpha, direction)
    report["numerical"] = numerical.p
    report["max_abs_error"] = float((numerical.p - closed).abs().max())
    report["converged"] = numerical.success
    report["loss_at_minimum"] = float(local_loss(closed, y, q, alpha, direction))
    report["note"] = (
        "degenerate: the loss is +inf for every p with mass where p_y = 0 "
        "(one-hot p_y: g_k = e_y); reverse-KL training needs label smoothing epsilon > 0"
        if degenerate
        else ""
    )
    return report


def run_minimizers(args: argparse.Namespace) -> int:
    """Closed-form vs numerical minimizers of ℓ^F and ℓ^R for one position."""
    import torch

    from zerolock_theory.theory.targets import label_smooth

    p_y = parse_distribution(args.p_y, "--p-y")
    p_prev = parse_distribution(args.p_prev, "--p-prev")
    if len(p_y) != len(p_prev):
        raise CLIError(f"--p-y and --p-prev have different lengths ({len(p_y)} vs {len(p_prev)})")
    alpha = parse_unit_interval(args.alpha, "--alpha")
    epsilon = parse_unit_interval(args.epsilon, "--epsilon")
    y = label_smooth(torch.tensor(p_y, dtype=torch.float64), epsilon)
    q = torch.tensor(p_prev, dtype=torch.float64)
    result = to_json_value(
        {
            "alpha": alpha,
            "epsilon": epsilon,
            "p_y": y,
            "p_prev": q,
            "forward": _minimizer_report(y, q, alpha, "forward"),
            "reverse": _minimizer_report(y, q, alpha, "reverse"),
        }
    )
    if args.json:
        print(dumps(result, indent=2))
        return 0
    print(f"p_y    = {_fmt(result['p_y'])}  (epsilon = {_fmt(epsilon)})")
    print(f"p_prev = {_fmt(result['p_prev'])}")
    print(f"alpha  = {_fmt(alpha)}")
    titles = {
        "forward": "forward  l^F = a*CE(p_y,p) + (1-a)*KL(p_prev||p)",
        "reverse": "reverse  l^R = a*KL(p||p_y) + (1-a)*KL(p||p_prev)",
    }
    for direction, title in titles.items():
        section = result[direction]
        print(f"\n{title}")
        rows = {
            f"closed form ({section['closed_form_name']})": section["closed_form"],
            "numerical minimizer": section["numerical"],
            "max |closed - numerical|": section["max_abs_error"],
            "loss at minimum": section["loss_at_minimum"],
            "loss at p_prev": section["loss_at_p_prev"],
        }
        for label, value in rows.items():
            print(f"  {label + ':':<30} {_fmt(value)}")
        if section["note"]:
            print(f"  note: {section['note']}")
    return 0


def run_derive(args: argparse.Namespace) -> int:
    """Print every sympy derivation with PASS/FAIL; status 1 if any fails."""
    from zerolock_theory.theory.symbolic import all_derivations

    derivations = all_derivations()
    for derivation in derivations:
        print(derivation.render(pretty=args.pretty), end="\n\n")
    passed = sum(d.holds for d in derivations)
    print(f"{passed}/{len(derivations)} derivations hold")
    return 0 if passed == len(derivations) else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``theory`` with its sub-commands ``toy``, ``minimizers`` and ``derive``."""
    parser = subparsers.add_parser(
        "theory",
        help="the local-loss theory: toy check, minimizers, symbolic derivations",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="theory_command", metavar="SUBCOMMAND", required=True)
    toy = sub.add_parser("toy", help="the two-token check: both losses and minimizers on p_y = (1, 0), p = (0.5, 0.5)")
    toy.add_argument("--alpha", default="0.5", help="weight of the task term (default 0.5)")
    toy.add_argument("--epsilon", default="0.1", help="label smoothing of the second case")
    toy.add_argument("--json", action="store_true", help="print one JSON object")
    toy.set_defaults(func=run_toy)
    mins = sub.add_parser("minimizers", help="closed-form vs numerical minimizers")
    mins.add_argument("--p-y", required=True, help="target distribution, e.g. 0.7,0.2,0.1")
    mins.add_argument("--p-prev", required=True, help="upstream readout p_{k-1}, e.g. 0.2,0.5,0.3")
    mins.add_argument("--alpha", default="0.5", help="weight of the task term (default 0.5)")
    mins.add_argument("--epsilon", default="0", help="label smoothing applied to p_y (default 0)")
    mins.add_argument("--json", action="store_true", help="print one JSON object")
    mins.set_defaults(func=run_minimizers)
    derive = sub.add_parser("derive", help="print the sympy derivations with PASS/FAIL")
    derive.add_argument("--pretty", action="store_true", help="2-D sympy pretty printing")
    derive.set_defaults(func=run_derive)
