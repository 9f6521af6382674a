"""The per-stage memory split (pipeline/memory.py): exact byte accounting on small modules."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from zerolock_theory.pipeline import PipelineOptions, launch
from zerolock_theory.pipeline.fixtures import small_config
from zerolock_theory.pipeline.memory import (
    MEMORY_PARTS,
    memory_split,
    storage_bytes,
    unneeded_weights,
)


def test_storage_bytes_counts_each_storage_once() -> None:
    a = torch.zeros(10)
    assert storage_bytes([a, a, a[2:5], None, torch.empty(0)]) == 40


def test_split_accounts_weights_gradients_adamw_state_and_sums_the_total() -> None:
    lin = torch.nn.Linear(8, 4)  # 32 + 4 float32 parameters
    opt = torch.optim.AdamW(lin.parameters())
    lin(torch.randn(3, 8)).sum().backward()
    opt.step()
    split = memory_split(lin, [opt], activations=1000, communication=24, replay=512)
    param_bytes = (32 + 4) * 4
    assert split["weights"] == split["weights_held"] == param_bytes
    assert split["gradients"] == param_bytes
    assert split["optimizer"] == 2 * param_bytes + 2 * 4  # exp_avg, exp_avg_sq, one float32 step per tensor
    assert split["total"] == sum(split[k] for k in MEMORY_PARTS) == 4 * param_bytes + 8 + 1000 + 24
    assert split["replay"] == 512  # host memory: beside the total, not in it
    assert memory_split(lin, [opt], activations=None)["total"] is None


def _chunked(tied: bool):
    embed = torch.nn.Embedding(16, 4)
    head = torch.nn.Linear(4, 16, bias=False)
    if tied:
        head.weight = embed.weight
    norm = torch.nn.LayerNorm(4)
    model = SimpleNamespace(get_input_embeddings=lambda: embed)
    return SimpleNamespace(model=model, head=head, norm=norm), embed, head, norm


def test_unneeded_weights_follow_the_schedule() -> None:
    chunked, embed, head, norm = _chunked(tied=False)
    ptr = {id(t) for t in unneeded_weights(chunked, 2, 3, readout_everywhere=False)}
    assert ptr == {id(embed.weight), id(head.weight), id(norm.weight), id(norm.bias)}  # middle stage
    assert {id(t) for t in unneeded_weights(chunked, 1, 3, False)} == {id(head.weight), id(norm.weight), id(norm.bias)}
    assert {id(t) for t in unneeded_weights(chunked, 3, 3, False)} == {id(embed.weight)}
    assert {id(t) for t in unneeded_weights(chunked, 2, 3, readout_everywhere=True)} == {id(embed.weight)}


def test_tied_head_is_needed_wherever_the_embedding_or_readout_is() -> None:
    chunked, embed, _, norm = _chunked(tied=True)
    assert unneeded_weights(chunked, 1, 3, False) == [norm.weight, norm.bias]
    assert unneeded_weights(chunked, 2, 3, True) == []
    module = torch.nn.ModuleDict({"embed": embed, "norm": norm})
    split = memory_split(module, [], activations=0, unneeded=unneeded_weights(chunked, 2, 3, False))
    assert split["weights_held"] == (16 * 4 + 8) * 4 and split["weights"] == 0


@pytest.mark.distributed
@pytest.mark.timeout(240)
def test_pipelined_runs_report_the_split(pipeline_inputs, tmp_path) -> None:
    """ZeroLock and 1F1B stages report every component; ZeroLock's first stage also needs the
    readout's norm (and head), which 1F1B's first stage does not."""
    model, corpus = pipeline_inputs
    splits = {}
    for schedule, method in (("zerolock", "zerolock"), ("1f1b", "backprop")):
        options = PipelineOptions(schedule=schedule, micro_batches=2, measure_memory=True, max_restarts=0,
                                  comm_timeout_s=60)
        summary = launch(small_config(model, 2, 3, method=method, data_source=corpus), options, tmp_path / schedule)
        splits[schedule] = {r["stage"]: r["memory"] for r in summary.results}
    for per_stage in splits.values():
        for split in per_stage.values():
            assert split["total"] == sum(split[k] for k in MEMORY_PARTS)
            assert 0 < split["weights"] <= split["weights_held"]
            assert split["activations"] > 0 and split["optimizer"] == 0  # SGD without momentum keeps no state
    assert splits["zerolock"][1]["weights"] > splits["1f1b"][1]["weights"]
    assert splits["zerolock"][1]["replay"] > 0 and splits["zerolock"][2]["communication"] > 0
    assert splits["1f1b"][1]["communication"] > 0  # the engine's gradient receive buffers
