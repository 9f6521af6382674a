"""zerolock recipes: list the packaged recipes, or copy one out to edit.

Any command that takes --config also accepts a recipe's name, e.g. --config zerolock_forward.

Examples:
  zerolock recipes                                   # names and one-line descriptions
  zerolock recipes zerolock_forward --out my.toml    # copy one out (never overwrites)
  zerolock train --config my.toml --out runs/mine
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from zerolock_theory.app.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("recipes", help="list packaged recipes or copy one out", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", nargs="?", help="recipe to copy out (omit to list them)")
    parser.add_argument("--out", type=Path, help="destination file or directory (default: ./NAME.toml)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.recipes import list_recipes, recipe_description

    recipes = list_recipes()
    if args.name is None:
        if args.out is not None:
            raise CLIError("--out needs a recipe name")
        width = max(map(len, recipes))
        for name, path in recipes.items():
            print(f"{name:<{width}}  {recipe_description(path)}")
        return 0
    stem = Path(args.name).stem if Path(args.name).suffix else args.name
    if stem not in recipes:
        raise CLIError(f"no packaged recipe {args.name!r}; choose from {', '.join(recipes)}")
    source = recipes[stem]
    target = args.out if args.out is not None else Path(source.name)
    if target.is_dir():
        target = target / source.name
    if target.exists():
        raise CLIError(f"{target} already exists; choose another --out (nothing was overwritten)")
    if not target.parent.is_dir():
        raise CLIError(f"directory {target.parent} does not exist")
    shutil.copyfile(source, target)
    print(f"wrote {target}")
    return 0
