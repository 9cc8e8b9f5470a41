"""Scaling benchmark: xferlint's time per unit at growing sizes, for every shape of program
that was once super-linear (issue 11), and the ratio largest / smallest.

Each case is one program shape at several sizes. A run is the whole check on it, in process:
frontend (`.pte` bytes or FX graph -> ProgramView), analysis, every rule and the per-method
transfer summary (`pipeline.analyze`, collector paused as in `xferlint check`). Per size the
table shows the CPU-time median, the time per unit (instruction, argument, loop, method or
node), Python calls per unit (counted once under cProfile: a measure of work that machine
load does not change) and the findings. Linear means flat per-unit figures: the last
columns give largest / smallest for time and calls per unit.

`.pte` programs are built by `xferlint.testing.synthetic_pte` (ExecuTorch's schema and
serializer, not lowering) and cached under benchmarks/out/scaling/ (building is not timed):

- pte ladder: 8 instructions per block (XF001, XF004, XF005), 1k -> 100k instructions;
- pte planned: the ladder with every tensor in bytes of its own (a memory plan that reuses
  nothing: no two values share a tensor table);
- pte delegates: the ladder with a BackendDelegate per call, as ExecuTorch writes one per
  partition (XF005 grouped by device object: quadratic in delegates until 2026-12-05);
- pte in-place: a host buffer written in place and copied in every block (XF004's cubic case);
- pte one slot: one host slot written by a host op and by a D2H in every block (XF005
  scanned the slot's readers per write: quadratic until 2026-12-05);
- pte fan-out: one host value copied by thousands of H2Ds, each read by its own delegate;
- pte wide delegate: one delegate call with 1k -> 100k arguments, each copied to it by an
  H2D; pte wide inputs: one reading 1k -> 100k method inputs directly (one XF007);
- pte mutable buffers: one delegate staging 1k -> 100k buffers, each copied in, copied back
  and written back (an XF011 each; quadratic until 2026-12-05);
- pte loops: 100 -> 10,000 `map`-shaped loops, each closed by a backward jump; pte short
  loops: 1k -> 100k loops of one host op and the jump that closes it; pte traced loops and
  traced short loops: both with a stack trace, a frame list per instruction (every finding
  located: `locate()` with many backward jumps); pte split loops and traced split loops: 1k
  -> 100k counted loops through cuda:0 and a host op, an XF005 each (jumps, `locate()` and
  XF005 together);
- pte nested loops: 100 -> 10,000 loops nested in one another; pte jumps to one head:
  100 -> 10,000 backward jumps to one loop head (dominators and dominance frontiers);
- pte methods: 10 -> 1,000 methods;
- pte round-trip chain: 1k -> 100k delegates in a row, every boundary a round trip through
  the host (an XF001 each); pte host fan-in: one delegate's 1k -> 100k results joined by one
  host op (one XF005 with that many D2Hs); pte alias chain: 1k -> 100k views of views on
  cuda:0 between one H2D and one D2H.

Graph programs: the synthetic edge graph of bench_analysis.py after ExecuTorch's
PropagateDevicePass (10k -> 100k FX nodes; `--graph-sizes` for more) and its fan-out graph
(one device value read by thousands of delegates), and a hand-built ProgramView (graph
kind, no FX frontend) of 10k -> 1M nodes with fan-in (a delegate reading 1,000 values).

    .venv/bin/python benchmarks/bench_scaling.py            # full: 10-20 minutes on 2 cores
    .venv/bin/python benchmarks/bench_scaling.py --quick    # two sizes per case, one run
    .venv/bin/python benchmarks/bench_scaling.py --only pte-loops,pte-wide
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "scaling"
sys.path.insert(0, str(HERE))


@dataclass
class Case:
    name: str
    unit: str
    sizes: list[int]
    quick: list[int]
    prepare: Callable[[int], Any]  # size -> input (not timed)
    run: Callable[[Any], list]  # input -> findings (timed)
    units: Callable[[Any, int], int] = lambda data, size: size


@dataclass
class Point:
    size: int
    units: int
    cpu: list[float] = field(default_factory=list)
    calls: Optional[int] = None
    findings: dict[str, int] = field(default_factory=dict)

    @property
    def us_per_unit(self) -> float:
        return statistics.median(self.cpu) / self.units * 1e6

    @property
    def calls_per_unit(self) -> Optional[float]:
        return self.calls / self.units if self.calls is not None else None


# --------------------------------------------------------------------------- .pte cases


def _pte_file(name: str, size: int, build: Callable[[int], bytes]) -> bytes:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}-{size}.pte"
    if not path.exists():
        started = time.monotonic()
        path.write_bytes(build(size))
        log(f"  built {path.name}: {path.stat().st_size / 1e6:.1f} MB in {time.monotonic() - started:.0f} s")
    return path.read_bytes()


def check_pte(data: bytes) -> list:
    from xferlint.frontends.pte.view import load_pte_bytes
    from xferlint.pipeline import analyze, collector_paused

    with collector_paused():
        view = load_pte_bytes(data, label="scaling.pte").view
    return analyze(view, RULES, transfers=[])


def pte_case(name: str, unit: str, sizes: list[int], quick: list[int], build_name: str,
             size_of: Callable[[int], int]) -> Case:
    from xferlint.testing import synthetic_pte as sp

    build = getattr(sp, build_name)
    return Case(name, unit, sizes, quick,
                prepare=lambda size: _pte_file(name, size, lambda s: build(size_of(s))),
                run=check_pte, units=lambda data, size: size)


def instructions_case(name: str, build_name: str, per_block: int) -> Case:
    """Sizes in instructions; the builder takes blocks."""
    from xferlint.testing import synthetic_pte as sp

    build = getattr(sp, build_name)

    def prepare(size: int) -> bytes:
        return _pte_file(name, size, lambda s: build(max(1, s // per_block)))

    return Case(name, "instruction", [1_000, 10_000, 100_000], [1_000, 10_000], prepare, check_pte,
                units=lambda data, size: sp.instructions(data))


# --------------------------------------------------------------------------- graph cases


def fx_case(name: str, sizes: list[int], quick: list[int], fanout: bool) -> Case:
    import bench_analysis as ba

    state: dict[str, Any] = {}

    def prepare(size: int):
        from xferlint.frontends.executorch import read_method

        if "synth" not in state:
            log("  lowering the delegates the synthetic graphs reference (not timed) ...")
            state["synth"] = ba.Synthetic()
            state["signature"] = state["synth"].signature()
        synth = state["synth"]
        per = ba.FANOUT_NODES_PER_READER if fanout else ba.NODES_PER_BLOCK
        state.pop("post", None)
        gc.collect()
        gm = synth.build(max(1, int(size / per)), fanout)
        post = ba.propagate_device(gm, elide=False)
        return (post, state["signature"], read_method)

    def run(data) -> list:
        from xferlint.pipeline import analyze, collector_paused

        post, signature, read_method = data
        with collector_paused():
            view = ba.view_of(read_method("forward", post, signature))
        return analyze(view, RULES, transfers=[])

    return Case(name, "FX node", sizes, quick, prepare, run, units=lambda data, size: len(data[0].graph.nodes))


def view_graph(nodes: int, fan_in: int = 1_000):
    """A graph-kind ProgramView of about `nodes` nodes, built directly: blocks of H2D ->
    delegate (cuda:0) -> getitem -> D2H -> host cos -> H2D -> delegate -> getitem -> D2H,
    every `fan_in` blocks a delegate reading the last `fan_in` results (fan-in), all of
    them reading one method input (fan-out)."""
    from xferlint.analyzer.lattice import CPU, Device
    from xferlint.analyzer.view import DelegateInfo, MethodView, Node, OpKind, ProgramView, SourceLocation, TensorMeta, Value

    cuda = Device("cuda", 0)
    meta = TensorMeta(shape=(8, 8), dtype="float32", nbytes=256)
    info = DelegateInfo(backend="BackendWithCompilerDemo")
    where = SourceLocation(file=str(Path(__file__).resolve()), line=1, code="x = torch.cos(x)")
    built: list[Node] = []
    values: dict[str, Value] = {}

    def add(kind: OpKind, target: str, inputs: tuple, outputs: tuple, device=None, location=None) -> tuple:
        for v in outputs:
            values[v] = Value(id=v, tensor=meta, declared_device=CPU if kind == OpKind.INPUT else None)
        built.append(Node(index=len(built), name=f"n{len(built)}", kind=kind, target=target, inputs=inputs,
                          outputs=outputs, device=device, location=location,
                          delegate=info if kind == OpKind.DELEGATE else None))
        return outputs

    def delegate(args: tuple) -> str:
        (call,) = add(OpKind.DELEGATE, "executorch_call_delegate", args, (f"d{len(built)}",), cuda)
        (item,) = add(OpKind.GETITEM, "getitem", (call,), (f"g{len(built)}",), location=where)
        return item

    def h2d(v: str) -> str:
        return add(OpKind.H2D, "et_copy._h2d_copy.default", (v,), (f"h{len(built)}",), cuda)[0]

    def d2h(v: str) -> str:
        return add(OpKind.D2H, "et_copy._d2h_copy.default", (v,), (f"c{len(built)}",))[0]

    (x,) = add(OpKind.INPUT, "input", (), ("x",))
    results: list[str] = []
    while len(built) < nodes:
        y = d2h(delegate((h2d(x),)))
        z = add(OpKind.COMPUTE, "aten.cos.default", (y,), (f"k{len(built)}",), location=where)[0]
        results.append(d2h(delegate((h2d(z),))))
        if len(results) % fan_in == 0:
            results.append(d2h(delegate(tuple(h2d(r) for r in results[-fan_in:]))))
    method = MethodView(name="forward", nodes=tuple(built), values=values, inputs=(x,), outputs=(results[-1],))
    return ProgramView(input="scaling", name="scaling", kind="graph", methods=(method,))


def view_case() -> Case:
    from xferlint.pipeline import analyze

    return Case("graph view fan-in/fan-out", "node", [10_000, 100_000, 1_000_000], [10_000, 100_000],
                prepare=view_graph, run=lambda view: analyze(view, RULES, transfers=[]),
                units=lambda view, size: len(view.methods[0].nodes))


def cases() -> list[Case]:
    return [
        instructions_case("pte-ladder", "ladder", 8),
        instructions_case("pte-planned", "planned_ladder", 8),
        instructions_case("pte-delegates", "delegates_ladder", 8),
        instructions_case("pte-in-place", "in_place_ladder", 4),
        instructions_case("pte-one-slot", "one_slot", 4),
        instructions_case("pte-fan-out", "fan_out", 3),
        pte_case("pte-wide", "argument", [1_000, 10_000, 100_000], [1_000, 10_000], "wide_delegate", lambda s: s),
        pte_case("pte-wide-inputs", "argument", [1_000, 10_000, 100_000], [1_000, 10_000], "wide_inputs", lambda s: s),
        pte_case("pte-mutable-buffers", "buffer", [1_000, 10_000, 100_000], [1_000, 10_000], "mutable_buffers",
                 lambda s: s),
        pte_case("pte-loops", "loop", [100, 1_000, 10_000], [100, 1_000], "loops", lambda s: s),
        pte_case("pte-short-loops", "jump", [1_000, 10_000, 100_000], [1_000, 10_000], "short_loops", lambda s: s),
        pte_case("pte-traced-loops", "loop", [100, 1_000, 10_000], [100, 1_000], "traced_loops", lambda s: s),
        pte_case("pte-traced-short-loops", "jump", [1_000, 10_000, 100_000], [1_000, 10_000], "traced_short_loops",
                 lambda s: s),
        pte_case("pte-split-loops", "jump", [1_000, 10_000, 100_000], [1_000, 10_000], "split_loops", lambda s: s),
        pte_case("pte-traced-split-loops", "jump", [1_000, 10_000, 100_000], [1_000, 10_000], "traced_split_loops",
                 lambda s: s),
        pte_case("pte-nested-loops", "loop", [100, 1_000, 10_000], [100, 1_000], "nested_loops", lambda s: s),
        pte_case("pte-jumps-to-one-head", "jump", [100, 1_000, 10_000], [100, 1_000], "jumps_to_one_head",
                 lambda s: s),
        pte_case("pte-methods", "method", [10, 100, 1_000], [10, 100], "methods", lambda s: s),
        pte_case("pte-round-trip-chain", "delegate", [1_000, 10_000, 100_000], [1_000, 10_000], "round_trip_chain",
                 lambda s: s),
        pte_case("pte-host-fan-in", "result", [1_000, 10_000, 100_000], [1_000, 10_000], "host_fan_in", lambda s: s),
        pte_case("pte-alias-chain", "view", [1_000, 10_000, 100_000], [1_000, 10_000], "device_alias_chain",
                 lambda s: s),
        fx_case("graph", GRAPH_SIZES, [10_000, 100_000], fanout=False),
        fx_case("graph-fan-out", [5_000, 20_000, 40_000], [5_000, 20_000], fanout=True),
        view_case(),
    ]


# --------------------------------------------------------------------------- measuring


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def count_calls(fn: Callable[[], Any]) -> int:
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.runcall(fn)
    return pstats.Stats(profile).total_calls


def measure(case: Case, size: int, repeat: int, calls: bool) -> Point:
    data = case.prepare(size)
    point = Point(size=size, units=case.units(data, size))
    from xferlint import run_caches

    for _ in range(repeat):
        # each run a command of its own: a case whose data is a view (not bytes) hands the
        # same program to every run, and the command's lint cache would answer the second
        run_caches.clear()
        gc.collect()
        c0 = time.process_time()
        findings = case.run(data)
        point.cpu.append(time.process_time() - c0)
        counts: dict[str, int] = {}
        for f in findings:
            counts[f.code] = counts.get(f.code, 0) + 1
        point.findings = dict(sorted(counts.items()))
        findings = None
    if calls:
        run_caches.clear()
        point.calls = count_calls(lambda: case.run(data))
    return point


def table(results: list[tuple[Case, list[Point]]]) -> str:
    lines = [
        "| case | unit | size | units | CPU ms (median) | µs / unit | calls / unit | findings |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    summary = [
        "| case | sizes | µs / unit, smallest -> largest | time per unit largest / smallest | "
        "time per unit largest / the size before | calls per unit largest / smallest |",
        "|---|---|---|---:|---:|---:|",
    ]
    for case, points in results:
        for p in points:
            calls = f"{p.calls_per_unit:.1f}" if p.calls_per_unit is not None else "-"
            found = ", ".join(f"{k} {v:,}" for k, v in p.findings.items()) or "none"
            lines.append(f"| {case.name} | {case.unit} | {p.size:,} | {p.units:,} | "
                         f"{statistics.median(p.cpu) * 1e3:,.1f} | {p.us_per_unit:.2f} | {calls} | {found} |")
        first, last = points[0], points[-1]
        calls_ratio = (f"{last.calls_per_unit / first.calls_per_unit:.2f}"
                       if first.calls_per_unit and last.calls_per_unit else "-")
        # the smallest sizes carry a run's fixed costs: the last two sizes say whether it is linear
        before = f"{last.us_per_unit / points[-2].us_per_unit:.2f}" if len(points) > 1 else "-"
        summary.append(f"| {case.name} | {first.units:,} -> {last.units:,} {case.unit}s | "
                       f"{first.us_per_unit:.1f} -> {last.us_per_unit:.1f} | "
                       f"{last.us_per_unit / first.us_per_unit:.2f} | {before} | {calls_ratio} |")
    return "\n".join(lines) + "\n\n" + "\n".join(summary) + "\n"


RULES: list = []
GRAPH_SIZES = [10_000, 100_000, 300_000]


def main(argv: Optional[list[str]] = None) -> int:
    global GRAPH_SIZES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two sizes per case, one run each")
    parser.add_argument("--repeat", type=int, help="runs per size (default 3, --quick 1)")
    parser.add_argument("--only", help="comma-separated case names (default: all)")
    parser.add_argument("--graph-sizes", help="FX graph sizes in nodes, comma separated (default 10000,100000,300000)")
    parser.add_argument("--no-calls", action="store_true", help="skip counting Python calls")
    parser.add_argument("--json", type=Path, default=HERE / "out" / "bench_scaling.json")
    args = parser.parse_args(argv)
    if args.graph_sizes:
        GRAPH_SIZES = [int(s) for s in args.graph_sizes.split(",")]
    from xferlint.selection import select_rules

    RULES[:] = select_rules()
    repeat = args.repeat or (1 if args.quick else 3)
    chosen = cases()
    if args.only:
        wanted = set(args.only.split(","))
        chosen = [c for c in chosen if c.name in wanted]
    load = os.getloadavg()
    results = []
    for case in chosen:
        points = []
        for size in (case.quick if args.quick else case.sizes):
            log(f"{case.name} {size:,} ...")
            point = measure(case, size, repeat, calls=not args.no_calls)
            points.append(point)
            calls = f", {point.calls_per_unit:.1f} calls" if point.calls_per_unit is not None else ""
            log(f"  {point.units:,} {case.unit}s: {statistics.median(point.cpu) * 1e3:,.1f} ms CPU, "
                f"{point.us_per_unit:.2f} µs/{case.unit}{calls}, {point.findings}")
        results.append((case, points))
    text = table(results)
    header = (f"xferlint scaling benchmark; load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, "
              f"at end {os.getloadavg()[0]:.2f}; CPU-time median of {repeat} run(s); {os.cpu_count()} cores\n")
    print(header + "\n" + text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "load_average_at_start": load, "repeat": repeat,
        "cases": [{"case": c.name, "unit": c.unit, "points": [
            {"size": p.size, "units": p.units, "cpu_s": p.cpu, "us_per_unit": p.us_per_unit, "calls": p.calls,
             "findings": p.findings} for p in pts]} for c, pts in results],
    }, indent=2))
    args.json.with_suffix(".md").write_text(header + "\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
