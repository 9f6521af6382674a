"""Render the page's blocks with the jinja2 templates in ``reports/templates``.

``report.html.j2`` gives a self-contained HTML page (figures embedded as base64 PNG, every
text escaped with ``html.escape``); ``report.md.j2`` the same content in Markdown (cells with
``|`` escaped, figures linked as files).
"""

from __future__ import annotations

import base64
import functools
import html
from collections.abc import Mapping

import jinja2

from reports.blocks import Block
from reports.wording import md_cell

__all__ = ["render_html", "render_markdown"]


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"), autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["esc"] = html.escape
    env.filters["cell"] = md_cell
    return env


def render_html(blocks: list[Block], figures_png: Mapping[str, bytes], *, title: str,
                captions: Mapping[str, str]) -> str:
    """A self-contained HTML page; figures embedded as base64 PNG (missing ones skipped)."""
    figures = {name: base64.b64encode(data).decode("ascii") for name, data in figures_png.items()}
    from reports.legend import TONE_COLORS

    return _environment().get_template("report.html.j2").render(
        blocks=blocks, figures=figures, title=title, captions=captions, tone_colors=TONE_COLORS)


def render_markdown(blocks: list[Block], figure_files: Mapping[str, str], *, captions: Mapping[str, str]) -> str:
    """The same content in Markdown; ``figure_files`` maps figure names to relative paths."""
    text = _environment().get_template("report.md.j2").render(blocks=blocks, files=figure_files, captions=captions)
    return text.rstrip("\n") + "\n" if text.strip() else ""  # every block ends in one blank line
