"""Shared inputs of the distributed tests (stage processes and references run one thread each,
as tests/conftest.py sets for the whole suite)."""

from __future__ import annotations

import pytest

from zerolock_theory.pipeline.fixtures import small_corpus


@pytest.fixture(scope="module")
def pipeline_inputs(tmp_path_factory) -> tuple[str, str]:
    """(model path, corpus path): the embedded model and a small local corpus."""
    scratch = tmp_path_factory.mktemp("inputs")
    return "embedded", str(small_corpus(scratch / "corpus.txt"))
