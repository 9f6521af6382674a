"""GPipe and 1F1B on ``torch.distributed.pipelining`` match single-process backprop.

Same model, two stages, two micro-batches, same adapters and optimizers: the pipelined loss
of every step equals ``BackpropStep``'s (the sequential trainer with ``method=backprop``) and
the final adapters agree within 1e-6; the first step's loss also equals a plain full-batch
cross-entropy of the unmodified model's logits.
"""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from zerolock_theory.data import DataStream, LMData
from zerolock_theory.jsonio import read_records
from zerolock_theory.models import load_model
from zerolock_theory.pipeline import PipelineOptions, launch
from zerolock_theory.pipeline.fixtures import small_config
from zerolock_theory.records import CHUNK
from zerolock_theory.training.loop import train
from zerolock_theory.training.state import latest_checkpoint

pytestmark = [pytest.mark.distributed]
STEPS = 4


@pytest.fixture(scope="module")
def config(pipeline_inputs):
    model, corpus = pipeline_inputs
    return small_config(model, 2, STEPS, method="backprop", data_source=corpus)


@pytest.fixture(scope="module")
def backprop_run(config, tmp_path_factory):
    out = tmp_path_factory.mktemp("backprop")
    train(config, out)
    return out


def _plain_first_loss(config) -> float:
    """CE of ``model(input_ids).logits`` on the first training batch (no chunking, no adapters)."""
    model, tokenizer = load_model(config.model.path, config.model.dtype)
    batch = DataStream(LMData(config.data, tokenizer), config.data.batch_size, config.data.seed).next_batch()
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    return float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(),
                                                   ignore_index=-100))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_baseline_matches_single_process_backprop(config, backprop_run, tmp_path, schedule) -> None:
    options = PipelineOptions(schedule=schedule, micro_batches=2, max_restarts=0, comm_timeout_s=60)
    summary = launch(config, options, tmp_path / schedule)
    got = read_records(tmp_path / schedule / "metrics.jsonl")
    want = read_records(backprop_run / "metrics.jsonl")
    assert len(got) == len(want) == STEPS
    for a, b in zip(want, got, strict=True):
        assert b["chunk/2/loss"] == pytest.approx(a["chunk/2/loss"], rel=1e-6)
        assert b["train/final_ce"] == pytest.approx(a["train/final_ce"], rel=1e-6)
        for k in (1, 2):
            assert b[CHUNK.key(k, "grad_norm_sq")] == pytest.approx(a[CHUNK.key(k, "grad_norm_sq")], rel=1e-4)
    assert got[0]["chunk/2/loss"] == pytest.approx(_plain_first_loss(config), rel=1e-5)
    seq = load_file(str(latest_checkpoint(backprop_run) / "adapters.safetensors"))
    pipe = load_file(str(tmp_path / schedule / "adapters.safetensors"))
    assert set(seq) == set(pipe)
    assert max(float((seq[n] - pipe[n]).abs().max()) for n in seq) <= 1e-6
    assert summary.final_train_ce == pytest.approx(want[-1]["train/final_ce"], rel=1e-6)
