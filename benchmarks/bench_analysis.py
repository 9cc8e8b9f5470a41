"""Analysis benchmark: xferlint's frontend + analysis + rules, side by side with
ExecuTorch's own `PropagateDevicePass` on the same programs.

Two kinds of program:

- real: a ladder model lowered with ExecuTorch's own `to_edge_transform_and_lower` and
  `to_executorch` (`xferlint.testing.lower`, demo backend, one delegate per op, devices
  cycling cuda:0, cuda:0, cuda:1, host; upstream elision off so every boundary leaves
  copies). 100 blocks give 225 device delegates (`--quick`: 70 blocks, 157 delegates).
- synthetic: an edge graph built directly with torch.fx (placeholders, real
  LoweredBackendModules referenced by thousands of `executorch_call_delegate` call sites,
  getitems, host ops, TensorSpecs as SpecPropPass would set them), at several sizes, to
  show how time grows with program size; plus a fan-out graph (one device value read by
  thousands of delegates on both devices and host ops, one host value copied thousands of
  times) that catches per-copy scans of a value's readers.

For each program, on the same graph:

- ExecuTorch: `PropagateDevicePass(enable_non_cpu_memory_planning=True)` on a fresh copy
  of the pre-copy edge graph (the deep copy / graph build is not timed), twice: with its
  same-device elision switched off (exactly the pass that produced the graph xferlint
  reads) and stock (elision on: more work). The real program also shows SpecPropPass,
  which `to_executorch` runs just before it.
- xferlint: frontend (FX graph -> ProgramView), analysis (DeviceFacts: solver, readers /
  writers, liveness) and all rules (with the per-method transfer summary, as `xferlint
  check` computes it), each timed, on the graph the pass produced (and, for
  the real program, on the final `to_executorch` program too); `report` (sort +
  JSON) is shown apart.

Every figure is the median of N runs (3; min in the JSON). Wall-clock and process CPU
time are both recorded; the ratio uses CPU time, which other processes on a shared
machine disturb less. Garbage is collected before each tool runs; the cyclic collector
then runs as each tool runs it: on for ExecuTorch's pass, paused for xferlint's stages (as
`pipeline.collector_paused` pauses it in every `xferlint check`); `--gc off`: off for both. Per-node figures
divide by the FX node count of the graph after the pass.

    .venv/bin/python benchmarks/bench_analysis.py            # full (about 20 minutes)
    .venv/bin/python benchmarks/bench_analysis.py --quick    # smaller, one run each
"""

from __future__ import annotations

import argparse
import copy
import datetime
import gc
import json
import operator
import os
import platform
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"

# --------------------------------------------------------------------------- timing


@dataclass
class Sample:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def add(self, wall: float, cpu: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)

    @property
    def cpu_med(self) -> float:
        return statistics.median(self.cpu)

    @property
    def wall_med(self) -> float:
        return statistics.median(self.wall)

    def as_dict(self) -> dict[str, float]:
        return {
            "cpu_median_s": self.cpu_med, "cpu_min_s": min(self.cpu),
            "wall_median_s": self.wall_med, "wall_min_s": min(self.wall), "runs": len(self.cpu),
        }


GC_DURING_TIMING = True  # --gc off turns the cyclic collector off while a stage runs


def timed(sample: Sample, fn: Callable[[], Any], collect: bool = True, paused: bool = False) -> Any:
    """Run fn once and add its wall and CPU time to `sample`. With `collect`, garbage
    left over from earlier work is collected first so it is not billed to fn (done before
    each tool runs, not between xferlint's stages, which share one collector's pressure
    as in a real `xferlint check`); the collector stays on while fn runs unless `--gc off`
    or `paused` (xferlint's stages: the pipeline pauses it)."""
    if collect:
        gc.collect()
    if not GC_DURING_TIMING or paused:  # `paused`: xferlint, which pauses it itself (pipeline.collector_paused)
        gc.disable()
    try:
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        c1, w1 = time.process_time(), time.perf_counter()
    finally:
        gc.enable()
    sample.add(w1 - w0, c1 - c0)
    return result


# --------------------------------------------------------------------------- ExecuTorch side


def spec_prop(gm):
    from executorch.exir.passes import SpecPropPass

    result = SpecPropPass()(gm)
    return result.graph_module if result is not None else gm


def propagate_device(gm, elide: bool):
    """ExecuTorch's PropagateDevicePass as `to_executorch` runs it (non-CPU memory
    planning on, the default since 1.4); `elide=False` switches its same-device
    round-trip elision off, as `xferlint.testing.lower(elide=False)` does."""
    from executorch.exir.passes.propagate_device_pass import PropagateDevicePass

    from xferlint.testing import upstream_elision

    with upstream_elision(elide):
        result = PropagateDevicePass(enable_non_cpu_memory_planning=True)(gm)
    return result.graph_module if result is not None else gm


# --------------------------------------------------------------------------- xferlint side


@dataclass
class XferlintTimes:
    frontend: Sample = field(default_factory=Sample)
    analysis: Sample = field(default_factory=Sample)
    rules: Sample = field(default_factory=Sample)
    report: Sample = field(default_factory=Sample)
    total: Sample = field(default_factory=Sample)
    view_nodes: int = 0
    findings: dict[str, int] = field(default_factory=dict)


def run_xferlint(times: XferlintTimes, read: Callable[[], Any], rules: list) -> None:
    """One run: frontend (read() -> ProgramView), analysis, rules; then the report."""
    from xferlint.analyzer.facts import DeviceFacts
    from xferlint.reporters.json import emit
    from xferlint.report import build_report
    from xferlint.rules.base import RuleContext

    view = timed(times.frontend, read, paused=True)
    contexts = []

    def analysis():
        for method in view.methods:
            contexts.append(RuleContext(program=view, method=method, facts=DeviceFacts.compute(method)))

    timed(times.analysis, analysis, collect=False, paused=True)
    transfers: list = []
    findings = timed(times.rules, lambda: check_rules(contexts, rules, transfers), collect=False, paused=True)
    timed(times.report, lambda: emit(build_report(findings, [], 1, 1, transfers=transfers), None), collect=False)
    n = len(times.rules.cpu) - 1
    times.total.add(
        times.frontend.wall[n] + times.analysis.wall[n] + times.rules.wall[n],
        times.frontend.cpu[n] + times.analysis.cpu[n] + times.rules.cpu[n],
    )
    times.view_nodes = sum(len(m.nodes) for m in view.methods)
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    times.findings = dict(sorted(counts.items()))


def count_calls(fn: Callable[[], Any]) -> tuple[Any, int]:
    """fn's result and the number of Python function calls it made (cProfile's count)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    result = profile.runcall(fn)
    return result, pstats.Stats(profile).total_calls


def check_rules(contexts: list, rules: list, transfers: list) -> list:
    """Every rule on every method, then the method's transfer summary, as `api.analyze`
    does for `xferlint check`."""
    from xferlint.analyzer.summary import method_transfers

    findings = []
    for ctx in contexts:
        mine = [f for rule in rules for f in rule.check(ctx)]
        findings.extend(mine)
        transfers.append(method_transfers(ctx.program.input, ctx.program.name, ctx.method, ctx.facts, mine))
    return findings


def xferlint_once(read: Callable[[], Any], rules: list) -> list:
    """Frontend, analysis, rules and transfer summary in one go (untimed)."""
    from xferlint.analyzer.facts import DeviceFacts
    from xferlint.rules.base import RuleContext

    view = read()
    contexts = [RuleContext(program=view, method=m, facts=DeviceFacts.compute(m)) for m in view.methods]
    return check_rules(contexts, rules, [])


def view_of(method_view):
    from xferlint.analyzer.view import ProgramView

    return ProgramView(input="bench", name="bench", kind="graph", methods=(method_view,))


# --------------------------------------------------------------------------- results


@dataclass
class Row:
    program: str
    nodes_before: int  # FX nodes the pass reads
    nodes: int  # FX nodes after the pass (what xferlint reads)
    delegates: int
    et_pass: Sample  # elision off
    et_stock: Sample
    xfl: XferlintTimes
    spec_prop: Optional[Sample] = None
    calls: Optional[tuple[int, int]] = None  # Python calls: (the pass, xferlint), counted once

    def as_dict(self) -> dict[str, Any]:
        return {
            "program": self.program, "fx_nodes_before_pass": self.nodes_before, "fx_nodes": self.nodes,
            "view_nodes": self.xfl.view_nodes, "delegates": self.delegates, "findings": self.xfl.findings,
            "executorch": {
                "SpecPropPass": self.spec_prop.as_dict() if self.spec_prop else None,
                "PropagateDevicePass_elision_off": self.et_pass.as_dict(),
                "PropagateDevicePass_stock": self.et_stock.as_dict(),
            },
            "xferlint": {
                "frontend": self.xfl.frontend.as_dict(), "analysis": self.xfl.analysis.as_dict(),
                "rules": self.xfl.rules.as_dict(), "total": self.xfl.total.as_dict(),
                "report": self.xfl.report.as_dict(),
            },
            "python_calls": {"PropagateDevicePass_elision_off": self.calls[0], "xferlint": self.calls[1]}
            if self.calls else None,
            "ratio_cpu_xferlint_over_pass": self.xfl.total.cpu_med / self.et_pass.cpu_med,
            "ratio_cpu_xferlint_over_stock_pass": self.xfl.total.cpu_med / self.et_stock.cpu_med,
        }


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f}" if seconds >= 0.1 else f"{seconds * 1e3:,.1f}"


def us(seconds: float, nodes: int) -> str:
    return f"{seconds / nodes * 1e6:.1f}"


def tables(rows: list[Row]) -> str:
    out = [
        "Side by side (CPU-time medians; per node = per FX node of the graph after the pass):",
        "",
        "| program | FX nodes | delegates | findings | PropagateDevicePass ms (elision off / stock) "
        "| xferlint ms | µs/node pass | µs/node xferlint | xferlint / pass |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r.program} | {r.nodes:,} | {r.delegates:,} | {sum(r.xfl.findings.values()):,} "
            f"| {ms(r.et_pass.cpu_med)} / {ms(r.et_stock.cpu_med)} | {ms(r.xfl.total.cpu_med)} "
            f"| {us(r.et_pass.cpu_med, r.nodes)} | {us(r.xfl.total.cpu_med, r.nodes)} "
            f"| {r.xfl.total.cpu_med / r.et_pass.cpu_med:.2f} |"
        )
    out += [
        "",
        "xferlint stages (CPU-time medians, ms; µs per FX node in brackets; rules include the per-method transfer "
        "summary, as in `xferlint check`; report = sort + JSON, not in the total):",
        "",
        "| program | view nodes | frontend | analysis | rules | total | report | findings by rule |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        x = r.xfl
        cells = [f"{ms(s.cpu_med)} ({us(s.cpu_med, r.nodes)})" for s in (x.frontend, x.analysis, x.rules, x.total)]
        codes = ", ".join(f"{c} {n:,}" for c, n in x.findings.items()) or "none"
        out.append(f"| {r.program} | {x.view_nodes:,} | " + " | ".join(cells) + f" | {ms(x.report.cpu_med)} | {codes} |")
    counted = [r for r in rows if r.calls is not None]
    if counted:
        out += [
            "",
            "Python function calls per FX node (counted once under cProfile: a measure of work that machine load "
            "does not disturb; flat means linear):",
            "",
            "| program | PropagateDevicePass (elision off) | xferlint (frontend + analysis + rules) |",
            "|---|---:|---:|",
        ]
        for r in counted:
            out.append(f"| {r.program} | {r.calls[0] / r.nodes:.1f} | {r.calls[1] / r.nodes:.1f} |")
    spec = [r for r in rows if r.spec_prop is not None]
    if spec:
        out += ["", "For scale, ExecuTorch's SpecPropPass (run by to_executorch just before PropagateDevicePass): "
                + "; ".join(f"{r.program}: {ms(r.spec_prop.cpu_med)} ms" for r in spec) + "."]
    return "\n".join(out)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- real program


def ladder_module(blocks: int):
    import torch

    class Ladder(torch.nn.Module):
        """Each block: add and sin (delegable), cos (host only), mm (delegable)."""

        def forward(self, x, y, w):
            for _ in range(blocks):
                a = x + y
                b = torch.sin(a)
                c = torch.cos(b)
                x = torch.mm(c, w)
            return x

    return Ladder()


REAL_DEVICES = ["cuda:0", "cuda:0", "cuda:1", None]


def bench_real(blocks: int, repeat: int, rules: list) -> list[Row]:
    import torch
    from executorch.exir import ExecutorchBackendConfig

    from xferlint.frontends.executorch import load_graph_program, read_method
    from xferlint.testing import lower, upstream_elision

    log(f"real: lowering a {blocks}-block ladder with ExecuTorch (not timed) ...")
    generator = torch.Generator().manual_seed(0)
    inputs = tuple(torch.randn(8, 8, generator=generator) for _ in range(3))
    edge = lower(ladder_module(blocks), inputs, REAL_DEVICES, elide=False, to_executorch=False)
    ep = edge.exported_program()
    template = copy.deepcopy(ep.graph_module)  # to_executorch mutates the edge graph
    signature = ep.graph_signature
    with upstream_elision(False):
        program = edge.to_executorch(ExecutorchBackendConfig())

    delegates = sum(1 for n in template.graph.nodes if n.op == "get_attr" and "lowered_module" in str(n.target))
    spec, et_pass, et_stock = Sample(), Sample(), Sample()
    on_graph, on_program = XferlintTimes(), XferlintTimes()
    nodes_before = nodes_after = nodes_program = 0
    for run in range(repeat):
        log(f"real: run {run + 1}/{repeat}")
        gm = copy.deepcopy(template)
        nodes_before = len(gm.graph.nodes)
        gm = timed(spec, lambda: spec_prop(gm))
        stock_input = copy.deepcopy(gm)
        post = timed(et_pass, lambda: propagate_device(gm, elide=False))
        timed(et_stock, lambda: propagate_device(stock_input, elide=True))
        nodes_after = len(post.graph.nodes)
        run_xferlint(on_graph, lambda: view_of(read_method("forward", post, signature)), rules)
        run_xferlint(on_program, lambda: load_graph_program(program, "bench", "bench", None).view, rules)
        nodes_program = len(program.exported_program().graph_module.graph.nodes)
        gm = stock_input = post = None  # free before the next run
    name = f"real ladder ×{blocks}"
    rows = [
        Row(f"{name}: edge graph after the pass", nodes_before, nodes_after, delegates, et_pass, et_stock,
            on_graph, spec_prop=spec),
        # The pass cannot run on the final program (its copies exist); its figures are
        # those of the pass over the same program's edge graph.
        Row(f"{name}: to_executorch program", nodes_before, nodes_program, delegates, et_pass, et_stock,
            on_program),
    ]
    return rows


# --------------------------------------------------------------------------- synthetic program

# Stack traces of the synthetic graph point at these lines, so the frontend resolves real
# source locations (file, line, column) as it does for an exported model.
SYNTHETIC_SOURCE = [
    "a = x + w          # delegate on cuda:0",
    "b = torch.sin(a)   # delegate on cuda:0",
    "c = torch.sin(b)   # delegate on cuda:1",
    "d = torch.cos(c)   # host",
    "x = torch.sin(d)   # delegate on cuda:1",
]


def _source_line(text: str) -> int:
    """The line of this file that holds `text` in SYNTHETIC_SOURCE."""
    for number, line in enumerate(Path(__file__).read_text().splitlines(), start=1):
        if line.strip() == f'"{text}",':
            return number
    return 1


NODES_PER_BLOCK = 22  # after the pass, elision off: 4 get_attr, 4 delegates, 4 getitem, 1 cos, 5 H2D, 4 D2H
FANOUT_NODES_PER_READER = 4.6  # per 5 readers: 3 × 5 (get_attr, delegate, getitem, H2D, D2H) + 6 + 2


class Synthetic:
    """Builds edge graphs the shape `to_edge_transform_and_lower` leaves, directly.

    Each block: `add(x, w)` on cuda:0 (x from the host, w a parameter), `sin` on cuda:0,
    `sin` on cuda:1, `cos` on the host, `sin` on cuda:1. After PropagateDevicePass with
    elision off that is one same-device round trip (XF001), two cross-device stagings
    (XF002), a host op splitting the cuda:1 partition (XF005), and an H2D of the same
    parameter in every block (XF004, XF006). The delegates are real LoweredBackendModules
    from one small lowering, each referenced by thousands of call sites.
    """

    def __init__(self) -> None:
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode

        from xferlint.testing import lower

        class Three(torch.nn.Module):
            def forward(self, x, w):
                return torch.sin(torch.sin(x + w))

        edge = lower(Three(), (torch.randn(8, 8), torch.randn(8, 8)), ["cuda:0", "cuda:0", "cuda:1"],
                     to_executorch=False)
        gm = edge.exported_program().graph_module
        self.modules = {"add_cuda0": gm.lowered_module_0, "sin_cuda0": gm.lowered_module_1,
                        "sin_cuda1": gm.lowered_module_2}
        with FakeTensorMode():
            self.fake = torch.empty(8, 8)
        path = os.path.abspath(__file__)
        self.traces = [
            f'File "{path}", line {_source_line(line)}, in forward\n    {line.split("#")[0].strip()}'
            for line in SYNTHETIC_SOURCE
        ]

    def signature(self):
        from torch.export.graph_signature import (
            ExportGraphSignature,
            InputKind,
            InputSpec,
            OutputKind,
            OutputSpec,
            TensorArgument,
        )

        return ExportGraphSignature(
            input_specs=[InputSpec(InputKind.PARAMETER, TensorArgument("w"), "w"),
                         InputSpec(InputKind.USER_INPUT, TensorArgument("x"), None)],
            output_specs=[OutputSpec(OutputKind.USER_OUTPUT, TensorArgument("out"), None)],
        )

    def build(self, blocks: int, fanout: bool = False):
        import torch
        from executorch.exir.delegate import executorch_call_delegate
        from executorch.exir.dialects._ops import ops as exir_ops
        from executorch.exir.passes.spec_prop_pass import make_spec

        graph = torch.fx.Graph()
        root = torch.nn.Module()
        for name, module in self.modules.items():
            setattr(root, name, module)
        fake, traces = self.fake, self.traces

        def tensor(node, trace=None):
            node.meta["val"] = fake
            node.meta["spec"] = make_spec(fake)
            if trace is not None:
                node.meta["stack_trace"] = trace
            return node

        def delegate(module: str, args: tuple, trace: str):
            call = graph.call_function(executorch_call_delegate, (graph.get_attr(module),) + args)
            call.meta["val"] = [fake]
            call.meta["spec"] = [make_spec(fake)]
            item = graph.call_function(operator.getitem, (call, 0))
            item.meta["val"] = fake
            item.meta["spec"] = call.meta["spec"][0]  # as SpecPropPass: the same TensorSpec
            item.meta["stack_trace"] = trace
            return item

        w = tensor(graph.placeholder("w"))
        x = tensor(graph.placeholder("x"))
        cos = exir_ops.edge.aten.cos.default
        if fanout:
            # One device value `a` (cuda:0) read by `blocks` consumers, in turn: a sin on
            # cuda:0 (a round trip through a's one D2H, XF001), a sin on cuda:1 (XF002), a
            # host cos feeding a sin on cuda:0 (XF005), an add on cuda:0 with a host value
            # (XF001, and one more copy of that host value: XF004), a host cos. After the
            # pass a's D2H has thousands of readers, the host value thousands of copies.
            a = delegate("add_cuda0", (x, w), traces[0])
            h = tensor(graph.call_function(cos, (x,)), traces[3])
            results = []
            for i in range(blocks):
                turn = i % 5
                if turn == 0:
                    results.append(delegate("sin_cuda0", (a,), traces[1]))
                elif turn == 1:
                    results.append(delegate("sin_cuda1", (a,), traces[2]))
                elif turn == 2:
                    results.append(delegate("sin_cuda0", (tensor(graph.call_function(cos, (a,)), traces[3]),), traces[4]))
                elif turn == 3:
                    results.append(delegate("add_cuda0", (a, h), traces[0]))
                else:
                    results.append(tensor(graph.call_function(cos, (a,)), traces[3]))
            out = graph.output(tuple(results))
            out.meta["spec"] = tuple(r.meta["spec"] for r in results)
            return torch.fx.GraphModule(root, graph)
        for _ in range(blocks):
            a = delegate("add_cuda0", (x, w), traces[0])
            b = delegate("sin_cuda0", (a,), traces[1])
            c = delegate("sin_cuda1", (b,), traces[2])
            d = tensor(graph.call_function(cos, (c,)), traces[3])
            x = delegate("sin_cuda1", (d,), traces[4])
        out = graph.output((x,))
        out.meta["spec"] = (x.meta["spec"],)
        return torch.fx.GraphModule(root, graph)


def bench_synthetic(sizes: list[int], repeat: int, rules: list, calls: bool = True, fanout: bool = False) -> list[Row]:
    from xferlint.frontends.executorch import read_method

    log("synthetic: lowering the delegates the graphs reference (not timed) ...")
    synth = Synthetic()
    signature = synth.signature()
    rows = []
    kind = "synthetic fan-out" if fanout else "synthetic"
    for size in sizes:
        blocks = max(1, int(size / (FANOUT_NODES_PER_READER if fanout else NODES_PER_BLOCK)))
        et_pass, et_stock, xfl = Sample(), Sample(), XferlintTimes()
        nodes_before = nodes_after = delegates = 0
        for run in range(repeat):
            log(f"{kind} {size:,}: run {run + 1}/{repeat} (building {blocks:,} blocks, not timed)")
            gm = synth.build(blocks, fanout)
            nodes_before = len(gm.graph.nodes)
            delegates = sum(1 for n in gm.graph.nodes if n.op == "get_attr")  # one per delegate call
            post = timed(et_pass, lambda: propagate_device(gm, elide=False))
            nodes_after = len(post.graph.nodes)
            run_xferlint(xfl, lambda: view_of(read_method("forward", post, signature)), rules)
            gm = post = None  # free before building the next graph
            gc.collect()
            stock_input = synth.build(blocks, fanout)
            timed(et_stock, lambda: propagate_device(stock_input, elide=True))
            stock_input = None
        counts = None
        if calls:
            log(f"{kind} {size:,}: counting Python calls (not timed)")
            gm = synth.build(blocks, fanout)
            post, pass_calls = count_calls(lambda: propagate_device(gm, elide=False))
            _, xfl_calls = count_calls(lambda: xferlint_once(lambda: view_of(read_method("forward", post, signature)), rules))
            counts = (pass_calls, xfl_calls)
            gm = post = None
        rows.append(Row(f"{kind} {nodes_after:,}", nodes_before, nodes_after, delegates, et_pass, et_stock, xfl,
                        calls=counts))
    return rows


# --------------------------------------------------------------------------- main


def machine() -> dict[str, Any]:
    import torch

    try:
        from importlib.metadata import version

        et_version = version("executorch")
    except Exception:  # noqa: BLE001 - informational only
        et_version = "?"
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
        "torch": torch.__version__, "executorch": et_version,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "commit": _git("rev-parse", "--short", "HEAD"),
        "xferlint_modified": bool(_git("status", "--porcelain", "--", "xferlint")),
    }


def _git(*args: str) -> str:
    import subprocess

    try:
        return subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001 - informational only
        return ""


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller programs, one run each")
    parser.add_argument("--repeat", type=int, help="runs per measurement (default 3, --quick 1)")
    parser.add_argument("--sizes", help="synthetic sizes in FX nodes, comma separated "
                        "(default 10000,30000,100000,200000; --quick 10000,100000)")
    parser.add_argument("--fanout", help="fan-out graph sizes in FX nodes, comma separated "
                        "(default 10000,40000; --quick 5000,20000; 0 to skip)")
    parser.add_argument("--blocks", type=int, help="blocks of the real ladder model (default 100, --quick 70)")
    parser.add_argument("--gc", choices=("on", "off"), default="on",
                        help="cyclic garbage collector during timed stages, both tools (default on, as in real runs)")
    parser.add_argument("--no-calls", action="store_true", help="skip counting Python calls (one extra run per size)")
    parser.add_argument("--skip-real", action="store_true", help="synthetic programs only")
    parser.add_argument("--select", help="rules to run, as `xferlint check --select` (default: all)")
    parser.add_argument("--ignore", help="rules to leave out, as `xferlint check --ignore`")
    parser.add_argument("--json", type=Path, default=OUT / "bench_analysis.json", help="where to write the figures")
    args = parser.parse_args(argv)

    repeat = args.repeat or (1 if args.quick else 3)
    sizes = [int(s) for s in (args.sizes or ("10000,100000" if args.quick else "10000,30000,100000,200000")).split(",")]
    blocks = args.blocks or (70 if args.quick else 100)
    fanout_spec = args.fanout or ("5000,20000" if args.quick else "10000,40000")
    fanout = [int(s) for s in fanout_spec.split(",") if int(s) > 0]

    global GC_DURING_TIMING
    GC_DURING_TIMING = args.gc == "on"
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    from xferlint.selection import select_rules

    rules = select_rules(select=[args.select] if args.select else None, ignore=[args.ignore] if args.ignore else None)
    info = machine()
    command = " ".join([".venv/bin/python", "benchmarks/bench_analysis.py"] + (argv if argv is not None else sys.argv[1:]))
    log(f"rules: {', '.join(r.code for r in rules)}; {repeat} run(s) per measurement")

    rows: list[Row] = []
    if not args.skip_real:
        rows += bench_real(blocks, repeat, rules)
    rows += bench_synthetic(sizes, repeat, rules, calls=not args.no_calls)
    if fanout:
        rows += bench_synthetic(fanout, repeat, rules, calls=not args.no_calls, fanout=True)

    header = (
        f"xferlint analysis benchmark — {info['date']}\n"
        f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, torch {info['torch']}, "
        f"executorch {info['executorch']}; load average at start {info['load_average_at_start']}\n"
        f"xferlint at {info['commit'] or '?'}{' (with uncommitted changes under xferlint/)' if info['xferlint_modified'] else ''}\n"
        f"command: {command}\n"
        f"rules: {', '.join(r.code for r in rules)}; median of {repeat} run(s); cyclic GC {args.gc} while timing the pass (xferlint pauses it, as `xferlint check` does)\n"
    )
    text = header + "\n" + tables(rows)
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": info, "command": command, "rules": [r.code for r in rules], "gc": args.gc,
                                     "rows": [r.as_dict() for r in rows]}, indent=2) + "\n")
    (args.json.with_suffix(".md")).write_text(text + "\n")
    log(f"wrote {args.json} and {args.json.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
