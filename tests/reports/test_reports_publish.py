"""The results page of ``zerolock verify --publish``: provenance, the table, and no overwrite of a user's file."""

from __future__ import annotations

import pytest

from analyses.registry import ClaimInputs, claims, decide
from reports.publish import (
    BEGIN,
    END,
    MARKER,
    Provenance,
    check_publish_path,
    results_page,
    write_results_page,
)
from zerolock_theory.app.cli import main


def _verdicts():
    return decide(ClaimInputs({}, {}))  # every row without its data: "not measured"


def test_the_page_carries_its_provenance_and_every_row():
    text = results_page(_verdicts(), "Scope: model embedded",
                        Provenance("zerolock verify --out x", "abc123", "2026-12-05", 125.0, "x/report/report.html"),
                        title="Verdicts: x")
    lines = text.splitlines()
    assert lines[0] == MARKER and "# Verdicts: x" in lines
    for needle in ("- command: `zerolock verify --out x`", "- commit: `abc123`", "- date: 2026-12-05",
                   "2.1 min (125 s)", "**Scope: model embedded**", "Bottom line"):
        assert needle in text, needle
    assert sum(line.startswith("| ") for line in lines) == len(claims()) + 1  # the head and one line per row
    assert "not recorded" in results_page(_verdicts(), "s", Provenance("c", "c", "d", None, "r"), title="t")


def test_a_page_is_rewritten_but_a_users_file_is_not(tmp_path):
    page = tmp_path / "docs" / "page.md"
    write_results_page(page, _verdicts(), "Scope", title="t", command="c", seconds=1.0, report="r")
    first = page.read_text()
    write_results_page(page, _verdicts(), "Scope", title="t2", command="c", seconds=1.0, report="r")
    assert page.read_text() != first and page.read_text().startswith(MARKER)
    mine = tmp_path / "mine.md"
    mine.write_text("my notes\n")
    with pytest.raises(ValueError, match="was not written by --publish .*; not overwriting it"):
        check_publish_path(mine)
    with pytest.raises(ValueError, match="a directory"):
        check_publish_path(tmp_path)


def test_verify_refuses_a_foreign_page_before_anything_runs(tmp_path, capsys):
    mine = tmp_path / "notes.md"
    mine.write_text("my notes\n")
    out = tmp_path / "v"
    assert main(["verify", "--quick", "--out", str(out), "--publish", str(mine)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not overwriting it" in err[0]
    assert not out.exists() and mine.read_text() == "my notes\n"


def test_a_block_in_a_users_file_is_replaced_and_nothing_else(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# Mine\n\nintro\n\n{BEGIN}\nold table\n{END}\n\nafter\n")
    write_results_page(readme, _verdicts(), "Scope: x", title="t", command="zerolock verify --out v", seconds=60.0,
                       report="v/report/report.html")
    text = readme.read_text()
    assert text.startswith("# Mine\n\nintro\n\n" + BEGIN) and text.endswith(END + "\n\nafter\n")
    assert "old table" not in text and "| claim | outcome | headline | Holm |" in text
    assert sum(line.startswith("| ") for line in text.splitlines()) == len(claims()) + 1


def test_a_pipe_inside_a_cell_is_escaped_in_every_markdown_table(monkeypatch):
    """``|a_t|`` in a row's text must not split its cell: README's block, the results page and verdicts.md."""
    import dataclasses
    import re

    import reports.wording
    from reports.publish import compact_table
    from reports.wording import verdict_markdown

    # the bottom line counts outcomes by their closed set (compact_table is verdict_markdown's headline form)
    monkeypatch.setattr(reports.wording, "bottom_line", lambda verdicts: "")
    verdicts = _verdicts()
    verdicts[0] = dataclasses.replace(verdicts[0], outcome="slope of |a_t| on eta_t")
    for text in (compact_table(verdicts, "s"), verdict_markdown(verdicts, "s")):
        rows = [line for line in text.splitlines() if line.startswith("| ")]
        assert len(rows) == len(verdicts) + 1
        for line in rows:
            assert len(re.findall(r"(?<!\\)\|", line)) == 5, line  # four cells, none split
        assert "slope of \\|a_t\\| on eta_t" in rows[1]
