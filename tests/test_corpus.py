"""Training data in every supported format: same documents, same blocks, same run."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from zerolock_theory.app.cli import main
from zerolock_theory.corpus import load_texts
from zerolock_theory.jsonio import read_records

DOCS = [f"Document {i}: " + load_texts("embedded")[i][:400] for i in range(12)]
FIELD = "body"


def _gz(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    return out


def _write(fmt: str, root: Path) -> Path:
    """``DOCS`` in format ``fmt`` with the text in the field/column ``FIELD``."""
    frame = pd.DataFrame({"id": range(len(DOCS)), FIELD: DOCS})
    root.mkdir(parents=True, exist_ok=True)
    base = fmt.removesuffix(".gz")
    path = root / f"corpus{base}"
    if base == ".jsonl":
        path.write_text("".join(json.dumps({"id": i, FIELD: d}) + "\n" for i, d in enumerate(DOCS)))
    elif base == ".json":
        path.write_text(json.dumps([{"id": i, FIELD: d} for i, d in enumerate(DOCS)]))
    elif base == ".csv":
        frame.to_csv(path, index=False)
    elif base == ".parquet":
        frame.to_parquet(path)
    elif base == "hf":
        datasets = pytest.importorskip("datasets")
        path = root / "saved"
        datasets.Dataset.from_pandas(frame).save_to_disk(str(path))
    elif base == "hfdict":
        datasets = pytest.importorskip("datasets")
        path = root / "saved_dict"
        ds = datasets.Dataset.from_pandas(frame)
        datasets.DatasetDict({"train": ds}).save_to_disk(str(path))
    return _gz(path) if fmt.endswith(".gz") else path


FORMATS = [".jsonl", ".jsonl.gz", ".json", ".json.gz", ".csv", ".csv.gz", ".parquet", "hf", "hfdict"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reads_the_same_documents(tmp_path: Path, fmt: str) -> None:
    assert load_texts(str(_write(fmt, tmp_path)), FIELD) == DOCS


def test_json_columns_and_json_lines_in_json(tmp_path: Path) -> None:
    columns = tmp_path / "cols.json"
    columns.write_text(json.dumps({FIELD: DOCS[:3], "id": [0, 1, 2]}))
    assert load_texts(str(columns), FIELD) == DOCS[:3]
    lines = tmp_path / "lines.json"
    lines.write_text("\n".join(json.dumps({FIELD: d}) for d in DOCS[:3]))
    assert load_texts(str(lines), FIELD) == DOCS[:3]


def test_directory_of_mixed_files_in_path_order(tmp_path: Path) -> None:
    _write(".csv", tmp_path / "a")
    _write(".jsonl.gz", tmp_path / "b")
    (tmp_path / "c.txt").write_text("last")
    assert load_texts(str(tmp_path), FIELD) == DOCS + DOCS + ["last"]


@pytest.mark.parametrize(("name", "content", "message"), [
    ("x.csv", "id,text\n1,a\n", "x.csv: no column 'body' (columns: id, text); set --text-field"),
    ("x.json", '[{"id": 1}]', "record 0: no field 'body' (fields: id); set --text-field"),
    ("x.json", '{"body": [1, 2]}', "body[0]: field 'body' holds int, not text"),
    ("x.json", '{"body": "a"', "x.json: not valid JSON"),
    ("x.jsonl.gz", "not gzip", "not a valid gzip file"),
    ("x.parquet", "not parquet", "x.parquet: cannot read as parquet"),
    ("x.txt", b"\xff\xfe\x00bad", "not UTF-8 text"),
    ("x.xlsx", "a", "unsupported data file"),
])
def test_format_problems_are_one_clear_line(tmp_path: Path, name: str, content, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError) as info:
        load_texts(str(path), FIELD)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_datasets_dict_without_train_split_is_refused(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({FIELD: DOCS})
    datasets.DatasetDict({"a": ds, "b": ds}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(ValueError, match=r"splits \['a', 'b'\] and no 'train'"):
        load_texts(str(tmp_path / "dd"), FIELD)


TRAIN = ["--steps", "2", "--seq-len", "16", "--batch-size", "2", "--chunks", "2",
         "--set", "data.eval_batches=1", "--eval-every", "2", "--no-progress"]


def _losses(run: Path) -> list[dict]:
    """Every metric record without the timing keys (which differ between identical runs)."""
    return [{k: v for k, v in r.items() if not k.endswith(("_time_s", "tokens_per_s"))}
            for r in read_records(run / "metrics.jsonl")]


def test_training_from_each_format_gives_the_same_run(tmp_path: Path, capsys) -> None:
    """Same documents in every format -> same blocks -> bit-identical training losses."""
    (tmp_path / "txt").mkdir()
    for i, doc in enumerate(DOCS):
        (tmp_path / "txt" / f"{i:02d}.txt").write_text(doc)
    assert main(["train", "--data", str(tmp_path / "txt"), "--out", str(tmp_path / "ref"), *TRAIN]) == 0
    reference = _losses(tmp_path / "ref")
    assert len(reference) == 2 and "train/final_ce" in reference[-1]
    formats = [f for f in FORMATS if f != "hfdict" and (f != "hf" or _has_datasets())]
    for fmt in formats:
        source = _write(fmt, tmp_path / f"src{fmt}")
        out = tmp_path / f"run{fmt}"
        code = main(["train", "--data", str(source), "--text-field", FIELD, "--out", str(out), *TRAIN])
        assert code == 0, fmt
        assert _losses(out) == reference, fmt


def _has_datasets() -> bool:
    try:
        import datasets  # noqa: F401
    except ImportError:
        return False
    return True


def test_train_reports_a_format_problem_in_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,body\n1,hello\n")
    assert main(["train", "--data", str(bad), "--out", str(tmp_path / "r"), *TRAIN]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and "bad.csv: no column 'text' (columns: id, body)" in errors[0]
