"""Fix plans applied to a serialized ExportedProgram (`models/model.json`), torch-free.

A plan names view nodes and values; in the JSON a view node `scope/name` is the node
called `name` in the (sub)graph at `scope` (`xferlint.frontends.pt2.view.body_scope`), a
value `scope/v` is `v` there. Rewires rename the operand in the reader's inputs (or in the
graph's outputs and the signature's output specs), removals delete the node, its
`tensor_values` and the metadata asserts (`aten._assert_tensor_metadata`, ops the view
ignores) that read what it wrote. Every edit is checked first (`problem`): the nodes are
found, one by one, in the graph the view says; a rewired value has the dtype, sizes,
strides and layout of the one it replaces (only the device may differ, XF002's direct
copy); afterwards every value a node reads is still defined before it.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator, Optional, Sequence

from xferlint.analyzer.view import MethodView, Node
from xferlint.fixes.plan import OUTPUT, FixPlan
from xferlint.frontends.aten import IGNORED_OPS
from xferlint.frontends.pt2.view import _op_name, body_label, body_scope, scoped, value_refs

_GRAPH_ARG = "as_graph"


def graphs_by_scope(gm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every graph of a serialized graph module by the scope the view gives its nodes."""
    found: dict[str, dict[str, Any]] = {}

    def walk(graph: Any, scope: str) -> None:
        if not isinstance(graph, dict) or scope in found:
            return
        found[scope] = graph
        for node in graph.get("nodes") or ():
            name = node.get("name") if isinstance(node, dict) else None
            if not isinstance(name, str):
                continue
            for k, inp in enumerate(node.get("inputs") or ()):
                arg = inp.get("arg") if isinstance(inp, dict) else None
                body = arg.get(_GRAPH_ARG) if isinstance(arg, dict) else None
                if isinstance(body, dict):
                    walk(body.get("graph"), body_scope(scoped(scope, name), body_label(body, k)))

    walk(gm.get("graph"), "")
    return found


def _local(scope: str, ident: str) -> Optional[str]:
    """`ident` (a view node or value id) as the graph at `scope` names it, or None when it
    belongs to another graph."""
    if not scope:
        return ident if "/" not in ident else None
    prefix = scope + "/"
    rest = ident[len(prefix):] if ident.startswith(prefix) else None
    return rest if rest and "/" not in rest else None


def _index_names(arg: Any, refs: dict[str, list[tuple[dict[str, Any], str]]]) -> None:
    """Add to `refs` every reference to a value in argument `arg` (tensors, tensor lists,
    optional tensors, symbolic scalars): each `name` or `as_name` string, by the value it
    names; never inside a subgraph."""
    if isinstance(arg, list):
        for item in arg:
            _index_names(item, refs)
        return
    if not isinstance(arg, dict):
        return
    for key, body in arg.items():
        if key == _GRAPH_ARG:
            continue
        if key in ("name", "as_name") and isinstance(body, str):
            refs.setdefault(body, []).append((arg, key))
        else:
            _index_names(body, refs)


def _meta_without_device(graph: dict[str, Any], value: str) -> Optional[dict[str, Any]]:
    meta = (graph.get("tensor_values") or {}).get(value)
    if not isinstance(meta, dict):
        return None
    return {k: v for k, v in meta.items() if k != "device"}


class _Edit:
    """One method's edits on a copy of the model JSON."""

    def __init__(self, model: dict[str, Any], method: MethodView) -> None:
        self.model = model
        self.gm = model["graph_module"]
        self.graphs = graphs_by_scope(self.gm)
        self.nodes = {n.name: n for n in method.nodes}
        # scope -> {node name: its JSON nodes}, each graph indexed when first asked: finding
        # a node by scanning its graph, once per node a plan names, was quadratic
        self._named: dict[str, dict[str, list[dict[str, Any]]]] = {}
        # reader -> {value name: the (dict, key) pairs of its operands that name it}, indexed
        # at the reader's first rewire: renaming by walking all of a reader's operands, once
        # per rewire, was quadratic where thousands of rewires meet one reader (an output)
        self._refs: dict[str, dict[str, list[tuple[dict[str, Any], str]]]] = {}

    def json_node(self, name: str) -> tuple[Optional[dict[str, Any]], str, str]:
        """(JSON node, scope, problem) of view node `name`."""
        node: Optional[Node] = self.nodes.get(name)
        if node is None:
            return None, "", f"`{name}` is not in the program"
        graph = self.graphs.get(node.scope)
        local = _local(node.scope, name)
        found = self._find(node.scope, graph, local) if graph is not None and local else []
        if len(found) != 1:
            return None, node.scope, f"`{name}` is no node of the serialized graph"
        return found[0], node.scope, ""

    def _find(self, scope: str, graph: dict[str, Any], name: str) -> list[dict[str, Any]]:
        named = self._named.get(scope)
        if named is None:
            named = self._named[scope] = {}
            for n in graph.get("nodes") or ():
                if isinstance(n, dict):
                    named.setdefault(n.get("name"), []).append(n)
        return named.get(name, [])

    def plan_problem(self, plan: FixPlan) -> Optional[str]:
        """Why `plan` cannot be written into the model JSON (None: it can)."""
        for name in plan.removes:
            jnode, _, problem = self.json_node(name)
            if jnode is None:
                return problem
        for r in plan.rewires:
            problem = self.rewire_problem(r.reader, r.old, r.new)
            if problem:
                return problem
        return None

    def rewire_problem(self, reader: str, old: str, new: str) -> Optional[str]:
        if reader == OUTPUT:
            scope = ""
        else:
            jnode, scope, problem = self.json_node(reader)
            if jnode is None:
                return problem
        lold, lnew = _local(scope, old), _local(scope, new)
        if lold is None or lnew is None:
            return f"`{reader}` would read `{new}` from another graph"
        graph = self.graphs[scope]
        before, after = _meta_without_device(graph, lold), _meta_without_device(graph, lnew)
        if before is None or after is None or before != after:
            return f"`{new}` differs from `{old}` in dtype, shape or layout, so `{reader}` cannot read it instead"
        return None

    def rewire(self, reader: str, old: str, new: str) -> None:
        """Make `reader` read `new` where it reads `old`: every reference to `old` among its
        operands (OUTPUT's: the graph's outputs and output specs), found through the
        reader's index of the names its operands hold."""
        refs = self._refs.get(reader)
        if reader == OUTPUT:
            lold, lnew = old, new
            if refs is None:
                refs = self._refs[reader] = {}
                _index_names(self.graphs[""].get("outputs"), refs)
                _index_names((self.gm.get("signature") or {}).get("output_specs"), refs)
        else:
            jnode, scope, _ = self.json_node(reader)
            lold, lnew = _local(scope, old), _local(scope, new)
            if refs is None:
                refs = self._refs[reader] = {}
                for inp in jnode.get("inputs") or ():
                    if isinstance(inp, dict) and inp.get("name") != "out":
                        _index_names(inp.get("arg"), refs)
        if lold is None or lold == lnew:
            return
        moved = refs.pop(lold, [])
        for holder, key in moved:
            holder[key] = lnew
        refs.setdefault(lnew, []).extend(moved)

    def remove(self, names: Sequence[str]) -> None:
        gone: dict[str, set[str]] = {}
        dropped: dict[str, set[int]] = {}  # scope -> ids of its JSON nodes to drop, in one pass
        for name in names:
            jnode, scope, _ = self.json_node(name)
            dropped.setdefault(scope, set()).add(id(jnode))
            gone.setdefault(scope, set()).update(_outputs(jnode))
        self._named.clear()  # the graphs' node lists are rebuilt below
        for scope, values in gone.items():
            graph = self.graphs[scope]
            drop = dropped[scope]
            graph["nodes"] = [n for n in graph["nodes"]
                              if id(n) not in drop and not (_ignored(n) and set(_inputs(n)) & values)]
            tensors = graph.get("tensor_values") or {}
            for value in values:
                tensors.pop(value, None)

    def undefined(self) -> set[tuple[str, str]]:
        """(scope, value) pairs some node reads before (or without) a definition."""
        missing = set()
        for scope, graph in self.graphs.items():
            defined = {r for arg in graph.get("inputs") or () for r in value_refs(arg, scope or "graph")}
            for node in graph.get("nodes") or ():
                missing.update((scope, r) for r in _inputs(node) if r not in defined)
                defined.update(_outputs(node))
            missing.update((scope, r) for arg in graph.get("outputs") or ()
                           for r in value_refs(arg, scope or "graph") if r not in defined)
        return missing


def _inputs(node: dict[str, Any]) -> Iterator[str]:
    for inp in node.get("inputs") or ():
        if isinstance(inp, dict) and inp.get("name") != "out":
            yield from value_refs(inp.get("arg"), "node")


def _outputs(node: dict[str, Any]) -> set[str]:
    return {r for out in node.get("outputs") or () for r in value_refs(out, "node")}


def _ignored(node: dict[str, Any]) -> bool:
    target = node.get("target")
    return isinstance(target, str) and _op_name(target)[0] in IGNORED_OPS


def plan_problems(model: dict[str, Any], method: MethodView, plans: Sequence[FixPlan]) -> list[Optional[str]]:
    """`plan_problem` of each plan, the model JSON indexed once for all of them (reading
    it again per plan was quadratic in plans)."""
    edit = _Edit(model, method)
    return [edit.plan_problem(plan) for plan in plans]


def apply_plans(model: dict[str, Any], method: MethodView, plans: Sequence[FixPlan]) -> dict[str, Any]:
    """A copy of `model` with the resolved `plans` applied; raises ValueError when the
    edits leave a node reading a value that is no longer defined before it."""
    fixed = copy.deepcopy(model)
    edit = _Edit(fixed, method)
    before = _Edit(model, method).undefined()
    for plan in plans:
        for r in plan.rewires:
            edit.rewire(r.reader, r.old, r.new)
    edit.remove(list(dict.fromkeys(n for plan in plans for n in plan.removes)))
    broken = edit.undefined() - before
    if broken:
        scope, value = sorted(broken)[0]
        raise ValueError(f"the fixed graph would read `{scoped(scope, value)}` before anything defines it")
    return fixed
