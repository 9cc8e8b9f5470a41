"""The device timeline of one method as inline SVG (for the HTML reporter).

Columns run in program order, one lane per device. Bookkeeping nodes (inputs, constants,
allocations, getitems, aliases, moves) get no column of their own: they fold into the
column before them. Runs of `COLLAPSE_MIN` or more consecutive ops on one device that no
finding names fold into one block with their count, so a thousand-node program stays a
strip a reader can scroll. Every copy is its own column: an arrow from its source lane to
its target lane, as thick as the bytes it moves per call, labelled with them.
"""

from __future__ import annotations

import math
from html import escape
from typing import Optional, Sequence

from xferlint.analyzer.timeline import MethodTimeline, TimelineCopy, TimelineNode
from xferlint.records import dataclass
from xferlint.rules.base import format_bytes

COLLAPSE_MIN = 4
QUIET = frozenset({"input", "constant", "alloc", "getitem", "alias", "move"})
LANE_H, BLOCK_H, TOP, GAP = 56, 34, 30, 8
WIDTH = {"node": 84, "delegate": 128, "run": 96, "copy": 60}
HOST_COLOUR, ODD_COLOUR = "#b0b7c3", "#e57373"  # cpu; unknown / conflict
DEVICE_COLOURS = ("#7cb342", "#26a69a", "#5c6bc0", "#ab47bc", "#8d6e63", "#ec407a", "#42a5f5", "#ffca28")
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the strip: a node, a collapsed run of nodes, or a copy."""

    kind: str  # node, delegate, run or copy
    device: str  # the lane (copies: their target)
    ops: tuple[TimelineNode, ...]  # the nodes it shows (a run: several)
    members: tuple[str, ...]  # every node name it stands for (folded bookkeeping nodes too)
    copy: Optional[TimelineCopy] = None


@dataclass(frozen=True, slots=True)
class Mark:
    """A finding as the timeline needs it: its id, severity and the nodes it names."""

    id: str  # the HTML id of the finding's list entry (f-3)
    number: int
    severity: str
    nodes: tuple[str, ...]
    copies: tuple[str, ...]


def device_colour(device: str) -> str:
    """One colour per device name, the same in every timeline of a report."""
    if device == "cpu":
        return HOST_COLOUR
    kind, _, index = device.partition(":")
    if kind in ("unknown", "conflict"):
        return ODD_COLOUR
    offset = 0 if kind == "cuda" else sum(map(ord, kind))
    return DEVICE_COLOURS[(offset + (int(index) if index.isdigit() else 0)) % len(DEVICE_COLOURS)]


def columns(timeline: MethodTimeline, flagged: frozenset[str]) -> list[Column]:
    """The columns of a timeline; nodes in `flagged` are never collapsed away."""
    copies = {c.index: c for c in timeline.copies}
    raw: list[Column] = []
    # the bookkeeping nodes folded into each column after its own node, gathered in a list and
    # joined to its members once: a tuple grown per node was quadratic in a delegate's getitems
    folded: list[list[str]] = []
    pending: list[str] = []  # bookkeeping nodes before the first column
    for node in timeline.nodes:
        copy = copies.get(node.index)
        if copy is None and node.kind in QUIET:
            (folded[-1] if raw else pending).append(node.name)
            continue
        kind = "copy" if copy is not None else "delegate" if node.kind == "delegate" else "node"
        device = copy.target if copy is not None else node.device
        raw.append(Column(kind, device, (node,), tuple(pending) + (node.name,), copy))
        folded.append([])
        pending = []
    raw = [Column(c.kind, c.device, c.ops, c.members + tuple(more), c.copy) if more else c
           for c, more in zip(raw, folded)]
    return _collapse(raw, flagged)


def _collapse(raw: list[Column], flagged: frozenset[str]) -> list[Column]:
    out: list[Column] = []
    run: list[Column] = []

    def flush() -> None:
        if len(run) >= COLLAPSE_MIN:
            out.append(Column("run", run[0].device, tuple(n for c in run for n in c.ops),
                              tuple(m for c in run for m in c.members)))
        else:
            out.extend(run)
        run.clear()

    for col in raw:
        quiet = col.kind != "copy" and not flagged.intersection(col.members)
        if quiet and run and run[0].device == col.device:
            run.append(col)
            continue
        flush()
        if quiet:
            run.append(col)
        else:
            out.append(col)
    flush()
    return out


def anchor(cols: Sequence[Column], mark: Mark, where: Optional[dict[str, list[int]]] = None) -> Optional[int]:
    """The column a finding points at: its first copy's, else its first node's. `where`:
    `column_index(cols)`, made once for all a timeline's findings."""
    where = column_index(cols) if where is None else where
    for name in mark.copies + mark.nodes:
        found = where.get(name)
        if found:
            return found[0]
    return None


def column_index(cols: Sequence[Column]) -> dict[str, list[int]]:
    """Each node name's columns, in order: what the findings look up, once per timeline
    rather than every column per finding (a program of thousands of findings)."""
    where: dict[str, list[int]] = {}
    for i, col in enumerate(cols):
        for name in col.members:
            found = where.get(name)
            if found is None:
                where[name] = [i]
            elif found[-1] != i:
                found.append(i)
    return where


def _stroke(nbytes: Optional[int]) -> float:
    if nbytes is None:
        return 1.5
    return round(min(14.0, 1.5 + 1.2 * math.log2(nbytes / 1024 + 1)), 1)


def _fit(text: str, width: int) -> str:
    room = max(3, width // 7)
    return text if len(text) <= room else text[: room - 1] + "\u2026"


def _short(target: str) -> str:
    """`aten.cumsum.out` -> `cumsum`, `et_copy._h2d_copy.out` -> `_h2d_copy`."""
    parts = [p for p in target.split(".") if p not in ("out", "default", "Tensor", "aten", "et_copy")]
    return parts[0] if parts else target


def _label(col: Column) -> tuple[str, str]:
    """The block's two text lines."""
    if col.kind == "run":
        delegates = sum(1 for n in col.ops if n.kind == "delegate")
        extra = f", {delegates} delegates" if delegates else ""
        return f"{len(col.ops)} ops{extra}", ", ".join(dict.fromkeys(_short(n.target) for n in col.ops))
    node = col.ops[0]
    if col.kind == "delegate":
        return node.backend or "delegate", ", ".join(o.rpartition(".")[2] or o for o in node.ops) or node.name
    return _short(node.target), node.name


def _title(col: Column, timeline_devices: tuple[str, ...]) -> str:
    if col.copy is not None:
        c = col.copy
        return f"{c.node}: {c.direction.upper()} {c.source} -> {c.target}, {format_bytes(c.nbytes)} per call"
    lines = []
    for node in col.ops[:12]:
        where = f" line {node.line}" if node.line else ""
        scope = f" in {node.scope}" if node.scope else ""
        ops = f" [{', '.join(node.ops)}]" if node.ops else ""
        lines.append(f"{node.name} ({node.target}{ops}) on {node.device}{where}{scope}")
    if len(col.ops) > 12:
        lines.append(f"... and {len(col.ops) - 12} more")
    return "\n".join(lines)


def render(timeline: MethodTimeline, prefix: str, marks: Sequence[Mark]) -> tuple[str, dict[str, str]]:
    """The SVG of one timeline and, per finding id, the id of the column it points at."""
    flagged = frozenset(n for m in marks for n in m.nodes + m.copies)
    cols = columns(timeline, flagged)
    lanes = timeline.devices
    lane_of = {d: i for i, d in enumerate(lanes)}
    xs, x = [], GAP
    for col in cols:
        xs.append(x)
        x += WIDTH[col.kind] + GAP
    width, height = max(x, 200), TOP + LANE_H * len(lanes) + 8
    where = column_index(cols)
    anchors = {m.id: anchor(cols, m, where) for m in marks}
    findings_of: dict[int, list[Mark]] = {}
    for m in marks:
        for i in sorted({i for name in m.nodes + m.copies for i in where.get(name, ())}):
            findings_of.setdefault(i, []).append(m)
    parts = [f'<svg class="timeline" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="device timeline of {escape(timeline.method)}">']
    for d, i in lane_of.items():
        y = TOP + i * LANE_H
        parts.append(f'<g class="lane" data-device="{escape(d)}"><rect x="0" y="{y}" width="{width}" '
                     f'height="{LANE_H}" class="lane-bg lane-{i % 2}"/></g>')
    for i, col in enumerate(cols):
        parts.append(_column(col, f"{prefix}-c{i}", xs[i], lane_of, findings_of.get(i, []), lanes))
    parts.append(_markers(marks, anchors, xs, cols))
    parts.append("</svg>")
    return "".join(parts), {fid: f"{prefix}-c{i}" for fid, i in anchors.items() if i is not None}


def _worst(marks: Sequence[Mark]) -> Optional[str]:
    return min((m.severity for m in marks), key=lambda s: SEVERITY_RANK.get(s, 9)) if marks else None


def _column(col: Column, cid: str, x: int, lane_of: dict[str, int], marks: Sequence[Mark],
            lanes: tuple[str, ...]) -> str:
    worst = _worst(marks)
    flag = f" flagged sev-{worst}" if worst else ""
    data = (f'id="{cid}" data-nodes="{escape(" ".join(col.members))}" '
            f'data-findings="{" ".join(m.id for m in marks)}"')
    title = f"<title>{escape(_title(col, lanes))}</title>"
    if col.copy is not None:
        return _copy(col.copy, data, title, flag, x, lane_of)
    w = WIDTH[col.kind]
    lane = lane_of[col.device]
    y = TOP + lane * LANE_H + (LANE_H - BLOCK_H) // 2
    first, second = _label(col)
    scoped = " scoped" if any(n.scope for n in col.ops) else ""
    count = f' data-count="{len(col.ops)}"' if col.kind == "run" else ""
    backend = f' data-backend="{escape(col.ops[0].backend or "")}"' if col.kind == "delegate" else ""
    return (f'<g class="col {col.kind}{flag}{scoped}" data-device="{escape(col.device)}"{count}{backend} {data}>{title}'
            f'<rect x="{x}" y="{y}" width="{w}" height="{BLOCK_H}" rx="4" fill="{device_colour(col.device)}"/>'
            f'<text x="{x + 5}" y="{y + 14}" class="l1">{escape(_fit(first, w))}</text>'
            f'<text x="{x + 5}" y="{y + 28}" class="l2">{escape(_fit(second, w))}</text></g>')


def _copy(c: TimelineCopy, data: str, title: str, flag: str, x: int, lane_of: dict[str, int]) -> str:
    w = WIDTH["copy"]
    cx = x + w // 2
    y1 = TOP + lane_of[c.source] * LANE_H + LANE_H // 2
    y2 = TOP + lane_of[c.target] * LANE_H + LANE_H // 2
    tip = y2 - 6 if y2 > y1 else y2 + 6
    head = f"{cx - 5},{tip} {cx + 5},{tip} {cx},{y2}" if y1 != y2 else f"{cx},{y2}"
    dash = ' stroke-dasharray="4 3"' if c.nbytes is None else ""
    label = format_bytes(c.nbytes) if c.nbytes is not None else "symbolic"
    ty = (y1 + y2) // 2 + 4
    return (f'<g class="col copy {c.direction}{flag}" data-node="{escape(c.node)}" data-source="{escape(c.source)}" '
            f'data-target="{escape(c.target)}" data-bytes="{"" if c.nbytes is None else c.nbytes}" {data}>{title}'
            f'<line x1="{cx}" y1="{y1}" x2="{cx}" y2="{tip}" stroke-width="{_stroke(c.nbytes)}"{dash}/>'
            f'<polygon points="{head}"/>'
            f'<text x="{cx}" y="{ty}" class="bytes" text-anchor="middle">{escape(label)}</text></g>')


def _markers(marks: Sequence[Mark], anchors: dict[str, Optional[int]], xs: list[int], cols: list[Column]) -> str:
    parts, stacked = [], {}
    for m in marks:
        i = anchors.get(m.id)
        if i is None:
            continue
        slot = stacked.get(i, 0)
        stacked[i] = slot + 1
        cx = xs[i] + 10 + slot * 20
        parts.append(f'<a href="#{m.id}" class="marker sev-{m.severity}" data-finding="{m.id}">'
                     f'<title>finding {m.number}</title><circle cx="{cx}" cy="14" r="9"/>'
                     f'<text x="{cx}" y="18" text-anchor="middle">{m.number}</text></a>')
    return "".join(parts)
