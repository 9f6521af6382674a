"""The readout store: round trips, top-k + tail = 1, torn shards, truncation on resume, open format."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from probes.readout_probe import encode, topk
from zerolock_theory.readout_store import ReadoutStore, ReadoutWriter, payload_bytes, shard_name

ROWS, N, V, K_TOP = 3, 5, 40, 4


def _meta(mode: str, dtype: str = "float16") -> dict:
    meta = {"format": "zerolock-readouts", "version": 2, "rows": ROWS, "n_positions": N, "vocab_size": V, "mode": mode}
    if mode == "topk":
        return {**meta, "topk": K_TOP, "dtype": "float16", "tail_dtype": "float32"}
    return {**meta, "dtype": dtype}


def _log_probs(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.log_softmax(3.0 * torch.randn(ROWS, N, V, generator=g), dim=-1)


def _write(path, meta: dict, steps: list[int]) -> list[torch.Tensor]:
    writer = ReadoutWriter(path, meta)
    values = [_log_probs(s) for s in steps]
    for step, value in zip(steps, values, strict=True):
        writer.append(step, encode(value, meta))
    writer.close()
    return values


def test_topk_probabilities_plus_tail_sum_to_one(tmp_path):
    values = _write(tmp_path / "r", _meta("topk"), [0, 1, 2])
    store = ReadoutStore(tmp_path / "r", verify=True)
    assert store.steps == [0, 1, 2] and not store.torn
    for step, value in zip(store.steps, values, strict=True):
        rec = store.get(step)
        assert rec["probs"].shape == (ROWS, N, K_TOP) and rec["probs"].dtype == np.float16
        assert rec["indices"].dtype == np.int32 and rec["tail"].dtype == np.float32
        total = rec["probs"].astype(np.float64).sum(-1) + rec["tail"]
        np.testing.assert_allclose(total, 1.0, atol=2e-3)  # float16 rounding of the top k
        exact = value.double().exp()
        top = torch.from_numpy(rec["indices"].astype(np.int64))
        rest = exact.scatter(-1, top, 0.0).sum(-1).numpy()  # the exact mass off the top k
        np.testing.assert_allclose(rec["tail"], rest, rtol=1e-5, atol=1e-9)
        dense = store.dense(step)
        assert dense.shape == (ROWS, N, V)
        np.testing.assert_allclose(dense.sum(-1), 1.0, atol=2e-3)
        assert (np.argmax(dense, -1) == rec["indices"][..., 0]).all()


@pytest.mark.parametrize("vocab", [4096, 4100, 300])  # grouped, and plain torch.topk (V % 8, V/8 < 4k)
def test_grouped_topk_returns_torch_topk_values(vocab):
    g = torch.Generator().manual_seed(vocab)
    x = torch.log_softmax(3.0 * torch.randn(3, 50, vocab, generator=g), dim=-1)
    x[1] = torch.round(x[1] * 2) / 2  # many exact ties, also across the k-th place
    x[2, 0, :] = float("-inf")
    x[2, 0, 5:40] = 0.0
    for k in (1, 33):
        want, _ = torch.topk(x, k, dim=-1)
        top, idx = topk(x, k)
        assert torch.equal(top, want)
        assert torch.equal(x.gather(-1, idx), top)
        assert (torch.sort(idx, dim=-1).values.diff(dim=-1) > 0).all()  # distinct coordinates


def test_topk_encoding_is_bitwise_the_plain_definition():
    """The fused tail equals logsumexp over a −inf-masked copy, bit for bit (also for an all −inf tail)."""
    meta = _meta("topk")
    value = _log_probs(7)
    value[0, 0, K_TOP:] = float("-inf")  # all mass in the top k: tail 0
    value[0, 0, :K_TOP] = torch.log_softmax(value[0, 0, :K_TOP], -1)
    top, idx = torch.topk(value, K_TOP, dim=-1)
    tail = torch.logsumexp(value.scatter(-1, idx, float("-inf")), dim=-1).exp()
    got = encode(value, meta)
    assert np.array_equal(got["tail"], tail.numpy()) and got["tail"][0, 0] == 0.0
    assert np.array_equal(got["probs"], top.exp().to(torch.float16).numpy())
    np.testing.assert_array_equal(np.take_along_axis(value.numpy(), got["indices"].astype(np.int64), -1), top.numpy())


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_full_mode_round_trip(tmp_path, dtype):
    values = _write(tmp_path / "r", _meta("full", dtype), [0, 3])
    store = ReadoutStore(tmp_path / "r")
    tol = 1e-3 if dtype == "float16" else 1e-7
    for step, value in zip([0, 3], values, strict=True):
        np.testing.assert_allclose(store.dense(step), value.exp().numpy(), rtol=tol, atol=tol)
        if dtype == "float32":  # the log-readouts exactly as the probes saw them
            assert np.array_equal(store.log_dense(step), value.numpy())
    assert payload_bytes(store.meta) == ROWS * N * V * np.dtype(dtype).itemsize


def test_record_size_matches_documented_formula():
    assert payload_bytes(_meta("topk")) == ROWS * N * (K_TOP * (2 + 4) + 4)


def test_torn_shard_is_detected_skipped_and_removed(tmp_path):
    meta = _meta("topk")
    _write(tmp_path / "r", meta, [0, 1, 2])
    data = tmp_path / "r" / shard_name(2)
    size = data.stat().st_size
    with open(data, "r+b") as fh:  # a shard cut short (e.g. synced data lost after the rename)
        fh.truncate(size - 17)
    (tmp_path / "r" / f".{shard_name(3)}.tmp").write_bytes(b"PAR1 half a file")  # a crash mid-write
    with pytest.warns(RuntimeWarning, match="unreadable"):
        store = ReadoutStore(tmp_path / "r")
    assert store.torn and shard_name(2) in store.torn_reason
    assert store.steps == [0, 1]
    assert store.get(1)["probs"].shape == (ROWS, N, K_TOP)
    writer = ReadoutWriter(tmp_path / "r", meta, keep_through=5)  # resume: cut the tail
    assert shard_name(2) in writer.dropped and writer.steps == [0, 1]
    assert not list((tmp_path / "r").glob(".*.tmp"))
    writer.append(2, encode(_log_probs(9), meta))
    writer.close()
    store = ReadoutStore(tmp_path / "r", verify=True)
    assert store.steps == [0, 1, 2] and not store.torn


def test_a_corrupted_byte_in_the_last_shard_is_reported(tmp_path):
    _write(tmp_path / "r", _meta("full", "float32"), [0, 1])
    data = tmp_path / "r" / shard_name(1)
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 3] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.warns(RuntimeWarning, match="unreadable"):
        store = ReadoutStore(tmp_path / "r")
    assert store.torn and shard_name(1) in store.torn_reason and store.steps == [0]


def test_pandas_and_pyarrow_read_the_store_without_this_package(tmp_path):
    import pandas as pd
    import pyarrow.dataset as ds

    values = _write(tmp_path / "r", _meta("topk"), [0, 1, 2])
    full = _write(tmp_path / "f", _meta("full", "float32"), [0, 4])
    df = pd.read_parquet(tmp_path / "r")
    assert len(df) == 3 * ROWS * N and sorted(set(df["step"])) == [0, 1, 2]
    row = df[(df["step"] == 1) & (df["row"] == 2) & (df["position"] == 3)].iloc[0]
    exact = values[1][2, 3].double().exp()
    top = torch.topk(exact, K_TOP)
    assert list(row["indices"]) == top.indices.tolist()
    np.testing.assert_allclose(np.asarray(row["probs"], dtype=np.float64), top.values.numpy(), rtol=1e-3)
    assert row["tail"] == pytest.approx(float(exact.sum() - top.values.sum()), rel=1e-4, abs=1e-9)
    table = ds.dataset(tmp_path / "f", format="parquet").to_table().sort_by([("step", "ascending")])
    log_p = np.stack(table.column("log_probs").to_numpy(zero_copy_only=False)).reshape(2, ROWS, N, V)
    assert np.array_equal(log_p[1], full[1].numpy())


def test_resume_truncates_records_after_the_checkpoint(tmp_path):
    meta = _meta("topk")
    _write(tmp_path / "r", meta, [0, 1, 2, 3, 4])
    writer = ReadoutWriter(tmp_path / "r", meta, keep_through=2)
    assert writer.steps == [0, 1, 2] and writer.truncated_steps == 2 and not writer.dropped
    with pytest.raises(ValueError, match="does not follow"):
        writer.append(2, encode(_log_probs(0), meta))
    writer.close()
    assert ReadoutStore(tmp_path / "r").steps == [0, 1, 2]
    with pytest.raises(ValueError, match="written with"):
        ReadoutWriter(tmp_path / "r", _meta("full"), keep_through=2)


@pytest.mark.parametrize("mode", ["topk", "full"])
def test_the_logger_reuses_an_unchanged_row_0_with_the_same_encoding(mode, monkeypatch):
    """p_0 is frozen: the readout logger encodes it once; every record equals ``encode`` bit for bit."""
    import probes.readout_probe
    from probes.readout_probe import ReadoutLogger

    encoded_rows: list[int] = []
    monkeypatch.setattr(probes.readout_probe, "encode", lambda x, m: encoded_rows.append(x.shape[0]) or encode(x, m))
    meta = _meta(mode)
    logger = ReadoutLogger()
    first = _log_probs(0)
    for step in range(4):
        value = _log_probs(step + 1)
        if step < 3:
            value[0] = first[0]  # the frozen row
        got = logger.encode_record(value, meta)
        want = encode(value, meta)
        assert got.keys() == want.keys()
        for name in want:
            assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name]), (step, name)
    assert logger.first is not None and torch.equal(logger.first[0], value[0])  # a new row 0 is kept
    assert encoded_rows == [ROWS, ROWS - 1, ROWS - 1, ROWS]
