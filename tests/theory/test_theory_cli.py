"""``zerolock theory``: toy, minimizers and derive through ``zerolock_theory.app.cli.main``."""

from __future__ import annotations

import json
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from strategies import loss_case

from zerolock_theory.app.cli import main


def _run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_toy_json_reports_inf_and_log_two(capsys) -> None:
    out = _run_json(capsys, "theory", "toy", "--json")
    one_hot, smoothed = out["one_hot"], out["smoothed"]
    assert one_hot["kl_p_py"] == "inf" and one_hot["reverse_loss_at_p"] == "inf"
    assert abs(one_hot["ce_py_p"] - math.log(2)) <= 1e-12
    assert one_hot["reverse_minimizer"] == [1.0, 0.0] and one_hot["reverse_degenerate"] is True
    assert one_hot["forward_minimizer"] == pytest.approx([0.75, 0.25], abs=1e-15)
    assert isinstance(smoothed["kl_p_py"], float) and math.isfinite(smoothed["kl_p_py"])
    assert smoothed["epsilon"] == 0.1 and smoothed["reverse_degenerate"] is False
    assert abs(smoothed["ce_py_p"] - math.log(2)) <= 1e-12


def test_toy_text_and_alpha_option(capsys) -> None:
    assert main(["theory", "toy", "--alpha", "0.25"]) == 0
    text = capsys.readouterr().out
    assert "kl_p_py" in text and "inf" in text and "alpha = 0.25" in text


def _csv(p: torch.Tensor) -> str:
    return ",".join(repr(float(x)) for x in p)


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(loss_case(zeros=False))
def test_minimizers_match_formulas_and_numerics(capsys, case) -> None:
    p_y, p_prev, alpha = case
    out = _run_json(
        capsys,
        "theory",
        "minimizers",
        "--p-y",
        _csv(p_y),
        "--p-prev",
        _csv(p_prev),
        "--alpha",
        repr(alpha),
        "--json",
    )
    m = alpha * p_y + (1 - alpha) * p_prev
    g = p_y**alpha * p_prev ** (1 - alpha)
    g = g / g.sum()
    for section, want in (("forward", m), ("reverse", g)):
        got = torch.tensor(out[section]["closed_form"], dtype=torch.float64)
        assert float((got - want).abs().max()) <= 1e-6
        numerical = torch.tensor(out[section]["numerical"], dtype=torch.float64)
        assert float((numerical - got).abs().max()) <= 1e-5
        assert out[section]["max_abs_error"] <= 1e-5


def test_minimizers_one_hot_reverse_is_degenerate_not_nan(capsys) -> None:
    out = _run_json(
        capsys,
        "theory",
        "minimizers",
        "--p-y",
        "0,1,0",
        "--p-prev",
        "0.2,0.5,0.3",
        "--alpha",
        "0.3",
        "--json",
    )
    reverse = out["reverse"]
    assert reverse["closed_form"] == [0.0, 1.0, 0.0] and reverse["numerical"] == [0.0, 1.0, 0.0]
    assert reverse["degenerate"] is True and reverse["loss_at_p_prev"] == "inf"
    assert "epsilon" in reverse["note"]
    assert out["forward"]["degenerate"] is False
    smoothed = _run_json(
        capsys,
        "theory",
        "minimizers",
        "--p-y",
        "0,1,0",
        "--p-prev",
        "0.2,0.5,0.3",
        "--alpha",
        "0.3",
        "--epsilon",
        "0.1",
        "--json",
    )
    assert smoothed["reverse"]["degenerate"] is False
    assert smoothed["reverse"]["max_abs_error"] <= 1e-5


def test_minimizers_text_output(capsys) -> None:
    assert (
        main(
            [
                "theory",
                "minimizers",
                "--p-y",
                "0.7,0.2,0.1",
                "--p-prev",
                "0.2,0.5,0.3",
                "--alpha",
                "0.3",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "arithmetic m_k" in text and "geometric g_k" in text and "0.35, 0.41, 0.24" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--p-y", "0.7,0.3", "--p-prev", "0.2,0.5,0.3"], "different lengths"),
        (["--p-y=-0.1,1.1", "--p-prev", "0.5,0.5"], "non-negative"),
        (["--p-y", "0.7,0.2", "--p-prev", "0.5,0.5"], "sum to 1"),
        (["--p-y", "0.5,0.5", "--p-prev", "0.5,0.5", "--alpha", "1.5"], "[0, 1]"),
        (["--p-y", "0.5,0.5", "--p-prev", "0.5,0.5", "--alpha=-0.1"], "[0, 1]"),
        (["--p-y", "1", "--p-prev", "1"], "at least 2"),
        (["--p-y", "0.5,abc", "--p-prev", "0.5,0.5"], "cannot parse"),
        (["--p-y", "0.5,0.5", "--p-prev", "0.5,0.5", "--alpha", "x"], "cannot parse"),
        (["--p-y", "0.5,inf", "--p-prev", "0.5,0.5"], "finite"),
        (["--p-y", "0.5,0.5", "--p-prev", "0.5,0.5", "--epsilon", "2"], "[0, 1]"),
    ],
)
def test_invalid_input_exits_2_with_one_line(capsys, argv, message) -> None:
    assert main(["theory", "minimizers", *argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in captured.err
    assert captured.out == ""


def test_derive_prints_pass_for_every_derivation(capsys) -> None:
    assert main(["theory", "derive"]) == 0
    text = capsys.readouterr().out
    assert text.count("[PASS]") == 14 and "[FAIL]" not in text
    assert "14/14 derivations hold" in text
