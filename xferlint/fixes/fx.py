"""Applying fix plans to FX graph modules, one round at a time, each round verified.

`FxIndex` finds the FX node behind each view name, following the frontend's naming
(`name`, `cond.true_graph_0/name` inside bodies, `name[i]` for tuple elements, which
resolve to their getitem). `apply_plans` edits a graph module in place: rewires first,
then removals (readers before what they read), each removed node together with the
`memory.alloc` it writes into, then `graph.lint()`. `fix_graph_module` runs the rounds:
plan on the view, apply to a scratch copy, re-read and check it, then apply for real.
Works the same on functional graphs (before `ToOutVarPass`) and on out-variant graphs
(`to_out_var_pass`, ExecutorchProgramManager).
"""

from __future__ import annotations

import copy
import itertools
import operator
from typing import Any, Optional, Sequence

import torch
import torch.fx

from xferlint.analyzer.view import MethodView, ProgramView
from xferlint.errors import FixError
from xferlint.findings import Finding
from xferlint.fixes.engine import MAX_ROUNDS, MethodPlanning, check_fixed, plan_method
from xferlint.fixes.outcome import MethodOutcome, Skipped
from xferlint.fixes.plan import OUTPUT, FixPlan, edits
from xferlint.frontends.executorch import read_method
from xferlint.rules.base import Rule

_BODY_ARGS = {"cond": (1, 2), "map_impl": (0,), "scan": (0,), "while_loop": (0, 1)}


def _hop_name(node: torch.fx.Node) -> Optional[str]:
    if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
        return getattr(node.target, "__name__", None)
    return None


def is_alloc(node: Any) -> bool:
    return (isinstance(node, torch.fx.Node) and node.op == "call_function"
            and getattr(node.target, "__name__", "") == "alloc"
            and (getattr(node.target, "__module__", "") or "").startswith("executorch.exir.memory"))


class FxIndex:
    """View node names and value ids -> FX nodes of a graph module and its bodies."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm
        self.nodes: dict[str, torch.fx.Node] = {}
        self.graphs: list[torch.fx.Graph] = []
        self._walk(gm, "")

    def _walk(self, gm: torch.fx.GraphModule, scope: str) -> None:
        self.graphs.append(gm.graph)
        for node in gm.graph.nodes:
            vid = f"{scope}/{node.name}" if scope else node.name
            self.nodes.setdefault(vid, node)
            for user in node.users:  # tuple elements: `name[i]` is read through its getitem
                if user.target is operator.getitem and isinstance(user.args[1], int):
                    self.nodes.setdefault(f"{vid}[{user.args[1]}]", user)
            hop = _hop_name(node)
            for position in _BODY_ARGS.get(hop or "", ()):
                attr = node.args[position] if position < len(node.args) else None
                body = getattr(gm, str(attr.target), None) if isinstance(attr, torch.fx.Node) else None
                if isinstance(body, torch.fx.GraphModule):
                    self._walk(body, f"{vid}.{attr.target}")

    def node(self, name: str) -> torch.fx.Node:
        if name == OUTPUT:
            return next(n for n in reversed(self.gm.graph.nodes) if n.op == "output")
        found = self.nodes.get(name)
        if found is None:
            raise FixError(f"the plan names `{name}`, which is not in the graph")
        return found


def apply_plans(gm: torch.fx.GraphModule, plans: Sequence[FixPlan]) -> None:
    """Apply resolved plans to `gm` in place and lint every graph they touched."""
    index = FxIndex(gm)
    rewires, removes = edits(plans)
    touched: set[torch.fx.Graph] = set()
    for reader in _rewired(index, rewires):
        touched.add(reader.graph)
    order = {node: i for i, node in enumerate(itertools.chain.from_iterable(g.nodes for g in index.graphs))}
    for node in sorted((index.node(name) for name in removes), key=order.__getitem__, reverse=True):
        if node.users:
            users = ", ".join(f"`{u.name}`" for u in node.users)
            raise FixError(f"`{node.name}` cannot be removed: {users} still read it")
        buffers = [v for v in node.kwargs.values() if is_alloc(v)]
        node.graph.erase_node(node)
        for alloc in buffers:
            if not alloc.users:
                alloc.graph.erase_node(alloc)
        touched.add(node.graph)
    for graph in touched:
        graph.lint()
    for module in gm.modules():
        if isinstance(module, torch.fx.GraphModule) and module.graph in touched:
            module.recompile()


class _Renames:
    """The rewires of one reader so far: `Node.replace_input_with` in effect, each applied
    to the reader's arguments only once, by `apply` (torch.fx walks every argument of the
    reader per call: thousands of fixes into one `aten.cat` or the output were quadratic)."""

    __slots__ = ("inputs", "to", "held")

    def __init__(self, reader: torch.fx.Node) -> None:
        self.inputs = set(reader.all_input_nodes)  # what the reader reads now
        self.to: dict[torch.fx.Node, torch.fx.Node] = {}  # an original input -> what replaces it
        self.held: dict[torch.fx.Node, list] = {}  # a replacement -> the original inputs it holds

    def replace(self, old: torch.fx.Node, new: torch.fx.Node) -> None:
        """Every argument that reads `old` now reads `new` (the originals renamed to `old`
        before, and `old` itself unless it was renamed away)."""
        moved = self.held.pop(old, [])
        if old not in self.to:
            moved.append(old)
        for original in moved:
            self.to[original] = new
        self.held.setdefault(new, []).extend(moved)
        self.inputs.discard(old)
        self.inputs.add(new)

    def apply(self, reader: torch.fx.Node) -> None:
        to = self.to
        reader.args = torch.fx.map_arg(reader.args, lambda n: to.get(n, n))
        reader.kwargs = torch.fx.map_arg(reader.kwargs, lambda n: to.get(n, n))


def _rewired(index: FxIndex, rewires: Sequence[Any]) -> list[torch.fx.Node]:
    """Apply `rewires` in order, as `replace_input_with` one after another would leave the
    graph: the same arguments, and each node's users in the same order (a reader moves to
    the end of its inputs' users when its arguments are set, so readers are set in the order
    of their last rewire). Returns the readers."""
    pending: dict[torch.fx.Node, _Renames] = {}
    for rewire in rewires:
        reader, old, new = index.node(rewire.reader), index.node(rewire.old), index.node(rewire.new)
        renames = pending.pop(reader, None) or _Renames(reader)
        pending[reader] = renames  # re-inserted: the dict ends in last-rewire order
        if old not in renames.inputs:
            raise FixError(f"`{rewire.reader}` does not read `{rewire.old}`")
        if new.graph is not reader.graph:
            raise FixError(f"`{rewire.new}` and `{rewire.reader}` are in different graphs")
        module = reader.graph.owning_module  # the hooks replace_input_with calls, per rewire
        for hook in getattr(module, "_replace_hooks", None) or ():
            hook(old=old, new=new.name, user=reader)
        renames.replace(old, new)
    for reader, renames in pending.items():
        renames.apply(reader)
    return list(pending)


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (FX lint errors append whole graphs)."""
    return (str(exc).strip().splitlines() or [""])[0]


def scratch_copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A deep copy of `gm` that shares delegates, parameters and constants (fixes never
    change those, and large programs hold gigabytes in them)."""
    memo: dict[int, Any] = {}
    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            memo[id(module)] = module
    for tensor in itertools.chain(gm.parameters(), gm.buffers()):
        memo[id(tensor)] = tensor
    for value in vars(gm).values():
        if isinstance(value, torch.Tensor):
            memo[id(value)] = value
    return copy.deepcopy(gm, memo)


def _skip(item: Any, reason: str, unsafe: bool = False) -> Skipped:
    return Skipped(code=item.code, name=item.name, method=item.method, nodes=tuple(item.finding),
                   reason=reason, unsafe=unsafe)


def fix_graph_module(
    gm: torch.fx.GraphModule,
    method: str,
    rules: Sequence[Rule],
    *,
    program: Optional[ProgramView] = None,
    signature: Any = None,
    unsafe_fixes: bool = False,
    strict: bool = False,
) -> MethodOutcome:
    """Fix one method's graph module in place, round by round; each round is applied to a
    scratch copy, linted, re-read and checked first, and applied for real only if that
    passes (plans that fail are dropped one by one and reported with the reason)."""
    program = program or ProgramView(input="<graph>", name="program", kind="graph")

    def read(module: torch.fx.GraphModule) -> MethodView:
        return read_method(method, module, signature, strict=strict)

    before = read(gm)
    view = before
    refused: dict[tuple, Skipped] = {}
    applied: list[FixPlan] = []
    findings: Optional[list[Finding]] = None
    planning: Optional[MethodPlanning] = None
    for _ in range(MAX_ROUNDS + 1):
        planning = plan_method(program, view, rules, unsafe_fixes, exclude=refused)
        findings = planning.findings if findings is None else findings
        if not planning.plans:
            break
        good, checked = _verified(gm, planning, read, program, rules, refused)
        if good:
            apply_plans(gm, good)  # the same edits the scratch copy took: `checked` is its view
            view = checked
            applied.extend(good)
    else:  # pragma: no cover - a planner that keeps finding work: never seen, but never loop forever
        for plan in planning.plans:
            refused[plan.key] = _skip(plan, f"still planned after {MAX_ROUNDS} rounds")
    assert planning is not None
    skipped = list(refused.values())
    skipped += [_skip(n, n.reason) for n in planning.no_fix]
    skipped += [_skip(p, "unsafe fix: " + p.summary, unsafe=True) for p in planning.unsafe]
    return MethodOutcome(method=method, before=before, after=view, findings=findings or [], applied=applied,
                         skipped=skipped, remaining=planning.findings)


def _verified(gm, planning: MethodPlanning, read, program, rules, refused
              ) -> tuple[list[FixPlan], Optional[MethodView]]:
    """The plans of this round that verify (all of them, else those that do when added one
    at a time) and the view of the scratch copy they were checked on."""
    checked: dict[str, MethodView] = {}

    def attempt(plans: list[FixPlan]) -> Optional[str]:
        scratch = scratch_copy(gm)
        try:
            apply_plans(scratch, plans)
            after = read(scratch)
        except Exception as exc:  # noqa: BLE001 - any failure means: do not apply
            return first_line(exc) if isinstance(exc, FixError) else f"{type(exc).__name__}: {first_line(exc)}"
        problem = check_fixed(program, after, rules, planning, plans)
        if problem is None:
            checked["view"] = after
        return problem

    problem = attempt(planning.plans)
    if problem is None:
        return planning.plans, checked["view"]
    selected = planning.selected
    if len(selected) == 1:
        refused[selected[0].key] = _skip(selected[0], f"not applied, it did not verify: {problem}")
        return [], None
    kept: list[FixPlan] = []
    for plan in selected:
        problem = attempt(planning.resolve(kept + [plan]))
        if problem is None:
            kept.append(plan)
        else:
            refused[plan.key] = _skip(plan, f"not applied, it did not verify: {problem}")
    return (planning.resolve(kept), checked["view"]) if kept else ([], None)


__all__ = ["FxIndex", "MethodOutcome", "Skipped", "apply_plans", "fix_graph_module", "scratch_copy"]
