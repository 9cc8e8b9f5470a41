"""`.pte` gate benchmark: whole-process `xferlint check` on `.pte` files, side by side with
ExecuTorch's own `deserialize_pte_binary` (its import included) on the same files.

Programs (built once with ExecuTorch's own lowering, cached in benchmarks/out/pte/, never
committed):

- large.pte: a ladder of `mm -> sin` delegates on cuda:0 with a host `mul` by a parameter
  after each, upstream elision off (every boundary keeps its copies): 170 layers give a
  3.0 MB file with 1,190 instructions and 1,361 values (`--quick`: 40 layers);
- dir100/: 100 random device programs (tests/randmodels.py seeds; elision on, off, and
  off with dead copies left behind, in turn).

Both sides run as an installed package would: with byte-code caching (this repo's
environment sets PYTHONDONTWRITEBYTECODE=1, which would make every xferlint run compile its
sources; the benchmark unsets it and caches under benchmarks/out/pycache) after one
warm-up run each. Each measurement is a fresh process (`python -m xferlint.cli check ...` vs `python -c
"from executorch.exir._serialize._program import deserialize_pte_binary; ..."`), run
alternately so both see the same machine load; wall-clock and CPU time (user + sys of the
child) are recorded; the table shows medians, the JSON also minima. The xferlint process
also reports whether torch was imported (it must not be).

    .venv/bin/python benchmarks/bench_pte.py              # build (first run: minutes), measure
    .venv/bin/python benchmarks/bench_pte.py --quick      # smaller large.pte, 3 runs
    .venv/bin/python benchmarks/bench_pte.py --fuzz 200000  # a long fuzz campaign instead
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
XF_CHECK = (
    "import sys\n"
    "from xferlint.cli import main\n"
    "code = main(['check', *sys.argv[1:], '--isolated', '--exit-zero'])\n"
    "sys.stderr.write('TORCH=%d\\n' % ('torch' in sys.modules))\n"
    "sys.exit(code)\n"
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
    return env


ENV = _env()


def run_once(argv: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=ENV)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def side_by_side(label: str, xf: list[str], et: list[str], runs: int) -> dict:
    samples = {"xferlint": {"wall": [], "cpu": []}, "executorch": {"wall": [], "cpu": []}}
    torch_imported = None
    for argv in (xf, et):  # warm-up: byte-code caches, file cache
        run_once(argv)
    for _ in range(runs):
        for name, argv in (("xferlint", xf), ("executorch", et)):
            wall, cpu, done = run_once(argv)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{name} failed on {label}: {done.stderr[-2000:]}")
            if name == "xferlint":
                torch_imported = "TORCH=1" in done.stderr
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
    result = {"label": label, "runs": runs, "torch_imported_by_xferlint": torch_imported}
    for name, s in samples.items():
        result[name] = {
            "wall_median_s": statistics.median(s["wall"]), "wall_min_s": min(s["wall"]),
            "cpu_median_s": statistics.median(s["cpu"]), "cpu_min_s": min(s["cpu"]),
        }
    result["ratio_wall_median"] = result["executorch"]["wall_median_s"] / result["xferlint"]["wall_median_s"]
    result["ratio_cpu_median"] = result["executorch"]["cpu_median_s"] / result["xferlint"]["cpu_median_s"]
    return result


def in_process(path: Path, runs: int) -> dict:
    """Where xferlint's time goes on one file, in this process (imports excluded)."""
    from xferlint.analyzer.facts import DeviceFacts
    from xferlint.pipeline import analyze
    from xferlint.frontends.pte.view import view_of
    from xferlint.frontends.pte.program import read_program
    from xferlint.selection import select_rules

    data = path.read_bytes()
    rules = select_rules()
    phases: dict[str, list[float]] = {"read": [], "view": [], "facts": [], "rules": []}
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
    if args.fuzz:
        sources = [large] + sorted(directory.glob("*.pte"))[:20]
        result = fuzz(sources, args.fuzz, args.seed)
        print(json.dumps(result, indent=2))
        (HERE / "out" / "bench_pte_fuzz.json").write_text(json.dumps(result, indent=2) + "\n")
        return

    xf = [PYTHON, "-c", XF_CHECK]
    results = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "loadavg_before": os.getloadavg()},
        "large": stats_of(large),
        "single": side_by_side(large.name, xf + [str(large)], [PYTHON, "-c", ET_ONE, str(large)], runs),
        "directory": side_by_side("dir100", xf + [str(directory)], [PYTHON, "-c", ET_DIR, str(directory)],
                                  max(3, runs // 3)),
        "in_process": in_process(large, runs),
    }
    results["machine"]["loadavg_after"] = os.getloadavg()
    (HERE / "out" / "bench_pte.json").write_text(json.dumps(results, indent=2) + "\n")

    s, d, lg = results["single"], results["directory"], results["large"]
    print(f"\nlarge.pte: {lg['bytes'] / 1e6:.2f} MB, {lg['instructions']} instructions, {lg['values']} values, "
          f"{lg['delegates']} delegates; {runs} runs each, alternating; load average "
          f"{results['machine']['loadavg_before'][0]:.1f} on {os.cpu_count()} CPUs\n")
    print(f"{'':34}{'wall (median)':>15}{'CPU (median)':>15}")
    for label, r, name in (("xferlint check large.pte", s, "xferlint"),
                           ("ExecuTorch import + deserialize", s, "executorch"),
                           ("xferlint check dir100/", d, "xferlint"),
                           ("ExecuTorch import + 100 x deser.", d, "executorch")):
        print(f"{label:34}{r[name]['wall_median_s']:>14.3f}s{r[name]['cpu_median_s']:>14.3f}s")
    print(f"\nspeed-up, one file: {s['ratio_wall_median']:.1f}x wall, {s['ratio_cpu_median']:.1f}x CPU; "
          f"directory: {d['ratio_wall_median']:.1f}x wall, {d['ratio_cpu_median']:.1f}x CPU")
    print(f"torch imported by the xferlint process: {s['torch_imported_by_xferlint']}")
    ph = results["in_process"]["phases_median_s"]
    print("in-process (imports excluded): " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in ph.items()))
    print("per rule: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in results["in_process"]["rules_median_s"].items()))
    print(f"\nwritten: {HERE / 'out' / 'bench_pte.json'}")


if __name__ == "__main__":
    main()
