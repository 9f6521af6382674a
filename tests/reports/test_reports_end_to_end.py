"""Synthetic runs → ``zerolock analyze`` → ``zerolock report``: page, figures, determinism."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest
from matplotlib.image import imread

import zerolock_theory.app.cli as cli
from analyses.registry import claims
from analyses.sensitivity import SENSITIVITY
from analyses.suite import load_suite
from reports.figures import FIGURES as ALL_FIGURES
from reports.figures import render_figures

# every figure but the sensitivity map, which only a sensitivity suite draws (tests/reports/test_reports_sensitivity.py)
FIGURES = {k: v for k, v in ALL_FIGURES.items() if k != SENSITIVITY.name}

sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
from synthetic_runs import write_suite  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module", autouse=True)
def _only_our_commands():
    # Other sub-commands are developed in parallel; keep these tests independent of them.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "COMMANDS", ("analyze", "report"))
        yield


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    runs = write_suite(root / "runs", steps=100)
    out = root / "analysis"
    assert cli.main(["analyze", *map(str, runs), "--out", str(out), "--n-boot", "100"]) == 0
    return runs, out


@pytest.fixture(scope="module")
def report(analysed, tmp_path_factory):
    _, analysis = analysed
    out = tmp_path_factory.mktemp("report")
    assert cli.main(["report", str(analysis), "--out", str(out), "--overwrite"]) == 0
    return out


def test_html_holds_a_card_per_claim_first_then_every_verdict_row(report):
    text = (report / "report.html").read_text(encoding="utf-8")
    cards = text.split('<div class="cards">', 1)[1].split("</div>\n</div>", 1)[0] + "</div>"
    assert len(re.findall(r'<div class="card tone-', cards)) == len(claims())
    for row in claims():
        assert html.escape(row.title) in cards and f'href="#claim-{row.key}"' in cards
        assert f'<details id="claim-{row.key}">' in text
    table = text.split('<details id="verdicts">', 1)[1].split("</table>", 1)[0]
    assert len(re.findall(r'<tr class="tone-', table)) == len(claims())
    assert text.index('<div class="cards">') < text.index('<details id="verdicts">') < text.index("Systems claims")
    assert "Environment" in text and "abc1234" in text  # configs and manifests of the runs


UNTUNED_ABSENT = {"tuned_chunks"}  # drawn only from a tune directory among the inputs


def test_html_is_self_contained(report):
    text = (report / "report.html").read_text(encoding="utf-8")
    sources = re.findall(r'src="([^"]+)"', text)
    thumbnails = sum(1 for c in claims() if c.figure in FIGURES)  # each card's small figure, beside the section's
    # no tune directory here: no tuned figures in a section; the versus card shows the outcome curves
    assert len(sources) == len(set(FIGURES) - UNTUNED_ABSENT - {"versus"}) + thumbnails
    assert all(s.startswith("data:image/png;base64,") for s in sources)
    assert all(link.startswith("#") for link in re.findall(r'href="([^"]+)"', text))  # nothing outside the page


def test_every_figure_is_a_valid_nontrivial_png(report):
    pngs = sorted((report / "figures").glob("*.png"))
    assert {p.stem for p in pngs} == set(FIGURES) - UNTUNED_ABSENT
    for path in pngs:
        data = path.read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 2048, path.name
        image = imread(path)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
        assert (image != image[0, 0]).any(), f"{path.name} is a single colour"
        assert (report / "figures" / f"{path.stem}.svg").stat().st_size > 2048


def test_markdown_links_existing_figures(report):
    text = (report / "report.md").read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(links) == len(set(FIGURES) - UNTUNED_ABSENT - {"versus"})  # the sections' figures, no cards
    assert all((report / link).is_file() for link in links)
    assert all(row.title in text for row in claims())


def test_figures_are_byte_identical_across_renders(analysed, report, tmp_path):
    again = render_figures(load_suite(analysed[1]), tmp_path)
    assert set(again) == set(FIGURES) - UNTUNED_ABSENT
    for name, paths in again.items():
        for fmt, path in paths.items():
            assert path.read_bytes() == (report / "figures" / path.name).read_bytes(), (
                f"{name}.{fmt}"
            )


def test_report_from_run_dirs_and_overwrite_guard(analysed, tmp_path, capsys):
    runs, _ = analysed
    out = tmp_path / "rep"
    assert cli.main(["report", *map(str, runs), "--out", str(out), "--n-boot", "30"]) == 0
    assert (out / "analysis" / "analysis.json").is_file() and (out / "report.html").is_file()
    capsys.readouterr()
    assert cli.main(["report", *map(str, runs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not empty" in err


def test_report_input_errors(analysed, tmp_path, capsys):
    runs, analysis = analysed
    cases = [
        (["report", str(tmp_path / "none"), "--out", str(tmp_path / "o")], "no such directory"),
        (["report", str(analysis), str(runs[0]), "--out", str(tmp_path / "o")], "not both"),
    ]
    for argv, message in cases:
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err


def test_one_colour_per_configuration_across_figures(analysed):
    """A group's line has the same colour in the stability, drift, depth and outcome figures."""
    from matplotlib.colors import to_hex

    from reports.figures import palette, render_figure, short_labels

    suite = load_suite(analysed[1])
    colors, names = palette(suite), short_labels(suite)
    assert len(set(names.values())) == len(names)  # short labels stay distinct
    seen: dict[str, set[str]] = {}
    for name in ("stability", "drift", "depth", "outcome"):
        fig = render_figure(name, suite)
        for ax in fig.axes:
            for line in ax.get_lines():
                label = str(line.get_label()).split(" (")[0]
                group = next((g for g, n in names.items() if n == label), None)
                if group is not None:
                    seen.setdefault(group, set()).add(to_hex(line.get_color()))
    assert seen and all(found == {colors[g]} for g, found in seen.items())
    fig = render_figure("stability", suite)
    for ax in fig.axes:  # the legend hangs below the axes, outside the data
        legend = ax.get_legend()
        assert legend is not None and legend.get_bbox_to_anchor().y0 < ax.bbox.y0
