"""The `.pte` fix trial that `xferlint check` runs to decide which findings are fixable
(`xferlint.fixes.pte.fix.fix_pte_loaded(..., decisions_only=True)`), in process, stage by
stage: deciding the plans (planning, dead-code closure, memory-plan trials), reading the
patched program back, verifying it; best of N runs on one loaded program (the first run
fills the lint caches the check itself would have filled).

bench_large.py times whole processes; this isolates the one stage that dominates programs
whose round trips the memory plan refuses (ladder-100000: about half of the check), with
the noise of start-up, loading and JSON out of the way.

    .venv/bin/python benchmarks/fix_trial.py benchmarks/out/large/ladder-10000.pte --runs 5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stages import timed  # noqa: E402  (the same per-stage timer)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pte")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)

    from xferlint.collector import collector_paused
    from xferlint.fixes.pte import fix as trial
    from xferlint.frontends.entrypoints import expand
    from xferlint.pipeline import analyze, load_pte
    from xferlint.selection import select_rules

    spent: dict[str, float] = {}
    for name, label in (("_decide", "decide"), ("load_pte_bytes", "read back"), ("_verify", "verify")):
        timed(spent, trial, name, label)
    rules = select_rules()
    (entry,) = expand(args.pte)
    loaded = load_pte(entry)
    analyze(loaded.view, rules)
    best: dict[str, float] = {}
    with collector_paused():
        for _ in range(args.runs):
            spent.clear()
            start = time.process_time()
            result = trial.fix_pte_loaded(loaded, rules, decisions_only=True)
            spent["total"] = time.process_time() - start
            for label, seconds in spent.items():
                best[label] = min(best.get(label, float("inf")), seconds)
    applied, refused = len(result.applied), len(result.skipped)
    print(f"{args.pte}: {applied} fixes applied, {refused} refused; best of {args.runs} (process CPU):")
    print("  " + ", ".join(f"{label} {seconds * 1000:.0f} ms" for label, seconds in best.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
