"""An alias of the benchmark suite: `python bench/run.py [--quick]` runs bench/suite.py from a checkout.

The repository root goes on sys.path first, so `bench` and `unigrad` import from this checkout whatever the current
directory is. `python -m bench` skips this alias (it runs bench.suite itself).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import suite  # after the sys.path insert: the repository root


if __name__ == "__main__":
    suite.main(sys.argv[1:])
