"""Linearity on the shapes that were once super-linear (issue 11), counted, not timed.

The programs are synthetic `.pte` files written by ExecuTorch's own serializer
(`xferlint.testing.synthetic_pte`). Each check lints a program and ten times that program
and compares the Python calls per unit under cProfile: linear work keeps them flat (the
quadratic and cubic versions grew 10x and 100x). benchmarks/bench_scaling.py has the times.
"""

from __future__ import annotations

import cProfile
import pstats
from functools import partial

import pytest

from xferlint.analyzer.facts import DeviceFacts
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.pipeline import analyze
from xferlint.selection import select_rules
from xferlint.testing import synthetic_pte as sp
from xferlint.testing.work import lines_run


def _lint(data: bytes):
    view = load_pte_bytes(data, label="scaling.pte").view
    return view, analyze(view, select_rules(), transfers=[])


def _counts(findings) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    return counts


def _calls(data: bytes) -> int:
    profile = cProfile.Profile()
    profile.runcall(_lint, data)
    return pstats.Stats(profile).total_calls


def test_synthetic_programs_are_valid_pte_files():
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(sp.loops(3)).program
    assert len(program.execution_plan[0].chains[0].instructions) == 3 * 10
    _, findings = _lint(sp.ladder(3))
    assert _counts(findings) == {"XF001": 4, "XF004": 1, "XF005": 3}
    _, findings = _lint(sp.host_chain_to_devices(10, 3))  # one split per device; the chain splits none
    assert [f.message for f in findings] == [
        f"host op aten.cos splits a cuda:{k} partition: 128 B per call" for k in range(3)]


@pytest.mark.parametrize("build, small, large", [
    (sp.in_place_ladder, 100, 1_000),  # XF004: a source written between its copies (was cubic)
    (sp.wide_delegate, 500, 5_000),  # delegate_io and locate on a 5,000-argument call (was quadratic)
    (sp.fan_out, 100, 1_000),  # one host value copied by thousands of H2Ds (XF004 duplicates)
    (sp.loops, 50, 500),  # reaching definitions over many loops (was O(blocks x slots))
    (sp.nested_loops, 100, 1_000),  # dominators, dominance frontiers (were quadratic)
    (sp.jumps_to_one_head, 200, 2_000),  # one join of many back edges (its frontier walks)
    (sp.constant_chain, 500, 5_000),  # XF006's origin of a copy (a set per link; then too deep)
    (sp.delegates_ladder, 100, 1_000),  # a delegate per call: XF005 re-sorted per device object (was quadratic)
    (sp.wide_inputs, 500, 5_000),  # one XF007 about every input of a wide delegate (its detail named them all)
    (sp.short_loops, 500, 5_000),  # a backward jump every two instructions
    (sp.planned_ladder, 100, 1_000),  # no two tensors alike: each value read and built on its own
    (sp.traced_loops, 50, 500),  # a stack trace per instruction: every finding located (locate())
    (sp.traced_short_loops, 500, 5_000),  # frames read per instruction beside a jump every two
    (sp.round_trip_chain, 200, 2_000),  # a round trip at every delegate boundary (an XF001 each)
    (sp.host_fan_in, 500, 5_000),  # one host op joining thousands of D2Hs (one XF005 naming them)
    (sp.device_alias_chain, 500, 5_000),  # views of views: each value's origin through the chain
    (sp.traced_split_loops, 200, 2_000),  # a jump, a located XF005 and its host segment per loop
    # a host chain copied to one device more per 20 ops: XF005 walked it back once per device
    (lambda n: sp.host_chain_to_devices(n, n // 20), 200, 2_000),
    # a parameter through a chain, copied once per 10 ops: XF006 flattened and listed the chain per copy
    (lambda n: sp.copied_constant_chain(n, n // 10), 300, 3_000),
], ids=["in-place", "wide-delegate", "fan-out", "loops", "nested-loops", "jumps-to-one-head", "constant-chain",
        "delegate-per-call", "wide-inputs", "short-loops", "planned-ladder", "traced-loops", "traced-short-loops",
        "round-trip-chain", "host-fan-in", "alias-chain", "traced-split-loops",
        "host-chain-to-devices", "copied-constant-chain"])
def test_work_per_unit_stays_flat(build, small, large):
    per_small = _calls(build(small)) / small
    per_large = _calls(build(large)) / large
    assert per_large < 1.25 * per_small, (per_small, per_large)


def test_tensors_in_bytes_of_their_own_read_as_the_shared_ones_do():
    """A memory plan that reuses nothing gives every value a tensor table of its own: the
    values keep their own placements, share their metadata, and the findings are the ladder's."""
    shared_view, shared = _lint(sp.ladder(20))
    own_view, own = _lint(sp.planned_ladder(20))
    assert _counts(own) == _counts(shared) == {"XF001": 38, "XF004": 1, "XF005": 20}
    values = [v for v in own_view.methods[0].values.values() if v.placement is not None]
    assert len({(v.placement.buffer, v.placement.offset) for v in values}) == len(values) > 100
    assert len({id(v.tensor) for v in values}) == 1
    before = {v.id: (v.tensor, v.declared_device, v.spec_device, v.constant_name, v.mutable)
              for v in shared_view.methods[0].values.values()}
    assert {v.id: (v.tensor, v.declared_device, v.spec_device, v.constant_name, v.mutable)
            for v in own_view.methods[0].values.values()} == before


def _decide_fixes(data: bytes):
    from xferlint.fixes.pte import fix_pte_loaded

    return fix_pte_loaded(load_pte_bytes(data, label="scaling.pte"), select_rules(), decisions_only=True)


@pytest.mark.parametrize("build, small, large", [
    (sp.in_place_duplicates, 100, 1_000),  # every region asked whether the method returns it (was quadratic)
    (sp.ladder, 100, 1_000),  # 3 fixes per block, only one accepted
    (sp.delegates_ladder, 100, 1_000),  # the same, a delegate (and its blob) per call
    (sp.output_round_trips, 100, 1_000),  # n live ranges across the same n nodes (the walk budget)
    (sp.dead_copies, 100, 1_000),  # each dead D2H feeds the rest of the chain (the planners' budget)
    (partial(sp.round_trip_chain, own_bytes=True), 100, 1_000),  # every round trip's fix applied and proved
], ids=["in-place-duplicates", "ladder", "delegate-per-call", "output-round-trips", "dead-copies", "planned-chain"])
def test_fix_decisions_stay_flat(build, small, large):
    def calls(data: bytes) -> int:
        profile = cProfile.Profile()
        profile.runcall(_decide_fixes, data)
        return pstats.Stats(profile).total_calls

    per_small = calls(build(small)) / small
    per_large = calls(build(large)) / large
    assert per_large < 1.25 * per_small, (per_small, per_large)


def _lines(data: bytes) -> int:
    """Lines executed by `_lint` (each turn of a loop is one): a scan inside a generator
    expression is one Python call however long it is, so calls cannot see it."""
    return lines_run(lambda: _lint(data))


def test_duplicate_copies_between_in_place_writes_stay_flat_line_by_line():
    # a buffer written in place in every block and copied twice after each write: each
    # duplicate once scanned the buffer's readers for a write between its two copies
    per_small = _lines(sp.in_place_duplicates(100)) / 100
    per_large = _lines(sp.in_place_duplicates(1_000)) / 1_000
    assert per_large < 1.25 * per_small, (per_small, per_large)


def _lines_per_fixed_copy(build, n: int, unsafe: bool = False) -> float:
    """Lines the fix decisions run on `build(n)`, per copy; every duplicate must be proved and removed."""
    from xferlint.fixes.pte import fix_pte_loaded

    result = None

    def decide():
        nonlocal result
        result = fix_pte_loaded(load_pte_bytes(build(n), label="scaling.pte"), select_rules(), unsafe_fixes=unsafe,
                                decisions_only=True)

    lines = lines_run(decide)
    assert sum(len(m.applied) for m in result.methods) == n - 1
    return lines / n


def test_deciding_thousands_of_fixes_into_one_call_stays_flat_line_by_line():
    # every copy of one input is an argument of one delegate and shares the first copy's
    # slot: each trial once scanned every conflict the first copy's region had found (all
    # the program's own), and each rewire every argument of the call, in comprehensions
    build = sp.copies_into_one_call
    per_small, per_large = _lines_per_fixed_copy(build, 100), _lines_per_fixed_copy(build, 1_000)
    assert per_large < 1.25 * per_small, (per_small, per_large)


def test_returning_one_copy_instead_of_thousands_stays_flat_line_by_line():
    # unsafe fixes that each return the first of n copies instead of another: the first
    # copy's region was walked afresh per fix (past the work budget after a dozen), and the
    # patch scanned every output of the method per replaced output
    def build(n: int) -> bytes:
        return sp.returned_copies(n, own_bytes=True)

    per_small = _lines_per_fixed_copy(build, 100, unsafe=True)
    per_large = _lines_per_fixed_copy(build, 1_000, unsafe=True)
    assert per_large < 1.25 * per_small, (per_small, per_large)


def test_a_slot_written_in_every_block_stays_flat_line_by_line():
    # one host slot written by a host op and by a D2H in every block: XF005 once scanned
    # every reader of the slot for each of its writes, inside one comprehension (no calls
    # to count: its lines are)
    per_small = _lines(sp.one_slot(200)) / 200
    per_large = _lines(sp.one_slot(2_000)) / 2_000
    assert per_large < 1.25 * per_small, (per_small, per_large)


def test_thousands_of_backward_jumps_give_every_finding_exactly():
    # 2,000 loops keep the suite quick (building the file is most of the time);
    # benchmarks/bench_scaling.py runs 10,000
    view, findings = _lint(sp.loops(2_000))
    method = view.methods[0]
    assert sum(1 for n in method.nodes if n.target == "jump_false") == 2_000
    assert _counts(findings) == {"XF001": 1_999, "XF005": 2_000}
    facts = DeviceFacts.compute(method)
    assert facts._flow is not None and facts._flow.exact  # the sparse analysis, not the fallback


def test_every_finding_of_a_traced_program_points_at_its_model_line():
    """With a stack trace per instruction, each loop's findings point at the loop body's lines
    in the model file, as many as without one."""
    _, traced = _lint(sp.traced_loops(200))
    _, plain = _lint(sp.loops(200))
    assert _counts(traced) == _counts(plain) == {"XF001": 199, "XF005": 200}
    assert all(f.location is not None and f.location.file == sp.TRACED_FILE and 20 <= f.location.line <= 29
               for f in traced)
    assert all(f.location is None for f in plain)


@pytest.mark.parametrize("build", [sp.nested_loops, sp.jumps_to_one_head], ids=["nested-loops", "jumps-to-one-head"])
def test_finding_a_method_past_its_work_budget_costs_the_same_whatever_the_budget(build):
    # Their dominance-frontier walks are quadratic, past any budget proportional to the
    # method: the fall-back is decided from the walks' lengths before any is taken, so
    # twice the budget (still short of the walks) costs no more work; walking up to the
    # budget first cost twice as much.
    from xferlint.analyzer import cfg as cfgmod

    method = load_pte_bytes(build(1_000), label="scaling.pte").view.methods[0]
    budget = cfgmod.work_budget(method.nodes)

    def calls(limit: int) -> int:
        profile = cProfile.Profile()
        with pytest.raises(cfgmod._TooMuchWork):
            profile.runcall(cfgmod._sparse_reads, method, method.cfg, limit)
        return pstats.Stats(profile).total_calls

    calls(budget)  # once before counting: the CFG's blocks are worked out at the first ask
    assert calls(2 * budget) < 1.05 * calls(budget)


class _Scanned(tuple):
    """A node's operands or results that count the elements each membership test, `index`
    and iteration goes over: a scan in C, which neither calls nor lines show."""

    elements = 0

    def index(self, value, *bounds):
        found = tuple.index(self, value, *bounds)
        _Scanned.elements += found + 1
        return found

    def __contains__(self, value):
        _Scanned.elements += len(self)
        return tuple.__contains__(self, value)

    def __iter__(self):
        _Scanned.elements += len(self)
        return tuple.__iter__(self)


def _delegate_scans(data: bytes, code: str) -> tuple[int, int]:
    """(elements of the delegates' operands and results that rule `code` goes over, its findings)."""
    from xferlint.analyzer.view import OpKind
    from xferlint.rules.base import RuleContext

    view = load_pte_bytes(data, label="scaling.pte").view
    method = view.methods[0]
    facts = DeviceFacts.compute(method)
    for node in method.nodes:
        if node.kind is OpKind.DELEGATE:
            object.__setattr__(node, "inputs", _Scanned(node.inputs))
            object.__setattr__(node, "outputs", _Scanned(node.outputs))
    rule = next(r for r in select_rules() if r.code == code)
    _Scanned.elements = 0
    findings = list(rule.check(RuleContext(program=view, method=method, facts=facts)))
    return _Scanned.elements, len(findings)


def test_a_delegate_staging_thousands_of_buffers_is_scanned_linearly():
    # one delegate reads n buffers through H2Ds and writes each back: XF011 once found each
    # buffer's place among the delegate's results (and operands) with tuple.index, n scans
    # of n elements in C
    small, large = _delegate_scans(sp.mutable_buffers(100), "XF011"), _delegate_scans(sp.mutable_buffers(1_000), "XF011")
    assert (small[1], large[1]) == (100, 1_000)
    assert large[0] / 1_000 < 1.25 * small[0] / 100, (small, large)


def _cpu_delegate_between_partitions(ops: int):
    """A graph view (built directly: a `.pte` keeps no delegate's inner ops, and lowering
    thousands of ops through XNNPACK would take minutes) where an XNNPACK delegate running
    `ops` ops sits between two cuda:0 delegates, the value crossing the bus both ways."""
    from xferlint.analyzer.lattice import CPU, Device
    from xferlint.analyzer.view import DelegateInfo, InnerOp, MethodView, Node, OpKind, ProgramView, TensorMeta, Value

    cuda = Device("cuda", 0)
    meta = TensorMeta(shape=(8, 8), dtype="float32", nbytes=256)
    device = DelegateInfo(backend="CudaBackend")
    inner = tuple(InnerOp(name=f"op_{k}", target=f"aten.op{k % 50}.default", location=None) for k in range(ops))
    xnnpack = DelegateInfo(backend="XnnpackBackend", ops=inner, input_readers=(0,), output_writers=(ops - 1,))
    nodes: list[Node] = []
    values: dict[str, Value] = {}

    def add(kind, target, inputs, device_=None, delegate=None) -> str:
        out = f"v{len(nodes)}"
        values[out] = Value(id=out, tensor=meta, declared_device=CPU if kind is OpKind.INPUT else None)
        nodes.append(Node(index=len(nodes), name=f"n{len(nodes)}", kind=kind, target=target, inputs=inputs,
                          outputs=(out,), device=device_, delegate=delegate))
        return out

    def call(v: str, device_, delegate) -> str:
        result = add(OpKind.DELEGATE, "executorch_call_delegate", (v,), device_, delegate)
        return add(OpKind.GETITEM, "getitem", (result,))

    x = add(OpKind.INPUT, "input", ())
    y = add(OpKind.D2H, "et_copy._d2h_copy.default", (call(add(OpKind.H2D, "et_copy._h2d_copy.default", (x,), cuda),
                                                            cuda, device),))
    z = add(OpKind.H2D, "et_copy._h2d_copy.default", (call(y, None, xnnpack),), cuda)
    out = add(OpKind.D2H, "et_copy._d2h_copy.default", (call(z, cuda, device),))
    method = MethodView(name="forward", nodes=tuple(nodes), values=values, inputs=(x,), outputs=(out,))
    return ProgramView(input="split.py", name="program", kind="graph", methods=(method,))


def test_a_cpu_delegate_of_thousands_of_ops_splitting_a_partition_stays_flat():
    # XF005 names the ops a CPU delegate runs: it once worked out the delegate's kinds of
    # op again for each of its ops (quadratic: 3,000 ops took 11 s for one finding)
    def calls(ops: int) -> int:
        view = _cpu_delegate_between_partitions(ops)
        profile = cProfile.Profile()
        findings = profile.runcall(analyze, view, select_rules(select=["XF005"]), transfers=[])
        assert [f.code for f in findings] == ["XF005"] and "XnnpackBackend" in findings[0].message
        return pstats.Stats(profile).total_calls

    assert calls(2_000) / 2_000 < 1.25 * calls(200) / 200


def test_constant_jumps_beside_thousands_of_inputs_are_read_linearly():
    # a method of n inputs and n loops closed by a jump on an unwritten Bool (ExecuTorch's
    # unconditional jump): the view once looked each condition up in the plan's inputs, a tuple
    from xferlint.frontends.pte.program import read_program
    from xferlint.frontends.pte.view import view_of

    def scans(n: int) -> int:
        b = sp.PlanBuilder()
        inputs = [b.input() for _ in range(n)]
        x, done = inputs[0], b.bool_(False)
        for _ in range(n):
            start = len(b.instructions)
            x = b.host(x)
            b.jump_false(done, start)
        b.outputs.append(x)
        program = read_program(sp.serialize([b.plan()]))
        program = program._replace(plans=tuple(p._replace(inputs=_Scanned(p.inputs)) for p in program.plans))
        _Scanned.elements = 0
        view, _ = view_of(program, input="jumps.pte", name="jumps", file=None)
        assert sum(1 for node in view.methods[0].nodes if node.target == "jump_false") == n
        return _Scanned.elements

    assert scans(2_000) / 2_000 < 1.25 * scans(200) / 200


def test_thousands_of_method_inputs_written_back_are_looked_up_linearly():
    # caller-owned state written back in place (XF011's own advice: a KV cache as a method
    # input): XF011 once asked the method's inputs, a tuple, about every buffer written back
    from xferlint.analyzer.lattice import CPU
    from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, TensorMeta, Value
    from xferlint.rules.base import RuleContext

    def scans(n: int) -> int:
        meta = TensorMeta(shape=(8, 8), dtype="float32", nbytes=256)
        nodes, values = [], {}
        for k in range(n):
            values[f"in{k}"] = Value(id=f"in{k}", tensor=meta, declared_device=CPU)
            nodes.append(Node(index=len(nodes), name=f"input_{k}", kind=OpKind.INPUT, target="input",
                              outputs=(f"in{k}",)))
        for k in range(n):
            values[f"w{k}"] = Value(id=f"w{k}", tensor=meta)
            nodes.append(Node(index=len(nodes), name=f"copy_{k}", kind=OpKind.COMPUTE, target="aten.copy_.default",
                              inputs=(f"in{k}", f"in{(k + 1) % n}"), outputs=(f"w{k}",), mutates=True))
        method = MethodView(name="forward", nodes=tuple(nodes), values=values,
                            inputs=_Scanned(f"in{k}" for k in range(n)), outputs=())
        view = ProgramView(input="state.py", name="program", kind="graph", methods=(method,))
        facts = DeviceFacts.compute(method)
        _Scanned.elements = 0
        rule = next(r for r in select_rules() if r.code == "XF011")
        assert list(rule.check(RuleContext(program=view, method=method, facts=facts))) == []
        return _Scanned.elements

    assert scans(2_000) / 2_000 < 1.25 * scans(200) / 200


@pytest.mark.parametrize("code", ["XF005", "XF006"])
def test_reads_seeing_every_write_of_a_slot_share_one_list_of_writers(code):
    # read flow-insensitively (past the work budget), every read of a slot written in
    # every block sees all its writes: each rule's ask once built (and sorted) that list
    # again, and XF005 filtered it again for each H2D of the slot: blocks**2 writers
    from xferlint.analyzer.cfg import FlowFacts
    from xferlint.rules.base import RuleContext

    def lines(blocks: int) -> int:
        view = load_pte_bytes(sp.slot_loops(blocks), label="slot.pte").view
        method = view.methods[0]
        facts = DeviceFacts.compute(method)
        facts._flow = FlowFacts.compute(method, method.cfg, work_limit=1)  # the fall-back at any size
        assert not facts._flow.exact
        rule = next(r for r in select_rules() if r.code == code)
        return lines_run(lambda: list(rule.check(RuleContext(program=view, method=method, facts=facts))))

    assert lines(1_000) / 1_000 < 1.25 * lines(100) / 100
