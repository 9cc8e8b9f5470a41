"""The control-flow graph of a method whose nodes are instructions (a `.pte` chain).

Graph frontends give straight-line SSA (control flow inlined with MOVE nodes) and need no
CFG. A `.pte` method is a list of instructions over mutable EValue slots: `JumpFalseCall`
branches (a `cond` is a forward jump over the true branch and an unconditional jump over
the false one; `map` / `scan` are loops closed by a backward jump), and a slot can be
written more than once (a `cond` result by a MOVE in each branch, a loop counter on every
iteration). The CFG carries those edges; on top of it this module answers the questions
the value-level solver cannot:

- reaching definitions: which writes of a slot a read can see (`FlowFacts.reaching`);
- liveness as usefulness: a node is useful if it has an effect of its own (a delegate
  call, a jump, an in-place write, an unmodelled op) or one of its writes reaches a read
  by a useful node, or reaches the method's return as an output (`FlowFacts.useful`).
  Loops are solved to a fixed point, so a value read on the next iteration is live;
- structure: basic blocks, the nodes inside loops, the nodes that some entry-to-exit path
  avoids (branch bodies), and whether a node can be reached at all.

Nodes are numbered as in `MethodView.nodes`; the entry is node 0 and `exits` are the nodes
after which the method may return.
"""

from __future__ import annotations

from functools import cached_property, partial
from itertools import chain, compress, repeat
from operator import attrgetter, ne
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from xferlint.analyzer.dominators import immediate_dominators
from xferlint.analyzer.view import OpKind

if TYPE_CHECKING:
    from xferlint.analyzer.view import MethodView, Node

ENTRY = -1  # the definition a slot holds on entry (an input, a constant, its initial value)


class ControlFlowGraph:
    """Successor edges between the nodes of one method (a plain class: the derived
    structure is computed on first use and cached on the instance)."""

    def __init__(self, successors: tuple[tuple[int, ...], ...], exits: frozenset[int]) -> None:
        self.successors = successors
        self.exits = exits

    def __repr__(self) -> str:
        return f"ControlFlowGraph({len(self.successors)} nodes, exits={sorted(self.exits)})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ControlFlowGraph) and self.successors == other.successors
                and self.exits == other.exits)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def straight_line(cls, count: int) -> "ControlFlowGraph":
        succ = tuple((i + 1,) if i + 1 < count else () for i in range(count))
        return cls(successors=succ, exits=frozenset({count - 1}) if count else frozenset())

    def __len__(self) -> int:
        return len(self.successors)

    @cached_property
    def predecessors(self) -> tuple[tuple[int, ...], ...]:
        preds: list[list[int]] = [[] for _ in self.successors]
        for i, succ in enumerate(self.successors):
            for j in succ:
                preds[j].append(i)
        return tuple(tuple(p) for p in preds)

    @cached_property
    def reachable(self) -> frozenset[int]:
        """Nodes some execution reaches from the entry: those of the blocks reached from
        block 0 (control enters a block only at its first node and falls through it)."""
        if not self.successors:
            return frozenset()
        blocks = self.blocks
        return frozenset(chain.from_iterable(range(blocks[b][0], blocks[b][1] + 1)
                                             for b in _reach(0, self.block_successors)))

    # -- basic blocks -------------------------------------------------------------
    @cached_property
    def blocks(self) -> tuple[tuple[int, int], ...]:
        """Maximal straight-line runs `(first, last)` of node indices, in node order."""
        n = len(self.successors)
        if n == 0:
            return ()
        # A block ends after a node that does not simply fall through (a jump, a branch,
        # an exit), and starts at every node something jumps to. (Each node with other
        # than one fall-through predecessor is one of those: no pass over predecessors.)
        leaders = {0}
        # the nodes that do not fall through, found in C: a successor tuple other than (i + 1,)
        jumps = compress(range(n), map(ne, self.successors, zip(range(1, n + 1))))
        for i in set(jumps).union(self.exits):
            leaders.update(self.successors[i])
            if i + 1 < n:
                leaders.add(i + 1)
        starts = sorted(leaders)
        return tuple((s, (starts[k + 1] - 1) if k + 1 < len(starts) else n - 1) for k, s in enumerate(starts))

    @cached_property
    def block_of(self) -> tuple[int, ...]:
        owner: list[int] = []
        for b, (first, last) in enumerate(self.blocks):
            owner.extend(repeat(b, last - first + 1))
        return tuple(owner)

    @cached_property
    def block_successors(self) -> tuple[tuple[int, ...], ...]:
        owner = self.block_of
        return tuple(tuple(sorted({owner[j] for j in self.successors[last]})) for _, last in self.blocks)

    @cached_property
    def block_predecessors(self) -> tuple[tuple[int, ...], ...]:
        preds: list[list[int]] = [[] for _ in self.blocks]
        for b, succ in enumerate(self.block_successors):
            for c in succ:
                preds[c].append(b)
        return tuple(tuple(p) for p in preds)

    # -- structure ---------------------------------------------------------------------
    @cached_property
    def loop_nodes(self) -> frozenset[int]:
        """Nodes on a cycle (the bodies of `map` / `scan` loops and their loop control)."""
        loops: set[int] = set()
        for component in _strongly_connected(self.block_successors):
            if len(component) > 1 or component[0] in self.block_successors[component[0]]:
                for b in component:
                    first, last = self.blocks[b]
                    loops.update(range(first, last + 1))
        return frozenset(loops)

    @cached_property
    def conditional_nodes(self) -> frozenset[int]:
        """Reachable nodes that some path from the entry to an exit avoids (branch bodies):
        every reachable block except those that dominate the (virtual) exit."""
        if not self.blocks:
            return frozenset()
        exit_blocks = {self.block_of[i] for i in self.exits}
        unavoidable = _dominators_of_exit(self.block_successors, exit_blocks)
        if unavoidable is None:  # no exit is reachable: nothing is "on every path"
            return frozenset()
        avoidable: set[int] = set()
        for b in _reach(0, self.block_successors):
            if b not in unavoidable:
                first, last = self.blocks[b]
                avoidable.update(range(first, last + 1))
        return frozenset(avoidable)

    def in_control_flow(self, node: int) -> bool:
        """True for a node inside a loop body or a branch (not run exactly once per call)."""
        return node in self.loop_nodes or node in self.conditional_nodes


def _dominators_of_exit(successors: tuple[tuple[int, ...], ...], exit_blocks: set[int]) -> Optional[set[int]]:
    """The blocks on every path from block 0 to an exit block: the dominators of a virtual
    exit after the exit blocks; None if no exit is reachable."""
    virtual = len(successors)
    succ = [list(s) + ([virtual] if b in exit_blocks else []) for b, s in enumerate(successors)] + [[]]
    idom = immediate_dominators(0, succ.__getitem__)
    if virtual not in idom:
        return None
    chain = set()
    v = idom[virtual]
    while True:
        chain.add(v)
        if v == 0:
            break
        v = idom[v]
    return chain


def _reach(start: int, successors: tuple[tuple[int, ...], ...]) -> set[int]:
    seen = {start}
    stack = [start]
    while stack:
        for j in successors[stack.pop()]:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return seen


def _strongly_connected(successors: tuple[tuple[int, ...], ...]) -> list[list[int]]:
    """Tarjan's algorithm, iterative (deep programs must not hit the recursion limit)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in range(len(successors)):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, edge = work.pop()
            if edge == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = successors[v]
            if edge < len(succ):
                work.append((v, edge + 1))
                w = succ[edge]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                components.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return components


# --------------------------------------------------------------------------- dataflow

_EFFECT_KINDS = frozenset({OpKind.DELEGATE, OpKind.UNKNOWN, OpKind.CONTROL})
# Reaching definitions are sparse (see `_reaching_definitions`): linear in the program plus
# the dominance frontiers, the phis and the sizes of the write sets they carry. Those can
# be quadratic in a pathological program: slots written in thousands of places and read
# in thousands more, thousands of nested loops, thousands of jumps back to one head. Past
# `work_budget(nodes)` the analysis falls back to the flow-insensitive answer (every write
# reaches every read), which can only make more writes useful, never fewer. The budget is
# proportional to the program, so the fallback is reached in linear time. Every program
# the tests and benchmarks lower or build with over 300 nodes and operands used at most
# 1.5 units of work per node and operand (loops-10000: 0.65); 4 leaves more than twice
# that, and the floor keeps every small program, up to a few hundred nested loops, exact.
WORK_PER_UNIT = 4
WORK_FLOOR = 100_000


_INPUTS = attrgetter("inputs")
_OUTPUTS = attrgetter("outputs")


def work_budget(nodes: "tuple[Node, ...]") -> int:
    """The work `_reaching_definitions` may do on these nodes before falling back."""
    return _node_budget(nodes) + _operand_budget(nodes)


def _node_budget(nodes: "tuple[Node, ...]") -> int:
    """The part of `work_budget` that needs no pass over the nodes."""
    return WORK_FLOOR + WORK_PER_UNIT * len(nodes)


def _operand_budget(nodes: "tuple[Node, ...]") -> int:
    """The rest of `work_budget`: counting the operands is a pass over every node, so it
    is done only when the work outgrows the rest (no program the benchmarks hold does)."""
    operands = sum(map(len, map(_INPUTS, nodes))) + sum(map(len, map(_OUTPUTS, nodes)))
    return WORK_PER_UNIT * operands


_ENTRY_SET = frozenset({ENTRY})
_SCAN = 16  # operands up to which a read's name is found by a scan rather than an index


class Reads:
    """What every read sees, one *name* per read: a writer's node index, ENTRY, or a phi
    (below ENTRY, see `_phi_name`) standing for a set of writes.

    `names[i]` is aligned with `nodes[i].inputs` (None for a node no execution reaches).
    An int per read rather than a frozenset per (node, value) key: the analysis reads
    names, and only a caller's question (`reaching`) builds a set.
    """

    __slots__ = ("names", "phis", "_nodes", "_singles", "_by_value")

    def __init__(self, names: list[Optional[tuple[int, ...]]], phis: list[frozenset[int]],
                 nodes: "tuple[Node, ...]") -> None:
        self.names = names
        self.phis = phis  # per phi index: the writes (and ENTRY) it stands for
        self._nodes = nodes
        self._singles: dict[int, frozenset[int]] = {}
        self._by_value: dict[int, dict[str, int]] = {}  # per node asked: value -> name

    def resolve(self, name: int) -> frozenset[int]:
        if name == ENTRY:
            return _ENTRY_SET
        if name < ENTRY:
            return self.phis[_phi_index(name)]
        found = self._singles.get(name)
        if found is None:
            found = self._singles[name] = frozenset((name,))
        return found

    def at(self, node: int, vid: str) -> frozenset[int]:
        """The writes `node`'s read of `vid` sees; {ENTRY} when it does not read it (or is
        unreachable)."""
        return self.resolve(self.name_at(node, vid))

    def name_at(self, node: int, vid: str) -> int:
        """The name `node`'s read of `vid` sees (ENTRY when it does not read it)."""
        names = self.names[node] if 0 <= node < len(self.names) else None
        if names is None:
            return ENTRY
        inputs = self._nodes[node].inputs
        if len(names) <= _SCAN:
            return names[inputs.index(vid)] if vid in inputs else ENTRY
        by_value = self._by_value.get(node)  # indexed on first use: a delegate may read 100k values
        if by_value is None:
            by_value = self._by_value[node] = dict(zip(inputs, names))
        return by_value.get(vid, ENTRY)

    def as_dict(self) -> dict[tuple[int, str], frozenset[int]]:
        """(reader, value) -> writes, for every read of a reachable node."""
        return {(i, vid): self.resolve(name) for i, names in enumerate(self.names) if names is not None
                for vid, name in zip(self._nodes[i].inputs, names)}


def _writers_of(nodes: "tuple[Node, ...]", reachable: frozenset[int]) -> dict[str, frozenset[int]]:
    writers: dict[str, set[int]] = {}
    for node in nodes:
        if node.index in reachable:
            for vid in node.outputs:
                writers.setdefault(vid, set()).add(node.index)
    return {v: frozenset(w) for v, w in writers.items()}


class FlowFacts:
    """Reaching definitions and usefulness of one method over its CFG."""

    def __init__(self, reads: Optional[Reads], at_exit: Optional[dict[str, frozenset[int]]], useful: frozenset[int],
                 outputs: "tuple[Optional[str], ...]", nodes: "tuple[Node, ...]", cfg: ControlFlowGraph,
                 writers: Optional[dict[str, frozenset[int]]] = None,
                 later: Optional[Callable[[], tuple[Reads, dict[str, frozenset[int]]]]] = None) -> None:
        self.exact = reads is not None or later is not None  # False when the work limit was hit
        if later is None:
            self.__dict__["reads"] = reads  # None: flow-insensitive (the work limit was hit)
            self.__dict__["at_exit"] = at_exit  # value -> writers whose value the method can return
        self._later = later  # else what names the reads, on first use (see `compute`)
        self.useful = useful  # node indices
        self._outputs = outputs
        self._nodes = nodes
        self._cfg = cfg
        # `reaching_writer_nodes`' lists, by value (flow-insensitive) or by the name of a
        # merge of several writes: every read of a slot asks, and a slot may have thousands
        self._writer_nodes: dict = {}
        if writers is not None:  # the fallback computed them: `writers` need not
            self.__dict__["writers"] = writers

    @cached_property
    def live_values(self) -> frozenset[str]:
        """The values a useful node reads or the method returns (as the flow-insensitive
        liveness of straight-line SSA graphs defines it). Built on first use: only fix
        planning asks, and the set holds most values of the method."""
        live = {v for v in self._outputs if v is not None}
        live.update(chain.from_iterable(map(_INPUTS, map(self._nodes.__getitem__, self.useful))))
        return frozenset(live)

    @cached_property
    def _named(self) -> tuple[Reads, dict[str, frozenset[int]]]:
        assert self._later is not None
        return self._later()

    @cached_property
    def reads(self) -> Optional[Reads]:
        """What each read sees; None when flow-insensitive (the work limit was hit)."""
        return self._named[0]

    @cached_property
    def at_exit(self) -> dict[str, frozenset[int]]:
        """Value -> the writers whose value the method can return."""
        return self._named[1]

    @cached_property
    def writers(self) -> dict[str, frozenset[int]]:
        """Every reachable writer of each value (the fallback's answer); only the
        flow-insensitive mode needs it, so it is built on first use."""
        return _writers_of(self._nodes, self._cfg.reachable)

    @property
    def reaching_at(self) -> Optional[dict[tuple[int, str], frozenset[int]]]:
        """(reader, value) -> writers / ENTRY; None when flow-insensitive (built per call)."""
        return self.reads.as_dict() if self.reads is not None else None

    def reaching(self, node: int, vid: str) -> frozenset[int]:
        if self.reads is None:
            return self.writers.get(vid, frozenset()) | {ENTRY}
        return self.reads.at(node, vid)

    def reaching_writer_nodes(self, node: int, vid: str) -> "list[Node]":
        """The nodes of `reaching_writer_indices`. Reads that see the same writes (every read
        of a value, flow-insensitive; the reads of one merge of several writes) share one
        list, made once: callers only read it."""
        if self.reads is None:
            key: Any = vid
        else:
            name = self.reads.name_at(node, vid)
            if name >= 0:  # one writer, the common case
                return [self._nodes[name]]
            if name == ENTRY:
                return []
            key = name
        found = self._writer_nodes.get(key)
        if found is None:
            found = self._writer_nodes[key] = list(map(self._nodes.__getitem__,
                                                       self.reaching_writer_indices(node, vid)))
        return found

    def reaching_writer_indices(self, node: int, vid: str) -> list[int]:
        """`reaching` without ENTRY, sorted: the nodes whose write the read can see."""
        if self.reads is None:
            return sorted(self.writers.get(vid, ()))
        name = self.reads.name_at(node, vid)
        if name >= 0:  # one writer, the common case: no set to build
            return [name]
        return [] if name == ENTRY else sorted(d for d in self.reads.resolve(name) if d >= 0)

    @classmethod
    def compute(cls, method: "MethodView", cfg: ControlFlowGraph,
                effectful: Optional[Iterable[int]] = None, work_limit: Optional[int] = None) -> "FlowFacts":
        nodes = method.nodes
        if len(cfg) != len(nodes):
            raise ValueError(f"CFG has {len(cfg)} nodes, the method {len(nodes)}")
        if _is_straight_line(cfg) and (work_limit is None or len(nodes) + 2 <= work_limit):
            # One block: usefulness in one backward pass; the reads are named only if a
            # rule asks what one sees (the default budget always covers this path)
            useful = _straight_line_useful(method, cfg, effectful)
            return cls(reads=None, at_exit=None, useful=frozenset(useful), outputs=method.outputs, nodes=nodes,
                       cfg=cfg, later=partial(_straight_line_reads, method, cfg, len(nodes) + 2))
        reads: Optional[Reads] = None
        writers: Optional[dict[str, frozenset[int]]] = None
        try:
            if work_limit is None:  # the budget, its operand part counted only if it is needed
                reads, at_exit = _reaching_definitions(method, cfg, _node_budget(nodes),
                                                       partial(_operand_budget, nodes))
            else:
                reads, at_exit = _reaching_definitions(method, cfg, work_limit)
        except _TooMuchWork:
            writers = _writers_of(nodes, cfg.reachable)
            at_exit = {v: writers.get(v, frozenset()) | {ENTRY} for v in method.outputs if v is not None}
        roots = set(effectful) if effectful is not None else {
            n.index for n in nodes if n.kind in _EFFECT_KINDS or n.mutates
        }
        roots = _reachable_only(cfg, roots)
        useful = _useful(nodes, roots, method.outputs, at_exit, reads, writers)
        return cls(reads=reads, at_exit=at_exit, useful=frozenset(useful), outputs=method.outputs, nodes=nodes,
                   cfg=cfg, writers=writers)


def _reachable_only(cfg: ControlFlowGraph, indices: set[int]) -> set[int]:
    """The nodes of `indices` some execution reaches: by block, and without building
    `cfg.reachable` (a set of every node) when every block is reached (the common case)."""
    blocks = _reach(0, cfg.block_successors) if cfg.blocks else set()
    if len(blocks) == len(cfg.blocks):
        return indices
    block_of = cfg.block_of
    return {i for i in indices if 0 <= i < len(block_of) and block_of[i] in blocks}


def _is_straight_line(cfg: ControlFlowGraph) -> bool:
    """One block, no back edge: each read sees the last write before it."""
    return len(cfg.blocks) == 1 and not cfg.block_successors[0]


def _straight_line_useful(method: "MethodView", cfg: ControlFlowGraph,
                          effectful: Optional[Iterable[int]]) -> list[int]:
    """`_useful` of a straight-line method, in one backward pass without naming a read:
    `demand` holds the values some useful read below (or the return) sees the write of
    that is still to come, upwards. A node is useful if it is a root or writes one of
    them; then its writes meet that demand and its reads add theirs."""
    nodes = method.nodes
    demand = {v for v in method.outputs if v is not None} if cfg.exits else set()
    needed, meet, met, add = demand.isdisjoint, demand.difference_update, demand.discard, demand.update
    roots = set(effectful) if effectful is not None else None
    useful: list[int] = []
    effects = _EFFECT_KINDS
    for node in reversed(nodes):
        outputs = node.outputs
        if roots is None:
            root = node.mutates or node.kind in effects
        else:
            root = node.index in roots
        if len(outputs) == 1:  # most nodes: one write, asked and met without a set call
            if root or outputs[0] in demand:
                useful.append(node.index)
                met(outputs[0])
                add(node.inputs)
        elif root or not needed(outputs):
            useful.append(node.index)
            meet(outputs)
            add(node.inputs)
    return useful


def _useful(nodes: "tuple[Node, ...]", roots: set[int], outputs: Iterable[Optional[str]],
            at_exit: dict[str, frozenset[int]], reads: Optional[Reads],
            writers: Optional[dict[str, frozenset[int]]]) -> set[int]:
    """The nodes whose writes reach, transitively, a root's reads or the method's return
    (`FlowFacts.live_values` are the values they read). A closure: the order of the work
    does not change the set."""
    useful: set[int] = set()
    work: list[int] = []

    def mark(defs: Iterable[int]) -> None:
        for d in defs:
            if d != ENTRY and d not in useful:
                useful.add(d)
                work.append(d)

    mark(roots)
    for vid in outputs:
        if vid is not None:
            mark(at_exit.get(vid, _ENTRY_SET))
    if reads is None:  # flow-insensitive: every write of a value reaches every read
        assert writers is not None
        expanded: set[str] = set()  # values whose writers are all marked
        while work:
            for vid in nodes[work.pop()].inputs:
                if vid not in expanded:
                    expanded.add(vid)
                    mark(writers.get(vid, ()))
        return useful
    names, phis = reads.names, reads.phis
    add, push, pop = useful.add, work.append, work.pop
    while work:
        read = names[pop()]
        if read is None:
            continue
        if len(read) > _SCAN:  # a wide read (a delegate's 100,000 operands): by set operations
            mark(_fresh_names(read, useful, phis))
            continue
        for name in read:
            if name >= 0:  # one writer: the common case, without a call
                if name not in useful:
                    add(name)
                    push(name)
            elif name != ENTRY:
                mark(phis[_phi_index(name)])
    return useful


def _fresh_names(read: tuple[int, ...], useful: set[int], phis: list[frozenset[int]]) -> set[int]:
    """The writes a read of many names may see that are not yet `useful` (ENTRY aside):
    its writer names and the writes of its phis."""
    fresh = set(read)
    fresh.difference_update(useful)
    fresh.discard(ENTRY)
    if fresh and min(fresh) < ENTRY:  # phis among them (rare: a wide read is a delegate's)
        named = [n for n in fresh if n < ENTRY]
        fresh.difference_update(named)
        for name in named:
            fresh.update(phis[_phi_index(name)])
        fresh.discard(ENTRY)
        fresh.difference_update(useful)
    return fresh


class _TooMuchWork(Exception):
    pass


def _reaching_definitions(method: "MethodView", cfg: ControlFlowGraph, work_limit: int,
                          more: Optional[Callable[[], int]] = None) -> tuple[Reads, dict]:
    """Per read, the writes that reach it (`Reads`); per value, the writes that reach the exit.
    `more`, when given, is asked once for more work when `work_limit` is spent.

    A method without jumps is one block: each read sees the last write before it, in one
    pass (`_straight_line_reads`). Otherwise `_sparse_reads`.
    """
    if _is_straight_line(cfg):
        return _straight_line_reads(method, cfg, work_limit + (more() if more is not None else 0))
    return _sparse_reads(method, cfg, work_limit, more)


def _straight_line_reads(method: "MethodView", cfg: ControlFlowGraph, work_limit: int) -> tuple[Reads, dict]:
    """One block, no back edge: the name of each read is the last write of its value
    before it (ENTRY if none), and the exit sees the last writes. The same answer as
    `_sparse_reads`, without dominators or renaming stacks."""
    nodes = method.nodes
    if len(nodes) + 2 > work_limit:  # what `_sparse_reads` charges here: root, block, nodes
        raise _TooMuchWork
    current: dict[str, int] = {}
    names: list[Optional[tuple[int, ...]]] = [None] * len(nodes)
    _rename_block(nodes, 0, len(nodes) - 1, names, current, None)
    reads = Reads(names, [], nodes)
    at_exit: dict[str, frozenset[int]] = {}
    if cfg.exits:
        for vid in method.outputs:
            if vid is not None:
                at_exit[vid] = reads.resolve(current.get(vid, ENTRY))
    return reads, at_exit


def _sparse_reads(method: "MethodView", cfg: ControlFlowGraph, work_limit: int,
                  more: Optional[Callable[[], int]] = None) -> tuple[Reads, dict]:
    """Sparse, the way SSA construction is (Cytron et al.): a value's reaching writes change
    only at its writes and at the joins in the iterated dominance frontier of the blocks
    that write it, so each value gets a phi at those joins only, one walk of the dominator
    tree names the write (or phi) each read sees, and each phi's set of writes is the union
    of what reaches it along its edges (solved per strongly connected component of phis:
    loops). The work is O(nodes + operands + phis + the sets' sizes) however many values
    and blocks there are; a dense state per block (every value written so far) was
    O(blocks x values) in time and memory on a program with thousands of loops.
    The entry is a virtual block before block 0 where every value holds ENTRY.
    """
    nodes = method.nodes
    blocks = cfg.blocks
    succ = cfg.block_successors
    n_blocks = len(blocks)
    root = n_blocks  # the virtual entry block
    budget = [work_limit]
    extra = [more]

    def charge(amount: int) -> None:
        budget[0] -= amount
        if budget[0] < 0:
            if extra[0] is None:
                raise _TooMuchWork
            budget[0] += extra[0]()  # the rest of the budget, counted once
            extra[0] = None
            if budget[0] < 0:
                raise _TooMuchWork

    order = _reverse_postorder(succ, root)  # reachable blocks (and the root), root first
    reachable = set(order)
    preds: dict[int, list[int]] = {b: [] for b in order}
    for b in order:
        for c in (succ[b] if b != root else (0,)) if n_blocks else ():
            preds[c].append(b)
    idom = immediate_dominators(root, lambda b: succ[b] if b != root else ((0,) if n_blocks else ()))
    charge(len(order))
    # The frontier walks, charged before they are taken: a walk from a join's predecessor
    # up to the join's immediate dominator is as long as their depths in the dominator
    # tree differ, and the walks alone can be quadratic (a run of nested loops, many
    # back edges to one head): such a method falls back without taking any of them.
    depth = {root: 0}
    for b in order:
        if b != root:
            depth[b] = depth[idom[b]] + 1
    charge(sum(depth[p] - depth[idom[b]] for b in order if len(preds[b]) >= 2 for p in preds[b]))
    frontier: dict[int, set[int]] = {}
    for b in order:
        if len(preds[b]) >= 2:
            stop = idom[b]
            for p in preds[b]:
                runner = p
                while runner != stop:
                    frontier.setdefault(runner, set()).add(b)
                    runner = idom[runner]
    phis_at, n_phis = _place_phis(nodes, blocks, order, root, frontier, charge, method.outputs)
    # Renaming: one walk of the dominator tree; `current` holds the name each value has
    # at this point of the walk, and each block's undo list restores it on the way back.
    children: dict[int, list[int]] = {}
    for b in order:
        if b != root:
            children.setdefault(idom[b], []).append(b)
    exit_blocks = {cfg.block_of[i] for i in cfg.exits}
    outputs = [v for v in method.outputs if v is not None]
    names: list[Optional[tuple[int, ...]]] = [None] * len(nodes)
    phi_operands: list[list[int]] = [[] for _ in range(n_phis)]
    exit_names: dict[int, list[int]] = {}
    current: dict[str, int] = {}
    get = current.get
    walk: list[tuple[int, Optional[list[tuple[str, int]]]]] = [(root, None)]
    pending = 1  # blocks on `walk` not yet visited
    while walk:
        b, undo = walk.pop()
        if undo is not None:  # leaving b: restore the names it changed, latest first
            for vid, old in reversed(undo):
                current[vid] = old
            continue
        pending -= 1
        # Only a block visited later (outside b's subtree) needs b's names undone: down
        # a chain of dominators (a run of loops) nothing is, and no undo list is kept.
        undo = [] if pending else None
        if b != root:
            for vid, name in phis_at.get(b, ()):
                if undo is not None:
                    undo.append((vid, get(vid, ENTRY)))
                current[vid] = name
            first, last = blocks[b]
            charge(last - first + 1)
            _rename_block(nodes, first, last, names, current, undo)
            if b in exit_blocks:
                exit_names[b] = [get(v, ENTRY) for v in outputs]
        for c in (succ[b] if b != root else ((0,) if n_blocks else ())):
            for vid, name in phis_at.get(c, ()):
                phi_operands[_phi_index(name)].append(get(vid, ENTRY))
        if undo is not None:
            walk.append((b, undo))
        below = children.get(b)
        if below:
            walk.extend((c, None) for c in reversed(below))
            pending += len(below)
    reads = Reads(names, _phi_sets(phi_operands, charge), nodes)
    at_exit: dict[str, frozenset[int]] = {}
    for i in cfg.exits:
        b = cfg.block_of[i]
        found = exit_names.get(b) if b in reachable else None
        for k, vid in enumerate(outputs):
            here = reads.resolve(found[k]) if found is not None else _ENTRY_SET
            at_exit[vid] = at_exit.get(vid, frozenset()) | here
    return reads, at_exit


def _rename_block(nodes, first: int, last: int, names: list, current: dict[str, int],
                  undo: Optional[list[tuple[str, int]]]) -> None:
    """Name the reads of nodes `first..last` (each sees `current`, then the node's writes
    take over), noting in `undo` (when kept) what each write replaced."""
    get = current.get
    entries = repeat(ENTRY)
    for i in range(first, last + 1):
        node = nodes[i]
        inputs = node.inputs
        if len(inputs) == 1:  # most nodes: no map to build
            names[i] = (get(inputs[0], ENTRY),)
        else:
            names[i] = tuple(map(get, inputs, entries))  # (inputs, constants: no reads)
        if undo is None:  # (a straight-line method, a run of loops: no undo list kept)
            for vid in node.outputs:
                current[vid] = i
            continue
        for vid in node.outputs:
            undo.append((vid, get(vid, ENTRY)))
            current[vid] = i


def _place_phis(nodes, blocks, order: list[int], root: int, frontier: dict[int, set[int]],
                charge, outputs: Iterable[Optional[str]]) -> tuple[dict[int, list[tuple[str, int]]], int]:
    """Per block, the phis at its head (value, phi name): for each value, at the iterated
    dominance frontier of the blocks that write it. Returns them and how many there are.

    Semi-pruned (Briggs et al.): only values some block reads before writing them, or the
    method returns, get phis. Any other value is read only after a write of it in the same
    block, which is what such a read sees, so no read could see its phis (a loop body's
    temporaries: most values of a program of loops; loops10k.pte: 20,000 phis, not 90,000)."""
    written_in: dict[str, list[int]] = {}
    exposed = {vid for vid in outputs if vid is not None}  # read at the exit
    for b in order:
        if b == root:
            continue
        first, last = blocks[b]
        written: dict[str, None] = {}  # in this block so far, in order
        for i in range(first, last + 1):
            node = nodes[i]
            for vid in node.inputs:
                if vid not in written:
                    exposed.add(vid)
            for vid in node.outputs:
                written[vid] = None
        for vid in written:
            where = written_in.get(vid)
            if where is None:
                written_in[vid] = [b]
            else:
                where.append(b)
    phis_at: dict[int, list[tuple[str, int]]] = {}
    count = 0
    placed: dict[object, tuple[list[int], int]] = {}  # written-in blocks -> phi blocks, work
    for vid, where in written_in.items():
        if vid not in exposed:
            continue
        # The iterated frontier depends only on the blocks written in (most values: one
        # loop body), so it is found once per distinct set and charged for each value.
        key = where[0] if len(where) == 1 else tuple(where)
        found = placed.get(key)
        if found is None:
            found = placed[key] = _iterated_frontier(where, frontier)
        heads, work = found
        if work:
            charge(work)
        for y in heads:
            count += 1
            phis_at.setdefault(y, []).append((vid, _phi_name(count - 1)))
    return phis_at, count


def _iterated_frontier(where: list[int], frontier: dict[int, set[int]]) -> tuple[list[int], int]:
    """The blocks of the iterated dominance frontier of `where`, in the order found, and
    the frontier entries visited (the work `_sparse_reads` is charged)."""
    heads: list[int] = []
    has_phi: set[int] = set()
    work = list(where)
    queued = set(work)
    visited = 0
    while work:
        for y in frontier.get(work.pop(), ()):
            visited += 1
            if y not in has_phi:
                has_phi.add(y)
                heads.append(y)
                if y not in queued:
                    queued.add(y)
                    work.append(y)
    return heads, visited


def _phi_name(index: int) -> int:
    """Phis are named below ENTRY (-1): -2, -3, ...; writes by their node index."""
    return -2 - index


def _phi_index(name: int) -> int:
    return -2 - name


def _reverse_postorder(succ: tuple[tuple[int, ...], ...], root: int) -> list[int]:
    """The blocks reachable from the virtual root (whose one successor is block 0), in
    reverse postorder, iteratively."""
    def successors(b: int) -> tuple[int, ...]:
        return succ[b] if b != root else ((0,) if succ else ())

    post: list[int] = []
    seen = {root}
    work = [(root, 0)]
    while work:
        b, edge = work.pop()
        out = successors(b)
        if edge < len(out):
            work.append((b, edge + 1))
            c = out[edge]
            if c not in seen:
                seen.add(c)
                work.append((c, 0))
        else:
            post.append(b)
    post.reverse()
    return post


def _phi_sets(operands: list[list[int]], charge) -> list[frozenset[int]]:
    """Each phi's writes: the union over its operands (writes, ENTRY, or other phis),
    per strongly connected component of the phi graph (a loop's phis reach each other)."""
    sets: list[frozenset[int]] = [frozenset()] * len(operands)
    # A phi with no phi operand (most: a loop head's, fed from outside and round the back
    # edge) is a component of its own that depends on nothing: its set is its operands.
    # Only the others need the component search.
    inner: list[int] = []
    work = 0  # charged once for all of these: their sets are no bigger than their operands
    for p, ops in enumerate(operands):
        if ops and min(ops) < ENTRY:
            inner.append(p)
        else:
            frozen = sets[p] = frozenset(ops)
            work += len(frozen) + 1
    charge(work)
    if not inner:
        return sets
    position = {p: k for k, p in enumerate(inner)}
    graph = tuple(tuple(position[q] for q in (_phi_index(o) for o in operands[p] if o < ENTRY) if q in position)
                  for p in inner)
    for component in _strongly_connected(graph):  # dependencies first
        members = {inner[k] for k in component}
        acc: set[int] = set()
        for p in members:
            for o in operands[p]:
                if o >= ENTRY:
                    acc.add(o)
                elif _phi_index(o) not in members:
                    acc |= sets[_phi_index(o)]
        charge(len(acc) + len(members))
        frozen = frozenset(acc)
        for p in members:
            sets[p] = frozen
    return sets
