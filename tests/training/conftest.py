"""Fixtures of the training tests."""

from __future__ import annotations

import pytest

from zerolock_theory.training.gradients import grad_of


@pytest.fixture
def applied_gradients():
    """Factory: ``applied_gradients(step, batch, t=0)`` runs ``step.train_step(batch, t)`` and returns
    (each chunk's gradient as the optimizers received it, the step's metrics).

    The gradients are read where the step hands them over, in ``ChunkOptimizers.step``, before
    the update and the ``zero_grad`` that follows it."""

    def run(step, batch, t: int = 0):
        seen = []
        update = step.optimizers.step

        def spy(index: int, grad_sq: list[float]) -> float:
            seen.extend([grad_of(p).clone() for p in ps] for ps in step.params)
            return update(index, grad_sq)

        step.optimizers.step = spy  # an instance attribute over the method, removed again below
        try:
            metrics = step.train_step(batch, t)
        finally:
            del step.optimizers.step
        return seen, metrics

    return run
