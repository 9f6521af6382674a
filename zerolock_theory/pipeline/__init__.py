"""Pipelined ZeroLock across processes, GPipe/1F1B baselines, stage-local checkpoints and
recovery from a stage failure. See ``docs/PIPELINE.md``.

Entry points: ``launch`` (K local stage processes under a supervisor), ``launch_torchrun``
(one stage per torchrun process) and the ``zerolock pipeline`` command.
"""

from zerolock_theory.pipeline.launch import PipelineError, PipelineSummary, launch, launch_torchrun
from zerolock_theory.pipeline.links import PeerFailureError
from zerolock_theory.pipeline.options import SCHEDULES, PipelineOptions

__all__ = [
    "SCHEDULES",
    "PeerFailureError",
    "PipelineError",
    "PipelineOptions",
    "PipelineSummary",
    "launch",
    "launch_torchrun",
]
