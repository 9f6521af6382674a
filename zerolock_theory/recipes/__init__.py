"""Recipes shipped with the package, found by name (``--config zerolock_forward``).

A recipe is a TOML or YAML file in this directory. ``resolve_recipe`` leaves an existing
file alone and otherwise looks the name up here, with or without its suffix.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["RECIPE_DIR", "list_recipes", "recipe_description", "resolve_recipe"]

RECIPE_DIR = Path(__file__).resolve().parent
SUFFIXES = (".toml", ".yaml", ".yml")


def list_recipes() -> dict[str, Path]:
    """Recipe name (file stem) → packaged file, sorted by name."""
    files = sorted(p for p in RECIPE_DIR.iterdir() if p.suffix in SUFFIXES and p.is_file())
    return {p.stem: p for p in files}


def recipe_description(path: Path) -> str:
    """The first sentence of a recipe's opening comment, without ``#`` (empty if it has none).

    The sentence may run over several comment lines; it ends at a full stop followed by a space
    or the line's end, or at a colon that introduces the commands below it (dropped)."""
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#") or line.startswith("#  "):  # the comment's end, or a command line
            break
        text = line.lstrip("#").strip()
        words.append(text)
        if text.endswith((".", ":")) or ". " in text:
            break
    sentence = " ".join(words)
    cut = sentence.find(". ")
    sentence = sentence[: cut + 1] if cut >= 0 else sentence
    return sentence[:-1] if sentence.endswith(":") else sentence


def resolve_recipe(name: str | Path) -> Path:
    """An existing file as given; else the packaged recipe of that name; else ``name`` unchanged."""
    path = Path(name)
    if path.is_file() or path.parent != Path("."):
        return path
    recipes = list_recipes()
    stem = path.stem if path.suffix in SUFFIXES else path.name
    return recipes.get(stem, path)
