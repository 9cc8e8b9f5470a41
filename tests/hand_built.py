"""The source of an entry point that needs no lowering: a hand-built view with one dead D2H
(XF003), for tests of the command around the analysis (workers, files, formats)."""

from __future__ import annotations


def dead_copy_view(label: str) -> str:
    """The entry point's source; its `program` is a ProgramView whose input is `label`."""
    return f'''\
from xferlint.analyzer.lattice import CPU, Device
from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, TensorMeta, Value

meta = TensorMeta(shape=(4, 4), dtype="float32", nbytes=64)
cuda = Device("cuda", 0)
values = {{"x": Value(id="x", tensor=meta, declared_device=CPU),
          "d": Value(id="d", tensor=meta, declared_device=cuda),
          "h": Value(id="h", tensor=meta, declared_device=CPU)}}
nodes = (Node(0, "x", OpKind.INPUT, "input", outputs=("x",)),
         Node(1, "h2d", OpKind.H2D, "et_copy._h2d_copy.default", inputs=("x",), outputs=("d",), device=cuda),
         Node(2, "d2h", OpKind.D2H, "et_copy._d2h_copy.default", inputs=("d",), outputs=("h",)))
program = ProgramView(input={label!r}, name="program", kind="graph",
                      methods=(MethodView(name="forward", nodes=nodes, values=values, outputs=("d",)),))
'''
