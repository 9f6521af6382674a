"""Read the documents of a training corpus from the formats researchers keep text in.

``load_texts(source, text_field)`` returns the documents in a fixed order. Supported:

* ``"embedded"``: the English prose of ``pydoc_data.topics`` (no download);
* ``.txt`` / ``.md``: one document per file;
* ``.jsonl`` / ``.jsonlines`` / ``.ndjson``: one JSON object per line, text in ``text_field``;
* ``.json``: an array of objects, an object of columns (``{"text": [...]}``) or JSON lines;
* ``.csv`` and ``.parquet``: one document per row, text in the column ``text_field``;
* any of the above gzipped (``.jsonl.gz``, ``.csv.gz``, ...);
* a directory saved by the ``datasets`` library (``save_to_disk``; a ``DatasetDict`` uses its
  ``train`` split, or its only split), read with ``load_from_disk`` (optional extra
  ``datasets``);
* any other directory: every supported file below it, in sorted path order.

Empty and missing (null) documents are dropped. Every problem with a file raises ONE
``ValueError`` (or ``FileNotFoundError``) line that names the file and what to change.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from pathlib import Path
from typing import Any

__all__ = ["SUFFIXES", "load_texts"]

TEXT_SUFFIXES = (".txt", ".md")
JSONL_SUFFIXES = (".jsonl", ".jsonlines", ".ndjson")
TABLE_SUFFIXES = (".csv", ".parquet")
SUFFIXES = TEXT_SUFFIXES + JSONL_SUFFIXES + (".json",) + TABLE_SUFFIXES
"""File types read directly; each may also end in ``.gz``."""

DATASETS_MARKERS = ("dataset_info.json", "dataset_dict.json", "state.json")


def _kind(path: Path) -> str | None:
    """The format suffix of ``path`` (``.gz`` stripped), or ``None`` if unsupported."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return next((s for s in SUFFIXES if name.endswith(s)), None)


def _read_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.lower().endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as err:
            raise ValueError(f"{path}: not a valid gzip file ({err})") from err
    return data


def _read_text(path: Path) -> str:
    try:
        return _read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start}); re-encode it as UTF-8") from err


def _field(record: Any, field: str, where: str) -> str | None:
    """The text of one record; ``None`` for a null value."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if field not in record:
        keys = ", ".join(map(str, list(record)[:8])) or "none"
        raise ValueError(f"{where}: no field {field!r} (fields: {keys}); set --text-field or data.text_field")
    return _as_text(record[field], field, where)


def _as_text(value: Any, field: str, where: str) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {field!r} holds {type(value).__name__}, not text")
    return value


def _jsonl_texts(path: Path, field: str) -> list[str | None]:
    texts = []
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {lineno}: not valid JSON ({err.msg})") from err
        texts.append(_field(record, field, f"{path}, line {lineno}"))
    return texts


def _json_texts(path: Path, field: str) -> list[str | None]:
    text = _read_text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":  # several objects: JSON lines in a .json file
            return _jsonl_texts(path, field)
        raise ValueError(f"{path}: not valid JSON ({err.msg}, line {err.lineno})") from err
    if isinstance(doc, list):
        return [_field(rec, field, f"{path}, record {i}") for i, rec in enumerate(doc)]
    if isinstance(doc, dict) and isinstance(doc.get(field), list):
        return [_as_text(v, field, f"{path}, {field}[{i}]") for i, v in enumerate(doc[field])]
    if isinstance(doc, dict):
        return [_field(doc, field, str(path))]
    raise ValueError(f"{path}: expected an array of objects or an object, got {type(doc).__name__}")


def _column(values: list[Any], columns: list[str], field: str, path: Path) -> list[str | None]:
    if field not in columns:
        shown = ", ".join(map(str, columns[:8])) or "none"
        raise ValueError(f"{path}: no column {field!r} (columns: {shown}); set --text-field or data.text_field")
    return [_as_text(v, field, f"{path}, row {i}") for i, v in enumerate(values)]


def _table_texts(path: Path, field: str, kind: str) -> list[str | None]:
    import pandas as pd

    buffer = io.BytesIO(_read_bytes(path))
    try:
        if kind == ".csv":
            frame = pd.read_csv(buffer, dtype=str, keep_default_na=False, na_values=[""])
        else:
            frame = pd.read_parquet(buffer)
    except (ValueError, OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot read as {kind[1:]} ({str(err).splitlines()[0]})") from err
    except Exception as err:  # pyarrow / parser errors have their own types
        raise ValueError(f"{path}: cannot read as {kind[1:]} ({type(err).__name__})") from err
    values = frame[field].tolist() if field in frame.columns else []
    return _column(values, [str(c) for c in frame.columns], field, path)


def _file_texts(path: Path, field: str) -> list[str | None]:
    kind = _kind(path)
    if kind in TEXT_SUFFIXES:
        return [_read_text(path)]
    if kind in JSONL_SUFFIXES:
        return _jsonl_texts(path, field)
    if kind == ".json":
        return _json_texts(path, field)
    if kind in TABLE_SUFFIXES:
        return _table_texts(path, field, kind)
    raise ValueError(f"unsupported data file {str(path)!r}: expected one of "
                     f"{', '.join(SUFFIXES)} (optionally .gz), a directory, or 'embedded'")


def _hf_texts(path: Path, field: str) -> list[str | None]:
    """Texts of a directory written by ``datasets``' ``save_to_disk``."""
    try:
        from datasets import DatasetDict, load_from_disk
    except ImportError as err:
        raise ValueError(f"{path} was saved by the datasets library; install it with "
                         f"pip install 'zerolock-theory[datasets]'") from err
    try:
        data = load_from_disk(str(path))
    except Exception as err:  # datasets raises several unrelated types
        raise ValueError(f"{path}: cannot load with datasets.load_from_disk ({err})") from err
    if isinstance(data, DatasetDict):
        splits = list(data)
        if "train" not in data and len(splits) != 1:
            raise ValueError(f"{path}: a DatasetDict with splits {splits} and no 'train'; "
                             f"point --data at one split's directory")
        data = data["train" if "train" in data else splits[0]]
    return _column(data[field] if field in data.column_names else [],
                   list(data.column_names), field, path)


def _dir_texts(path: Path, field: str) -> list[str | None]:
    if any((path / marker).is_file() for marker in DATASETS_MARKERS):
        return _hf_texts(path, field)
    files = sorted(p for p in path.rglob("*") if p.is_file() and _kind(p) is not None)
    if not files:
        raise ValueError(f"data directory {str(path)!r} holds no supported files "
                         f"(empty corpus; expected {', '.join(SUFFIXES)}, optionally .gz)")
    return [text for p in files for text in _file_texts(p, field)]


def _embedded_texts() -> list[str]:
    from pydoc_data.topics import topics

    return [topics[key] for key in sorted(topics)]


def load_texts(source: str, text_field: str = "text") -> list[str]:
    """Documents of ``source`` in a fixed order; empty and null documents are dropped.

    Raises ``FileNotFoundError`` for a missing path and ``ValueError`` (one line naming the
    file) for an unsupported type, unreadable content, a missing field or column, a
    non-text value, or a corpus without any text.
    """
    if source == "embedded":
        texts: list[str | None] = list(_embedded_texts())
    else:
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"data source {source!r} does not exist")
        texts = _dir_texts(path, text_field) if path.is_dir() else _file_texts(path, text_field)
    kept = [t for t in texts if t is not None and t.strip()]
    if not kept:
        raise ValueError(f"data source {source!r} holds no text (empty corpus)")
    return kept
