"""Everything a user sees of a fixed set of programs, written to a folder, so that a speed-up
can be shown to change nothing: run it before and after, then `diff -r BEFORE AFTER`.

Per `.pte` (synthetic programs of 1k-10k units from xferlint.testing.synthetic_pte, and the
bundled `sample_models`): `check` as JSON, concise text (with and without `--statistics`), full text and
SARIF; `check --diff`; `fix -o` (the fixed program's bytes). Per graph program (the real
ExecuTorch ladder of bench_analysis.py, edge graph and `to_executorch` program, and its
synthetic FX graphs, plain and fan-out): the JSON report of `xferlint.lint_report`.

    .venv/bin/python benchmarks/same_output.py /tmp/before
    ... change ...
    .venv/bin/python benchmarks/same_output.py /tmp/after && diff -r /tmp/before /tmp/after

or, with an older commit checked out in a worktree (`git worktree add --detach /tmp/old REV`),
`PYTHONPATH=/tmp/old .venv/bin/python benchmarks/same_output.py /tmp/before`.

`--quick` leaves out sample_models and the real ladder (no lowering: seconds, not a minute).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

# Every run checks its files again: a result the results cache read back would time (or
# compare) nothing.
os.environ["XFERLINT_NO_CACHE"] = "1"

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def pte_inputs() -> list[Path]:
    import bench_large as bl
    from xferlint.testing import synthetic_pte as sp

    wanted = {"ladder": [1_000, 10_000], "in-place": [10_000], "fan-out": [10_000], "wide": [10_000],
              "loops": [1_000], "methods": [100], "planned": [1_000], "outputs": [1_000],
              "wide-inputs": [10_000], "mutable-buffers": [1_000]}
    shapes = bl.shapes()
    paths = [bl.program(name, size, shapes[name][2]) for name, sizes in wanted.items() for size in sizes]
    small = bl.OUT / "rewritten-ladder.pte"  # a buffer rewritten between copies: fixes refused and applied
    if not small.exists():
        small.write_bytes(sp.in_place_ladder(50))
    return [*paths, small]


def cli(args: list[str], out: Path, cwd: Path = ROOT) -> None:
    # -P: `-m` would put `cwd` (the repository) first on sys.path, ahead of PYTHONPATH, and a
    # run of an older checkout (`PYTHONPATH=worktree`) would check with this one's code
    done = subprocess.run([sys.executable, "-P", "-m", "xferlint.cli", *args], capture_output=True, text=True,
                          cwd=cwd)
    out.write_text(f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}")


def pte_outputs(path: Path, folder: Path) -> None:
    stem = folder / path.stem
    cli(["check", str(path), "--format", "json"], stem.with_suffix(".json"))
    cli(["check", str(path), "--no-color"], stem.with_suffix(".concise"))
    cli(["check", str(path), "--statistics", "--no-color"], stem.with_suffix(".statistics"))
    cli(["check", str(path), "--output-format", "full", "--no-color"], stem.with_suffix(".full"))
    cli(["check", str(path), "--format", "sarif"], stem.with_suffix(".sarif"))
    cli(["check", str(path), "--diff"], stem.with_suffix(".diff"))
    # run in the folder: the fix names its output, and the folder differs between runs
    cli(["fix", str(path), "-o", f"{path.stem}.fixed.pte"], stem.with_suffix(".fix"), cwd=folder)


def graph_outputs(folder: Path, real: bool) -> None:
    import bench_analysis as ba
    from xferlint.api import lint_report
    from xferlint.reporters import ReportOptions, emit

    def write(name: str, obj) -> None:
        report = lint_report(obj, name=name)
        (folder / f"{name}.json").write_text(emit(report, "json", ReportOptions()))

    synth = ba.Synthetic()
    signature = synth.signature()
    for blocks, fanout in ((200, False), (500, True)):
        post = ba.propagate_device(synth.build(blocks, fanout), elide=False)
        write(f"synthetic-{blocks}{'-fanout' if fanout else ''}", _graph_view(post, signature))
    if real:
        import torch
        from executorch.exir import ExecutorchBackendConfig
        from xferlint.testing import lower, upstream_elision

        generator = torch.Generator().manual_seed(0)
        inputs = tuple(torch.randn(8, 8, generator=generator) for _ in range(3))
        edge = lower(ba.ladder_module(12), inputs, ba.REAL_DEVICES, elide=False, to_executorch=False)
        with upstream_elision(False):
            write("real-edge", edge)
            write("real-program", edge.to_executorch(ExecutorchBackendConfig()))


def _graph_view(gm, signature):
    """The synthetic graph as a ProgramView (its frontend is the one bench_analysis times)."""
    import bench_analysis as ba
    from xferlint.frontends.executorch import read_method

    return ba.view_of(read_method("forward", gm, signature))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--quick", action="store_true", help="no sample_models, no real lowering")
    args = parser.parse_args(argv)
    args.folder = args.folder.resolve()
    args.folder.mkdir(parents=True, exist_ok=True)
    for path in pte_inputs():
        pte_outputs(path, args.folder)
    graph_outputs(args.folder, real=not args.quick)
    if not args.quick:
        samples = args.folder / "sample_models"
        cli(["check", "sample_models", "--format", "json"], samples.with_suffix(".json"))
        cli(["check", "sample_models", "--statistics", "--no-color"], samples.with_suffix(".concise"))
        cli(["check", "sample_models", "--format", "sarif"], samples.with_suffix(".sarif"))
    print(f"wrote {sum(1 for _ in args.folder.iterdir())} files to {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
