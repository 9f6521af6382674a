"""The readout store: p̃^t per probed step as Parquet shards that pandas or pyarrow read alone.

Layout of ``run_dir/readouts/``:

* ``_meta.json`` — format, mode, shape (rows = K+1, N, V), k and dtypes (also in every
  shard's schema metadata under ``zerolock``);
* ``step-{t:08d}.parquet`` — one shard per probed step t, written to a hidden temporary
  file, flushed to disk and renamed into place, so a crash leaves either the whole shard or
  none (plus a ``.tmp`` file that readers ignore and the writer deletes). Pages carry CRC
  checksums, verified on reading.

Each shard holds (K+1)·N rows, one per readout row r (0 = p_0, k = p_k) and probe position
n, in that order, with columns ``step`` (int64), ``row`` (int16), ``position`` (int32) and

* ``topk``: ``indices`` (k int32: the k most likely tokens, descending; exactly equal
  probabilities in no particular order), ``probs`` (their probabilities, k float16) and
  ``tail`` (float32: the exact mass of the other V − k);
* ``full``: ``probs`` (V float16) when ``dtype = "float16"``, or ``log_probs`` (V float32:
  the probe's log p̃ exactly, so offline recomputation sees the online inputs) when
  ``dtype = "float32"``.

Reading without this package::

    import pandas as pd
    df = pd.read_parquet("run/readouts")      # every step; files starting with _ or . are skipped

``ReadoutStore`` reads shards in step order and stops at the first one that cannot be read
(``torn``, ``torn_reason``); ``ReadoutWriter`` removes such shards, leftover temporaries and,
on resume, every step after the checkpoint's.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["META_FILE", "ReadoutStore", "ReadoutWriter", "damaged_shards", "payload_bytes", "shard_name"]

META_FILE = "_meta.json"
_SHARD = re.compile(r"^step-(\d{8,})\.parquet$")
FULL_DTYPES = {"float16": np.float16, "float32": np.float32}


def shard_name(step: int) -> str:
    """File name of the shard of step t."""
    return f"step-{step:08d}.parquet"


def payload_bytes(meta: dict[str, Any]) -> int:
    """Uncompressed array bytes of one step: (K+1)·N·(k·6+4) top-k, (K+1)·N·V·itemsize full."""
    cells = meta["rows"] * meta["n_positions"]
    if meta["mode"] == "topk":
        return cells * (meta["topk"] * 6 + 4)
    return cells * meta["vocab_size"] * np.dtype(FULL_DTYPES[meta["dtype"]]).itemsize


def _layout(meta: dict[str, Any]) -> list[tuple[str, Any, int | None]]:
    """(column, numpy dtype, list width or None) of the readout columns."""
    if meta["mode"] == "topk":
        k = meta["topk"]
        return [("indices", np.int32, k), ("probs", np.float16, k), ("tail", np.float32, None)]
    if meta["dtype"] == "float32":
        return [("log_probs", np.float32, meta["vocab_size"])]
    return [("probs", np.float16, meta["vocab_size"])]


def _shards(path: Path) -> list[tuple[int, Path]]:
    found = [(int(m.group(1)), p) for p in path.iterdir() if (m := _SHARD.match(p.name))] if path.is_dir() else []
    return sorted(found)


def _read_shard(file: Path, step: int, meta: dict[str, Any]) -> dict[str, np.ndarray]:
    """The arrays of one shard, shaped [K+1, N(, width)]; ValueError if it is not a whole shard."""
    try:
        table = pq.read_table(file, page_checksum_verification=True)
    except Exception as exc:  # noqa: BLE001 (any parse failure means a torn or foreign file)
        raise ValueError(f"{file.name}: unreadable ({exc})") from exc
    rows, n = meta["rows"], meta["n_positions"]
    if table.num_rows != rows * n:
        raise ValueError(f"{file.name}: {table.num_rows} rows, expected {rows * n}")
    steps = table.column("step").to_numpy()
    if not (steps == step).all():
        raise ValueError(f"{file.name}: holds step {steps[0]}, not {step}")
    out = {}
    for name, dtype, width in _layout(meta):
        column = table.column(name).combine_chunks()
        if width is None:
            out[name] = column.to_numpy().astype(dtype, copy=False).reshape(rows, n)
        else:
            flat = column.flatten().to_numpy(zero_copy_only=False).astype(dtype, copy=False)
            out[name] = flat.reshape(rows, n, width)
    return out


def damaged_shards(path: str | Path) -> list[tuple[Path, str]]:
    """Every shard of the store at ``path`` whose footer cannot be read or whose row count is
    wrong, with the reason: a cheap check (footers only) that names damage anywhere in the store,
    where ``ReadoutStore`` reads only the last shard unless asked to verify them all."""
    path = Path(path)
    try:
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        expected = int(meta["rows"]) * int(meta["n_positions"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [(path / META_FILE, f"unreadable ({exc})")]
    out = []
    for _step, file in _shards(path):
        try:
            rows = pq.read_metadata(file).num_rows
        except Exception as exc:  # noqa: BLE001 (any parse failure means a torn or foreign file)
            out.append((file, f"unreadable ({' '.join(str(exc).split())})"))
            continue
        if rows != expected:
            out.append((file, f"{rows} rows, expected {expected}"))
    return out


class ReadoutStore:
    """Read a readout store: ``steps``, ``get(t)``, ``dense(t)``, ``log_dense(t)``, ``torn``.

    ``verify=True`` reads every shard on opening; by default only the last one (the one a
    crash could have hit).
    """

    def __init__(self, path: str | Path, *, verify: bool = False) -> None:
        self.path = Path(path)
        self.meta: dict[str, Any] = json.loads((self.path / META_FILE).read_text(encoding="utf-8"))
        self.torn_reason = ""
        shards = _shards(self.path)
        good: list[tuple[int, Path]] = []
        for i, (step, file) in enumerate(shards):
            if verify or i == len(shards) - 1:
                try:
                    _read_shard(file, step, self.meta)
                except ValueError as exc:
                    self.torn_reason = f"{exc}; {len(shards) - i} shard(s) from step {step} on ignored"
                    break
            good.append((step, file))
        if self.torn_reason:  # a torn store is read up to its last whole shard, loudly
            warnings.warn(f"{self.path}: {self.torn_reason}", RuntimeWarning, stacklevel=2)
        self._files = dict(good)
        self.steps: list[int] = [s for s, _ in good]

    @property
    def torn(self) -> bool:
        """True when a shard could not be read (everything from it on is ignored)."""
        return bool(self.torn_reason)

    @property
    def mode(self) -> str:
        """``"topk"`` or ``"full"``."""
        return str(self.meta["mode"])

    def __len__(self) -> int:
        return len(self.steps)

    def get(self, step: int) -> dict[str, np.ndarray]:
        """The stored arrays of step t (``indices``/``probs``/``tail``, ``probs`` or ``log_probs``)."""
        if step not in self._files:
            raise KeyError(f"step {step} is not in the store (stored: {len(self.steps)} steps)")
        return _read_shard(self._files[step], step, self.meta)

    def dense(self, step: int) -> np.ndarray:
        """float32 [K+1, N, V] probabilities; top-k with the tail spread evenly over the rest."""
        arrays = self.get(step)
        if "log_probs" in arrays:
            return np.exp(arrays["log_probs"])
        if self.mode == "full":
            return arrays["probs"].astype(np.float32)
        vocab, k = self.meta["vocab_size"], self.meta["topk"]
        fill = arrays["tail"].astype(np.float32) / max(1, vocab - k)
        out = np.repeat(fill[..., None], vocab, axis=-1)
        np.put_along_axis(out, arrays["indices"].astype(np.int64), arrays["probs"].astype(np.float32), axis=-1)
        return out

    def log_dense(self, step: int) -> np.ndarray:
        """float32 [K+1, N, V] log-probabilities: exact for full float32 stores, else log of ``dense``."""
        arrays = self.get(step)
        if "log_probs" in arrays:
            return arrays["log_probs"]
        with np.errstate(divide="ignore"):
            return np.log(self.dense(step))


def _write_atomic(table: pa.Table, file: Path) -> None:
    tmp = file.with_name(f".{file.name}.tmp")
    pq.write_table(table, tmp, compression="zstd", write_page_checksum=True)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, file)


class ReadoutWriter:
    """Append shards to a store; opening removes temporaries, unreadable shards and steps > ``keep_through``."""

    def __init__(self, path: str | Path, meta: dict[str, Any], keep_through: int | None = None) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.meta = dict(meta)
        self.dropped = ""  # why shards were cut off as torn, if any
        self.truncated_steps = 0  # valid shards after ``keep_through`` that were removed
        for tmp in self.path.glob(".*.tmp"):
            tmp.unlink()
        meta_file = self.path / META_FILE
        if meta_file.is_file() and keep_through is not None:
            old = json.loads(meta_file.read_text(encoding="utf-8"))
            if old != self.meta:
                raise ValueError(f"{self.path}: the store was written with {old}, this run uses {self.meta}")
            with warnings.catch_warnings():  # the writer reports the torn tail itself (``dropped``)
                warnings.simplefilter("ignore", RuntimeWarning)
                store = ReadoutStore(self.path)
            self.dropped = store.torn_reason
            valid = set(store.steps)
            for step, file in _shards(self.path):
                if step not in valid or step > keep_through:
                    self.truncated_steps += step in valid
                    file.unlink()
            self.steps = [s for s in store.steps if s <= keep_through]
        else:
            for _, file in _shards(self.path):
                file.unlink()
            tmp = meta_file.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(self.meta, indent=2), encoding="utf-8")
            os.replace(tmp, meta_file)
            self.steps = []
        self._schema_meta = {b"zerolock": json.dumps(self.meta).encode()}

    def append(self, step: int, arrays: dict[str, np.ndarray]) -> int:
        """Write the shard of step t; returns its size in bytes.

        A full float32 store takes ``log_probs`` (or ``probs``, stored as their logarithm).
        """
        if self.steps and step <= self.steps[-1]:
            raise ValueError(f"step {step} does not follow the last stored step {self.steps[-1]}")
        rows, n = self.meta["rows"], self.meta["n_positions"]
        columns: dict[str, pa.Array] = {
            "step": pa.array(np.full(rows * n, step, dtype=np.int64)),
            "row": pa.array(np.repeat(np.arange(rows, dtype=np.int16), n)),
            "position": pa.array(np.tile(np.arange(n, dtype=np.int32), rows)),
        }
        for name, dtype, width in _layout(self.meta):
            if name == "log_probs" and name not in arrays and "probs" in arrays:  # probabilities given
                with np.errstate(divide="ignore"):
                    arrays = {**arrays, name: np.log(np.asarray(arrays["probs"], dtype=np.float64))}
            array = np.ascontiguousarray(arrays[name], dtype=dtype)
            expected = (rows, n) if width is None else (rows, n, width)
            if array.shape != expected:
                raise ValueError(f"{name}: shape {array.shape}, expected {expected}")
            flat = pa.array(array.reshape(-1))
            columns[name] = flat if width is None else pa.FixedSizeListArray.from_arrays(flat, width)
        table = pa.table(columns).replace_schema_metadata(self._schema_meta)
        file = self.path / shard_name(step)
        _write_atomic(table, file)
        self.steps.append(step)
        return file.stat().st_size

    def sync(self) -> None:
        """Shards are synced as they are written; kept for the probe protocol."""

    def close(self) -> None:
        """Nothing is held open."""
