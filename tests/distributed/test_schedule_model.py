"""The schedule model (pipeline/schedule_model.py): closed forms, monotonicity, PyTorch's orders."""

from __future__ import annotations

from fractions import Fraction

import pytest
from torch.distributed.pipelining.schedules import _add_send_recv, _simulate_comms_compute

from zerolock_theory.pipeline.schedule_model import (
    MODEL_SCHEDULES,
    StageCosts,
    simulate,
    stage_orders,
)

GRID = [(1, 1), (2, 1), (2, 2), (2, 5), (3, 7), (4, 4), (4, 8), (5, 2), (8, 16)]


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize(("K", "m"), GRID)
@pytest.mark.parametrize(("f", "b"), [(1, 1), (1, 2), (Fraction(3, 7), Fraction(5, 3))])
def test_uniform_costs_give_the_closed_form_bubble(schedule, K, m, f, b) -> None:
    tl = simulate(schedule, K, m, StageCosts(forward=Fraction(f), backward=Fraction(b)))
    assert tl.makespan == (m + K - 1) * (Fraction(f) + Fraction(b))  # exact, Fraction arithmetic
    for s in range(K):
        assert tl.idle_fraction(s) == Fraction(K - 1, m + K - 1)


@pytest.mark.parametrize(("K", "m"), GRID)
def test_zerolock_has_no_bubble_in_steady_state(K, m) -> None:
    c = StageCosts(forward=Fraction(1), backward=Fraction(2), readout=Fraction(1, 2), loss=Fraction(1, 5))
    tl = simulate("zerolock", K, m, c, steps=4)
    assert tl.period == tl.busy[0] == m * (1 + 2 + 2 * Fraction(1, 2) + Fraction(1, 5))
    assert tl.makespan == tl.busy[0] + (K - 1) * 1  # the fill: K−1 chunk forwards, paid once


@pytest.mark.parametrize("devices", [None, 1, 2])
@pytest.mark.parametrize(("K", "m"), [(2, 1), (2, 4), (4, 4), (4, 8)])
def test_zerolock_step_time_is_monotone_in_the_readout_cost(K, m, devices) -> None:
    periods = []
    for r in [Fraction(i, 4) for i in range(9)]:
        c = StageCosts(forward=Fraction(1), backward=Fraction(2), readout=r, readout_backward=r,
                       loss=Fraction(1, 10), send=Fraction(1, 20), receive=Fraction(1, 10))
        periods.append(simulate("zerolock", K, m, c, steps=4, devices=devices).period)
    assert all(a < b for a, b in zip(periods, periods[1:], strict=False))  # every readout adds work on every stage


def test_processor_sharing_on_one_core_serialises_all_work() -> None:
    c = StageCosts(forward=Fraction(1), backward=Fraction(2), readout=Fraction(1, 3))
    for schedule in MODEL_SCHEDULES:
        tl = simulate(schedule, 4, 4, c, steps=1, devices=1)
        assert tl.makespan == sum(tl.busy)  # one core: the step is the sum of all stages' work


@pytest.mark.parametrize("schedule", MODEL_SCHEDULES)
@pytest.mark.parametrize(("K", "m"), [(2, 2), (4, 4), (4, 8), (3, 5)])
def test_orders_are_deadlock_free_under_pytorchs_own_simulator(schedule, K, m) -> None:
    orders = stage_orders(schedule, K, m)
    assert all(len(v) == 2 * m for v in orders.values())
    if schedule != "zerolock":  # PyTorch's simulator knows backprop dependencies only
        _simulate_comms_compute(_add_send_recv(orders, lambda s: s, K), lambda s: s, K)


def test_1f1b_order_is_pytorchs_warmup_then_alternation() -> None:
    orders = stage_orders("1f1b", 4, 6)
    assert [str(a) for a in orders[0]] == ["0F0", "0F1", "0F2", "0F3", "0B0", "0F4", "0B1", "0F5",
                                           "0B2", "0B3", "0B4", "0B5"]
    assert [str(a) for a in orders[3]][:4] == ["3F0", "3B0", "3F1", "3B1"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"schedule": "pipedream"}, "schedule must be"),
    ({"K": 0}, "need K >= 1"),
    ({"steps": 0}, "need steps >= 1"),
    ({"costs": [StageCosts(1, 1)]}, "1 StageCosts for 2 stages"),
])
def test_bad_arguments_raise(kwargs, message) -> None:
    args = {"schedule": "1f1b", "K": 2, "m": 2, "costs": StageCosts(1, 1)} | kwargs
    with pytest.raises(ValueError, match=message):
        simulate(**args)


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), True, "1"])
def test_bad_costs_raise(value) -> None:
    with pytest.raises(ValueError, match="StageCosts.forward"):
        StageCosts(forward=value, backward=1.0)
