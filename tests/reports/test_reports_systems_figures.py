"""Systems figures (reports/systems_figures.py): drawn from results, None without data, deterministic."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analyses" / "systems"))

from test_analyses_systems import _write_memory  # noqa: E402

from analyses.systems.memory import memory_claim  # noqa: E402
from analyses.systems.throughput import throughput_prediction  # noqa: E402
from reports.figures import save_figure  # noqa: E402
from reports.systems_figures import SYSTEMS_FIGURES, render  # noqa: E402


def _grid(tmp_path):
    rows = [{"model": model, "chunks": K, "micro_batches": m, "ratio": (m + K - 1) / m * 0.9, "bubble": 1.0,
             "work": 0.9, "readout_share": 0.1} for model in ("SmolLM2-135M", "Llama-3-8B")
            for K in (2, 4, 8) for m in (1, 2, 4, 8, 16)]
    path = tmp_path / "schedule_prediction.json"
    path.write_text(json.dumps({"variants": {"measured_rates": rows}}))
    return throughput_prediction(path)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def test_throughput_figure_has_one_panel_per_model_and_marks_the_setting(tmp_path) -> None:
    result = _grid(tmp_path)
    fig = render("systems_throughput", result)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["SmolLM2-135M", "Llama-3-8B"]
    labels = [t.get_text() for ax in panels if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert labels == [f"assumed setting: {result.at_setting.ratio:.3f}"]
    assert _png(fig) == _png(render("systems_throughput", result))  # deterministic


def test_memory_figure_and_absent_results(tmp_path) -> None:
    fig = render("systems_memory", memory_claim(_write_memory(tmp_path, [700.0, 710.0, 690.0])))
    assert "paper 0.735" in fig.axes[0].get_title()
    assert save_figure(fig, tmp_path / "m.svg", "svg").stat().st_size > 0
    for name in SYSTEMS_FIGURES:
        assert render(name, None) is None
