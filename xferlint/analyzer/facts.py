"""DeviceFacts: everything rules may ask about a method, computed once.

- `device(value)`: the solved lattice value;
- `writers(value)` / `readers(value)`: the nodes that write and read a value;
- `is_live(value)`: whether anything that matters (a method output, a delegate call, an
  in-place write, an unmodelled op) ever reads it, transitively;
- `nbytes(value)`: bytes moved when the value is copied, None when the shape is symbolic.

When the method has a CFG (`.pte` instructions over mutable slots), liveness is computed
over it instead (`analyzer/cfg.py`): a write is live only if it reaches, on some path
before being overwritten, a read by a node that matters; `reaching_writers(node, value)`
names the writes a particular read can see.
"""

from __future__ import annotations

from collections import deque
from dataclasses import field
from typing import Any, Callable, Optional, TypeVar, Union

from xferlint.analyzer.lattice import UNREACHED, LatticeValue
from xferlint.analyzer.solver import solve_indexed
from xferlint.analyzer.view import MethodView, Node, OpKind, Value
from xferlint.records import dataclass

# Nodes that count as reads in their own right: their effect is not only their results.
_EFFECTFUL = frozenset({OpKind.DELEGATE, OpKind.UNKNOWN})

T = TypeVar("T")


@dataclass
class DeviceFacts:
    """The solved devices of one method's values, with its writers, readers and liveness."""

    method: MethodView
    devices: dict[str, LatticeValue]
    _writers: dict[str, list[Node]] = field(default_factory=dict, repr=False)
    _readers: dict[str, list[Node]] = field(default_factory=dict, repr=False)
    _live: Union[set[str], frozenset[str]] = field(default_factory=set, repr=False)
    _outputs: frozenset[str] = frozenset()
    _flow: Optional[Any] = field(default=None, repr=False)  # cfg.FlowFacts when the method has a CFG
    _in_place: dict[tuple[str, bool], Optional[Node]] = field(default_factory=dict, repr=False)  # in_place_reader cache
    _derived: dict[str, Any] = field(default_factory=dict, repr=False)  # see `derived`

    @classmethod
    def compute(cls, method: MethodView) -> "DeviceFacts":
        devices, readers, writers = solve_indexed(method)  # one pass: the index and the solve's first
        facts = cls(method=method, devices=devices, _writers=writers, _readers=readers)
        facts._outputs = frozenset(v for v in method.outputs if v is not None)
        if method.cfg is not None:
            from xferlint.analyzer.cfg import FlowFacts

            facts._flow = FlowFacts.compute(method, method.cfg)  # its live values are built if asked
        else:
            facts._live = facts._liveness()
        return facts

    def device(self, vid: Optional[str]) -> LatticeValue:
        return self.devices.get(vid, UNREACHED) if vid is not None else UNREACHED

    def value(self, vid: str) -> Optional[Value]:
        return self.method.values.get(vid)

    def writers(self, vid: Optional[str]) -> list[Node]:
        return self._writers.get(vid, []) if vid is not None else []

    def writer(self, vid: Optional[str]) -> Optional[Node]:
        """The unique node that writes `vid`, or None when there are none or several."""
        writers = self.writers(vid)
        return writers[0] if len(writers) == 1 else None

    def sole_writers(self, vids: list[Optional[str]]) -> list[Optional[Node]]:
        """`[self.writer(v) for v in vids]`, in one loop: a delegate may read 100,000 values."""
        get = self._writers.get
        found = []
        for vid in vids:
            writers = get(vid)
            found.append(writers[0] if writers is not None and len(writers) == 1 else None)
        return found

    def reaching_writers(self, node: Node, vid: str) -> list[Node]:
        """The writers of `vid` whose write `node`'s read of it can see (every writer when
        the method has no CFG: SSA values have one), in program order."""
        if self._flow is None:
            return self.writers(vid)
        return self._flow.reaching_writer_nodes(node.index, vid)  # shared: read, never change it

    def derived(self, key: str, compute: Callable[["DeviceFacts"], T]) -> T:
        """`compute(self)`, computed once per facts and kept under `key`: something later
        stages derive from the facts more than once per check (`summary.copies`: the
        transfer summary is built for the check and again after the fix trial)."""
        if key not in self._derived:
            self._derived[key] = compute(self)
        return self._derived[key]

    def is_useful(self, node: Node) -> bool:
        """Whether the node matters: it has an effect, or something that matters reads what
        it writes (only over a CFG; without one, whether any of its results is live)."""
        if self._flow is not None:
            return node.index in self._flow.useful
        return node.mutates or node.kind in _EFFECTFUL or any(
            self.is_live(v) or self.is_output(v) for v in node.outputs
        )

    def readers(self, vid: Optional[str]) -> list[Node]:
        return self._readers.get(vid, []) if vid is not None else []

    def in_place_reader(self, vid: Optional[str], unmodelled: bool = True) -> Optional[Node]:
        """The first reader of `vid` that writes it in place, or (with `unmodelled`) may:
        an unmodelled op; None when there is none. Cached: rules ask once per copy of a
        value, and a value that k copies read would otherwise be scanned k times
        (quadratic in fan-out)."""
        if vid is None:
            return None
        key = (vid, unmodelled)
        if key not in self._in_place:
            self._in_place[key] = next(
                (r for r in self.readers(vid) if r.mutates or (unmodelled and r.kind == OpKind.UNKNOWN)), None
            )
        return self._in_place[key]

    def is_output(self, vid: Optional[str]) -> bool:
        return vid in self._outputs

    def is_live(self, vid: Optional[str]) -> bool:
        return vid in (self._live if self._flow is None else self._flow.live_values)

    def nbytes(self, vid: Optional[str]) -> Optional[int]:
        value = self.method.values.get(vid) if vid is not None else None
        return value.tensor.nbytes if value is not None and value.tensor is not None else None

    def _liveness(self) -> set[str]:
        """Backward reachability from the roots: outputs and effectful nodes' operands."""
        live: set[str] = set()
        work: deque[str] = deque()

        def mark(vid: str) -> None:
            if vid not in live:
                live.add(vid)
                work.append(vid)

        for vid in self._outputs:
            mark(vid)
        for node in self.method.nodes:
            if node.kind in _EFFECTFUL or node.mutates:
                for vid in node.inputs:
                    mark(vid)
        while work:
            vid = work.popleft()
            for writer in self._writers.get(vid, ()):
                for operand in writer.inputs:
                    mark(operand)
        return live
