"""Run every `benchmarks/bench_*.py` present, one process each (`make bench`).

    .venv/bin/python benchmarks/run.py            # every benchmark, full size
    .venv/bin/python benchmarks/run.py --quick    # every benchmark, small (each takes --quick)
    .venv/bin/python benchmarks/run.py --only analysis,pte

Benchmarks are scripts, not tests: each prints its own table and writes its figures
under benchmarks/out/. This runner only sequences them and reports which failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every benchmarks/bench_*.py.")
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    parser.add_argument("--only", help="comma-separated names (bench_NAME.py) to run; default all")
    args = parser.parse_args(argv)

    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        wanted = {name.strip().removeprefix("bench_").removesuffix(".py") for name in args.only.split(",")}
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in wanted]
        missing = wanted - {s.stem.removeprefix("bench_") for s in scripts}
        if missing:
            print(f"no such benchmark: {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
    failed = []
    for script in scripts:
        command = [sys.executable, str(script)] + (["--quick"] if args.quick else [])
        print(f"\n=== {script.relative_to(HERE.parent)} {'--quick' if args.quick else ''}".rstrip(), flush=True)
        start = time.perf_counter()
        rc = subprocess.call(command, cwd=HERE.parent)
        print(f"=== {script.name}: exit {rc} after {time.perf_counter() - start:.0f} s", flush=True)
        if rc != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
