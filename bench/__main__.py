"""Run every benchmark module in bench/ (or the ones named): `python -m bench [name ...]`.

Each module prints its own table and a `JSON:` line; this driver runs them in name order and exits
non-zero if one of them raises.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback

import bench


ALIASES = {"run"}  # bench/run.py is `python bench/run.py`, the suite under another name: not run twice
HELPERS = {"machine"}  # bench/machine.py holds the suite's hand-written C references: nothing to run alone


def available() -> list[str]:
    mods = pkgutil.iter_modules(bench.__path__)
    return sorted(m.name for m in mods if not m.name.startswith("_") and m.name not in ALIASES | HELPERS)


def main(argv: list[str]) -> int:
    names = [a for a in argv if not a.startswith("-")] or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {available()}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f"=== bench.{name} ===")
        try:
            importlib.import_module(f"bench.{name}").main([a for a in argv if a.startswith("-")])
        except Exception:
            traceback.print_exc()
            failed.append(name)
    if failed:
        print(f"failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
