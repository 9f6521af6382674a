"""Point-to-point links between neighbouring stages, re-formed when a stage restarts.

Link i joins stage i (rank 0, the sender of activations) and stage i+1 (rank 1). Each link
is its own two-rank torch.distributed process group (``ProcessGroupGloo`` on CPU,
``ProcessGroupNCCL`` on GPU) built over a shared ``Store`` under the prefix
``link/{i}/{generation}``. A stage that dies takes only its two links down: the launcher
bumps their generation (store key ``gen/{i}``) and restarts the stage, the two neighbours
rebuild the link under the new prefix, and no other stage notices. There is no world-wide
process group, hence no global barrier.

Activations travel on the link's data group; hello/ack/bye on its control group. On CPU both
are the same gloo group (tags keep them apart); on GPU the data group is NCCL and the control
group a small gloo group, because NCCL serialises a pair's sends and receives on one stream
(a posted acknowledgement receive would block the activation sends behind it).

Failure semantics (what a survivor sees):

* peer process died → gloo reports "connection closed/reset" at once → ``LinkBroken``;
  a supervised stage then waits for the new generation (or the launcher's ``abort`` key),
  an unsupervised one (torchrun) raises ``PeerFailureError`` naming the peer;
* peer alive but silent (hung) → the operation times out after ``timeout_s`` →
  ``PeerFailureError`` (a hang is not recoverable by restarting someone else).
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

__all__ = ["ABORT_KEY", "Link", "LinkBroken", "LinkSettings", "PeerFailureError", "TAGS", "make_group"]

TAGS = {"act": 0, "ack": 1, "hello": 2, "bye": 3}
ABORT_KEY = "abort"


class PeerFailureError(RuntimeError):
    """A neighbouring stage died or went silent and will not come back."""


class LinkBroken(Exception):
    """An operation on the current generation of a link failed."""

    def __init__(self, message: str, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


@dataclass(frozen=True)
class LinkSettings:
    """Backend and timeouts shared by every link of a run."""

    backend: str  # "gloo" or "nccl"
    timeout_s: float  # one operation or a link set-up
    recovery_timeout_s: float  # wait for a restarted peer
    supervised: bool  # a launcher restarts dead stages (else: fail on the first broken link)


def make_group(backend: str, store: Any, rank: int, size: int, timeout_s: float) -> Any:
    """A standalone process group of ``size`` ranks over ``store`` (no default group needed)."""
    timeout = datetime.timedelta(seconds=timeout_s)
    if backend == "gloo":
        return dist.ProcessGroupGloo(store, rank, size, timeout)
    if backend == "nccl":
        if not hasattr(dist, "ProcessGroupNCCL"):
            raise RuntimeError("this torch build has no NCCL backend")
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        return dist.ProcessGroupNCCL(store, rank, size, options)
    raise ValueError(f"unknown backend {backend!r}")


def _store_get(store: Any, key: str) -> str | None:
    """Non-blocking read of a store key (``None`` when absent)."""
    return store.get(key).decode() if store.check([key]) else None


class Link:
    """One generation-tracked link between stage ``index`` and stage ``index + 1``."""

    def __init__(self, store: Any, index: int, stage: int, settings: LinkSettings) -> None:
        if stage not in (index, index + 1):
            raise ValueError(f"stage {stage} is not an end of link {index}")
        self.store, self.index, self.settings = store, index, settings
        self.rank = 0 if stage == index else 1
        self.stage = stage
        self.peer_stage = index + 1 if self.rank == 0 else index
        self.generation = -1
        self.group: Any = None  # activations
        self.control: Any = None  # hello / ack / bye

    @property
    def gen_key(self) -> str:
        """Store key holding this link's current generation."""
        return f"gen/{self.index}"

    def connect(self) -> None:
        """Join the current generation (blocks until the peer joins or ``timeout_s``)."""
        gen = int(self.store.add(self.gen_key, 0))
        prefix = dist.PrefixStore(f"link/{self.index}/{gen}", self.store)
        try:
            self.group = make_group(self.settings.backend, prefix, self.rank, 2, self.settings.timeout_s)
            self.control = self.group if self.settings.backend == "gloo" else make_group(
                "gloo", dist.PrefixStore("control", prefix), self.rank, 2, self.settings.timeout_s)
        except Exception as exc:  # store wait or connect timeout: the peer never joined
            raise PeerFailureError(
                f"stage {self.stage}: stage {self.peer_stage} did not join link {self.index} "
                f"(generation {gen}) within {self.settings.timeout_s:.0f} s: {exc}") from exc
        self.generation = gen

    def _call(self, op: str, tensor: torch.Tensor, tag: int) -> Any:
        group = self.group if tag == TAGS["act"] else self.control
        try:
            return getattr(group, op)([tensor], 1 - self.rank, tag)
        except RuntimeError as exc:
            raise self._broken(exc) from exc

    def send(self, tensor: torch.Tensor, tag: int) -> Any:
        """Post a send to the peer (activations on the data group, the rest on control)."""
        return self._call("send", tensor, tag)

    def recv(self, tensor: torch.Tensor, tag: int) -> Any:
        """Post a receive from the peer into ``tensor``; returns the work handle."""
        return self._call("recv", tensor, tag)

    def wait(self, work: Any) -> None:
        """Wait for a posted operation; ``LinkBroken`` when the link failed."""
        try:
            work.wait()
        except RuntimeError as exc:
            raise self._broken(exc) from exc

    def _broken(self, exc: BaseException) -> LinkBroken:
        text = str(exc)
        timed_out = "timed out" in text.lower() or "timeout" in text.lower()
        return LinkBroken(f"link {self.index} to stage {self.peer_stage}: {text.splitlines()[0]}", timed_out)

    def reconnect(self, broken: LinkBroken) -> None:
        """After ``broken``: join the peer's next generation, or raise ``PeerFailureError``."""
        who = f"stage {self.stage}"
        if broken.timed_out:
            raise PeerFailureError(
                f"{who}: no progress on link {self.index} with stage {self.peer_stage} within "
                f"{self.settings.timeout_s:.0f} s (peer hung or too slow): {broken}")
        if not self.settings.supervised:
            raise PeerFailureError(f"{who}: lost stage {self.peer_stage} and nobody restarts it: {broken}")
        deadline = time.monotonic() + self.settings.recovery_timeout_s
        while int(self.store.add(self.gen_key, 0)) == self.generation:
            reason = _store_get(self.store, ABORT_KEY)
            if reason is not None:
                raise PeerFailureError(f"{who}: lost stage {self.peer_stage} ({reason}); run aborted")
            if time.monotonic() > deadline:
                raise PeerFailureError(
                    f"{who}: stage {self.peer_stage} did not come back within "
                    f"{self.settings.recovery_timeout_s:.0f} s after: {broken}")
            time.sleep(0.05)
        self.group = self.control = None
        self.connect()
