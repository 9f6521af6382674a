"""zerolock_theory.jsonio: the one JSON convention and the one JSON-lines reader."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from zerolock_theory.jsonio import (
    JsonlError,
    TornLineWarning,
    dumps,
    from_json_float,
    loads,
    read_jsonl,
    read_records,
    to_json_value,
)


@dataclass
class _Point:
    x: float
    where: Path


def test_values_follow_the_convention():
    value = {
        "nan": math.nan, "inf": math.inf, "ninf": -math.inf, "one": 1.0,
        "tensor": torch.tensor([1.0, float("nan"), float("inf")]),
        "scalar": torch.tensor(2.5), "np": np.float32(0.5), "npint": np.int64(3),
        "nested": [(_Point(math.nan, Path("a/b")),)],
    }
    assert to_json_value(value) == {
        "nan": None, "inf": "inf", "ninf": "-inf", "one": 1.0,
        "tensor": [1.0, None, "inf"], "scalar": 2.5, "np": 0.5, "npint": 3,
        "nested": [[{"x": None, "where": "a/b"}]],
    }
    text = dumps(value)
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text)


@pytest.mark.parametrize("x", [math.inf, -math.inf, 0.25, -3.0])
def test_float_round_trip(x):
    assert from_json_float(loads(dumps(x))) == x


def test_nan_round_trips_through_null():
    assert loads(dumps(math.nan)) is None and math.isnan(from_json_float(None))
    with pytest.raises(ValueError, match="expected a number"):
        from_json_float("nan")


def test_loads_refuses_non_standard_literals():
    for literal in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match="non-standard JSON literal"):
            loads(f'{{"x": {literal}}}')


def _write(tmp_path, text):
    path = tmp_path / "m.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_reader_skips_blank_lines(tmp_path):
    path = _write(tmp_path, '{"step": 0}\n\n{"step": 1, "g": null}\n')
    records, notes = read_jsonl(path)
    assert records == [{"step": 0}, {"step": 1, "g": None}] and notes == []


def test_torn_last_line_is_dropped_with_a_warning(tmp_path):
    path = _write(tmp_path, '{"step": 0}\n{"step": 1, "to')
    with pytest.warns(TornLineWarning, match="line 2: torn last line"):
        records, notes = read_jsonl(path)
    assert records == [{"step": 0}] and len(notes) == 1
    with pytest.warns(TornLineWarning):
        assert read_records(path) == [{"step": 0}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"step": 0}\n{oops\n', "line 2: invalid JSON"),  # invalid last line WITH a newline
        ('{oops\n{"step": 1}\n', "line 1: invalid JSON"),
        ('{"step": 0, "x": NaN}\n', "line 1: non-standard JSON literal NaN"),
        ('[1, 2]\n', "line 1: expected a JSON object"),
    ],
)
def test_reader_errors_name_the_line(tmp_path, text, message):
    with pytest.raises(JsonlError, match=message):
        read_jsonl(_write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(JsonlError, match="missing nope.jsonl"):
        read_jsonl(tmp_path / "nope.jsonl")
