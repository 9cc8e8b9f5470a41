"""Model Explorer node data (`--format model-explorer`): each node's device, each copy's bytes.

The file is Model Explorer's node-data JSON, `{graphId: {"results": {nodeId: {"value",
"bgColor"}}, "thresholds": [...]}}`, for its built-in PyTorch ExportedProgram adapter
(`builtin_pytorch_exportedprogram`, model_explorer/pytorch_exported_program_adater_impl.py):
that adapter names its one graph `graph` and each node by its FX node name, the names
xferlint's graph frontend keeps. A copy's value is its bytes per call (coloured by the
thresholds); every other node's value is its device (coloured per device). Programs from
entry points and `.pt2` archives keep the FX names (a `.pt2` is what `torch.export.save`
writes, and the adapter opens it); nodes inside control-flow bodies, the moves xferlint adds
for a control-flow op's results, and `.pte` instructions have no node in that adapter and
are left out (a note on stderr says when a `.pte` program was).
With one method the key is `graph`; with several, `graph` is suffixed with
` <input> <method>` so nothing collides (rename the key you load, or lint one program).
"""

from __future__ import annotations

import json

from xferlint.reporters.html_timeline import device_colour

GRAPH_ID = "graph"
THRESHOLDS = [
    {"value": 4096, "bgColor": "#fff3e0"},
    {"value": 1 << 20, "bgColor": "#ffb74d"},
    {"value": 1 << 62, "bgColor": "#e65100"},
]


_ADAPTED = ("graph", "pt2")  # the frontends whose node names are the ExportedProgram's FX names
_MOVE = "move"  # OpKind.MOVE: a control-flow op's results bound by xferlint, no FX node of its own


def graph_data(timeline) -> dict:
    copies = {c.index: c for c in timeline.copies}
    results = {}
    for node in timeline.nodes:
        if node.scope or node.kind == _MOVE:
            continue
        copy = copies.get(node.index)
        if copy is not None and copy.nbytes is not None:
            results[node.name] = {"value": copy.nbytes}
        else:
            results[node.name] = {"value": node.device, "bgColor": device_colour(node.device)}
    return {"results": results, "thresholds": THRESHOLDS}


def left_out(timelines) -> str:
    """What the node data leaves out and why, for a note on stderr ('' when nothing)."""
    pte = {(t.input, t.program) for t in timelines if t.kind not in _ADAPTED}
    if not pte:
        return ""
    some = "a program" if len(pte) == 1 else f"{len(pte)} programs"
    return (f"model-explorer: left out {some} read from a .pte file (Model Explorer reads an ExportedProgram, "
            "not a .pte): lint the entry point or its .pt2 for node data")


def emit(report, options) -> str:
    graphs = [t for t in sorted(options.timelines, key=lambda t: (t.input, t.program, t.method)) if t.kind in _ADAPTED]
    data = {}
    for t in graphs:
        key = GRAPH_ID if len(graphs) == 1 else f"{GRAPH_ID} {t.input} {t.method}"
        data[key] = graph_data(t)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
