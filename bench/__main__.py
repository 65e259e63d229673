"""Run every benchmark module in bench/ (or the ones named): `python -m bench [name ...] [options]`.

Each module prints its own table and a `JSON:` line; this driver runs them in name order and exits
non-zero if one of them raises. Options go to every module named (`python -m bench suite --quick`);
`python -m bench --help` lists the modules, `python -m bench NAME --help` shows one module's options.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pathlib
import pkgutil
import sys
import traceback

import bench


ALIASES = {"run"}  # bench/run.py is `python bench/run.py`, the suite under another name: not run twice
HELPERS = {"machine"}  # bench/machine.py holds the suite's hand-written C references: nothing to run alone


def available() -> list[str]:
    mods = pkgutil.iter_modules(bench.__path__)
    return sorted(m.name for m in mods if not m.name.startswith("_") and m.name not in ALIASES | HELPERS)


def summary(name: str) -> str:
    """The first line of bench.<name>'s docstring, read from its source (the module is not imported: not run)."""
    spec = importlib.util.find_spec(f"bench.{name}")
    if spec is None or spec.origin is None:
        return ""
    doc = ast.get_docstring(ast.parse(pathlib.Path(spec.origin).read_text())) or ""
    return doc.splitlines()[0] if doc else ""


def usage() -> str:
    """The help text: how to call the driver, then each benchmark module with its one-line summary."""
    width = max(len(n) for n in available())
    parts = "\n".join(f"  {n:<{width}}  {summary(n)}" for n in available())
    return f"{__doc__.strip()}\n\nbenchmarks:\n{parts}"


def main(argv: list[str]) -> int:
    named = [a for a in argv if not a.startswith("-")]
    if not named and any(a in ("-h", "--help") for a in argv):
        print(usage())
        return 0
    names = named or available()
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
