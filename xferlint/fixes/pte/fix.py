"""Fix a `.pte`: XF001 / XF003 / XF004 plans applied at the instruction level.

The plans are the frontend-neutral ones (`xferlint.fixes.engine.plan_method`: rewire these
readers, remove these copies). A `.pte` is already memory planned, and removing a copy
makes its readers read the tensor it copied from, which then has to live longer; each plan
is kept only if the memory plan stays valid (`xferlint.fixes.pte.memory`: nothing planned into
the same bytes is written while that tensor is still to be read), else it is refused with
the reason and the way out (fix the program before it is memory planned: the entry point).
Accepted plans are patched into the file's bytes in place (`xferlint.fixes.pte.patch`), the
result is read back, linted, and must have lost exactly the fixed findings and gained no
new ones; otherwise that method keeps its old instructions. Rounds repeat until nothing is
left to fix.

`check` only wants the decisions (which findings a fix would remove, and why not the
others): `decisions_only` lints the programs the trial reads back with just the rules the
decisions depend on (`_Linter`), and reports nothing about what remains.

Everything here is torch-free.
"""

from bisect import bisect_left
from collections import defaultdict
from itertools import accumulate, count
from typing import Any, Iterable, Optional, Sequence

from xferlint.analyzer.view import MethodView, Node, ProgramView
from xferlint.errors import FixError
from xferlint.findings import Finding, Severity
from xferlint.fixes.engine import MAX_ROUNDS, plan_method
from xferlint.fixes.outcome import MethodOutcome, new_skipped
from xferlint.fixes.plan import OUTPUT, DeadClosure, FixPlan, finding_key, nodes_by_name
from xferlint.fixes.planners import PLANNERS
from xferlint.fixes.result import FixResult
from xferlint.frontends.pte.view import PteNative, kernel_io, load_pte_bytes
from xferlint.frontends.pte import program as pp
from xferlint.fixes.pte.carry import Carry, refusal
from xferlint.fixes.pte.memory import Conflict, Delta, MemoryCheck, WalkBudget, WalkBudgetSpent, describe
from xferlint.fixes.pte.patch import Patcher
from xferlint.rules._lint import lint_method
from xferlint.rules.base import Rule, RuleContext

ENTRY_POINT_ROUTE = (
    "fix the program before it is memory planned instead: `xferlint fix model.py:program -o model.pte` "
    "(or xferlint.fixes.FixTransfersPass() in ExecutorchBackendConfig.to_out_var_pass) plans memory anew"
)


# --------------------------------------------------------------------------- planning


def _index(vid: str) -> int:
    return int(vid[1:])


def _delta(method: MethodView, plan: FixPlan, removed: Iterable[str],
           by_name: Optional[dict[str, Node]] = None) -> Delta:
    """The instruction-level edits of one plan, `removed` the nodes it removes (`by_name`:
    `nodes_by_name(method)`, when the caller has it: asked per plan)."""
    by_name = nodes_by_name(method) if by_name is None else by_name
    rewires: dict[int, dict[str, str]] = {}
    outputs: dict[str, str] = {}
    for r in plan.rewires:
        if r.reader == OUTPUT:
            outputs[r.old] = r.new
        elif r.reader in by_name:
            rewires.setdefault(by_name[r.reader].index, {})[r.old] = r.new
    return Delta(rewires, frozenset(by_name[n].index for n in removed if n in by_name), outputs)


def _instructions(method: MethodView, native: PteNative) -> tuple[dict[str, Node], dict, pp.Plan, dict]:
    """What a patch check reads of one method: its nodes by name, node -> (chain,
    instruction), its execution plan (looked up once per method, not per plan) and the
    memo of `_operand_positions`."""
    mapping = native.methods[method.name]
    return nodes_by_name(method), mapping.instr_of_node, native.program.plans[mapping.plan_index], {}


def _patch_problem(method: MethodView, plan: FixPlan, native: PteNative,
                   removes: Optional[Sequence[str]] = None, at: Optional[tuple] = None) -> Optional[str]:
    """Why this plan cannot be written into the instructions in place (None: it can);
    `removes`: the nodes it removes, when not (only) `plan.removes`; `at`:
    `_instructions(method, native)`, when the caller has it."""
    by_name, instr_of_node, pplan, positions = _instructions(method, native) if at is None else at
    for name in plan.removes if removes is None else removes:
        node = by_name.get(name)
        if node is None or node.index not in instr_of_node:
            return f"`{name}` is not an instruction"
    for r in plan.rewires:
        if r.reader == OUTPUT:
            continue
        node = by_name.get(r.reader)
        if node is None or node.index not in instr_of_node:
            return f"`{r.reader}` is not an instruction"
        c, k = instr_of_node[node.index]
        ins = pplan.chains[c].instructions[k]
        if ins.kind in (pp.KERNEL, pp.DELEGATE):
            if not _operand_positions(pplan, ins, _index(r.old), len(node.outputs), positions):
                return f"`{r.reader}` reads `{r.old}` inside a tensor list, which is shared and not rewritten"
        elif ins.kind == pp.MOVE:
            if ins.move_from != _index(r.old) or ins.move_from == 0:
                return f"`{r.reader}` cannot be rewritten in place"
        elif ins.kind == pp.JUMP_FALSE:
            if ins.cond != _index(r.old) or ins.cond == 0:
                return f"`{r.reader}` cannot be rewritten in place"
        else:
            return f"`{r.reader}` cannot be rewritten"
    return None


_WIDE = 16  # a call with more arguments has its operands' positions indexed once (see below)


def _operand_positions(plan: pp.Plan, ins: pp.Instr, old: int, results: int,
                       memo: Optional[dict] = None) -> Sequence[int]:
    """Argument positions of a call that hold `old` as an operand (not as a result);
    `results`: how many values the view says the call writes (a delegate's trailing args).
    `memo`: where a wide call's positions are indexed by value, once: a fix rewires each
    operand of a delegate with 100,000 arguments, and a scan per rewire is quadratic."""
    args = ins.args
    if ins.kind == pp.KERNEL and plan.operators[ins.index][0] == "executorch_prim::et_copy_index":
        return [1] if len(args) > 1 and args[1] == old else []
    if memo is None or len(args) <= _WIDE:
        return [j for j in range(_operand_count(plan, ins, results)) if args[j] == old]
    hit = memo.get(id(ins))  # by identity: the plan holds the instruction while `memo` lives
    if hit is None or hit[0] is not ins or hit[1] != results:
        index: dict[int, list[int]] = {}
        for j in range(_operand_count(plan, ins, results)):
            index.setdefault(args[j], []).append(j)
        hit = memo[id(ins)] = (ins, results, index)
    return hit[2].get(old, ())


def _operand_count(plan: pp.Plan, ins: pp.Instr, results: int) -> int:
    """How many of a call's arguments are operands (the rest: its results)."""
    if ins.kind == pp.KERNEL:
        return len(kernel_io(plan, plan.operators[ins.index][0], ins.args)[0])
    return len(ins.args) - results


def _apply(patcher: Patcher, native: PteNative, method: MethodView, plans: Sequence[FixPlan]) -> None:
    mapping = native.methods[method.name]
    pplan = native.program.plans[mapping.plan_index]
    by_name = nodes_by_name(method)
    removals: dict[int, set[int]] = defaultdict(set)
    memo: dict = {}  # _operand_positions' index of wide calls
    outputs: list[tuple[int, int]] = []  # returned values replaced, in order: one pass over the outputs
    for plan in plans:
        for r in plan.rewires:
            old, new = _index(r.old), _index(r.new)
            if r.reader == OUTPUT:
                outputs.append((old, new))
                continue
            reader = by_name[r.reader]
            c, k = mapping.instr_of_node[reader.index]
            ins = pplan.chains[c].instructions[k]
            if ins.kind in (pp.KERNEL, pp.DELEGATE):
                positions = _operand_positions(pplan, ins, old, len(reader.outputs), memo)
                patcher.rewire_args(mapping.plan_index, c, k, positions, old, new)
            elif ins.kind == pp.MOVE:
                patcher.rewire_field(mapping.plan_index, c, k, pp._MOVE_FROM, old, new)
            elif ins.kind == pp.JUMP_FALSE:
                patcher.rewire_field(mapping.plan_index, c, k, pp._JF_COND, old, new)
        for name in plan.removes:
            c, k = mapping.instr_of_node[by_name[name].index]
            removals[c].add(k)
    if outputs:
        patcher.rewire_outputs(mapping.plan_index, outputs)
    for c, ks in sorted(removals.items()):
        patcher.remove_instructions(mapping.plan_index, c, ks)


def _renames(before: PteNative, after: PteNative, method: str, removed: dict[int, set[int]],
             old_view: MethodView, new_view: MethodView) -> tuple[dict[str, str], dict[int, int]]:
    """(new node name -> the name the same node had before the instructions were removed,
    old node index -> new index): both in one walk, the second for `Carry.advance`."""
    old_map, new_map = before.methods[method], after.methods[method]
    old_nodes, new_nodes = old_view.nodes, new_view.nodes
    names = {}
    moved = {}
    for old_index, new_index in _kept_instructions(old_map, new_map, removed):
        names[new_nodes[new_index].name] = old_nodes[old_index].name
        moved[old_index] = new_index
    old_by_name = nodes_by_name(old_view)
    for node in new_nodes[: new_map.first_instruction_node]:
        names[node.name] = node.name
        old = old_by_name.get(node.name)
        if old is not None:
            moved[old.index] = node.index
    return names, moved


def _kept_instructions(old_map: Any, new_map: Any, removed: dict[int, set[int]]) -> Iterable[tuple[int, int]]:
    """(old node index, new node index) of every instruction the patch kept, in order.
    Instruction nodes are numbered in instruction order, chain after chain (`PteMethodMap`),
    and removing instructions keeps the others' order: when every chain lost exactly its
    removed instructions, the kept ones are the new instruction nodes, one for one (no
    per-instruction lookup in the maps, which would first be built for this)."""
    lengths = old_map.chain_lengths
    if new_map.chain_lengths == tuple(n - len(removed.get(c, ())) for c, n in enumerate(lengths)):
        first = old_map.first_instruction_node
        starts = list(accumulate(lengths[:-1], initial=first))  # each chain's first node
        gone = {starts[c] + k for c, ks in removed.items() for k in ks}
        kept = [i for i in range(first, first + sum(lengths)) if i not in gone]
        return zip(kept, count(new_map.first_instruction_node))
    return _kept_by_position(old_map, new_map, removed)  # not what a patch leaves: as the maps say


def _kept_by_position(old_map: Any, new_map: Any, removed: dict[int, set[int]]) -> list[tuple[int, int]]:
    """`_kept_instructions` looked up instruction by instruction in the maps."""
    pairs = []
    ordered = {c: sorted(ks) for c, ks in removed.items()}  # bisected: a count per node was quadratic
    for node_index, (c, k) in old_map.instr_of_node.items():
        if k in removed.get(c, ()):
            continue
        new_index = new_map.node_of_instr.get((c, k - bisect_left(ordered.get(c, ()), k)))
        if new_index is not None:
            pairs.append((node_index, new_index))
    return pairs


class _Linter:
    """How a fix trial lints a method: with every rule, or (`decisions_only`) with the
    rules the trial's decisions depend on, those that plan fixes and those that report
    errors: planning reads only planned rules' findings, and `_verify` only the fixed
    rules' and errors (a finding's code and severity are its rule's, `RuleContext.finding`).
    The program the trial starts from is linted with every rule (the check did that
    already) and its findings are filtered; the programs it reads back are linted with the
    subset, and those lints are kept here, not in the process-wide cache of
    `xferlint.rules._lint`: they go when the trial does."""

    __slots__ = ("rules", "origin", "subset", "codes", "kept")

    def __init__(self, rules: Sequence[Rule], origin: ProgramView, decisions_only: bool = False) -> None:
        self.rules = rules
        self.origin = origin
        # only the package's rules are known to report under their own code alone
        own = all(type(r).__module__.startswith("xferlint.rules.") for r in rules)
        self.subset: Optional[list[Rule]] = None
        if decisions_only and own:
            self.subset = [r for r in rules if r.code in PLANNERS or r.severity == Severity.ERROR]
        self.codes = frozenset(r.code for r in self.subset or ())
        self.kept: dict[int, tuple[MethodView, RuleContext, list[Finding]]] = {}

    @property
    def full(self) -> bool:
        return self.subset is None

    def __call__(self, view: ProgramView, method: MethodView) -> tuple[RuleContext, list[Finding]]:
        if self.subset is None:
            return lint_method(view, method, self.rules)
        if view is self.origin:
            ctx, findings = lint_method(view, method, self.rules)
            return ctx, [f for f in findings if f.code in self.codes]
        return lint_method(view, method, self.subset, kept=self.kept)

    def findings(self, view: ProgramView, method: MethodView) -> list[Finding]:
        return self(view, method)[1]


def _skip(outcome: MethodOutcome, exclude: set, plans: Sequence[FixPlan], reason: str) -> None:
    for plan in plans:
        outcome.skipped.append(new_skipped(code=plan.code, name=plan.name, method=plan.method,
                                           nodes=tuple(plan.finding), reason=reason))
        exclude.add(plan.key)


def _memory_refusal(method: MethodView, conflict: Conflict) -> str:
    return f"the memory plan would break: {describe(method, conflict)}; {ENTRY_POINT_ROUTE}"


def _budget_refusal(spent: WalkBudgetSpent) -> str:
    return (f"not proved: showing that the memory plan stays valid would take the live-range walks past "
            f"the fix trial's work budget ({spent.budget:,} steps for this program, which keeps the check "
            "linear); `xferlint fix` applies the fixes it proved, and run again it proves more")


def _keep(carry: Carry, index: int, method: MethodView, plan: FixPlan, conflict: Conflict, regions: list,
          delta: Delta) -> None:
    """Keep the proof of a refusal decided with nothing accepted, for the next pass: built
    when first asked for (`xferlint.fixes.pte.carry`); none when a region is not at hand."""
    if any(region is None for region in regions):
        return
    carry.keep(index, plan.key, lambda: refusal(method, plan, conflict, regions, [*delta.removed, *delta.rewires]))


def _decide(view: ProgramView, index: int, native: PteNative, linter: _Linter, unsafe_fixes: bool,
            outcome: MethodOutcome, exclude: set, carry: Carry) -> Optional[tuple[Any, list[FixPlan]]]:
    """Plan one round on one method and keep the plans the memory plan allows; returns
    (planning, resolved plans to apply), or None when nothing is left to apply. `carry`:
    the refusals of earlier rounds and passes proved unchanged (`xferlint.fixes.pte.carry`),
    and those of this round are added to it."""
    method = view.methods[index]
    # unresolved: only the accepted plans are resolved (`_patchable` says why that is the same)
    planning = plan_method(view, method, linter.rules, unsafe_fixes, exclude=exclude, lint=linter, resolved=False)
    for no in planning.no_fix:
        outcome.skipped.append(new_skipped(code=no.code, name=no.name, method=no.method, nodes=tuple(no.finding),
                                           reason=no.reason))
        exclude.add(no.key)
    for plan in planning.unsafe:
        outcome.skipped.append(new_skipped(code=plan.code, name=plan.name, method=plan.method,
                                           nodes=tuple(plan.finding), reason="the fix is unsafe: " + plan.summary,
                                           unsafe=True))
        exclude.add(plan.key)
    if not planning.selected:  # nothing to decide: no closure, no memory plan to index
        return None
    accepted: list[FixPlan] = []
    closure = DeadClosure(method, planning.facts)  # what the accepted plans remove, grown per plan
    memory = MemoryCheck(method, planning.facts, carry.budget)
    patchable = _Patchable(method, planning, native)
    for j, selected in enumerate(planning.selected):
        # nothing accepted yet: a refusal a pass before proved unchanged is carried over
        carried = carry.conflict(index, method, selected) if not accepted else None
        if carried is not None:
            _skip(outcome, exclude, [selected], _memory_refusal(method, carried))
            continue
        problem = patchable.problem(j)
        if problem is None:
            step = closure.trial(selected)
            delta = _delta(method, selected, step.removed, patchable.at[0])
            extended = [r.new for r in selected.rewires]
            regions = [] if not accepted and patchable.alone else None  # what a proof needs
            try:
                found = memory.trial(delta, extended, regions)
            except WalkBudgetSpent as spent:
                _skip(outcome, exclude, planning.selected[j:], _budget_refusal(spent))
                break
            if found is not None:
                problem = _memory_refusal(method, found)
                if regions is not None:
                    _keep(carry, index, method, selected, found, regions, delta)
        if problem is not None:
            _skip(outcome, exclude, [selected], problem)  # a Skipped names the finding: resolved or not
            continue
        closure.commit(step)
        accepted.append(selected)  # proved by its trial, whatever keeping its regions costs
        try:
            memory.commit(delta, extended)
        except WalkBudgetSpent as spent:
            _skip(outcome, exclude, planning.selected[j + 1:], _budget_refusal(spent))
            break
    if not accepted:
        return None
    return planning, planning.resolve(accepted)


class _Patchable:
    """`_patch_problem` of each selected plan as `resolve()` would leave it (its `removes`
    plus the `removes_if_dead` nodes credited to it), without resolving every plan: the
    rewires are the same, and when the plan's `removes` and all its `removes_if_dead` are
    instructions so are the credited ones (a subset, checked in the same order), so the
    answer is the same; only otherwise are all the selected plans resolved, together, as
    `plan_method` would."""

    __slots__ = ("method", "planning", "native", "at", "resolved", "alone")

    def __init__(self, method: MethodView, planning: Any, native: PteNative) -> None:
        self.method, self.planning, self.native = method, planning, native
        self.at = _instructions(method, native)
        self.resolved: Optional[list[FixPlan]] = None
        self.alone = True  # the last answer read only that plan's nodes (not every plan's)

    def problem(self, j: int) -> Optional[str]:
        plan = self.planning.selected[j]
        everything = plan.removes + plan.removes_if_dead
        problem = _patch_problem(self.method, plan, self.native, everything, self.at)
        self.alone = problem is None or not plan.removes_if_dead
        if self.alone:
            return problem
        if self.resolved is None:
            self.resolved = self.planning.resolve(self.planning.selected)
        return _patch_problem(self.method, self.resolved[j], self.native, at=self.at)


def _removed_instructions(native: PteNative, method: MethodView, plans: Sequence[FixPlan]) -> dict[int, set[int]]:
    """Chain -> instruction indices the plans remove."""
    removed: dict[int, set[int]] = defaultdict(set)
    mapping = native.methods[method.name]
    by_name = nodes_by_name(method)
    for plan in plans:
        for name in plan.removes:
            c, k = mapping.instr_of_node[by_name[name].index]
            removed[c].add(k)
    return removed


def _renumbered_sources(source_map: Optional[dict], removed: dict[str, dict[int, set[int]]]) -> Optional[dict]:
    """The source map (method -> chain-0 instruction -> location) of the patched program:
    removed instructions dropped, the ones after them moved up (what the patch does)."""
    if not source_map:
        return source_map
    renumbered = dict(source_map)
    for method, chains in removed.items():
        gone = sorted(chains.get(0, ()))
        if gone and source_map.get(method):
            dropped = set(gone)
            renumbered[method] = {k - bisect_left(gone, k): where for k, where in source_map[method].items()
                                  if k not in dropped}
    return renumbered


def _patch_all(native: PteNative, view: ProgramView, decided: dict[int, tuple[Any, list[FixPlan]]],
               data: bytes) -> bytes:
    """The program's bytes with every decided method's plans applied (methods are separate
    execution plans: patching one leaves the others' bytes where they are)."""
    patcher = Patcher(data, native.program)
    for index, (_, plans) in decided.items():
        _apply(patcher, native, view.methods[index], plans)
    return patcher.data()


def _named_back(outcomes: list[MethodOutcome], marks: list[int], renames: list[list[dict[str, str]]],
                lengths: list[int]) -> None:
    """Name the refusals each method got since `marks` as in the program the fix started
    from: they were decided on the program its first `lengths` applied rounds left, and
    `renames` are those rounds' renames (new name -> old), per method."""
    for outcome, mark, chain, length in zip(outcomes, marks, renames, lengths):
        if not length or len(outcome.skipped) == mark:
            continue
        steps = chain[length - 1::-1]
        for k in range(mark, len(outcome.skipped)):
            s = outcome.skipped[k]
            nodes = s.nodes
            for step in steps:
                nodes = tuple(map(step.get, nodes, nodes))  # step.get(n, n): n unless renamed
            outcome.skipped[k] = new_skipped(code=s.code, name=s.name, method=s.method, nodes=nodes, reason=s.reason,
                                              unsafe=s.unsafe)


def _round(state: dict, linter: _Linter, unsafe_fixes: bool, outcomes: list[MethodOutcome],
           excludes: list[set], carry: Carry) -> bool:
    """One round over every method: plan and decide each, patch them all into the bytes,
    read the result back once and verify each method on it; a method that fails keeps its
    old instructions. True when something was applied (its renames are appended to
    `state["renames"]`)."""
    loaded = state["loaded"]
    view: ProgramView = loaded.view
    native: PteNative = loaded.native
    decided: dict[int, tuple[Any, list[FixPlan]]] = {}
    for i, outcome in enumerate(outcomes):
        got = _decide(view, i, native, linter, unsafe_fixes, outcome, excludes[i], carry)
        if got is not None:
            decided[i] = got
    while decided:
        data = _patch_all(native, view, decided, state["data"])
        removals = {i: _removed_instructions(native, view.methods[i], plans) for i, (_, plans) in decided.items()}
        sources = _renumbered_sources(native.source_map, {view.methods[i].name: r for i, r in removals.items()})
        try:
            fixed = load_pte_bytes(data, label=view.input, name=view.name, path=view.file, source_map=sources)
        except FixError:
            raise
        except Exception as exc:  # noqa: BLE001 - a patch that does not read back is a bug: keep the old program
            for i, (_, plans) in decided.items():
                _skip(outcomes[i], excludes[i], plans, f"the patched program does not read back ({exc})")
            return False
        failed = {}
        renamed = {}
        for i, (planning, plans) in decided.items():
            method, new_method = view.methods[i], fixed.view.methods[i]
            renames, moved = _renames(native, fixed.native, method.name, removals[i], method, new_method)
            problem = _verify(fixed.view, new_method, linter, planning.findings, plans, renames)
            if problem is not None:
                failed[i] = problem
            else:
                renamed[i] = renames, moved
        if failed:  # patch again without them: the others' bytes do not depend on them
            for i, problem in failed.items():
                _skip(outcomes[i], excludes[i], decided.pop(i)[1], problem)
            continue
        for i, (_, plans) in decided.items():
            renames, moved = renamed[i]
            back = {old: new for new, old in renames.items()}
            carry.advance(i, view.methods[i], fixed.view.methods[i], plans, renames, back, moved)
            state["renames"][i].append(renames)
            outcomes[i].applied.extend(plans)
            outcomes[i].after = fixed.view.methods[i]
            # names of what was skipped so far now refer to the renumbered instructions
            # (map(back.get, nodes, nodes): back.get(n, n) per node, without a generator)
            excludes[i] = {(c, m, tuple(map(back.get, nodes, nodes))) for c, m, nodes in excludes[i]}
        state["data"], state["loaded"] = data, fixed
        return True
    return False


def _verify(view: ProgramView, method: MethodView, linter: _Linter, before: list[Finding],
            applied: Sequence[FixPlan], renames: dict[str, str]) -> Optional[str]:
    """The fixed method must have lost the fixed findings and gained none of the fixed
    rules' (nor any error); node names are compared as they were before the fix."""
    fixed = {p.key for p in applied}
    codes = {p.code for p in applied}
    known = {finding_key(f) for f in before}
    for finding in linter.findings(view, method):
        key = (finding.code, finding.method, tuple(map(renames.get, finding.nodes, finding.nodes)))
        if key in fixed:
            return f"after the fix {finding.code} still reports {', '.join(finding.nodes)}"
        if key not in known and (finding.code in codes or finding.severity == Severity.ERROR):
            return f"the fix would introduce {finding.code} ({finding.name}): {finding.message}"
    return None


def fix_pte_loaded(loaded: Any, rules: Sequence[Rule], *, unsafe_fixes: bool = False,
                   decisions_only: bool = False) -> FixResult:
    """Fix a `.pte` that `load_pte_bytes` / `load_pte_file` read; returns the result with
    the fixed bytes (the input's bytes when nothing could be fixed).

    `decisions_only`: what `check` asks, which fixes apply and which are refused and why
    (`applied`, `skipped`, `changed`: the same as without it); the result's `remaining`
    and its methods' `findings` and `remaining` are then not reported (empty or partial).

    Passes repeat on the fixed program until one changes nothing, so that fixing the
    output again is a no-op: a fix refused in one pass (the memory plan did not allow it
    then) may be possible once other copies are gone."""
    linter = _Linter(rules, loaded.view, decisions_only)
    # refusals a pass need not decide again (kept in the numbering of `last`), and the walk
    # budget of the whole trial: a fresh one per round would let the rounds multiply it
    carry = Carry(WalkBudget(sum(len(m.nodes) for m in loaded.view.methods)))
    renames: list[list[dict[str, str]]] = [[] for _ in loaded.view.methods]  # per applied round
    result, last = _fix_pass(loaded, linter, unsafe_fixes, carry, renames)
    for _ in range(MAX_ROUNDS):
        if not result.changed:
            break
        # `last` is `result.program` as load_pte_bytes read it back after the last patch
        again, last = _fix_pass(last, linter, unsafe_fixes, carry, renames)
        if not again.changed:
            break
        for first, then in zip(result.methods, again.methods):
            first.applied.extend(then.applied)
            first.skipped = then.skipped  # named as in `loaded` too (`_named_back`)
            first.after = then.after
            first.remaining = then.remaining
        result.program, result.remaining = again.program, again.remaining
    return result


def _fix_pass(loaded: Any, linter: _Linter, unsafe_fixes: bool, carry: Carry,
              renames: list[list[dict[str, str]]]) -> tuple[FixResult, Any]:
    """One pass over every method; returns the result and the program it leaves, loaded."""
    native: PteNative = loaded.native
    if not isinstance(native, PteNative):
        raise FixError(f"{loaded.view.input}: not a .pte program")
    view: ProgramView = loaded.view
    result = FixResult(view.input, native.data)
    state = {"data": native.data, "loaded": loaded, "renames": renames}  # _round appends to renames
    outcomes = []
    for i, method in enumerate(view.methods):
        findings = linter.findings(view, method)
        outcomes.append(MethodOutcome(method=method.name, before=method, after=method, findings=findings))
    excludes: list[set] = [set() for _ in view.methods]
    for number in range(MAX_ROUNDS):
        marks, lengths = [len(o.skipped) for o in outcomes], [len(chain) for chain in renames]
        applied = _round(state, linter, unsafe_fixes, outcomes, excludes, carry)
        # what a later pass refuses is kept only if it applies something (`fix_pte_loaded`);
        # the first pass's first round has nothing to rename
        if applied or number:
            _named_back(outcomes, marks, renames, lengths)
        if not applied:
            break
    final: ProgramView = state["loaded"].view
    result.program = state["data"]
    for outcome, method in zip(outcomes, final.methods):
        outcome.after = method if outcome.applied else outcome.before
        if linter.full:  # decisions only: what remains is not reported
            outcome.remaining = linter.findings(final, method)
            result.remaining.extend(outcome.remaining)
    result.methods = outcomes
    return result, state["loaded"]


def fix_pte_bytes(data: bytes, rules: Sequence[Rule], *, label: str = "program.pte",
                  unsafe_fixes: bool = False) -> FixResult:
    return fix_pte_loaded(load_pte_bytes(data, label=label), rules, unsafe_fixes=unsafe_fixes)
