"""Where one `xferlint check FILE --format json` spends its time, stage by stage, in process
(process CPU, one run; imports and interpreter start are not included: bench_pte.py and
bench_large.py time whole processes).

Stages: load (read the `.pte` and build its ProgramView), analyze (DeviceFacts, every rule,
the transfer summary), the fix trial that decides which findings are fixable (with its
parts: deciding plans, reading the patched program back, verifying it), the report (sort,
summary) and emitting JSON. What is left of the total is the CLI's own work (settings,
discovery, writing the output).

    .venv/bin/python benchmarks/stages.py benchmarks/out/large/ladder-100000.pte ...
"""

from __future__ import annotations

import os
import sys
import time

# Every run checks its files again: a result the results cache read back would time (or
# compare) nothing.
os.environ["XFERLINT_NO_CACHE"] = "1"


def timed(spent: dict[str, float], module, name: str, label: str) -> None:
    """Replace `module.name` by a wrapper that adds its process CPU time to `spent[label]`."""
    inner = getattr(module, name)

    def run(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - start

    setattr(module, name, run)


def stages(path: str) -> dict[str, float]:
    import xferlint.fixes.driver as driver
    import xferlint.pipeline as pipeline
    import xferlint.reporters as reporters
    from xferlint.cli import main
    from xferlint.fixes.pte import fix as trial

    spent: dict[str, float] = {}
    for module, name, label in ((pipeline, "load_entry", "load"), (pipeline, "analyze", "analyze"),
                                (driver, "settle_fixability", "fix trial"), (trial, "_decide", "  decide"),
                                (trial, "load_pte_bytes", "  read back"), (trial, "_verify", "  verify"),
                                (pipeline.CheckRun, "report", "report"), (reporters, "emit", "emit")):
        timed(spent, module, name, label)
    start = time.process_time()
    main(["check", path, "--format", "json", "-o", "/dev/null", "--exit-zero", "--isolated"])
    spent["total"] = time.process_time() - start
    return spent


def main(argv=None) -> int:
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths:
        print(__doc__)
        return 2
    import subprocess

    if len(paths) > 1:  # one process per file: caches and heap of one do not touch the next
        return max(subprocess.run([sys.executable, __file__, p]).returncode for p in paths)
    spent = stages(paths[0])
    order = ["load", "analyze", "fix trial", "  decide", "  read back", "  verify", "report", "emit", "total"]
    shown = [f"{label.strip()} {spent[label]:.2f} s" for label in order if label in spent]
    print(f"{paths[0]}: " + ", ".join(shown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
