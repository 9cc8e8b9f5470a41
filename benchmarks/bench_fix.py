"""Fix sweep: xferlint's fixes on many random device programs, checked and timed.

For each random model (tests/randmodels.py; seeds from --first-seed on), one edge lowering
and two `to_executorch` runs (ExecuTorch's same-device elision off, and stock). Then:

- differential: `xferlint.fix(elision off, select XF001+XF003)` must leave exactly the copy
  nodes of the stock lowering (name, what each reads, who reads it);
- extension: `xferlint.fix(stock)` (every fix) may only remove XF004 duplicates, keeps every
  cross-device pair, and its result lints clean of XF001/XF003/XF004;
- timing: CPU and wall time of each `xferlint.fix` (copy, plan, apply, verify, re-plan
  memory, emit, re-lint), against ExecuTorch's own `to_executorch` of the same program.

With --xnnpack, the same models are also lowered with one XNNPACK delegate per op (cuda
devices as `target_device`) and run before and after the fix on ExecuTorch's CPU runtime
(xferlint.testing.xnnpack.run_on_cpu), on random inputs: the outputs must match.

    .venv/bin/python benchmarks/bench_fix.py                  # 60 models
    .venv/bin/python benchmarks/bench_fix.py --count 200 --xnnpack
    .venv/bin/python benchmarks/bench_fix.py --quick           # 10 models

Writes benchmarks/out/bench_fix.json; exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "fix"))
warnings.filterwarnings("ignore")


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def _check_model(spec, randmodels, xferlint, fixhelpers):
    from executorch.exir import ExecutorchBackendConfig

    from xferlint.testing import upstream_elision

    edge = randmodels.lower_spec(spec, to_executorch=False)
    programs, lower_cpu = {}, {}
    for elide in (False, True):
        with upstream_elision(elide):
            programs[elide], _, lower_cpu[elide] = _timed(
                lambda: copy.deepcopy(edge).to_executorch(ExecutorchBackendConfig()))
    problems = []
    fixed, wall, cpu = _timed(lambda: xferlint.fix(programs[False], select=["XF001", "XF003"]))
    if fixhelpers.copy_signature(fixed.program) != fixhelpers.copy_signature(programs[True]):
        problems.append("XF001/XF003 fixes differ from ExecuTorch's elision")
    full = xferlint.fix(programs[True])
    if {p.code for p in full.applied} - {"XF004"}:
        problems.append(f"stock program got {sorted({p.code for p in full.applied})}")
    cross = {(d, h) for d, h, a, b in fixhelpers.round_trip_pairs(programs[True]) if a != b}
    kept = {(d, h) for d, h, a, b in fixhelpers.round_trip_pairs(full.program) if a != b}
    shared = {n for p in full.applied for n in p.removes}
    if any(pair not in kept and pair[1] not in shared for pair in cross):
        problems.append("a cross-device pair was lost")
    if xferlint.lint(full.program, select=["XF001", "XF003", "XF004"]):
        problems.append("the fully fixed program still has fixable findings")
    return {
        "seed": spec.seed, "model": spec.describe(), "problems": problems,
        "round_trip_fix": {"copies_removed": fixed.copies_removed, "bytes_saved": fixed.bytes_saved,
                           "wall_s": wall, "cpu_s": cpu, "to_executorch_cpu_s": lower_cpu[False]},
        "stock_fix": {"duplicates_shared": sum(1 for p in full.applied if p.code == "XF004"),
                      "bytes_saved": full.bytes_saved},
    }


def _check_xnnpack(spec, randmodels, xferlint):
    import torch

    from xferlint.testing import lower
    from xferlint.testing.xnnpack import run_on_cpu, xnnpack_per_op

    devices = list(spec.devices) or [None]
    module = randmodels.RandomModel(spec)
    out = []
    for elide in (False, True):
        program = lower(module, randmodels.example_inputs(spec), None, partitioner=xnnpack_per_op(devices),
                        elide=elide)
        result = xferlint.fix(program)
        generator = torch.Generator().manual_seed(spec.seed + 1)
        inputs = tuple(torch.randn(4, 4, generator=generator) for _ in range(spec.num_inputs))
        before, after = run_on_cpu(program, inputs), run_on_cpu(result.program, inputs)
        same = all(torch.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(before, after))
        out.append({"elide": elide, "fixes": sorted(p.code for p in result.applied), "same_outputs": same})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-seed", type=int, default=5000)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--quick", action="store_true", help="10 models")
    parser.add_argument("--xnnpack", action="store_true", help="also run XNNPACK programs before/after on CPU")
    parser.add_argument("--out", default=str(HERE / "out" / "bench_fix.json"))
    args = parser.parse_args(argv)
    count = 10 if args.quick else args.count

    import fixhelpers
    import randmodels

    import xferlint

    records, refused, failures = [], [], 0
    seed = args.first_seed
    while len(records) < count and seed < args.first_seed + 3 * count:
        spec = randmodels.generate(seed)
        seed += 1
        try:
            record = _check_model(spec, randmodels, xferlint, fixhelpers)
        except Exception as exc:  # noqa: BLE001 - ExecuTorch refusing a random model is data
            refused.append({"seed": spec.seed, "why": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"})
            continue
        if args.xnnpack:
            try:
                record["xnnpack"] = _check_xnnpack(spec, randmodels, xferlint)
            except Exception as exc:  # noqa: BLE001
                record["xnnpack"] = f"not lowered: {type(exc).__name__}"
            if isinstance(record["xnnpack"], list) and not all(r["same_outputs"] for r in record["xnnpack"]):
                record["problems"].append("XNNPACK outputs differ after the fix")
        failures += bool(record["problems"])
        records.append(record)
        mark = "FAIL " + "; ".join(record["problems"]) if record["problems"] else "ok"
        print(f"seed {spec.seed}: removed {record['round_trip_fix']['copies_removed']} copies, "
              f"shared {record['stock_fix']['duplicates_shared']} duplicates: {mark}", flush=True)

    cpu = [r["round_trip_fix"]["cpu_s"] for r in records]
    lowering = [r["round_trip_fix"]["to_executorch_cpu_s"] for r in records]
    summary = {
        "models": len(records), "refused": len(refused), "failed": failures,
        "copies_removed": sum(r["round_trip_fix"]["copies_removed"] for r in records),
        "duplicates_shared": sum(r["stock_fix"]["duplicates_shared"] for r in records),
        "fix_cpu_s_median": statistics.median(cpu) if cpu else None,
        "to_executorch_cpu_s_median": statistics.median(lowering) if lowering else None,
    }
    print(json.dumps(summary, indent=2))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump({"summary": summary, "models": records, "refused": refused}, handle, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
