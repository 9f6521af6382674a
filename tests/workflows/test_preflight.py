"""The checks that run before a suite writes: the corpus rule equals ``LMData``'s, and the side
runs read the runs' data settings."""

from __future__ import annotations

import pytest

from zerolock_theory.app.workflows.preflight import (
    DataNeed,
    blocks_needed,
    check_chunks,
    check_data,
)
from zerolock_theory.app.workflows.side_runs import fixed_point_settings, memory_settings
from zerolock_theory.app.workflows.suite_spec import QUICK, suite_base
from zerolock_theory.app.workflows.systems import memory_config
from zerolock_theory.data import LMData
from zerolock_theory.data_config import DataConfig


class CharTokenizer:
    """One token per character (ids 1..60), eos 0: block counts are known exactly."""

    eos_token_id = 0
    pad_token_id = 0

    def __len__(self) -> int:
        return 61

    def __call__(self, texts, add_special_tokens=False, verbose=False):
        return {"input_ids": [[1 + ord(c) % 60 for c in t] for t in texts]}


def corpus(tmp_path, blocks: int, width: int):
    """A .txt corpus of exactly ``blocks`` packed blocks of ``width`` tokens (one document + eos)."""
    path = tmp_path / f"c{blocks}.txt"
    path.write_text("a" * (blocks * width - 1))
    return str(path)


@pytest.mark.parametrize("seq_len, batch, eval_batches, fraction, positions", [
    (8, 4, 4, 0.1, 0), (8, 2, 1, 0.1, 0), (4, 3, 2, 0.25, 0), (8, 2, 1, 0.1, 64), (16, 1, 1, 0.5, 0),
])
def test_blocks_needed_is_lmdata_boundary(tmp_path, seq_len, batch, eval_batches, fraction, positions):
    n = blocks_needed(DataConfig(seq_len=seq_len, batch_size=batch, eval_batches=eval_batches,
                                 eval_fraction=fraction), positions)
    for blocks, ok in ((n - 1, False), (n, True)):
        config = DataConfig(source=corpus(tmp_path, blocks, seq_len + 1), seq_len=seq_len, batch_size=batch,
                            eval_batches=eval_batches, eval_fraction=fraction)
        try:
            data = LMData(config, CharTokenizer())
            data.probe_batch(positions, 0) if positions else None
            built = True
        except ValueError:
            built = False
        assert built is ok, (blocks, n)


def test_check_data_names_the_run_and_the_numbers(tmp_path, monkeypatch):
    import zerolock_theory.app.workflows.preflight as preflight

    monkeypatch.setattr(preflight, "_tokenizer", lambda model: CharTokenizer())
    source = corpus(tmp_path, 30, 33)
    check_data("embedded", [DataNeed("run a", DataConfig(source=source, seq_len=32, batch_size=2, eval_batches=1))])
    with pytest.raises(ValueError, match=r"^fixed point, chunk 1: the corpus .* gives 30 blocks of 33 tokens, it needs"):
        check_data("embedded", [DataNeed("fixed point, chunk 1", DataConfig(source=source, seq_len=32), 64)])


def test_check_chunks_names_the_allowed_range():
    check_chunks("embedded", 8)
    with pytest.raises(ValueError, match="model.chunks=9: the model has 8 decoder layers, so K must lie in 1 to 8"):
        check_chunks("embedded", 9)


def test_side_runs_read_the_runs_data_settings():
    tables = {"data": {"source": "corpus.jsonl", "text_field": "body", "seq_len": 48, "eval_batches": 2,
                       "eval_fraction": 0.2, "seed": 3}}
    base = suite_base(QUICK, "embedded", "embedded", "cpu", "float32", None, tables)
    fixed = fixed_point_settings(QUICK, base, 1).config(0).data
    assert (fixed.source, fixed.text_field, fixed.seq_len, fixed.batch_size, fixed.eval_batches) == \
        ("corpus.jsonl", "body", 48, QUICK.batch_size, 2)
    assert (fixed.eval_fraction, fixed.seed) == (0.2, 3)
    memory = memory_config(memory_settings(QUICK, base), "zerolock", 2).data
    assert (memory.source, memory.text_field, memory.seq_len, memory.eval_fraction, memory.seed) == \
        ("corpus.jsonl", "body", 48, 0.2, 3)


def test_side_runs_split_the_model_as_the_runs_do(tmp_path, capsys):
    """K has one source: a --set model.chunks reaches the fixed point's settings, and a fixed-point
    chunk beyond that K is refused in one line before anything is written."""
    from zerolock_theory.app.cli import main
    from zerolock_theory.app.workflows.suite_spec import suite_base

    base = suite_base(QUICK, "embedded", "embedded", "cpu", "float32", None, {"model": {"chunks": 2}})
    settings = fixed_point_settings(QUICK, base, 1)
    assert settings.chunks == 2 and settings.config(0).model.chunks == 2
    out = tmp_path / "v"
    assert main(["verify", "--quick", "--set", "model.chunks=2", "--set", "suite.fixed_point_chunks=[3]",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "3" in err[0] and not out.exists()
