"""Large valid `.pte` programs, whole process: `xferlint check FILE --format json` at growing
sizes, side by side with ExecuTorch's `deserialize_pte_binary` on the same files.

bench_scaling.py times the analysis in process; this is what a user waits for: the console
script, start to exit, including the fix trial that decides which findings are fixable
(`settle_fixability`: plan, check the memory plan, patch, read back, verify), which is
where a quadratic once hid (a fix decided per candidate by re-resolving every accepted
plan; one read-back per method). Shapes (xferlint.testing.synthetic_pte, cached under
benchmarks/out/large/):

- ladder: blocks of 8 instructions (XF001, XF004, XF005), 1k / 10k / 100k instructions;
- planned: the ladder with every tensor planned in bytes of its own, as a memory plan that
  reuses nothing writes it (the ladder's values share a few tensor tables);
- delegates: the ladder with a BackendDelegate per call (its own compile specs and blob),
  as ExecuTorch writes one per partition: 250 / 2,500 / 25,000 delegates;
- in-place: a host buffer written in place and copied in every block;
- fan-out: one host value copied by thousands of H2Ds, each read by its own delegate;
- wide: one delegate call with 1k / 10k / 100k arguments, each copied to it by an H2D;
- wide-inputs: one delegate call reading 1k / 10k / 100k method inputs directly (one XF007
  about them all), and wide-kernel: one host kernel call as wide (issue 11 compared the two);
- loops: 100 / 1,000 / 10,000 loops, each closed by a backward jump;
- nested: 100 / 1,000 / 10,000 loops nested in one another (a dominator tree as deep as
  the method: the iterative dominators were quadratic there);
- one-head: 100 / 1,000 / 10,000 backward jumps to one loop head;
- short-loops: 1,000 / 10,000 / 100,000 loops of a host op and the jump that closes it;
- traced-loops, traced-short-loops: loops and short-loops with a stack trace (a frame list
  per instruction, as `emit_stacktrace=True` writes one), so that every finding is located:
  issue 11's backward-jump case named `locate()` beside XF005;
- split-loops, traced-split-loops: 1,000 / 10,000 / 100,000 counted loops, each closed by a
  backward jump, whose body takes the value to cuda:0 and back through a host op (an XF005
  each), without and with stack traces: issue 11's jumps, `locate()` and XF005 in one program;
- in-place-dup: a buffer written in place and copied twice in every block, every block's
  result returned (XF004 and the fix trial were quadratic there), 1k / 10k / 100k instructions;
- one-slot: one host slot written by a host op, copied to a delegate and written back by
  its D2H in every block (XF003 each D2H), 1k / 10k / 100k instructions;
- outputs: one delegate with 1k / 10k / 100k results, each round-tripping through the host
  into a second delegate, every tensor in bytes of its own (the fix trial's walk budget);
- mutable-buffers: one delegate staging 1k / 10k / 100k buffers (H2D in, D2H back, `aten::copy_`
  write-back: an XF011 each, as a KV cache per layer the partition does not own; XF011 found
  each buffer among the delegate's results with tuple.index, quadratic until 2026-12-05);
- constant-chain: a parameter through 1k / 10k / 100k host ops, then copied (XF006);
- one-call: one input copied 1k / 10k / 100k times, every copy an argument of one delegate
  call and all in one slot (XF004 for each copy after the first; the fix trial scanned the
  first copy's conflicts and the call's arguments per fix, quadratic until 2026-12-06);
- methods: 10 / 100 / 1,000 methods;
- round-trip-chain: 1k / 10k / 100k cuda:0 delegates in a row, every boundary a D2H and an
  H2D straight back (an XF001 each: PropagateDevicePass without its same-device elision);
  planned-chain: the same with every tensor in bytes of its own (a real memory plan);
- host-fan-in: one delegate's 1k / 10k / 100k results copied to host and joined by one host
  op, back to a second delegate (one XF005 with that many D2Hs);
- alias-chain: one H2D, then 1k / 10k / 100k views of views on cuda:0, then one D2H;
- returned-copies: a delegate's result copied to host 1k / 10k / 100k times, every copy
  returned (an XF004 for each after the first, its fix unsafe);
- chain-to-devices: a method input through 1k / 10k / 100k host ops, the result copied to
  each of 127 devices (cuda:0 .. cuda:126, as many as a `.pte` tensor can name), each of
  which splits a partition through a host op of its own (an XF005 each): XF005 walked the
  chain back once per device until 2026-12-07;
- copied-constant: a parameter through 1k / 10k / 100k host ops, then copied to cuda:0 as
  many times, each copy an XF006 (and an XF004 after the first): each finding flattened and
  listed the whole chain until 2026-12-07 (1,000 of each 0.6 s, 10,000 75 s).

Per size: wall and CPU medians of both tools (fresh processes, alternating, one warm-up
each, as in bench_pte.py) and xferlint's CPU per unit; per shape, CPU per unit at the
largest size over the size before (1.0 is linear; the smallest sizes are mostly start-up).

    .venv/bin/python benchmarks/bench_large.py                 # every shape, 3 runs per size
    .venv/bin/python benchmarks/bench_large.py --only ladder,wide --runs 1 --max 10000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable

# Every run checks its files again: a result the results cache read back would time (or
# compare) nothing.
os.environ["XFERLINT_NO_CACHE"] = "1"

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_pte as bp  # noqa: E402  (run helpers: fresh processes, CPU of the child)

OUT = HERE / "out" / "large"


def _plural(unit: str) -> str:
    """`delegates`, `returned copies`."""
    return unit[:-1] + "ies" if unit.endswith("y") else unit + "s"


def shapes() -> dict[str, tuple[str, list[int], Callable[[int], bytes]]]:
    from xferlint.testing import synthetic_pte as sp

    return {
        "ladder": ("instruction", [1_000, 10_000, 100_000], lambda n: sp.ladder(max(1, n // 8))),
        "planned": ("instruction", [1_000, 10_000, 100_000], lambda n: sp.planned_ladder(max(1, n // 8))),
        "delegates": ("instruction", [1_000, 10_000, 100_000], lambda n: sp.delegates_ladder(max(1, n // 8))),
        "in-place": ("instruction", [1_000, 10_000, 100_000], lambda n: sp.in_place_ladder(max(1, n // 4))),
        "fan-out": ("instruction", [1_000, 10_000, 100_000], lambda n: sp.fan_out(max(1, n // 3))),
        "wide": ("argument", [1_000, 10_000, 100_000], sp.wide_delegate),
        "wide-inputs": ("argument", [1_000, 10_000, 100_000], lambda n: sp.wide_inputs(n)),
        "wide-kernel": ("argument", [1_000, 10_000, 100_000], lambda n: sp.wide_kernel(n)),
        "loops": ("loop", [100, 1_000, 10_000], sp.loops),
        "nested": ("loop", [100, 1_000, 10_000], sp.nested_loops),
        "one-head": ("jump", [100, 1_000, 10_000], sp.jumps_to_one_head),
        "short-loops": ("jump", [1_000, 10_000, 100_000], lambda n: sp.short_loops(n)),
        "traced-loops": ("loop", [100, 1_000, 10_000], sp.traced_loops),
        "traced-short-loops": ("jump", [1_000, 10_000, 100_000], sp.traced_short_loops),
        "split-loops": ("jump", [1_000, 10_000, 100_000], sp.split_loops),
        "traced-split-loops": ("jump", [1_000, 10_000, 100_000], sp.traced_split_loops),
        "in-place-dup": ("instruction", [1_000, 10_000, 100_000], lambda n: sp.in_place_duplicates(max(1, n // 6))),
        "one-slot": ("instruction", [1_000, 10_000, 100_000], lambda n: sp.one_slot(max(1, n // 4))),
        "outputs": ("output", [1_000, 10_000, 100_000], sp.output_round_trips),
        "mutable-buffers": ("buffer", [1_000, 10_000, 100_000], lambda n: sp.mutable_buffers(n)),
        "constant-chain": ("host op", [1_000, 10_000, 100_000], sp.constant_chain),
        "one-call": ("argument", [1_000, 10_000, 100_000], sp.copies_into_one_call),
        "methods": ("method", [10, 100, 1_000], sp.methods),
        "round-trip-chain": ("delegate", [1_000, 10_000, 100_000], sp.round_trip_chain),
        "planned-chain": ("delegate", [1_000, 10_000, 100_000], lambda n: sp.round_trip_chain(n, own_bytes=True)),
        "host-fan-in": ("result", [1_000, 10_000, 100_000], sp.host_fan_in),
        "alias-chain": ("view", [1_000, 10_000, 100_000], sp.device_alias_chain),
        "returned-copies": ("returned copy", [1_000, 10_000, 100_000], lambda n: sp.returned_copies(n)),
        "chain-to-devices": ("host op", [1_000, 10_000, 100_000], lambda n: sp.host_chain_to_devices(n)),
        "copied-constant": ("copy", [1_000, 10_000, 100_000], lambda n: sp.copied_constant_chain(n, n)),
    }


def program(name: str, size: int, build: Callable[[int], bytes]) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}-{size}.pte"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(build(size))
        tmp.replace(path)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", help="comma-separated shapes (default: all)")
    parser.add_argument("--max", type=int, help="skip sizes above this")
    parser.add_argument("--json", type=Path, default=HERE / "out" / "bench_large.json")
    args = parser.parse_args(argv)
    chosen = shapes()
    if args.only:
        chosen = {k: v for k, v in chosen.items() if k in args.only.split(",")}
    load = os.getloadavg()
    results = []
    for name, (unit, sizes, build) in chosen.items():
        for size in sizes:
            if args.max and size > args.max:
                continue
            path = program(name, size, build)
            tools = {
                "xferlint": [bp.XFERLINT, "check", str(path), "--format", "json", "-o", os.devnull, "--exit-zero"],
                "executorch": [bp.PYTHON, "-c", bp.ET_ONE, str(path)],
            }
            got = bp.side_by_side(f"{name}-{size}", tools, args.runs, HERE)
            got.update(shape=name, unit=unit, size=size, mb=path.stat().st_size / 1e6)
            results.append(got)
            xf, et = got["xferlint"], got["executorch"]
            print(f"{name:9s} {size:>7,} {_plural(unit)} ({got['mb']:.1f} MB): xferlint {xf['wall']['median_s']:.2f} s wall "
                  f"{xf['cpu']['median_s']:.2f} s CPU ({xf['cpu']['median_s'] / size * 1e6:.0f} us/{unit}); "
                  f"ExecuTorch deserialize {et['wall']['median_s']:.2f} s wall", file=sys.stderr, flush=True)
    lines = [f"load average at start {load[0]:.2f}, at end {os.getloadavg()[0]:.2f}; medians of {args.runs} "
             f"fresh processes; {os.cpu_count()} cores", "",
             "| shape | size | MB | xferlint wall s | xferlint CPU s | CPU us / unit | ExecuTorch deserialize wall s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        cpu = r["xferlint"]["cpu"]["median_s"]
        lines.append(f"| {r['shape']} | {r['size']:,} {_plural(r['unit'])} | {r['mb']:.1f} | "
                     f"{r['xferlint']['wall']['median_s']:.2f} | {cpu:.2f} | {cpu / r['size'] * 1e6:.0f} | "
                     f"{r['executorch']['wall']['median_s']:.2f} |")
    # the smallest sizes are mostly interpreter start: the last two sizes say whether it is linear
    lines += ["", "| shape | CPU us / unit, smallest -> largest | largest / the size before |", "|---|---|---:|"]
    for name in chosen:
        mine = [r for r in results if r["shape"] == name]
        if len(mine) >= 2:
            per = [r["xferlint"]["cpu"]["median_s"] / r["size"] * 1e6 for r in mine]
            lines.append(f"| {name} | {' -> '.join(f'{p:.0f}' for p in per)} | {per[-1] / per[-2]:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"load_average_at_start": load, "runs": args.runs, "results": results}, indent=2))
    args.json.with_suffix(".md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
