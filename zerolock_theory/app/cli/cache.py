"""``zerolock cache``: list or clear the model cache (GGUF files converted to Hugging Face directories).

The cache lives in $ZEROLOCK_CACHE, or ~/.cache/zerolock-theory/models when it is not set.
An entry is named by the first 16 hex digits of its source file's SHA-256; "torn" marks an
entry cut short (a build killed midway), which the next run of that model rebuilds.

Examples::

    zerolock cache                    # the same as: zerolock cache list
    zerolock cache clear 1a2b3c4d5e6f7a8b
    zerolock cache clear              # every entry
"""

from __future__ import annotations

import argparse

from zerolock_theory.app.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cache", help="list or clear the model cache (converted GGUF files)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", nargs="?", choices=("list", "clear"), default="list",
                        help="list the entries, or clear them (all, or the one named KEY)")
    parser.add_argument("key", nargs="?", default=None, help="the entry to clear (as list shows it)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.models import model_cache as mc

    cache = mc.cache_dir()
    if args.action == "list":
        if args.key is not None:
            raise CLIError("cache list takes no KEY (cache clear KEY removes one entry)")
        entries = mc.list_entries(cache)
        print(f"model cache: {cache} ({len(entries)} entr{'y' if len(entries) == 1 else 'ies'})")
        for entry in entries:
            marker = entry.marker or {}
            name = marker.get("display_name", "(torn: rebuilt on next use)")
            print(f"  {entry.key}  {entry.status:4s}  {entry.bytes / 2**20:8.1f} MiB  {name}  "
                  f"{marker.get('source', '')}".rstrip())
        return 0
    try:
        removed = mc.clear_entries(args.key, cache)
    except mc.ModelCacheError as exc:
        raise CLIError(str(exc)) from exc
    print(f"model cache: {cache}: removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'}"
          + (f" ({', '.join(e.key for e in removed)})" if removed else ""))
    return 0
