"""Does a memory plan stay valid when a fix makes instructions read other tensors?

A `.pte`'s memory plan lets tensors whose lifetimes do not overlap share bytes of a planned
buffer. A fix that removes a copy makes the copy's readers read the tensor it copied (XF001:
the device tensor; XF004: the first copy) instead, so that tensor must now stay alive until
those readers run: its lifetime grows. That is safe only if nothing else planned into the
same bytes is written while it is still to be read.

`MemoryCheck` answers that over the method's CFG, on the method as the edits leave it:
removed nodes neither read nor write, rewired readers read the new value. The tensor is
live at a node when some path from there reaches a read of it (or of a view of it) before
it is written again; a conflict is a node where it is live (read later, or read by that
very node) that writes another planned tensor overlapping its bytes. Only conflicts the
original program did not already have count (in-place kernels and the emitter's own
aliasing are ExecuTorch's business, not the fix's).

Fixes are decided one after another, each on top of those already accepted, so the check
is incremental: `trial(delta, values)` asks about the accepted edits plus one plan's,
`commit(delta)` accepts them. The live region of each value a trial asks about is kept
for the accepted edits and only grown by a trial's new readers (a walk stops where the
region already is), so deciding k plans costs the regions' sizes, not k times the method.
A trial that changes a region in any other way (removes a node that reads or writes the
value or a view of it, moves a reader away, edits a view) computes that region afresh.

The walks share one `WalkBudget` per fix trial. Regions are as long as the values live, so
n fixes that each keep a value alive across the same n nodes walk n**2 steps; past the
budget a trial raises `WalkBudgetSpent` and the trial refuses the plans left, which keeps
the check linear on every program at the cost of proving fewer fixes on such ones.
"""

from collections import Counter
from typing import Iterable, NamedTuple, Optional

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.view import MethodView, Node, OpKind


_UNSET = object()


class Delta(NamedTuple):
    """What one plan adds to the accepted edits: reads swapped per reader, nodes removed."""

    rewires: dict[int, dict[str, str]]  # node index -> {old value: new value}
    removed: frozenset[int]
    outputs: dict[str, str]  # method outputs swapped


NO_DELTA = Delta({}, frozenset(), {})


class Conflict(NamedTuple):
    value: str  # the tensor kept alive
    writer: Node  # writes `other` while `value` is still to be read
    other: str
    reader: Node  # a read of `value` that `writer` comes before (or is)


# The live-range walks' work budget of one fix trial (steps: a node visited or a reader
# added, over every method, round and pass): a program's fixes walk at most a few steps
# per node (ExecuTorch's lowerings, the random and synthetic programs of the benchmarks),
# while n fixes whose live ranges all span the same n nodes (a delegate with n outputs,
# each round-tripping into the next delegate) walk n**2.
WALK_BUDGET, WALK_BUDGET_PER_NODE = 100_000, 4


class WalkBudget:
    """The steps the live-range walks of one fix trial may take, and those taken."""

    __slots__ = ("total", "spent")

    def __init__(self, nodes: int) -> None:
        self.total = WALK_BUDGET + WALK_BUDGET_PER_NODE * nodes
        self.spent = 0


class WalkBudgetSpent(Exception):
    """A trial (or a commit) would walk past the budget: its answer is not known, and no
    further plan is decided."""

    def __init__(self, budget: int) -> None:
        super().__init__(budget)
        self.budget = budget


class _Layer(dict):
    """A dict over a read-only base dict: what a trial adds to a kept region."""

    __slots__ = ("base",)

    def __init__(self, base: dict) -> None:
        super().__init__()
        self.base = base

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.base


class _Region:
    """Where `value` is live under the accepted edits, and the conflicts found there."""

    __slots__ = ("family", "live", "readers", "found", "counted", "scanned")

    def __init__(self, family: set[str], live: Optional[dict] = None, readers: Optional[dict] = None) -> None:
        self.family = family
        self.live: dict[int, Node] = {} if live is None else live  # node -> a read it leads to
        self.readers: dict[int, None] = {} if readers is None else readers
        self.found: list[tuple[int, str, int]] = []  # (writer, other, reader)
        # of `found[:scanned]`, those the original program does not have, in order (see `_counting`)
        self.counted: list[tuple[int, str, int]] = []
        self.scanned = 0


class MemoryCheck:
    """The memory plan of one method under a growing set of accepted edits."""

    def __init__(self, method: MethodView, facts: DeviceFacts, budget: Optional[WalkBudget] = None) -> None:
        self.method = method
        self.nodes = method.nodes
        self.cfg = method.cfg
        self.facts = facts  # the original readers of a value, asked only for the values trials touch
        self._read: dict[str, list[int]] = {}
        self.rewires: dict[int, dict[str, str]] = {}
        self.removed: set[int] = set()
        self.outputs: dict[str, str] = {}
        # what the method returns, as a count per value: as written, and under `outputs`
        # (kept up to date by `commit`); `_returned` asks per region, and a method may
        # return thousands of values
        self._written_outputs = Counter(v for v in method.outputs if v is not None)
        self._returns = Counter(self._written_outputs)
        self.rewired_to: dict[str, set[int]] = {}  # value -> nodes an accepted edit makes read it
        self._before: dict[str, set[tuple[int, str]]] = {}
        self._regions: dict[str, _Region] = {}  # kept for the accepted edits
        self._first: dict[str, _Region] = {}  # original regions, asked while no edit is accepted
        self._members: dict[str, set[str]] = {}  # family member -> values whose region it is in
        # the regions the last trial computed afresh, with no conflict, and its delta: the
        # regions under the accepted edits plus that delta, which `commit` keeps if it is
        # that delta's, instead of computing them afresh a second time
        self._fresh: tuple[Optional[Delta], dict[str, _Region]] = (None, {})
        self.budget = WalkBudget(len(method.nodes)) if budget is None else budget  # see WalkBudgetSpent
        self._spans: dict[str, Optional[tuple]] = {}  # `_span`

    # -- the method as the edits leave it ------------------------------------------------
    def _gone(self, i: int, delta: Delta) -> bool:
        return i in self.removed or i in delta.removed

    def _uses(self, i: int, delta: Delta) -> tuple[str, ...]:
        if i in self.removed or i in delta.removed:  # _gone, inline: asked per node of every walk
            return ()
        inputs = self.nodes[i].inputs
        mine, theirs = self.rewires.get(i), delta.rewires.get(i)
        if not mine and not theirs:
            return inputs
        swap = {**mine, **theirs} if mine and theirs else (mine or theirs)
        return tuple(swap.get(v, v) for v in inputs)

    def _defs(self, i: int, delta: Delta) -> tuple[str, ...]:
        return () if i in self.removed or i in delta.removed else self.nodes[i].outputs

    def _read_by(self, v: str) -> list[int]:
        """The nodes that read `v` in the original method (indexed per value on first ask:
        an index of every node's reads cost more than all the trials of a method)."""
        got = self._read.get(v)
        if got is None:
            got = self._read[v] = [n.index for n in self.facts.readers(v)]
        return got

    def _rewired_to(self, v: str, delta: Delta) -> list[int]:
        """Nodes the accepted edits or `delta` make read `v` (a list: asked per value of a
        walk, and a generator cost more than the few nodes it yields)."""
        mine = self.rewired_to.get(v)
        theirs = [i for i, swap in delta.rewires.items() if v in swap.values()] if delta.rewires else ()
        if not mine:
            return theirs or ()
        return [*mine, *theirs]

    def _family(self, value: str, delta: Delta) -> set[str]:
        """The value and every view of it (alias nodes share its storage)."""
        family, work = {value}, [value]
        while work:
            v = work.pop()
            aliases = [i for group in (self._read_by(v), self._rewired_to(v, delta)) for i in group
                       if self.nodes[i].kind == OpKind.ALIAS]
            for i in aliases:
                if v in self._uses(i, delta):
                    for out in self._defs(i, delta):
                        if out not in family:
                            family.add(out)
                            work.append(out)
        return family

    def _readers_of(self, family: set[str], delta: Delta) -> list[int]:
        found = set()
        for v in family:
            for group in (self._read_by(v), self._rewired_to(v, delta)):
                for i in group:
                    if i not in found and not family.isdisjoint(self._uses(i, delta)):
                        found.add(i)
        return sorted(found)

    def _returned(self, family: set[str], delta: Delta) -> bool:
        """Whether the method returns a value of `family` under the accepted edits plus
        `delta` (`outputs` maps a returned value to the one returned instead)."""
        returns = self._returned_now()
        change = self._output_change(delta.outputs) if delta.outputs else {}
        return any(returns[v] + change.get(v, 0) > 0 for v in family)

    def _returned_now(self) -> Counter:
        """How many times the method returns each value under the accepted edits."""
        # while `_original` sets the accepted edits aside, `outputs` is empty
        return self._returns if self.outputs else self._written_outputs

    def _output_change(self, outputs: dict[str, str]) -> dict[str, int]:
        """How remapping the returned values by `outputs` changes the count per value."""
        change: dict[str, int] = {}
        for v, new in outputs.items():
            times = self._written_outputs[v]
            if times:
                old = self.outputs.get(v, v)
                change[old] = change.get(old, 0) - times
                change[new] = change.get(new, 0) + times
        return change

    def _span(self, value: str) -> Optional[tuple]:
        """(buffer, first byte, end or None when its size is not known) of a planned
        tensor, None when unplanned; once per value (a walk asks per node it visits)."""
        spans = self._spans
        span = spans.get(value, _UNSET)
        if span is _UNSET:
            p = self.method.values[value].placement
            span = spans[value] = None if p is None else (
                p.buffer, p.offset, None if p.nbytes is None else p.offset + p.nbytes)
        return span

    # -- live regions ------------------------------------------------------------------------
    def _planned(self, value: str) -> bool:
        v = self.method.values.get(value)
        return self.cfg is not None and v is not None and v.placement is not None

    def _grow(self, value: str, region: _Region, readers: Iterable[int], delta: Delta,
              stop: Optional[set] = None) -> Optional[tuple[int, str, int]]:
        """Add `readers` to the region and walk back from them until the region or a write
        of `value`. Every conflict is recorded; with `stop` (the conflicts that do not count),
        the first one that counts is returned at once."""
        preds = self.cfg.predecessors
        work: list[tuple[int, int]] = []
        for r in readers:
            if r in region.readers:
                continue
            self._spend(1)
            region.readers[r] = None
            hit = self._note(value, region, r, r, delta, stop)
            if hit is not None:
                return hit
            work.extend((p, r) for p in preds[r])
        return self._walk(value, region, work, delta, stop)

    def _walk(self, value: str, region: _Region, work: list[tuple[int, int]], delta: Delta,
              stop: Optional[set]) -> Optional[tuple[int, str, int]]:
        # `_defs` inline, `_note` asked only of nodes that write something, and names bound
        # once: a fix trial walks up to its budget of steps, a few per node of the program
        preds, nodes, note = self.cfg.predecessors, self.nodes, self._note
        live, readers, removed, dropped = region.live, region.readers, self.removed, delta.removed
        push = work.append
        budget = self.budget
        left = budget.total - budget.spent  # counted here, not per step through `_spend`
        steps = 0
        try:
            while work:
                i, reader = work.pop()
                if i in live:
                    continue
                steps += 1
                if steps > left:
                    raise WalkBudgetSpent(budget.total)
                live[i] = nodes[reader]
                if i in removed or i in dropped:  # neither reads nor writes
                    for p in preds[i]:
                        push((p, reader))
                    continue
                outputs = nodes[i].outputs
                if outputs and i not in readers:
                    hit = note(value, region, i, reader, delta, stop)
                    if hit is not None:
                        return hit
                if value in outputs:
                    continue  # written here: earlier points see another lifetime
                for p in preds[i]:
                    push((p, reader))
            return None
        finally:
            budget.spent += steps

    def _spend(self, steps: int) -> None:
        budget = self.budget
        budget.spent += steps
        if budget.spent > budget.total:
            raise WalkBudgetSpent(budget.total)

    def _note(self, value: str, region: _Region, i: int, reader: int, delta: Delta,
              stop: Optional[set]) -> Optional[tuple[int, str, int]]:
        """Record what node `i` writes into `value`'s bytes while `value` is live there (a
        clash: another planned tensor, not a view of it), for the read at `reader`."""
        if i in self.removed or i in delta.removed:
            return None
        mine = self._span(value)
        if mine is None:
            return None  # unplanned memory (the caller's, or allocated at run time) is not shared
        family, spans, span = region.family, self._spans, self._span
        buffer, start, end = mine
        for other in self.nodes[i].outputs:
            if other in family or other == value:
                continue
            theirs = spans.get(other, _UNSET)
            if theirs is _UNSET:
                theirs = span(other)
            if theirs is None or theirs[0] != buffer:
                continue
            # a size xferlint cannot compute overlaps: assume the worst
            if end is not None and theirs[2] is not None and not (start < theirs[2] and theirs[1] < end):
                continue
            found = (i, other, reader)
            region.found.append(found)
            if stop is not None and (i, other) not in stop:
                return found
        return None

    def _region(self, value: str, delta: Delta, stop: Optional[set] = None) -> tuple[_Region, Optional[tuple]]:
        """The region of `value` under the accepted edits plus `delta`, computed afresh."""
        region = _Region(self._family(value, delta))
        hit = self._grow(value, region, self._readers_of(region.family, delta), delta, stop)
        if hit is None and self._returned(region.family, delta):
            exits = [e for e in sorted(self.cfg.exits) if e not in region.live]
            for e in exits:
                region.live[e] = self.nodes[e]
                hit = self._note(value, region, e, e, delta, stop) if e not in region.readers else None
                if hit is not None:
                    break
                if value not in self._defs(e, delta):
                    hit = self._walk(value, region, [(p, e) for p in self.cfg.predecessors[e]], delta, stop)
                    if hit is not None:
                        break
        return region, hit

    def _original(self, value: str) -> set[tuple[int, str]]:
        """The conflicts the original program already has for `value`."""
        before = self._before.get(value)
        if before is None:
            saved = self.rewires, self.removed, self.outputs, self.rewired_to
            self.rewires, self.removed, self.outputs, self.rewired_to = {}, set(), {}, {}
            try:
                region, _ = self._region(value, NO_DELTA)
            finally:
                self.rewires, self.removed, self.outputs, self.rewired_to = saved
            before = self._before[value] = {(i, other) for i, other, _ in region.found}
            if self._pristine():
                self._first[value] = region
        return before

    def _pristine(self) -> bool:
        """No edit accepted yet: the original region of a value is its kept region."""
        return not (self.rewires or self.removed or self.outputs)

    def _kept(self, value: str) -> Optional[_Region]:
        """The region of `value` under the accepted edits, when one is at hand: kept by a
        commit, or (nothing accepted yet) the original one `_original` computed; a trial
        then only grows a layer over it, as over any kept region, instead of computing the
        region afresh a second time."""
        kept = self._regions.get(value)
        if kept is None and self._pristine():
            kept = self._first.get(value)
        return kept

    def _touches(self, family: set[str], delta: Delta) -> bool:
        """Whether `delta` changes the region of a value with this family other than by
        adding readers of it. With nothing accepted (the kept region is the original one),
        removing a node that only reads the family does not count: the region only loses
        what that read kept live, where every conflict is one the original program has
        (they do not count), and which leads nowhere else (a node live there has its
        predecessors live too, up to a write of the value); so growing the original region
        by the new readers finds what computing it afresh finds, in the same order."""
        touched = self._touched(delta, reads=not self._pristine())
        return touched is None or not touched.isdisjoint(family)

    def _new_readers(self, region: _Region, delta: Delta) -> list[int]:
        return sorted(i for i, swap in delta.rewires.items()
                      if i not in region.readers and not self._gone(i, delta)
                      and any(new in region.family for new in swap.values()))

    # -- the questions ----------------------------------------------------------------------
    def trial(self, delta: Delta, values: Iterable[str], regions: Optional[list] = None) -> Optional[Conflict]:
        """A conflict the accepted edits plus `delta` would introduce for `values` (the
        first one found), or None: the memory plan stays valid. `regions`: a list to add
        the live regions the answer read to (for each value asked: its original region,
        None when none is kept, and the trial's), what `xferlint.fixes.pte.carry` proves
        a refusal unchanged by."""
        fresh: dict[str, _Region] = {}
        self._fresh = (delta, fresh)
        for value in dict.fromkeys(values):
            if not self._planned(value):
                continue
            before = self._original(value)
            cached = self._kept(value)
            if cached is None or self._touches(cached.family, delta):
                region, hit = self._region(value, delta, before)
                if hit is None:  # walked to the end: what `commit` would compute (stop never hit)
                    fresh[value] = region
            else:
                region = cached
                hit = self._counting(cached, before, delta)
                if hit is None:
                    region, hit = self._extend(value, cached, delta, before)
            if regions is not None:
                regions.extend((self._first.get(value), region))
            if hit is not None:
                i, other, reader = hit
                return Conflict(value=value, writer=self.nodes[i], other=other, reader=self.nodes[reader])
        return None

    def _counting(self, region: _Region, before: set, delta: Delta) -> Optional[tuple[int, str, int]]:
        """The first conflict of a kept region that counts (not one of `before`, the original
        program's, and its writer still there under the accepted edits plus `delta`). A kept
        region is asked once per plan that reads it, and may hold a conflict per node (a
        value copied into a slot that every other copy overwrites), so what it found is
        sorted out once, as it grows, and writers the accepted edits removed are dropped for
        good: a trial reads only what is new and what counts."""
        found = region.found
        if region.scanned < len(found):
            region.counted.extend(f for f in found[region.scanned:] if (f[0], f[1]) not in before)
            region.scanned = len(found)
        counted, removed, dropped = region.counted, self.removed, delta.removed
        hit, end = None, len(counted)
        for k, f in enumerate(counted):
            if f[0] not in removed and f[0] not in dropped:
                hit, end = f, k
                break
        if any(f[0] in removed for f in counted[:end]):  # read past: not read again
            counted[:end] = [f for f in counted[:end] if f[0] not in removed]
        return hit

    def _extend(self, value: str, cached: _Region, delta: Delta, before: set) -> tuple[_Region, Optional[tuple]]:
        """Grow a layer over the kept region by `delta`'s new readers (the layer is dropped)."""
        trial = _Region(cached.family, _Layer(cached.live), _Layer(cached.readers))
        return trial, self._grow(value, trial, self._new_readers(cached, delta), delta, before)

    def _touched(self, delta: Delta, reads: bool = True) -> Optional[set[str]]:
        """Values whose regions `delta` changes otherwise than by new readers (None: any);
        `reads=False`: leave out what removed nodes only read (see `_touches`)."""
        touched: set[str] = set()
        for i in delta.removed:
            node = self.nodes[i]
            if node.kind == OpKind.ALIAS:
                return None
            if reads:
                touched.update(node.inputs)
            touched.update(node.outputs)
        for i, swap in delta.rewires.items():
            if self.nodes[i].kind == OpKind.ALIAS:
                return None
            touched.update(swap)
        returns = self._returned_now()
        for old, new in delta.outputs.items():
            touched.add(old)
            if returns[new] <= 0:  # a value returned already is live at every exit: returned again, it stays so
                touched.add(new)
        return touched

    def _keep(self, value: str, region: _Region) -> None:
        self._regions[value] = region
        for v in region.family:
            self._members.setdefault(v, set()).add(value)

    def _drop(self, value: str) -> None:
        for v in self._regions.pop(value).family:
            self._members[v].discard(value)

    def commit(self, delta: Delta, values: Iterable[str]) -> None:
        """Accept `delta`: the kept regions it changes otherwise than by new readers are
        dropped, the others grown by its new readers; `values` (the plan's extended values)
        get a kept region: the one the trial of `delta` computed afresh, when it did (the
        walk is the same: the accepted edits then are these plus `delta`, and a region the
        trial of an accepted plan computed is read by no refusal's proof)."""
        trialed, fresh = self._fresh
        if trialed is not delta:
            fresh = {}
        self._fresh = (None, {})
        self._first.clear()  # an accepted edit: original regions are no longer kept ones
        touched = self._touched(delta)
        if touched is None:
            for value in list(self._regions):
                self._drop(value)
        else:
            for value in {k for v in touched for k in self._members.get(v, ())}:
                self._drop(value)
        grow = {k for swap in delta.rewires.values() for new in swap.values() for k in self._members.get(new, ())}
        readers = {k: self._new_readers(self._regions[k], delta) for k in grow}
        self.removed |= delta.removed
        for i, swap in delta.rewires.items():
            self.rewires.setdefault(i, {}).update(swap)
            for new in swap.values():
                self.rewired_to.setdefault(new, set()).add(i)
        for v, times in self._output_change(delta.outputs).items():
            self._returns[v] += times
        self.outputs.update(delta.outputs)
        for value, new_readers in readers.items():
            self._grow(value, self._regions[value], new_readers, NO_DELTA)
        for value in dict.fromkeys(values):
            if self._planned(value) and value not in self._regions:
                region = fresh.get(value)
                self._keep(value, region if region is not None else self._region(value, NO_DELTA)[0])


def describe(method: MethodView, conflict: Conflict) -> str:
    placement = method.values[conflict.value].placement
    other = method.values[conflict.other].placement
    where = f"buffer {placement.buffer}, bytes {placement.offset}-{placement.offset + (placement.nbytes or 0)}"
    theirs = f"bytes {other.offset}-{other.offset + (other.nbytes or 0)}" if other is not None else "the same bytes"
    same = conflict.writer.index == conflict.reader.index
    when = "the very instruction that reads it" if same else f"before `{conflict.reader.name}` reads it"
    return (
        f"`{conflict.value}` ({where}) would have to stay alive for `{conflict.reader.name}`, but "
        f"`{conflict.writer.name}` writes `{conflict.other}` into {theirs} of that buffer, {when}"
    )


