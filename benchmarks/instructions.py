"""Instructions a command executes (valgrind's cachegrind, `I refs`): a measure of work
that does not move with machine load, for comparing a change on a busy 2-core machine
where process CPU time moves by 10-20 % between runs. Runs repeat within about 0.1 %.

    .venv/bin/python benchmarks/instructions.py check FILE --format json -o /dev/null --exit-zero

runs `.venv/bin/xferlint ARGS...` under `valgrind --tool=cachegrind --cache-sim=no` (about
50x slower than without) and prints the count; `--runs N` repeats it. Byte code must be
compiled already (`make bytecode`), or the first run also counts compiling it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# Every run checks its files again: a result the results cache read back would time (or
# compare) nothing.
os.environ["XFERLINT_NO_CACHE"] = "1"

XFERLINT = str(Path(sys.executable).with_name("xferlint"))


def instructions(args: list[str]) -> int:
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           XFERLINT, *args], capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind (exit {done.returncode}): {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str]) -> int:
    runs = 1
    if argv[:1] == ["--runs"]:
        runs, argv = int(argv[1]), argv[2:]
    if not argv or shutil.which("valgrind") is None:
        print(__doc__ if argv else "valgrind is not installed", file=sys.stderr)
        return 2
    for _ in range(runs):
        print(f"{instructions(argv):,} instructions: xferlint {' '.join(argv)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
