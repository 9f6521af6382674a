"""The ``zerolock`` command line: one sub-command module per workflow.

Each module named in ``COMMANDS`` lives in this package and provides
``register(subparsers)``, which adds its parser and sets ``func`` (returning an exit code).
Errors the user can fix raise ``CLIError``; ``main`` prints one line and exits with 2.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import sys
import typing
from collections.abc import Sequence

COMMANDS: tuple[str, ...] = (
    "verify", "train", "sweep", "analyze", "report", "theory", "pipeline", "export", "recipes", "probe",
    "cache", "tune", "diagnose",
)


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def os_error_line(exc: OSError) -> str:
    """One line for an ``OSError``: the path(s) and the OS's reason."""
    if exc.strerror and exc.filename is not None:
        where = f"{exc.filename} -> {exc.filename2}" if exc.filename2 is not None else f"{exc.filename}"
        return f"{where}: {exc.strerror}"
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class OneLineParser(argparse.ArgumentParser):
    """``argparse`` with usage errors as one line on stderr (``zerolock CMD: error: ...``), exit 2.

    ``--help`` still prints the full usage; sub-parsers inherit this class.
    """

    def error(self, message: str) -> typing.NoReturn:
        hint = f" (see {self.prog} --help)"
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}{hint}\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's layout (examples) and shows each option's meaningful default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "%(default)" in text or re.search(r"\bdefault\b", text) or default in (None, False, [], argparse.SUPPRESS):
            return text
        if action.option_strings or action.nargs in ("?", "*"):
            return f"{text} (default: %(default)s)"
        return text


def plain(text: str | None) -> str | None:
    """Help text without reStructuredText markup (````x````, ``::``, ``:mod:`x```)."""
    if text is None:
        return None
    text = re.sub(r":(?:class|func|mod|meth|attr):`([^`]*)`", r"\1", text)
    text = re.sub(r"``([^`]*)``", r"\1", text)
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


def _polish(parser: argparse.ArgumentParser) -> None:
    """Plain descriptions and shown defaults, for a parser and all its sub-parsers."""
    parser.description = plain(parser.description)
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        action.help = plain(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _polish(sub)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every sub-command registered."""
    from zerolock_theory import __version__

    parser = OneLineParser(
        prog="zerolock", description="Verify the claims of ZeroLock (arXiv 2608.07974).",
        epilog="Run 'zerolock COMMAND --help' for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"zerolock {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"zerolock_theory.app.cli.{name}").register(subparsers)
    _polish(parser)
    return parser


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost sub-command parser that ``args`` went through (``zerolock probe fixed-point``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _command_parser(action.choices[chosen], args)
    return parser


def _unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]) -> typing.NoReturn:
    """Unknown arguments, reported by the sub-command that got them, with the closest option."""
    import difflib

    command = _command_parser(parser, args)
    known = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
    flags = [e.split("=", 1)[0] for e in extras if e.startswith("-")]
    close = [m for f in flags for m in difflib.get_close_matches(f, known, n=1, cutoff=0.6)]
    hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else ""
    command.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``zerolock`` console script."""
    from zerolock_theory.allocator import keep_freed_memory

    keep_freed_memory()
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        _unrecognized(parser, args, extras)
    try:
        return int(args.func(args) or 0)
    except CLIError as exc:
        print(f"zerolock {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # missing, permission, not a directory, is a directory, no space ...
        print(f"zerolock {args.command}: error: {os_error_line(exc)}", file=sys.stderr)
        return 1 if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO) else 2
    except KeyboardInterrupt:
        print("zerolock: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
