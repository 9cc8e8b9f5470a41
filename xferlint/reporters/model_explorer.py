"""Model Explorer node data (`--format model-explorer`): each node's device, each copy's bytes.

The file is Model Explorer's node-data JSON, `{graphId: {"results": {nodeId: {"value",
"bgColor"}}, "thresholds": [...]}}`, for its built-in PyTorch ExportedProgram adapter
(`builtin_pytorch_exportedprogram`, model_explorer/pytorch_exported_program_adater_impl.py):
that adapter names its one graph `graph` and each node by its FX node name, the names
xferlint's graph frontend keeps. A copy's value is its bytes per call (coloured by the
thresholds); every other node's value is its device (coloured per device). Nodes inside
control-flow bodies and `.pte` instructions have no node in that adapter and are left out.
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


def graph_data(timeline) -> dict:
    copies = {c.index: c for c in timeline.copies}
    results = {}
    for node in timeline.nodes:
        if node.scope:
            continue
        copy = copies.get(node.index)
        if copy is not None and copy.nbytes is not None:
            results[node.name] = {"value": copy.nbytes}
        else:
            results[node.name] = {"value": node.device, "bgColor": device_colour(node.device)}
    return {"results": results, "thresholds": THRESHOLDS}


def emit(report, options) -> str:
    graphs = [t for t in sorted(options.timelines, key=lambda t: (t.input, t.program, t.method)) if t.kind == "graph"]
    data = {}
    for t in graphs:
        key = GRAPH_ID if len(graphs) == 1 else f"{GRAPH_ID} {t.input} {t.method}"
        data[key] = graph_data(t)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
