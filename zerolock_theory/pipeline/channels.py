"""The activation channel over one link: sends, acknowledgements, handshake and replay.

Messages on link k (stage k → stage k+1), in order per tag:

* ``act``: h_k^{t,m} for step t, micro-batch m (B/M·T·d floats);
* ``ack`` (k+1 → k, after each step): [completed steps, keep_from], 2 int64, where keep_from
  is the step stage k+1 would restart from if it died now (its newest checkpoint that its own
  downstream can still be served from); stage k drops replay entries before it;
* ``hello`` (k+1 → k, each time the link is (re)formed): [t, m, keep_from, completed], where
  (t, m) is the next position stage k+1 needs. Stage k answers by re-sending its replay
  buffer from (t, m) on, and skips any later position below (t, m);
* ``bye`` (k → k+1): the end, sent once stage k+1 has acknowledged the last step.

Flow control: stage k starts step t only when stage k+1 has completed t − L steps
(``max_lead`` L), which bounds the replay buffer (see ``replay.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from zerolock_theory.pipeline.links import TAGS, Link, LinkBroken
from zerolock_theory.pipeline.replay import ReplayBuffer

__all__ = ["ActivationReceiver", "ActivationSender"]

Position = tuple[int, int]


def reform(link: Link, broken: LinkBroken, handshake: Callable[[], None]) -> None:
    """Re-form ``link`` after ``broken`` and rerun ``handshake``, until one handshake holds."""
    while True:
        link.reconnect(broken)
        try:
            handshake()
            return
        except LinkBroken as again:
            broken = again


def form(link: Link, handshake: Callable[[], None]) -> None:
    """Form ``link`` and run ``handshake`` (re-forming it if the peer fails meanwhile)."""
    link.connect()
    try:
        handshake()
    except LinkBroken as broken:
        reform(link, broken, handshake)


class ActivationSender:
    """Stage k's end of link k: sends h_k, keeps the replay buffer, reads acknowledgements."""

    def __init__(self, link: Link, buffer: ReplayBuffer, max_lead: int, wire: torch.device) -> None:
        self.link, self.buffer, self.max_lead, self.wire = link, buffer, max_lead, wire
        self.resume: Position = (0, 0)  # downstream's next needed position
        self.completed = 0  # steps downstream has completed
        self.keep_from = 0  # downstream's restart point: replay entries before it are dropped
        self._pending: list[tuple[int, object, torch.Tensor]] = []  # (step, work, tensor)
        self._ack = torch.zeros(2, dtype=torch.int64)
        self._ack_work: object | None = None
        self.bytes_sent = 0
        self.replayed = 0

    def connect(self) -> None:
        """Form the link and run the handshake."""
        form(self.link, self._handshake)

    def _handshake(self) -> None:
        hello = torch.zeros(4, dtype=torch.int64)
        self.link.wait(self.link.recv(hello, TAGS["hello"]))
        t, m, keep_from, completed = (int(v) for v in hello.tolist())
        self.resume, self.completed, self.keep_from = (t, m), completed, keep_from
        self._ack_work = None
        self.buffer.trim(keep_from)
        replay = self.buffer.replay_from(t, m)
        self._pending = [(s, self._post(tensor), tensor) for s, _, tensor in replay]
        self.replayed += len(replay)

    def _recover(self, broken: LinkBroken) -> None:
        reform(self.link, broken, self._handshake)

    def _post(self, tensor: torch.Tensor) -> object:
        wire = tensor if tensor.device == self.wire else tensor.to(self.wire)
        self.bytes_sent += wire.numel() * wire.element_size()
        return self.link.send(wire.contiguous(), TAGS["act"])

    def send(self, step: int, micro: int, hidden: torch.Tensor) -> None:
        """Keep h_k^{t,m} for replay and send it unless downstream is already past it."""
        self.buffer.put(step, micro, hidden)
        if (step, micro) < self.resume:
            return
        try:
            self._pending.append((step, self._post(hidden), hidden))
        except LinkBroken as broken:
            self._recover(broken)  # the handshake re-sends (step, micro) from the buffer

    def _poll_acks(self, block: bool) -> None:
        """Read acknowledgements: all that arrived (``block=False``) or the next one."""
        while True:
            try:
                if self._ack_work is None:
                    self._ack_work = self.link.recv(self._ack, TAGS["ack"])
                if not block and not self._ack_work.is_completed():
                    return
                self.link.wait(self._ack_work)
            except LinkBroken as broken:
                self._recover(broken)  # hello carries downstream's state
                return
            self._ack_work = None
            self.completed, self.keep_from = (int(v) for v in self._ack.tolist())
            self.buffer.trim(self.keep_from)
            if block:
                return

    def _drain(self, through_step: int) -> None:
        """Wait for sends of steps ≤ ``through_step`` (already received, given the credits)."""
        done = [p for p in self._pending if p[0] <= through_step]
        self._pending = [p for p in self._pending if p[0] > through_step]
        try:
            for _, work, _ in done:
                self.link.wait(work)
        except LinkBroken as broken:
            self._recover(broken)

    def wait_for_credit(self, step: int) -> None:
        """Block until downstream has completed ``step − max_lead`` steps."""
        self._poll_acks(block=False)
        while self.completed < step - self.max_lead:
            self._poll_acks(block=True)
        self._drain(step - self.max_lead - 1)

    def finish(self, steps: int) -> None:
        """Wait until downstream completed all ``steps`` (it may still need a replay), then bye."""
        while self.completed < steps:
            self._poll_acks(block=True)
        self._drain(steps)
        try:
            self.link.wait(self.link.send(torch.ones(1, dtype=torch.int64), TAGS["bye"]))
        except LinkBroken:
            pass  # downstream finished every step and checkpointed; nothing is lost


class ActivationReceiver:
    """Stage k+1's end of link k: receives h_k, acknowledges steps, asks for replays."""

    def __init__(self, link: Link, wire: torch.device, device: torch.device) -> None:
        self.link, self.wire, self.device = link, wire, device
        self.expect: Position = (0, 0)
        self.completed = 0
        self.keep_from = 0
        self._acks: list[tuple[object, torch.Tensor]] = []

    def connect(self, start_step: int) -> None:
        """Form the link and say where this stage starts (its restart point too)."""
        self.expect, self.completed, self.keep_from = (start_step, 0), start_step, start_step
        form(self.link, self._handshake)

    def _handshake(self) -> None:
        t, m = self.expect
        hello = torch.tensor([t, m, self.keep_from, self.completed], dtype=torch.int64)
        self._acks.clear()
        self.link.wait(self.link.send(hello, TAGS["hello"]))

    def _recover(self, broken: LinkBroken) -> None:
        reform(self.link, broken, self._handshake)

    def recv(self, step: int, micro: int, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """h_{k}^{t,m} from upstream (re-asked for after a failure)."""
        if (step, micro) != self.expect:
            raise RuntimeError(f"receiver expected position {self.expect}, asked for {(step, micro)}")
        buf = torch.empty(shape, dtype=dtype, device=self.wire)
        while True:
            try:
                self.link.wait(self.link.recv(buf, TAGS["act"]))
                break
            except LinkBroken as broken:
                self._recover(broken)
        self.expect = (step, micro + 1)
        return buf if self.wire == self.device else buf.to(self.device)

    def ack(self, completed: int, keep_from: int) -> None:
        """Report ``completed`` steps and this stage's restart point to upstream."""
        self.completed, self.keep_from, self.expect = completed, keep_from, (completed, 0)
        message = torch.tensor([completed, keep_from], dtype=torch.int64)
        try:
            for work, _ in self._acks:
                self.link.wait(work)
            self._acks = [(self.link.send(message, TAGS["ack"]), message)]
        except LinkBroken as broken:
            self._recover(broken)  # the hello carries the same information

    def finish(self) -> None:
        """Wait for upstream's bye (re-forming the link if upstream restarts meanwhile)."""
        bye = torch.zeros(1, dtype=torch.int64)
        while True:
            try:
                for work, _ in self._acks:
                    self.link.wait(work)
                self._acks = []
                self.link.wait(self.link.recv(bye, TAGS["bye"]))
                return
            except LinkBroken as broken:
                if self.link.store.check([f"done/{self.link.peer_stage}"]):
                    return
                self._recover(broken)
