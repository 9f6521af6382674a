"""The readout store: an append-only, crash-safe file of p̃^t, one record per probed step.

Layout of ``run_dir/readouts/``:

* ``meta.json`` — format, mode, shape (rows = K+1, N, V), k and dtypes;
* ``records.bin`` — records back to back. A record is a 24-byte header
  ``<4s Q Q I>`` = (magic ``b"ZLR1"``, step t, payload length L, crc32) followed by the
  L payload bytes and zero padding to a multiple of 8. The crc32 covers step, L and payload.

Payload (C order, little endian), rows r = 0..K hold p_r, positions n = 0..N-1:

* ``topk``: indices int32 [K+1, N, k], tail float32 [K+1, N], probs float16 [K+1, N, k]
  (the k largest probabilities, descending; tail = exact mass of the other V-k tokens);
  L = (K+1)·N·(k·(2+4)+4) bytes.
* ``full``: probs [K+1, N, V] in float16 (default) or float32; L = (K+1)·N·V·2 (or ·4).

A crash can only tear the last record. ``ReadoutStore`` stops at the first record whose
header, length or checksum is wrong, and reports it (``torn``, ``torn_reason``);
``ReadoutWriter`` truncates such a tail, and everything after a resumed step, before it
appends.
"""

from __future__ import annotations

import json
import os
import struct
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["HEADER", "ReadoutStore", "ReadoutWriter", "payload_bytes"]

MAGIC = b"ZLR1"
HEADER = struct.Struct("<4sQQI")
META_FILE, DATA_FILE = "meta.json", "records.bin"
FULL_DTYPES = {"float16": np.float16, "float32": np.float32}


def payload_bytes(meta: dict[str, Any]) -> int:
    """Payload bytes of one record: (K+1)·N·(k·6+4) top-k, (K+1)·N·V·itemsize full."""
    cells = meta["rows"] * meta["n_positions"]
    if meta["mode"] == "topk":
        return cells * (meta["topk"] * 6 + 4)
    return cells * meta["vocab_size"] * np.dtype(FULL_DTYPES[meta["dtype"]]).itemsize


def _padded(length: int) -> int:
    return (length + 7) // 8 * 8


def _crc(step: int, length: int, payload: bytes | memoryview) -> int:
    return zlib.crc32(payload, zlib.crc32(struct.pack("<QQ", step, length))) & 0xFFFFFFFF


def _layout(meta: dict[str, Any]) -> list[tuple[str, Any, tuple[int, ...]]]:
    """(name, dtype, shape) of the payload's arrays, in file order."""
    rows, n = meta["rows"], meta["n_positions"]
    if meta["mode"] == "topk":
        k = meta["topk"]
        return [("indices", np.int32, (rows, n, k)), ("tail", np.float32, (rows, n)), ("probs", np.float16, (rows, n, k))]
    return [("probs", FULL_DTYPES[meta["dtype"]], (rows, n, meta["vocab_size"]))]


def _scan(path: Path, meta: dict[str, Any], verify: bool) -> tuple[list[tuple[int, int]], int, str]:
    """Valid records as (step, payload offset), the end of the last valid one, and why the scan stopped."""
    size = path.stat().st_size if path.exists() else 0
    expected = payload_bytes(meta)
    found: list[tuple[int, int]] = []
    pos, reason = 0, ""
    if size == 0:
        return found, pos, reason
    with open(path, "rb") as fh:
        while pos < size:
            fh.seek(pos)
            head = fh.read(HEADER.size)
            if len(head) < HEADER.size:
                reason = f"torn header at byte {pos} ({len(head)} of {HEADER.size} bytes)"
                break
            magic, step, length, crc = HEADER.unpack(head)
            if magic != MAGIC or length != expected:
                reason = f"bad header at byte {pos} (magic {magic!r}, length {length}, expected {expected})"
                break
            end = pos + HEADER.size + _padded(length)
            if end > size:
                reason = f"torn record for step {step} at byte {pos}: {size - pos} of {end - pos} bytes"
                break
            last = end == size
            if verify or last:
                if _crc(step, length, fh.read(length)) != crc:
                    reason = f"checksum mismatch in the record for step {step} at byte {pos}"
                    break
            if found and step <= found[-1][0]:
                reason = f"step {step} at byte {pos} does not follow step {found[-1][0]}"
                break
            found.append((int(step), pos + HEADER.size))
            pos = end
    if reason:
        reason += f"; {size - pos} trailing bytes ignored"
    return found, pos, reason


class ReadoutStore:
    """Read a readout store lazily: ``steps``, ``get(t)``, ``dense(t)``, ``torn``.

    ``verify=True`` checks every record's checksum on opening; by default only the
    structure of all records and the checksum of the last one (where a crash tears).
    """

    def __init__(self, path: str | Path, *, verify: bool = False) -> None:
        self.path = Path(path)
        self.meta: dict[str, Any] = json.loads((self.path / META_FILE).read_text(encoding="utf-8"))
        data = self.path / DATA_FILE
        records, self.valid_bytes, self.torn_reason = _scan(data, self.meta, verify)
        if self.torn_reason:  # a truncated store is read up to its last whole record, loudly
            warnings.warn(f"{data}: {self.torn_reason}", RuntimeWarning, stacklevel=2)
        self._offsets = dict(records)
        self.steps: list[int] = [s for s, _ in records]

    @property
    def torn(self) -> bool:
        """True when the file ends in (or contains) a record that could not be read."""
        return bool(self.torn_reason)

    @property
    def mode(self) -> str:
        """``"topk"`` or ``"full"``."""
        return str(self.meta["mode"])

    def __len__(self) -> int:
        return len(self.steps)

    def get(self, step: int) -> dict[str, np.ndarray]:
        """Memory-mapped arrays of step t: ``probs`` (and ``indices``, ``tail`` for top-k), rows K+1 first."""
        if step not in self._offsets:
            raise KeyError(f"step {step} is not in the store (stored: {len(self.steps)} steps)")
        offset, out = self._offsets[step], {}
        for name, dtype, shape in _layout(self.meta):
            out[name] = np.memmap(self.path / DATA_FILE, dtype=dtype, mode="r", offset=offset, shape=shape)
            offset += int(np.prod(shape)) * np.dtype(dtype).itemsize
        return out

    def dense(self, step: int) -> np.ndarray:
        """float32 [K+1, N, V]: full records as stored; top-k with the tail spread evenly over the rest."""
        arrays = self.get(step)
        if self.mode == "full":
            return np.asarray(arrays["probs"], dtype=np.float32)
        vocab, k = self.meta["vocab_size"], self.meta["topk"]
        fill = arrays["tail"].astype(np.float32) / max(1, vocab - k)
        out = np.repeat(fill[..., None], vocab, axis=-1)
        np.put_along_axis(out, arrays["indices"].astype(np.int64), arrays["probs"].astype(np.float32), axis=-1)
        return out


class ReadoutWriter:
    """Append records to a store; opening truncates a torn tail and every step > ``keep_through``."""

    def __init__(self, path: str | Path, meta: dict[str, Any], keep_through: int | None = None) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.meta = dict(meta)
        self.dropped = ""  # why a torn tail was cut off, if one was
        self.truncated_steps = 0  # valid records after ``keep_through`` that were removed
        meta_file, data = self.path / META_FILE, self.path / DATA_FILE
        if meta_file.is_file() and data.is_file() and keep_through is not None:
            old = json.loads(meta_file.read_text(encoding="utf-8"))
            if old != self.meta:
                raise ValueError(f"{self.path}: the store was written with {old}, this run uses {self.meta}")
            records, end, self.dropped = _scan(data, self.meta, verify=False)
            kept = [(s, off) for s, off in records if s <= keep_through]
            cut = kept[-1][1] + _padded(payload_bytes(self.meta)) if kept else 0
            with open(data, "r+b") as fh:
                fh.truncate(min(cut, end))
            self.steps = [s for s, _ in kept]
            self.truncated_steps = len(records) - len(kept)
        else:
            tmp = meta_file.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(self.meta, indent=2), encoding="utf-8")
            os.replace(tmp, meta_file)
            data.write_bytes(b"")
            self.steps = []
        self._fh = open(data, "ab")  # noqa: SIM115 (closed in close())

    def append(self, step: int, arrays: dict[str, np.ndarray]) -> int:
        """Write the record of step t; returns the bytes written (header + payload + padding)."""
        if self.steps and step <= self.steps[-1]:
            raise ValueError(f"step {step} does not follow the last stored step {self.steps[-1]}")
        parts = []
        for name, dtype, shape in _layout(self.meta):
            array = np.ascontiguousarray(arrays[name], dtype=dtype)
            if array.shape != shape:
                raise ValueError(f"{name}: shape {array.shape}, expected {shape}")
            parts.append(array.tobytes())
        payload = b"".join(parts)
        pad = _padded(len(payload)) - len(payload)
        record = HEADER.pack(MAGIC, step, len(payload), _crc(step, len(payload), payload)) + payload + b"\0" * pad
        self._fh.write(record)
        self._fh.flush()
        self.steps.append(step)
        return len(record)

    def sync(self) -> None:
        """Flush to disk (at checkpoints)."""
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Sync and close."""
        if not self._fh.closed:
            self.sync()
            self._fh.close()
