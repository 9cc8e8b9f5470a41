"""Large `.pt2` archives (`torch.export`), whole process: `xferlint check FILE --format json`
at growing sizes, side by side with `torch.export.load` on the same files.

The shape is a ladder of layers, each `sin` on cuda:0, `.cpu()`, `cumsum` on the host and
`.to("cuda:0")` back: four graph nodes and one XF005 per layer, every node with its stack
trace (the loop's lines, shared by every layer, as in a model whose layers are one module
run in a loop). Exported with fake cuda tensors, so no GPU is needed
(docs/pytorch-export.md), once per size, and cached under benchmarks/out/pt2/: 100 / 1,000 /
10,000 layers (0.45 / 4.5 / 45 MB; exporting the largest takes about two minutes).

Per size: wall and CPU medians of fresh processes (xferlint `--runs` times, torch's loader
`--torch-runs` times: it takes over a minute on the largest), xferlint's CPU per layer, and
per layer at the largest size over the size before (1.0 is linear).

    .venv/bin/python benchmarks/bench_pt2.py
    .venv/bin/python benchmarks/bench_pt2.py --sizes 100,1000 --runs 5
    .venv/bin/python benchmarks/bench_pt2.py --quick      # 100 and 1,000 layers, one run each
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_pte as bp  # noqa: E402  (run helpers: fresh processes, CPU of the child)

OUT = HERE / "out" / "pt2"

EXPORT = (
    "import sys, torch\n"
    "from torch._subclasses.fake_tensor import FakeTensorMode\n"
    "DEV = torch.device('cuda:0')\n"
    "class Ladder(torch.nn.Module):\n"
    "    def __init__(self, n):\n"
    "        super().__init__(); self.n = n\n"
    "    def forward(self, x):\n"
    "        for i in range(self.n):\n"
    "            y = torch.sin(x)\n"
    "            h = y.cpu()\n"
    "            h = torch.cumsum(h, 0)\n"
    "            x = h.to(DEV)\n"
    "        return x\n"
    "with FakeTensorMode(allow_non_fake_inputs=True):\n"
    "    m = Ladder(int(sys.argv[1])).to(DEV)\n"
    "    x = torch.ones(16, 16).to(DEV)\n"
    "    with torch.no_grad():\n"
    "        ep = torch.export.export(m, (x,))\n"
    "torch.export.save(ep, sys.argv[2])\n"
)

TORCH_LOAD = (
    "import sys, torch\n"
    "ep = torch.export.load(sys.argv[1])\n"
    "assert len(ep.graph.nodes)\n"
)


def program(layers: int) -> Path:
    """The ladder of `layers` layers, exported once (in a process of its own) and cached."""
    import subprocess

    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"ladder-{layers}.pt2"
    if not path.exists():
        model = OUT / "ladder_model.py"  # a file, as a user's model is: its lines are the stack traces'
        if not model.exists() or model.read_text() != EXPORT:
            model.write_text(EXPORT)
        tmp = OUT / f"partial-{path.name}"  # torch saves to a name ending in .pt2
        subprocess.run([bp.PYTHON, str(model), str(layers), str(tmp)], check=True, env=bp.ENV)
        tmp.replace(path)
    return path


def timed(argv: list[str], runs: int, label: str) -> dict:
    """Wall and CPU medians of `runs` fresh processes, after one warm-up."""
    bp.run_once(argv, HERE)
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, done = bp.run_once(argv, HERE)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{label} failed (exit {done.returncode}): {done.stderr[-2000:]}")
        walls.append(wall)
        cpus.append(cpu)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "runs": runs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated layer counts")
    parser.add_argument("--runs", type=int, default=3, help="xferlint runs per size")
    parser.add_argument("--torch-runs", type=int, default=1, help="torch.export.load runs per size")
    parser.add_argument("--json", type=Path, default=HERE / "out" / "bench_pt2.json")
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 layers, one run each")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.runs, args.torch_runs = "100,1000", 1, 1
    load = os.getloadavg()
    results = []
    for layers in (int(s) for s in args.sizes.split(",")):
        path = program(layers)
        mine = timed([bp.XFERLINT, "check", str(path), "--format", "json", "-o", os.devnull, "--exit-zero"],
                     args.runs, f"xferlint on {path.name}")
        theirs = timed([bp.PYTHON, "-c", TORCH_LOAD, str(path)], args.torch_runs, f"torch.export.load on {path.name}")
        results.append({"layers": layers, "mb": path.stat().st_size / 1e6, "xferlint": mine, "torch_export_load": theirs})
        print(f"ladder {layers:>6,} layers ({results[-1]['mb']:.1f} MB): xferlint {mine['wall_s']:.2f} s wall "
              f"{mine['cpu_s']:.2f} s CPU ({mine['cpu_s'] / layers * 1e6:.0f} us/layer); torch.export.load "
              f"{theirs['wall_s']:.2f} s wall", file=sys.stderr, flush=True)
    lines = [f"load average at start {load[0]:.2f}, at end {os.getloadavg()[0]:.2f}; medians of {args.runs} "
             f"(xferlint) and {args.torch_runs} (torch) fresh processes; {os.cpu_count()} cores", "",
             "| layers | MB | xferlint wall s | xferlint CPU s | CPU us / layer | torch.export.load wall s | torch / xferlint |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        mine, theirs = r["xferlint"], r["torch_export_load"]
        lines.append(f"| {r['layers']:,} | {r['mb']:.1f} | {mine['wall_s']:.2f} | {mine['cpu_s']:.2f} | "
                     f"{mine['cpu_s'] / r['layers'] * 1e6:.0f} | {theirs['wall_s']:.2f} | "
                     f"{theirs['wall_s'] / mine['wall_s']:.1f}x |")
    if len(results) >= 2:  # the smallest size is mostly interpreter start
        per = [r["xferlint"]["cpu_s"] / r["layers"] for r in results]
        lines += ["", f"CPU per layer, largest over the size before: {per[-1] / per[-2]:.2f}"]
    text = "\n".join(lines) + "\n"
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"load_average_at_start": load, "results": results}, indent=2))
    args.json.with_suffix(".md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
