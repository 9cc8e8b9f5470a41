"""`.pte` gate benchmark: whole-process `xferlint check` on `.pte` files, side by side with
ExecuTorch's own `deserialize_pte_binary` (its import included) on the same files.

Programs (built once with ExecuTorch's own lowering, cached in benchmarks/out/pte/, never
committed):

- large.pte: a ladder of `mm -> sin` delegates on cuda:0 with a host `mul` by a parameter
  after each, upstream elision off (every boundary keeps its copies): 170 layers give a
  3.0 MB file with 1,190 instructions and 1,361 values (`--quick`: 40 layers);
- dir100/: 100 random device programs (tests/randmodels.py seeds; elision on, off, and
  off with dead copies left behind, in turn);
- dir1000/: the same 100 programs ten times over (p000.pte ... p999.pte): 1,000 files, for
  the per-file costs;
- skewed/: dir1000's files after ten 1.9 MB programs of one delegate with 10,000 arguments
  (`xferlint.testing.synthetic_pte.wide_delegate`), which cost a tenth as much per byte: a
  directory where equal bytes are not equal work, for how the files are spread over the
  worker processes.

They are linted the way a user runs xferlint: the console script (`.venv/bin/xferlint check
PATH --format json`), from a project directory outside this repository
($TMPDIR/xferlint-bench-pte: its own git work tree, so directory discovery asks git what it
ignores, and a pyproject.toml with a `[tool.xferlint]` table, so the configuration is found
and read). Both sides run as an installed package would: with byte-code caching (this
repo's environment sets PYTHONDONTWRITEBYTECODE=1, which would make every xferlint run
compile its sources; the benchmark unsets it and caches under benchmarks/out/pycache)
after one warm-up run each. Each measurement is a fresh process (the console script vs
`python -c "from executorch.exir._serialize._program import deserialize_pte_binary; ..."`),
run alternately so both see the same machine load; wall-clock and CPU time (user + sys of
the child) are recorded; the table shows medians, the JSON also minima. The floor is an
empty interpreter (`python -c pass`, site and this venv's editable-install hook included).
Every xferlint run checks every file (XFERLINT_NO_CACHE=1), except those of the `cached`
column: the same command with `--cache-dir`, its warm-up run filling the results cache
(xferlint/workers/cache.py), so that each measured run reads every file's result back, as
a second check of unchanged files does.
One more process (`python -c`, the same `main`) reports which modules the check imported:
torch and ExecuTorch proper never (only its generated flatbuffer reader).

    .venv/bin/python benchmarks/bench_pte.py              # build (first run: minutes), measure
    .venv/bin/python benchmarks/bench_pte.py --quick      # smaller large.pte, 3 runs
    .venv/bin/python benchmarks/bench_pte.py --fuzz 200000  # a long fuzz campaign instead
    .venv/bin/python benchmarks/bench_pte.py -j 1           # directories checked on one core

A directory's files are spread over xferlint's worker processes (`-j`, default the cores
available; xferlint/workers/files.py); the CPU column counts the workers' time too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = HERE / "out" / "pte"
PYTHON = sys.executable
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "pte"))

ET_ONE = (
    "import sys\n"
    "from executorch.exir._serialize._program import deserialize_pte_binary\n"
    "p = deserialize_pte_binary(open(sys.argv[1], 'rb').read()).program\n"
    "assert p.execution_plan\n"
)
ET_DIR = (
    "import os, sys\n"
    "from executorch.exir._serialize._program import deserialize_pte_binary\n"
    "d = sys.argv[1]\n"
    "for name in sorted(os.listdir(d)):\n"
    "    if name.endswith('.pte'):\n"
    "        assert deserialize_pte_binary(open(os.path.join(d, name), 'rb').read()).program.execution_plan\n"
)
XF_MODULES = (
    "import sys\n"
    "from xferlint.console_script import import_dataclasses_lazily\n"
    "import_dataclasses_lazily()  # as the console script starts\n"
    "from xferlint.cli import main\n"
    "code = main(['check', *sys.argv[1:], '--format', 'json', '--output', '/dev/null', '--exit-zero'])\n"
    "names = sorted(sys.modules)\n"
    "print('TORCH=%d' % ('torch' in sys.modules))\n"
    "print('EXECUTORCH=' + ','.join(sorted({n.split('.')[2] if n.count('.') >= 2 else n for n in names\n"
    "                                       if n.startswith('executorch')})))\n"
    "print('MODULES=%d' % len(names))\n"
    "sys.exit(code)\n"
)
XFERLINT = str(Path(sys.executable).with_name("xferlint"))  # the console script users run
PROJECT_TOML = (
    "[project]\nname = \"bench-project\"\nversion = \"0\"\n\n"
    "[tool.xferlint]\nextend-exclude = [\"scratch/\"]\nmax-transfer-bytes = 1_000_000_000\n"
)


# --------------------------------------------------------------------------- programs


def ladder(layers: int, features: int = 64):
    import torch

    class Ladder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            gen = torch.Generator().manual_seed(0)
            self.w = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.randn(features, features, generator=gen) / features) for _ in range(layers)])
            self.s = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.randn(features, features, generator=gen)) for _ in range(layers)])

        def forward(self, x):
            for w, s in zip(self.w, self.s):
                x = torch.sin(torch.mm(x, w))
                x = x * s
            return x

    return Ladder(), (torch.randn(features, features),)


def build_large(layers: int, path: Path) -> None:
    from xferlint.testing import lower

    module, inputs = ladder(layers)
    started = time.monotonic()
    program = lower(module, inputs, ["cuda:0"], elide=False)
    path.write_bytes(bytes(program.buffer))
    print(f"  built {path.name}: {path.stat().st_size / 1e6:.2f} MB in {time.monotonic() - started:.0f} s")


def build_dir(path: Path, count: int) -> None:
    from randmodels import generate, lower_spec

    path.mkdir(parents=True, exist_ok=True)
    variants = ({}, {"elide": False}, {"elide": False, "rewire_without_dce": True})
    seed = made = 0
    started = time.monotonic()
    while made < count and seed < 10 * count:
        spec = generate(seed, min_ops=4, max_ops=14)
        kwargs = variants[seed % len(variants)]
        seed += 1
        try:
            program = lower_spec(spec, **kwargs)
        except Exception:  # noqa: BLE001 - ExecuTorch refuses some random models
            continue
        (path / f"p{made:03d}.pte").write_bytes(bytes(program.buffer))
        made += 1
    print(f"  built {made} programs in {path} in {time.monotonic() - started:.0f} s")


def stats_of(path: Path) -> dict:
    from xferlint.frontends.pte.program import read_program

    program = read_program(path.read_bytes())
    plan = program.plans[0]
    return {
        "bytes": path.stat().st_size,
        "instructions": sum(len(c.instructions) for p in program.plans for c in p.chains),
        "values": sum(len(p.values) for p in program.plans),
        "delegates": sum(len(p.delegates) for p in program.plans),
        "methods": len(program.plans),
        "first_method": plan.name,
    }


# --------------------------------------------------------------------------- timing


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(HERE / "out" / "pycache")
    env["PYTHONWARNINGS"] = "ignore"
    env["XFERLINT_NO_CACHE"] = "1"  # every run checks every file; the `cached` column names its --cache-dir
    return env


ENV = _env()


def project(large: Path, directory: Path, wide: Path) -> Path:
    """The user's project: pyproject.toml with [tool.xferlint], its own git work tree,
    large.pte, dir100/, dir1000/ (the 100 programs ten times over) and skewed/ (ten `wide`
    programs, then dir1000's files)."""
    import tempfile

    root = Path(tempfile.gettempdir()) / "xferlint-bench-pte"
    sources = sorted(directory.glob("*.pte"))
    wanted = {root / "large.pte": large}
    wanted.update({root / "dir100" / f"p{i:03d}.pte": src for i, src in enumerate(sources)})
    for folder in ("dir1000", "skewed"):
        wanted.update({root / folder / f"p{i:03d}.pte": sources[i % len(sources)] for i in range(10 * len(sources))})
    wanted.update({root / "skewed" / f"a-wide{i}.pte": wide for i in range(10)})
    for dest, src in wanted.items():
        if not dest.exists() or dest.stat().st_size != src.stat().st_size:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
    (root / "pyproject.toml").write_text(PROJECT_TOML)
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def run_once(argv: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=ENV)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def _stats(values: list[float]) -> dict:
    return {"median_s": statistics.median(values), "min_s": min(values)}


def side_by_side(label: str, tools: dict[str, list[str]], runs: int, cwd: Path) -> dict:
    """Run each tool `runs` times, alternating; `floor` (an empty interpreter) alongside."""
    samples: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in tools}
    for argv in tools.values():  # warm-up: byte-code caches, file cache
        run_once(argv, cwd)
    for _ in range(runs):
        for name, argv in tools.items():
            wall, cpu, done = run_once(argv, cwd)
            if done.returncode not in (0, 1) or (name in ("xferlint", "cached") and done.stderr.strip()):
                raise SystemExit(f"{name} failed on {label} (exit {done.returncode}): {done.stderr[-2000:]}")
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
    result: dict = {"label": label, "runs": runs}
    for name, s in samples.items():
        result[name] = {"wall": _stats(s["wall"]), "cpu": _stats(s["cpu"])}
    for kind in ("wall", "cpu"):
        result[f"ratio_{kind}_median"] = (result["executorch"][kind]["median_s"]
                                          / result["xferlint"][kind]["median_s"])
    return result


def modules_imported(path: str, cwd: Path) -> dict:
    done = subprocess.run([PYTHON, "-c", XF_MODULES, path], capture_output=True, text=True, cwd=cwd, env=ENV)
    lines = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return {"torch": lines.get("TORCH") == "1", "executorch": lines.get("EXECUTORCH", "").split(","),
            "modules": int(lines.get("MODULES", 0))}


def in_process(path: Path, runs: int) -> dict:
    """Where xferlint's time goes on one file, in this process (imports excluded)."""
    from xferlint.analyzer.facts import DeviceFacts
    from xferlint.pipeline import analyze
    from xferlint.frontends.pte.view import view_of
    from xferlint.frontends.pte.program import read_program
    from xferlint.fixes.driver import settle_fixability
    from xferlint.pipeline import check_paths
    from xferlint.reporters import ReportOptions, emit
    from xferlint.selection import select_rules

    data = path.read_bytes()
    rules = select_rules()
    options = ReportOptions(rules=tuple(type(rule) for rule in rules))
    phases: dict[str, list[float]] = {"read": [], "view": [], "facts": [], "rules": [], "fixability": [],
                                      "report": []}
    per_rule: dict[str, list[float]] = {}
    for _ in range(runs):
        t0 = time.perf_counter()
        program = read_program(data)
        t1 = time.perf_counter()
        view, _ = view_of(program, input=path.name, name=path.stem, file=str(path))
        t2 = time.perf_counter()
        facts = [DeviceFacts.compute(m) for m in view.methods]
        t3 = time.perf_counter()
        analyze(view, rules)
        t4 = time.perf_counter()
        phases["read"].append(t1 - t0)
        phases["view"].append(t2 - t1)
        phases["facts"].append(t3 - t2)
        phases["rules"].append((t4 - t3) - (t3 - t2))
        run = check_paths([str(path)], rules)
        t5 = time.perf_counter()
        settle_fixability(run, rules, keep_results=False)  # what `check` does to mark fixable only what a fix removes
        t6 = time.perf_counter()
        emit(run.report(), "json", options)
        phases["fixability"].append(t6 - t5)
        phases["report"].append(time.perf_counter() - t6)
        from xferlint.rules.base import RuleContext

        for method, f in zip(view.methods, facts):
            ctx = RuleContext(program=view, method=method, facts=f)
            for rule in rules:
                t = time.perf_counter()
                list(rule.check(ctx))
                per_rule.setdefault(rule.code, []).append(time.perf_counter() - t)
    return {
        "phases_median_s": {k: statistics.median(v) for k, v in phases.items()},
        "rules_median_s": {k: statistics.median(v) for k, v in sorted(per_rule.items())},
    }


def fuzz(sources: list[Path], cases: int, seed: int) -> dict:
    from pte_fuzz import lint_bytes, mutate

    datas = [p.read_bytes() for p in sources]
    rnd = random.Random(seed)
    refused = linted = 0
    worst = 0.0
    started = time.monotonic()
    for case in range(cases):
        data = mutate(datas[case % len(datas)], rnd)
        t = time.perf_counter()
        message = lint_bytes(data)  # anything but an InputError propagates: a bug
        worst = max(worst, time.perf_counter() - t)
        if message is None:
            linted += 1
        else:
            assert "\n" not in message, message
            refused += 1
        if case and case % 10000 == 0:
            print(f"  {case} cases, {refused} refused, worst {worst * 1000:.1f} ms", flush=True)
    return {"cases": cases, "refused": refused, "linted": linted, "worst_case_s": worst,
            "seconds": time.monotonic() - started, "sources": [p.name for p in sources]}


# --------------------------------------------------------------------------- main


def main() -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40-layer large.pte, 3 runs")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--rebuild", action="store_true", help="lower the programs again")
    parser.add_argument("--fuzz", type=int, default=0, metavar="CASES", help="run a fuzz campaign instead")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", "-j", type=int, default=None,
                        help="pass -j N to xferlint (default: its own, the cores available; -j 1 checks a "
                             "directory's files one after another, more spreads them over worker processes)")
    parser.add_argument("--cases", default="large.pte,dir100/,dir1000/,skewed/",
                        help="comma-separated subset of large.pte, dir100/, dir1000/, skewed/")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 9)
    layers = 40 if args.quick else 170
    OUT.mkdir(parents=True, exist_ok=True)
    large = OUT / (f"large{layers}.pte")
    directory = OUT / "dir100"
    if args.rebuild or not large.exists():
        build_large(layers, large)
    if args.rebuild or len(list(directory.glob("*.pte"))) < 100:
        build_dir(directory, 100)
    wide = OUT / "wide10000.pte"
    if args.rebuild or not wide.exists():
        from xferlint.testing import synthetic_pte

        wide.write_bytes(synthetic_pte.wide_delegate(10_000))
    if args.fuzz:
        sources = [large] + sorted(directory.glob("*.pte"))[:20]
        result = fuzz(sources, args.fuzz, args.seed)
        print(json.dumps(result, indent=2))
        (HERE / "out" / "bench_pte_fuzz.json").write_text(json.dumps(result, indent=2) + "\n")
        return

    root = project(large, directory, wide)
    wanted = {c.strip() for c in args.cases.split(",")}
    cases = [case for case in (("large.pte", "large.pte", runs), ("dir100/", "dir100", runs),
                               ("dir1000/", "dir1000", max(3, runs // 3)),
                               ("skewed/", "skewed", max(3, runs // 3))) if case[0] in wanted]
    floor = [PYTHON, "-c", "pass"]
    results = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "loadavg_before": os.getloadavg()},
        "command": f"{XFERLINT} check PATH --format json{f' -j {args.jobs}' if args.jobs else ''} "
                   f"(cwd {root}, pyproject.toml with [tool.xferlint])",
        "large": stats_of(large),
        "imports": modules_imported("large.pte", root),
        "cases": {},
    }
    for label, path, n in cases:
        print(f"  measuring {label} ({n} runs each) ...", file=sys.stderr, flush=True)
        et = [PYTHON, "-c", ET_ONE if path.endswith(".pte") else ET_DIR, path]
        xf = [XFERLINT, "check", path, "--format", "json", "--exit-zero"] + (
            ["-j", str(args.jobs)] if args.jobs else [])
        cached = xf + ["--cache-dir", str(root.with_name("xferlint-bench-pte-cache"))]  # filled by the warm-up
        results["cases"][label] = side_by_side(label, {"xferlint": xf, "cached": cached, "executorch": et,
                                                       "floor": floor}, n, root)
    results["in_process"] = in_process(large, runs)
    results["machine"]["loadavg_after"] = os.getloadavg()
    (HERE / "out" / "bench_pte.json").write_text(json.dumps(results, indent=2) + "\n")
    print_table(results, runs)
    print(f"\nwritten: {HERE / 'out' / 'bench_pte.json'}")


def print_table(results: dict, runs: int) -> None:
    lg, machine = results["large"], results["machine"]
    print(f"\nlarge.pte: {lg['bytes'] / 1e6:.2f} MB, {lg['instructions']} instructions, {lg['values']} values, "
          f"{lg['delegates']} delegates; alternating fresh processes, medians; load average "
          f"{machine['loadavg_before'][0]:.1f} -> {machine['loadavg_after'][0]:.1f} on {machine['cpus']} CPUs")
    print(f"xferlint: {results['command']}\n")
    print(f"{'':12}{'runs':>5}{'xferlint wall':>15}{'CPU':>9}{'ExecuTorch wall':>17}{'CPU':>9}"
          f"{'ratio wall':>12}{'CPU':>7}{'python -c pass':>16}{'cached wall':>13}{'CPU':>9}")
    for label, r in results["cases"].items():
        xf, et, fl, ca = r["xferlint"], r["executorch"], r["floor"], r["cached"]
        print(f"{label:12}{r['runs']:>5}{xf['wall']['median_s']:>14.3f}s{xf['cpu']['median_s']:>8.3f}s"
              f"{et['wall']['median_s']:>16.3f}s{et['cpu']['median_s']:>8.3f}s"
              f"{r['ratio_wall_median']:>11.1f}x{r['ratio_cpu_median']:>6.1f}x{fl['wall']['median_s']:>15.3f}s"
              f"{ca['wall']['median_s']:>12.3f}s{ca['cpu']['median_s']:>8.3f}s")
    print("cached: the same command with --cache-dir, every file read back from the results cache its warm-up "
          "run filled (xferlint/workers/cache.py); the other xferlint column checks every file (XFERLINT_NO_CACHE=1)")
    imp = results["imports"]
    print(f"\nmodules the check imported: {imp['modules']}; torch: {imp['torch']}; "
          f"executorch: {', '.join(imp['executorch']) or 'none'}")
    ph = results["in_process"]["phases_median_s"]
    print("in-process, large.pte (imports excluded): " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in ph.items()))
    print("per rule: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in results["in_process"]["rules_median_s"].items()))


if __name__ == "__main__":
    main()
