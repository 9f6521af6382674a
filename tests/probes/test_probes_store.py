"""The readout store: round trips, top-k + tail = 1, torn records, truncation on resume."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from probes.readouts import encode
from probes.store import HEADER, ReadoutStore, ReadoutWriter, payload_bytes

ROWS, N, V, K_TOP = 3, 5, 40, 4


def _meta(mode: str, dtype: str = "float16") -> dict:
    meta = {"format": "zerolock-readouts", "version": 1, "rows": ROWS, "n_positions": N, "vocab_size": V, "mode": mode}
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


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_full_mode_round_trip(tmp_path, dtype):
    values = _write(tmp_path / "r", _meta("full", dtype), [0, 3])
    store = ReadoutStore(tmp_path / "r")
    tol = 1e-3 if dtype == "float16" else 1e-7
    for step, value in zip([0, 3], values, strict=True):
        np.testing.assert_allclose(store.dense(step), value.exp().numpy(), rtol=tol, atol=tol)
    assert payload_bytes(store.meta) == ROWS * N * V * np.dtype(dtype).itemsize


def test_record_size_matches_documented_formula(tmp_path):
    meta = _meta("topk")
    assert payload_bytes(meta) == ROWS * N * (K_TOP * (2 + 4) + 4)
    _write(tmp_path / "r", meta, [0])
    size = (tmp_path / "r" / "records.bin").stat().st_size
    assert size == HEADER.size + payload_bytes(meta) + (-payload_bytes(meta)) % 8


def test_torn_record_is_detected_skipped_and_truncated(tmp_path):
    meta = _meta("topk")
    _write(tmp_path / "r", meta, [0, 1, 2])
    data = tmp_path / "r" / "records.bin"
    size = data.stat().st_size
    with open(data, "r+b") as fh:  # a crash in the middle of the last record
        fh.truncate(size - 17)
    store = ReadoutStore(tmp_path / "r")
    assert store.torn and "torn record for step 2" in store.torn_reason
    assert store.steps == [0, 1]
    assert store.get(1)["probs"].shape == (ROWS, N, K_TOP)
    writer = ReadoutWriter(tmp_path / "r", meta, keep_through=5)  # resume: cut the tail
    assert "torn" in writer.dropped and writer.steps == [0, 1]
    writer.append(2, encode(_log_probs(9), meta))
    writer.close()
    store = ReadoutStore(tmp_path / "r", verify=True)
    assert store.steps == [0, 1, 2] and not store.torn


def test_checksum_mismatch_in_the_last_record_is_reported(tmp_path):
    _write(tmp_path / "r", _meta("topk"), [0, 1])
    data = tmp_path / "r" / "records.bin"
    raw = bytearray(data.read_bytes())
    raw[-12] ^= 0xFF
    data.write_bytes(bytes(raw))
    store = ReadoutStore(tmp_path / "r")
    assert store.torn and "checksum" in store.torn_reason and store.steps == [0]


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
