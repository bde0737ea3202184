"""Start-up time of the command line and of ``import privdist`` against ``python -c 'import numpy'`` (issue 16).

Each command is run ``REPEATS`` times in a fresh interpreter (the best wall time counts: start-up is a floor, and
the machine may be shared). Target: ``privdist --help``, ``privdist list`` and ``import privdist`` well under a second.

Run as a script: ``python benchmarks/bench_startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

__all__ = ["run_benchmark"]

REPEATS = 5
COMMANDS = {
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
    "import privdist": [sys.executable, "-c", "import privdist"],
    "privdist --help": [sys.executable, "-m", "privdist.cli.main", "--help"],
    "privdist list": [sys.executable, "-m", "privdist.cli.main", "list"],
}


def _best(cmd: list[str]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t0)
    return best


def run_benchmark() -> dict:
    """Best-of-``REPEATS`` wall seconds per command, and each command's excess over importing numpy."""
    seconds = {name: _best(cmd) for name, cmd in COMMANDS.items()}
    base = seconds["python -c 'import numpy'"]
    return {"name": "startup", "repeats": REPEATS, "seconds": seconds,
            "over_numpy_seconds": {k: v - base for k, v in seconds.items() if k != "python -c 'import numpy'"},
            "meets_target_1s": all(v < 1.0 for k, v in seconds.items())}


if __name__ == "__main__":
    print(json.dumps(run_benchmark(), indent=1))
