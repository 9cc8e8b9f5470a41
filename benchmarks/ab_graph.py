"""A/B of the graph path in one process: an earlier revision's xferlint against the work
tree's, on the same FX graph, run after run in turn.

Between two processes the same code's time on the real ladder varies by up to a third here
(11.2-16.6 ms for the frontend alone on 2026-12-06): a speed-up of a few percent cannot be
seen by running `bench_analysis.py` before and after. This script copies revision REV's
`xferlint` package out of git as `xferlint_base` (its imports rewritten to it), lowers or
builds the program once, and then times both packages' frontend, analysis and rules (with
the transfer summary, as `bench_analysis.py` and `xferlint check` do) on that one graph,
alternating which goes first, the collector paused while each runs.

What it can tell apart: on 2026-12-06, with the work tree equal to HEAD, three runs (11-15
runs each, real ladder) printed work tree / base 1.059, 0.979 and 1.032. Identical code
differs by up to 6 % (two copies of the same code sit at different addresses), so only a
change of 10 % or more shows; run it with no change first to see the noise of the day.

    .venv/bin/python benchmarks/ab_graph.py                        # HEAD against the work tree, real ladder
    .venv/bin/python benchmarks/ab_graph.py --base HEAD~3 --runs 21
    .venv/bin/python benchmarks/ab_graph.py --graph synthetic --size 10000 --pass
    .venv/bin/python benchmarks/ab_graph.py --pte benchmarks/out/large/loops-10000.pte --base d8a1f4f

`--pte FILE` times a `.pte` file's path instead: reading it into its view (load), then the
analysis, every rule and the summary (`pipeline.analyze`, as `xferlint check` runs them;
no fix trial).

`--pass` also times ExecuTorch's PropagateDevicePass on a fresh copy of the graph each run
and prints each package's ratio (issue 11's 0.5x). The figures are process CPU medians;
they say which code is faster, not what `bench_analysis.py` would print on another day.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASE = "xferlint_base"


def materialize(rev: str, into: Path) -> Path:
    """`rev`'s `xferlint` package as `into/xferlint_base`, every reference to its modules
    (imports, and the module names in strings that importlib reads) renamed to it."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "xferlint"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    package = into / BASE
    (into / "xferlint").rename(package)
    rename = _renamer(package)
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        renamed = rename(text)
        if renamed != text:
            path.write_text(renamed, encoding="utf-8")
    return package


def _renamer(package: Path) -> Callable[[str], str]:
    """A function that points `xferlint.<module>` (for the package's own modules),
    `import xferlint` and `from xferlint import` at the copy."""
    modules = sorted({p.stem if p.is_file() else p.name for p in package.iterdir()
                      if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()})
    dotted = re.compile(r"\bxferlint\.(" + "|".join(map(re.escape, modules)) + r")\b")
    bare = re.compile(r"^(\s*)(import|from) xferlint\b(?!\.)", re.MULTILINE)

    def rename(text: str) -> str:
        return bare.sub(rf"\1\2 {BASE}", dotted.sub(rf"{BASE}.\1", text))

    return rename


def kit(package: str) -> dict[str, Any]:
    """What one revision runs: its FX frontend, DeviceFacts, RuleContext, rules and summary."""
    def module(name: str) -> Any:
        return importlib.import_module(f"{package}.{name}")

    return {"read": module("frontends.executorch").read_method, "facts": module("analyzer.facts").DeviceFacts,
            "context": module("rules.base").RuleContext, "view": module("analyzer.view").ProgramView,
            "rules": module("selection").select_rules(select=None, ignore=None),
            "transfers": module("analyzer.summary").method_transfers}


def run_once(k: dict[str, Any], graph: Any, signature: Any) -> tuple[float, float, float, int]:
    """(frontend, analysis, rules) process CPU seconds and the findings' count."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        method = k["read"]("forward", graph, signature)
        view = k["view"](input="bench", name="bench", kind="graph", methods=(method,))
        t1 = time.process_time()
        contexts = [k["context"](program=view, method=m, facts=k["facts"].compute(m)) for m in view.methods]
        t2 = time.process_time()
        found = 0
        for ctx in contexts:
            mine = [f for rule in k["rules"] for f in rule.check(ctx)]
            k["transfers"](ctx.program.input, ctx.program.name, ctx.method, ctx.facts, mine)
            found += len(mine)
        t3 = time.process_time()
    finally:
        gc.enable()
    return t1 - t0, t2 - t1, t3 - t2, found


def pte_kit(package: str) -> dict[str, Any]:
    """What one revision runs on a `.pte` file: its reader and `pipeline.analyze`."""
    return {"load": importlib.import_module(f"{package}.frontends.pte.view").load_pte_bytes,
            "analyze": importlib.import_module(f"{package}.pipeline").analyze,
            "rules": importlib.import_module(f"{package}.selection").select_rules()}


def run_pte(k: dict[str, Any], data: bytes) -> tuple[float, float, float, int]:
    """(load, analysis with the rules, 0) process CPU seconds and the findings' count."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        view = k["load"](data, label="ab.pte").view
        t1 = time.process_time()
        found = k["analyze"](view, k["rules"], transfers=[])
        t2 = time.process_time()
    finally:
        gc.enable()
    return t1 - t0, t2 - t1, 0.0, len(found)


def program(kind: str, blocks: int, size: int) -> tuple[Any, Any, Callable[[], Any]]:
    """(graph after the pass, its signature, a function that times the pass on a fresh copy)."""
    import bench_analysis as ba

    if kind == "real":
        import torch

        from xferlint.testing import lower

        generator = torch.Generator().manual_seed(0)
        inputs = tuple(torch.randn(8, 8, generator=generator) for _ in range(3))
        edge = lower(ba.ladder_module(blocks), inputs, ba.REAL_DEVICES, elide=False, to_executorch=False)
        exported = edge.exported_program()
        template, signature = copy.deepcopy(exported.graph_module), exported.graph_signature

        def fresh() -> Any:
            return ba.spec_prop(copy.deepcopy(template))
    else:
        synthetic = ba.Synthetic()
        signature = synthetic.signature()
        template = synthetic.build(max(1, size // ba.NODES_PER_BLOCK))

        def fresh() -> Any:
            return copy.deepcopy(template)

    graph = ba.propagate_device(fresh(), elide=False)

    def time_pass() -> float:
        gm = fresh()
        gc.collect()
        start = time.process_time()
        ba.propagate_device(gm, elide=False)
        return time.process_time() - start

    return graph, signature, time_pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the revision to compare the work tree with (default HEAD)")
    parser.add_argument("--runs", type=int, default=15, help="runs of each package (default 15)")
    parser.add_argument("--graph", choices=("real", "synthetic"), default="real")
    parser.add_argument("--blocks", type=int, default=100, help="ladder blocks of the real program (100: 225 delegates)")
    parser.add_argument("--size", type=int, default=10_000, help="FX nodes of the synthetic graph")
    parser.add_argument("--pass", dest="with_pass", action="store_true",
                        help="also time PropagateDevicePass once per run and print the ratios")
    parser.add_argument("--pte", type=Path, help="time this .pte file's load and analysis instead of a graph")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT), str(HERE)]
    folder = Path(tempfile.mkdtemp(prefix="xferlint-ab-"))
    try:
        materialize(args.base, folder)
        sys.path.insert(0, str(folder))
        if args.pte is not None:
            data = args.pte.read_bytes()
            kits = {args.base: pte_kit(BASE), "work tree": pte_kit("xferlint")}
            one, size, unit = (lambda k: run_pte(k, data)), len(data), "bytes"
        else:
            kits = {args.base: kit(BASE), "work tree": kit("xferlint")}
            graph, signature, time_pass = program(args.graph, args.blocks, args.size)
            one, size, unit = (lambda k: run_once(k, graph, signature)), len(graph.graph.nodes), "FX nodes"
        rows: dict[str, list] = {name: [] for name in kits}
        passes = []
        for run in range(args.runs):
            order = list(kits.items()) if run % 2 else list(kits.items())[::-1]
            for name, k in order:
                rows[name].append(one(k))
            if args.with_pass and args.pte is None:
                passes.append(time_pass())
        print(report(rows, passes, size, unit, args.pte is not None))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def report(rows: dict[str, list], passes: list[float], size: int, unit: str, pte: bool) -> str:
    stages = "| load | analysis and rules |" if pte else "| frontend | analysis | rules |"
    lines = [f"{size:,} {unit}; process CPU, median of {len(next(iter(rows.values())))} runs each, ms:",
             "", "| code " + stages + " total | findings |" + (" xferlint / pass |" if passes else ""),
             "|---|" + "---:|" * (2 if pte else 3) + "---:|---:|" + ("---:|" if passes else "")]
    totals = {}
    for name, runs in rows.items():
        medians = [statistics.median(r[i] for r in runs) for i in range(2 if pte else 3)]
        totals[name] = statistics.median(sum(r[:3]) for r in runs)
        cells = [f"{m * 1e3:.2f}" for m in medians] + [f"{totals[name] * 1e3:.2f}", str(runs[0][3])]
        if passes:
            cells.append(f"{totals[name] / statistics.median(passes):.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    base, work = totals.values()
    lines += ["", f"work tree / base: {work / base:.3f}"
              + (f"; PropagateDevicePass {statistics.median(passes) * 1e3:.1f} ms" if passes else "")]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
