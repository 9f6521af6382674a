"""Every sub-command's --help reads as one voice: no duplicated default, no broken line, every
option in the usage, recipe descriptions whole."""

from __future__ import annotations

import argparse
import re

import pytest

from zerolock_theory.app.cli import build_parser
from zerolock_theory.recipes import list_recipes, recipe_description


def commands(parser: argparse.ArgumentParser, name: str = "zerolock"):
    """(name, parser) of the top-level parser and every sub-command, depth first."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from commands(sub, f"{name} {sub_name}")


COMMANDS = list(commands(build_parser()))


@pytest.mark.parametrize("name, parser", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_help_has_no_duplicated_default_and_no_broken_line(name, parser):
    text = parser.format_help()
    for action in parser._actions:
        if action.help in (None, argparse.SUPPRESS):
            continue
        shown = parser._get_formatter()._expand_help(action)
        assert len(re.findall(r"\(default|default:|default \d", shown)) <= 1, f"{name} {action.option_strings}: {shown}"
    assert not re.search(r"\\ +--", text), f"{name}: a continuation line was joined"  # "... \  --flag"
    for option in (o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"):
        assert option in parser.format_usage() or option in text.split("options:")[0], f"{name}: {option} not in usage"


def test_the_walk_reaches_every_command():
    names = {n for n, _ in COMMANDS}
    assert {"zerolock verify", "zerolock train", "zerolock analyze", "zerolock probe fixed-point",
            "zerolock theory toy", "zerolock sweep"} <= names


def test_every_command_taking_data_takes_text_field():
    for name, parser in COMMANDS:
        options = {o for a in parser._actions for o in a.option_strings}
        if "--data" in options:
            assert "--text-field" in options, name


def test_train_has_threads_with_its_default_documented():
    train = dict(COMMANDS)["zerolock train"]
    (threads,) = [a for a in train._actions if "--threads" in a.option_strings]
    assert "several share the machine" in threads.help


@pytest.mark.parametrize("name", sorted(list_recipes()))
def test_recipe_descriptions_are_whole(name):
    text = recipe_description(list_recipes()[name])
    assert text and text.count("(") == text.count(")"), text
    assert not text.endswith((",", ":", "(", " and", " the")), text


def test_theory_toy_does_not_cite_a_review():
    toy = dict(COMMANDS)["zerolock theory toy"]
    assert "review" not in toy.format_help() and "review" not in dict(COMMANDS)["zerolock theory"].format_help()
