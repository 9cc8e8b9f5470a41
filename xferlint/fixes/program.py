"""Fixing whole programs: ExecutorchProgramManager, EdgeProgramManager, and the pass.

- `FixTransfersPass` goes into `ExecutorchBackendConfig.to_out_var_pass`. It runs the
  pass it wraps (ExecuTorch's default `ToOutVarPass` unless told otherwise), then fixes
  the out-variant graph. That hook runs after `PropagateDevicePass` has inserted the
  copies and before memory planning, so the planner sees the fixed graph.
- `fix_edge_program` lowers a copy of an EdgeProgramManager with that pass.
- `fix_executorch_program` fixes an ExecutorchProgramManager, which is already planned and
  emitted: it fixes a copy of each method's final graph, plans memory again (removing a
  copy makes the tensor that replaces it live longer, so the old plan is not trusted) and
  emits a new ExecutorchProgramManager.

Each route verifies what it does (see fixes/fx.py for the per-round checks) and ends with
ExecuTorch emitting the program; if emission fails, the unfixed program is returned and
every fix is reported as not applied, with ExecuTorch's error.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from typing import Any, Optional, Sequence

import torch
from torch.fx.passes.infra.pass_base import PassBase, PassResult

from xferlint.analyzer.view import ProgramView
from xferlint.errors import FixError
from xferlint.findings import Finding
from xferlint.fixes.fx import MethodOutcome, Skipped, first_line, fix_graph_module
from xferlint.fixes.result import FixResult
from xferlint.rules.base import Rule
from xferlint.selection import select_rules


class FixTransfersPass(PassBase):
    """A `to_out_var_pass` that runs `inner` and then applies xferlint's fixes.

        config = ExecutorchBackendConfig(to_out_var_pass=FixTransfersPass())
        et_program = edge_program.to_executorch(config)

    `outcomes` lists what each call (one per method, in `to_executorch`'s order) fixed.
    Each round of fixes is applied to a scratch copy, linted, re-analysed and checked
    before the graph is touched; emission happens in `to_executorch` itself, after this
    pass (`xferlint.fix()` checks that too and falls back to the unfixed program).
    """

    def __init__(
        self,
        inner: Optional[Any] = None,
        *,
        select: Optional[Sequence[str]] = None,
        ignore: Optional[Sequence[str]] = None,
        unsafe_fixes: bool = False,
        strict: bool = False,
        rules: Optional[Sequence[Rule]] = None,
        method_names: Optional[Sequence[str]] = None,
        origin: Optional[ProgramView] = None,
    ) -> None:
        super().__init__()
        if inner is None:
            from executorch.exir.passes import ToOutVarPass

            inner = ToOutVarPass(ignore_to_out_var_failure=False)
        self.inner = inner
        self.rules: list[Rule] = list(rules) if rules is not None else select_rules(select=select, ignore=ignore)
        self.unsafe_fixes = unsafe_fixes
        self.strict = strict
        self.method_names = list(method_names or ())
        self.origin = origin or ProgramView(input="to_executorch", name="program", kind="graph")
        self.outcomes: list[MethodOutcome] = []

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        result = self.inner(graph_module)
        graph_module = result.graph_module if result is not None else graph_module
        index = len(self.outcomes)
        method = self.method_names[index] if index < len(self.method_names) else f"method {index}"
        outcome = fix_graph_module(graph_module, method, self.rules, program=self.origin,
                                   unsafe_fixes=self.unsafe_fixes, strict=self.strict)
        self.outcomes.append(outcome)
        return PassResult(graph_module, True)


# --------------------------------------------------------------------------- edge programs


def fix_edge_program(edge: Any, rules: Sequence[Rule], origin: ProgramView, *, unsafe_fixes: bool = False,
                     strict: bool = False, config: Any = None) -> FixResult:
    """`to_executorch` a copy of `edge` with FixTransfersPass wrapping `config`'s
    `to_out_var_pass`; the unfixed lowering (and why) if the fixed one does not emit."""
    from executorch.exir import ExecutorchBackendConfig

    config = config or ExecutorchBackendConfig()
    names = list(getattr(edge, "_edge_programs", {}) or sorted(edge.methods))
    fix_pass = FixTransfersPass(config.to_out_var_pass, rules=rules, unsafe_fixes=unsafe_fixes, strict=strict,
                                method_names=names, origin=origin)
    try:
        program = copy.deepcopy(edge).to_executorch(dataclasses.replace(config, to_out_var_pass=fix_pass))
    except Exception as exc:  # noqa: BLE001 - the fixed program does not lower: fall back
        if not any(o.applied for o in fix_pass.outcomes):
            raise
        problem = _emit_failure(exc)
    else:
        problem, findings = _check_emitted(program, fix_pass.outcomes, origin, rules, unsafe_fixes, strict)
        if not problem:
            return _result(program, fix_pass.outcomes, origin, findings)
    return _unfixed(_lower_unfixed(edge, config, origin.input), fix_pass.outcomes, problem, origin, rules, strict)


def _lower_unfixed(edge: Any, config: Any, label: str) -> Any:
    try:
        return copy.deepcopy(edge).to_executorch(config)
    except Exception as exc:  # noqa: BLE001 - the program itself does not lower
        raise FixError(f"{label}: ExecuTorch cannot lower the program even without fixes "
                       f"({type(exc).__name__}: {first_line(exc)})") from None


# --------------------------------------------------------------------------- executorch programs


def fix_executorch_program(program: Any, rules: Sequence[Rule], origin: ProgramView, *,
                           unsafe_fixes: bool = False, strict: bool = False, config: Any = None,
                           memory_planning_pass: Any = None) -> FixResult:
    """Fix a copy of every method's final graph, plan memory again, emit a new program."""
    from executorch.exir import ExecutorchProgramManager

    methods: dict[str, Any] = {}
    outcomes: list[MethodOutcome] = []
    notes: list[str] = []
    for name in sorted(program.methods):
        ep = _copy_program(program.exported_program(name))
        outcome = fix_graph_module(ep.graph_module, name, rules, program=origin, signature=ep.graph_signature,
                                   unsafe_fixes=unsafe_fixes, strict=strict)
        if outcome.applied:
            planner = memory_planning_pass or inferred_memory_planning(ep)
            restore_mutation_outputs(ep)
            replan_memory(ep, planner)
            notes.append(f"{name}: memory planned again ({_describe_planner(planner)})")
        methods[name] = ep
        outcomes.append(outcome)
    if not any(o.applied for o in outcomes):
        return _unfixed(program, outcomes, "", origin, rules, strict)
    try:
        fixed = ExecutorchProgramManager(methods, getattr(program, "_config_methods", None),
                                         config or _default_backend_config(), getattr(program, "_named_data", None))
    except Exception as exc:  # noqa: BLE001 - ExecuTorch could not emit it: keep the original
        return _unfixed(program, outcomes, _emit_failure(exc), origin, rules, strict)
    problem, findings = _check_emitted(fixed, outcomes, origin, rules, unsafe_fixes, strict)
    if problem:
        return _unfixed(program, outcomes, problem, origin, rules, strict)
    result = _result(fixed, outcomes, origin, findings)
    result.notes = notes
    return result


def _default_backend_config() -> Any:
    """ExecuTorch's default emission options (an emitted program does not record the ones it
    was made with; pass `config` to choose others)."""
    from executorch.exir import ExecutorchBackendConfig

    return ExecutorchBackendConfig()


def _copy_program(ep: Any) -> Any:
    """A deep copy of an ExportedProgram sharing delegates, weights and constants."""
    memo: dict[int, Any] = {}
    for module in ep.graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            memo[id(module)] = module
    for tensor in itertools.chain(ep.state_dict.values(), ep.constants.values()):
        memo[id(tensor)] = tensor
    copied = copy.deepcopy(ep, memo)
    _unshare_specs(copied.graph_module)
    return copied


def _unshare_specs(gm: torch.fx.GraphModule) -> None:
    """Give a copied graph TensorSpecs of its own: FX copies `node.meta` shallowly, so the
    copy would plan memory into the original program's specs. Specs shared between nodes
    (an out-variant node and its `memory.alloc`) stay shared in the copy."""
    from executorch.exir.tensor import TensorSpec

    copies: dict[int, Any] = {}

    def own(spec: Any) -> Any:
        if isinstance(spec, TensorSpec):
            if id(spec) not in copies:
                copies[id(spec)] = copy.copy(spec)
            return copies[id(spec)]
        if isinstance(spec, (list, tuple)):
            return type(spec)(own(s) for s in spec)
        return spec

    for module in gm.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                if "spec" in node.meta:
                    node.meta["spec"] = own(node.meta["spec"])
    for spec in copies.values():
        base = getattr(spec, "storage_base", None)
        if base is not None and id(base) in copies:
            spec.storage_base = copies[id(base)]


def inferred_memory_planning(ep: Any) -> Any:
    """A MemoryPlanningPass configured the way the old plan was made: graph inputs and
    outputs planned or not, device buffers split out or not."""
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.exir.tensor import TensorSpec

    gm = ep.graph_module
    user_inputs = set(ep.graph_signature.user_inputs)
    inputs = [n.meta.get("spec") for n in gm.graph.nodes if n.op == "placeholder" and n.name in user_inputs]
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    outputs = [a.meta.get("spec") for a in output.all_input_nodes]

    def planned(specs: list) -> bool:
        tensors = [s for s in specs if isinstance(s, TensorSpec)]
        return not tensors or any(s.mem_id is not None for s in tensors)

    planner = MemoryPlanningPass(alloc_graph_input=planned(inputs), alloc_graph_output=planned(outputs))
    planner.enable_non_cpu_memory_planning = "non_const_buffer_device" in gm.meta
    return planner


def _describe_planner(planner: Any) -> str:
    flags = [f"{k}={getattr(planner, k)}" for k in ("alloc_graph_input", "alloc_graph_output",
                                                      "enable_non_cpu_memory_planning") if hasattr(planner, k)]
    return f"{type(planner).__name__}({', '.join(flags)})"


def restore_mutation_outputs(ep: Any) -> None:
    """Put the buffer write-backs back among the graph's outputs, where emission expects them.

    `to_executorch` returns each mutated buffer (or mutated input) from the graph, ahead of
    the user outputs, as its signature's BUFFER_MUTATION / USER_INPUT_MUTATION outputs say;
    emission then drops those outputs from the graph in place, pairing outputs with specs by
    position. An emitted graph is therefore one that emission would misread: the user
    outputs would be taken for write-backs and dropped. This restores what `to_executorch`
    planned and emitted: per mutation spec, the write-back into that buffer or input (the
    last `copy_` into it, else the last in-place op on it, else the placeholder itself).
    """
    specs = list(ep.graph_signature.output_specs)
    kinds = [getattr(s.kind, "name", "") for s in specs]
    mutations = [i for i, k in enumerate(kinds) if k in ("BUFFER_MUTATION", "USER_INPUT_MUTATION")]
    graph = ep.graph_module.graph
    output = graph.output_node()
    current = list(output.args[0]) if output.args and isinstance(output.args[0], (list, tuple)) else []
    if not mutations or len(current) != len(specs) - len(mutations):
        return  # nothing was stripped (or a shape we do not recognize: leave it)
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    by_target = {s.target: placeholders.get(getattr(s.arg, "name", "")) for s in ep.graph_signature.input_specs
                 if s.target is not None}
    by_target.update({s.arg.name: placeholders.get(s.arg.name) for s in ep.graph_signature.input_specs
                      if getattr(s.kind, "name", "") == "USER_INPUT" and hasattr(s.arg, "name")})
    users = iter(current)
    restored = []
    for spec, kind in zip(specs, kinds):
        if kind not in ("BUFFER_MUTATION", "USER_INPUT_MUTATION"):
            restored.append(next(users))
            continue
        target = by_target.get(spec.target)
        if target is None:
            return
        writes = [n for n in graph.nodes if n.op == "call_function" and n.args and n.args[0] is target
                  and getattr(getattr(n.target, "_schema", None), "name", "").endswith("_")]
        copies = [n for n in writes if "copy_" in str(n.target)]
        restored.append((copies or writes or [target])[-1])
    output.args = (tuple(restored),)
    ep.graph_module.recompile()


def replan_memory(ep: Any, planner: Any) -> None:
    """Forget the old memory plan of `ep` and plan it again with `planner`."""
    from executorch.exir.memory import free
    from executorch.exir.memory_planning import _is_out_var_node
    from executorch.exir.operator.convert import get_out_args_from_opoverload
    from executorch.exir.tensor import TensorSpec

    gm = ep.graph_module
    signature = ep.graph_signature
    mutated = {name for name, fqn in signature.inputs_to_buffers.items() if fqn in signature.buffers_to_mutate.values()}
    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in list(module.graph.nodes):
            if module is gm and node.op == "placeholder" and node.target in mutated:
                # Emission marks an initialized mutable buffer const (its initial value is
                # serialized) but it is planned memory: planning must see it as before.
                node.meta["spec"].const = False
            if node.op == "call_function" and node.target is free:
                module.graph.erase_node(node)  # planning inserts the frees it needs again
                continue
            specs = node.meta.get("spec")
            for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
                if isinstance(spec, TensorSpec):
                    spec.lifetime = [None, None]
                    spec.mem_id = spec.mem_obj_id = spec.mem_offset = None
            if _is_out_var_node(node):
                outs = get_out_args_from_opoverload(node.target)
                if len(outs) > 1:  # the planner assigns these allocs' specs once and asserts so
                    for arg in outs:
                        alloc = node.kwargs.get(arg)
                        if isinstance(alloc, torch.fx.Node):
                            alloc.meta.pop("spec", None)
        module.recompile()
    if hasattr(planner, "run"):
        planner.run(gm, ep.graph_signature)
    else:
        planner(gm)


# --------------------------------------------------------------------------- shared


def _emit_failure(exc: BaseException) -> str:
    return f"not applied: ExecuTorch could not emit the fixed program ({type(exc).__name__}: {first_line(exc)})"


def _unapplied(outcomes: list[MethodOutcome], reason: str) -> list[MethodOutcome]:
    """The outcomes with every applied fix turned into a skipped one."""
    result = []
    for o in outcomes:
        skipped = [Skipped(code=p.code, name=p.name, method=p.method, nodes=p.finding, reason=reason)
                   for p in o.applied]
        result.append(dataclasses.replace(o, after=o.before, applied=[], skipped=skipped + o.skipped,
                                          remaining=o.findings))
    return result


def _read(program: Any, origin: ProgramView, strict: bool) -> ProgramView:
    from xferlint.frontends.executorch import load_graph_program

    return load_graph_program(program, input=origin.input, name=origin.name, file=origin.file, strict=strict).view


def _check_emitted(program: Any, outcomes: list[MethodOutcome], origin: ProgramView, rules: Sequence[Rule],
                   unsafe_fixes: bool, strict: bool) -> tuple[str, list[Finding]]:
    """Why the emitted `program` fails verification ("" when it passes), and its findings:
    re-read and re-analysed, none of the fixed findings may be back, and fixing it again
    must change nothing."""
    from xferlint.fixes.engine import plan_method
    from xferlint.fixes.plan import finding_key

    view = _read(program, origin, strict)
    fixed = {p.key for o in outcomes for p in o.applied}
    refused = {(s.code, s.method, s.nodes) for o in outcomes for s in o.skipped}
    findings: list[Finding] = []
    for method in view.methods:
        planning = plan_method(view, method, rules, unsafe_fixes, exclude=refused)
        back = [f for f in planning.findings if finding_key(f) in fixed]
        if back:
            return f"not applied: {back[0].code} on {', '.join(back[0].nodes)} is back in the emitted program", []
        if planning.plans:
            return f"not applied: fixing the emitted program again would still {planning.plans[0].summary}", []
        findings.extend(planning.findings)
    return "", findings


def _result(program: Any, methods: list[MethodOutcome], origin: ProgramView, findings: list[Finding]) -> FixResult:
    """A FixResult for `program`, with the findings it still has."""
    for method in methods:
        method.remaining = [f for f in findings if f.method == method.method]
    return FixResult(input=origin.input, program=program, methods=methods, remaining=findings)


def _unfixed(program: Any, outcomes: list[MethodOutcome], reason: str, origin: ProgramView, rules: Sequence[Rule],
             strict: bool) -> FixResult:
    """The unfixed `program`, every planned fix reported as not applied because of `reason`."""
    from xferlint.pipeline import analyze

    findings = analyze(_read(program, origin, strict), rules)
    return _result(program, _unapplied(outcomes, reason) if reason else outcomes, origin, findings)
