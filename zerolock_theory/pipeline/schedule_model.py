"""An event-driven model of one pipeline step: GPipe, 1F1B and ZeroLock with early forwarding.

Every stage s (0-based, = chunk s+1) runs its own ordered list of actions, written with the
action type of ``torch.distributed.pipelining`` (``_Action(stage, FORWARD | FULL_BACKWARD,
micro-batch)``). The per-stage order is the one the pipeline code runs:

* GPipe (``ScheduleGPipe``): F0 … F(m−1), then B0 … B(m−1);
* 1F1B (``Schedule1F1B``): min(m, K − s) warm-up forwards, then B, F alternately until every
  forward is done, then the remaining backwards (PyTorch's own warm-up count);
* ZeroLock (``pipeline/zerolock.py``): per micro-batch F (chunk forward, early send) and then
  its local step, written FULL_BACKWARD: the readout of h_k, the recomputed readout of
  h_{k−1}, the local loss and the backward through readout and chunk. No gradient travels.

Durations come from ``StageCosts`` (seconds of one micro-batch on one device):

  baselines, stage s < K−1:  F = forward + send,           B = backward + send (s > 0)
  baselines, stage K−1:      F = forward + readout + loss, B = readout_backward + backward + send
  ZeroLock, every stage:     F = forward + send (s < K−1),
                             B = 2·readout + loss + readout_backward + backward

and ``update`` (the optimizer step) ends every step on every stage. Dependencies: a forward
of stage s needs the same micro-batch's forward on stage s−1 plus ``receive`` (the wire
delay); a baseline backward of stage s < K−1 needs stage s+1's backward plus ``receive``;
ZeroLock stage s may start step t only once stage s+1 has completed t − L steps (flow control
with lead L, plus ``receive`` for the acknowledgement). Steps follow each other on a stage.

``devices``: None gives each stage its own device; an integer C models C shared CPU cores by
processor sharing: with n busy stages and ``background`` other runnable jobs on the machine,
each stage runs at min(1, C/(n + background)) of full speed. Sends are CPU time of the
sender; the wire delay ``receive`` occupies no device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from fractions import Fraction

from torch.distributed.pipelining.schedules import FORWARD, FULL_BACKWARD, _Action

__all__ = ["MODEL_SCHEDULES", "StageCosts", "Timeline", "simulate", "stage_orders"]

MODEL_SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b", "zerolock")
Number = float | Fraction


@dataclass(frozen=True)
class StageCosts:
    """Seconds of one micro-batch's work on one stage, at the full speed of one device."""

    forward: Number
    """Embedding context and the chunk's forward (autograd recording)."""
    backward: Number
    """The chunk's backward (input gradient and adapter gradients)."""
    readout: Number = 0
    """One readout h → logits through the frozen head (forward)."""
    readout_backward: Number = 0
    """The gradient through the head back to h."""
    loss: Number = 0
    """The loss over the vocabulary (softmax, CE, consistency), forward and backward."""
    send: Number = 0
    """Sender's time to post one activation (or gradient) message."""
    receive: Number = 0
    """Wire delay from a finished send to the receiver holding the message."""
    update: Number = 0
    """Optimizer step, once per training step."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float, Fraction)) or isinstance(value, bool) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"StageCosts.{f.name} must be a finite number >= 0, got {value!r}")

    def scaled(self, **factors: float) -> StageCosts:
        """A copy with named terms multiplied by the given factors."""
        return StageCosts(**{f.name: getattr(self, f.name) * factors.get(f.name, 1) for f in fields(self)})


def _check(schedule: str, K: int, m: int) -> None:
    if schedule not in MODEL_SCHEDULES:
        raise ValueError(f"schedule must be one of {MODEL_SCHEDULES}, got {schedule!r}")
    if K < 1 or m < 1:
        raise ValueError(f"need K >= 1 stages and m >= 1 micro-batches, got K={K}, m={m}")


def stage_orders(schedule: str, K: int, m: int) -> dict[int, list[_Action]]:
    """Stage index → its compute actions of one step, in the order the pipeline runs them."""
    _check(schedule, K, m)
    orders: dict[int, list[_Action]] = {}
    for s in range(K):
        F = [_Action(s, FORWARD, i) for i in range(m)]
        B = [_Action(s, FULL_BACKWARD, i) for i in range(m)]
        if schedule == "gpipe":
            orders[s] = F + B
        elif schedule == "zerolock":
            orders[s] = [a for pair in zip(F, B, strict=True) for a in pair]
        else:
            warm = min(m, K - s)
            order, f = F[:warm], warm
            for b in range(m):
                order.append(B[b])
                if f < m:
                    order.append(F[f])
                    f += 1
            orders[s] = order
    return orders


def _duration(schedule: str, action: _Action, K: int, c: StageCosts) -> Number:
    s, last = action.stage_index, action.stage_index == K - 1
    if action.computation_type == FORWARD:
        extra = c.readout + c.loss if last and schedule != "zerolock" else 0
        return c.forward + (0 if last else c.send) + extra
    if schedule == "zerolock":
        return 2 * c.readout + c.loss + c.readout_backward + c.backward
    return c.backward + (c.readout_backward if last else 0) + (c.send if s > 0 else 0)


@dataclass(frozen=True)
class Timeline:
    """The simulated steps: when each stage finished each step, and how busy it was."""

    schedule: str
    stages: int
    micro_batches: int
    step_end: list[list[Number]]  # [stage][step] time the stage finished the step
    busy: list[Number]  # per stage: device-seconds of work per step

    @property
    def makespan(self) -> Number:
        """Time until every stage finished the first step."""
        return max(ends[0] for ends in self.step_end)

    @property
    def period(self) -> Number:
        """Steady-state step time: the last stage's mean time between step ends after the first."""
        ends = self.step_end[-1]
        if len(ends) < 2:
            return self.makespan
        return (ends[-1] - ends[0]) / (len(ends) - 1)

    def idle_fraction(self, stage: int) -> Number:
        """1 − busy/makespan of ``stage`` in the first step (the bubble on one device)."""
        return 1 - self.busy[stage] / self.makespan


def _dependency(schedule: str, K: int, lead: int, step: int, action: _Action,
                first: bool, done: dict) -> tuple[bool, Number | None]:
    """(known, time) at which the messages ``action`` of ``step`` waits for were sent; time
    None when it waits for none."""
    s, i, kind = action.stage_index, action.microbatch_index, action.computation_type
    needs = []
    if kind == FORWARD and s > 0:
        needs.append((s - 1, step, FORWARD, i))
    if kind == FULL_BACKWARD and schedule != "zerolock" and s < K - 1:
        needs.append((s + 1, step, FULL_BACKWARD, i))
    if schedule == "zerolock" and first and s < K - 1 and step - lead - 1 >= 0:
        needs.append((s + 1, step - lead - 1, "end", None))
    if any(key not in done for key in needs):
        return False, None
    return True, max((done[key] for key in needs), default=None)


def simulate(schedule: str, K: int, m: int, costs: StageCosts | list[StageCosts], steps: int = 1,
             devices: int | None = None, lead: int = 2, background: float = 0.0) -> Timeline:
    """Run ``steps`` training steps of ``schedule`` on K stages with m micro-batches.

    ``costs``: one ``StageCosts`` for every stage, or a list of K. Exact with ``Fraction``
    costs. Guarantees (tests): on uniform costs with zero communication, GPipe's and 1F1B's
    first-step makespan is (m+K−1)(forward+backward) and each stage idles (K−1)/(m+K−1) of it;
    ZeroLock's period is non-decreasing in every cost term.
    """
    _check(schedule, K, m)
    if steps < 1 or lead < 1 or (devices is not None and devices < 1) or not background >= 0:
        raise ValueError(f"need steps >= 1, lead >= 1, devices >= 1 or None, background >= 0; "
                         f"got {steps}, {lead}, {devices}, {background}")
    per = list(costs) if isinstance(costs, list) else [costs] * K
    if len(per) != K:
        raise ValueError(f"{len(per)} StageCosts for {K} stages")
    orders = stage_orders(schedule, K, m)
    ops = []  # per stage: [(step, action, duration, first, last)]
    for s in range(K):
        one = [(a, _duration(schedule, a, K, per[s])) for a in orders[s]]
        seq = []
        for t in range(steps):
            for j, (a, d) in enumerate(one):
                d = d + per[s].update if j == len(one) - 1 else d
                seq.append((t, a, d, j == 0, j == len(one) - 1))
        ops.append(seq)
    busy = [sum(d for _, _, d, _, _ in ops[s][:len(orders[s])]) for s in range(K)]
    zero = Fraction(0) if any(isinstance(v, Fraction) for c in per for v in vars(c).values()) else 0.0
    step_end: list[list[Number]] = [[] for _ in range(K)]
    done: dict = {}
    index, remaining = [0] * K, [None] * K
    now: Number = zero
    while any(index[s] < len(ops[s]) for s in range(K)):
        waits = []
        for s in range(K):
            if remaining[s] is not None or index[s] >= len(ops[s]):
                continue
            t, a, d, first, _ = ops[s][index[s]]
            known, at = _dependency(schedule, K, lead, t, a, first, done)
            if known:
                at = now if at is None else max(at + per[s].receive, now)
                if at <= now:
                    remaining[s] = d
                else:
                    waits.append(at)
        running = [s for s in range(K) if remaining[s] is not None]
        if not running and not waits:
            raise RuntimeError(f"{schedule} schedule deadlocked at time {now}")
        crowd = len(running) + Fraction(background)
        rate = 1 if devices is None or crowd == 0 else min(1, devices / crowd)
        if not isinstance(zero, Fraction):
            rate = float(rate)
        finish = {s: now + remaining[s] / rate for s in running}
        nxt = min([*finish.values(), *waits])
        for s in running:
            if finish[s] <= nxt:
                t, a, _, _, last = ops[s][index[s]]
                done[(s, t, a.computation_type, a.microbatch_index)] = nxt
                if last:
                    done[(s, t, "end", None)] = nxt
                    step_end[s].append(nxt)
                index[s], remaining[s] = index[s] + 1, None
            else:
                remaining[s] -= (nxt - now) * rate
        now = nxt
    return Timeline(schedule, K, m, step_end, busy)
