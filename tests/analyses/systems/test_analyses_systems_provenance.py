"""Where the throughput row's costs were measured: the prediction file's own provenance, no paths.

The packaged prediction and validation files, and whatever ``benchmarks/schedule_calibrate.py``
writes, carry no absolute path; the row repeats the file's recorded machine, date and command.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path

import pytest

from analyses.systems.claim import PACKAGED
from analyses.systems.throughput import PROVENANCE_KEYS, measured_where, throughput_prediction
from analyses.verdict import Evidence

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "schedule_calibrate.py"
ABSOLUTE = re.compile(r"(?:^|[\s=:'\"(,])(?:/[A-Za-z0-9._-]+/|~/|[A-Za-z]:\\)")


def _strings(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def _paths(value) -> list[str]:
    return [s for s in _strings(value) if ABSOLUTE.search(s)]


def test_the_path_finder_finds_paths():
    assert _paths({"out": "/tmp/hs/sched", "x": ["ok", "C:\\runs"], "c": "--model /home/a/m"}) == [
        "/tmp/hs/sched", "C:\\runs", "--model /home/a/m"]
    assert _paths({"ratio": "ZeroLock / 1F1B", "k": "K2_m1", "model": "smollm2-shape"}) == []


@pytest.mark.parametrize("name", ["schedule_prediction.json", "schedule_validation.json"])
def test_the_packaged_files_carry_no_path_and_their_provenance(name):
    data = json.loads((PACKAGED / name).read_text(encoding="utf-8"))
    assert _paths(data) == []
    assert all(data["provenance"].get(k) for k in PROVENANCE_KEYS)
    assert data["provenance"]["command"].startswith(f"python3 benchmarks/schedule_calibrate.py {data['setup']['mode']}")


def test_the_row_says_where_the_file_was_measured():
    from analyses.registry import claim

    recorded = json.loads((PACKAGED / "schedule_prediction.json").read_text(encoding="utf-8"))["provenance"]
    found = throughput_prediction(PACKAGED / "schedule_prediction.json", PACKAGED / "schedule_validation.json")
    assert found.provenance == recorded
    text = claim("systems_throughput").measured(Evidence("prediction", result=found))
    assert all(recorded[k] in text for k in PROVENANCE_KEYS) and "this machine" not in text


def test_a_file_without_provenance_says_so(tmp_path):
    data = json.loads((PACKAGED / "schedule_prediction.json").read_text(encoding="utf-8"))
    del data["provenance"]
    (tmp_path / "schedule_prediction.json").write_text(json.dumps(data))
    found = throughput_prediction(tmp_path / "schedule_prediction.json")
    assert found.provenance == {} and measured_where(found.provenance).endswith("does not record")


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("schedule_calibrate_provenance", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mode", ["validate", "predict"])
def test_the_writer_records_no_path_and_a_command_that_reproduces_it(script, tmp_path, mode):
    model = tmp_path / "smollm2-shape"
    model.mkdir()
    args = script.parse_args([mode, "--out", str(tmp_path / "out"), "--model", str(model), "--stages", "2", "3"])
    record = {"setup": script.recorded_setup(args), "provenance": script.provenance(args)}
    assert _paths(record) == [] and str(tmp_path) not in json.dumps(record)
    assert record["setup"]["model"] == "smollm2-shape" and "out" not in record["setup"]
    assert set(record["provenance"]) == set(PROVENANCE_KEYS)
    again = script.parse_args(shlex.split(record["provenance"]["command"])[2:])
    assert script.recorded_setup(again) == record["setup"]
