"""The key to the report's colours: what each outcome tone means, and its one colour.

A tone (``analyses.registry.Tone``) says where an outcome stands against the paper, never whether
something went wrong: a row "against the paper" is a finding of the run, so its colour is not an
error red. The page's cards and verdict table, and the sensitivity map, take their colours here.
"""

from __future__ import annotations

from reports.blocks import Block

__all__ = ["TONE_COLORS", "TONE_WORDS", "legend_block", "legend_text"]

TONE_WORDS = {
    "holds": "as the paper claims",
    "fails": "against the paper (a finding of this run, not an error)",
    "mixed": "mixed or undecided",
    "none": "no answer on this run (the card says why)",
}
"""Each tone in words, in the order the key lists them."""

TONE_COLORS = {"holds": "#cdebcd", "fails": "#ddd3f3", "mixed": "#f8e7b0", "none": "#e3e3e3"}
"""Each tone's background: green, violet (not red: a finding, not an error), amber, grey."""


def legend_text() -> str:
    """The key as one sentence (the Markdown page and the terminal)."""
    return "Key to the outcome colours: " + "; ".join(
        f"{colour} = {TONE_WORDS[tone]}" for tone, colour in
        zip(TONE_WORDS, ("green", "violet", "amber", "grey"), strict=True)) + "."


def legend_block() -> Block:
    """The key above the cards: one swatch per tone (``rows``: tone, words) and its sentence."""
    return Block("legend", legend_text(), rows=tuple((tone, words) for tone, words in TONE_WORDS.items()))
