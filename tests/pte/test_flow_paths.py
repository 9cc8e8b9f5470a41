"""Usefulness over a CFG when a node reads many values (a delegate's 100,000 operands):
`cfg._useful` marks such a read's writes by set operations (`_fresh_names`) instead of one
by one, and must still equal the textbook dense dataflow (random CFGs with wide reads,
phis among their names)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from test_reaching_paths import _dense, _dense_useful, random_method
from xferlint.analyzer import cfg as cfgmod
from xferlint.analyzer.cfg import FlowFacts
from xferlint.analyzer.view import MethodView, Node, OpKind


def _wide_cfg(seed: int) -> MethodView:
    rnd = random.Random(seed)
    n = rnd.randint(2, 20)
    slots = [f"s{k}" for k in range(rnd.randint(2, 40))]
    kinds = [OpKind.COMPUTE, OpKind.MOVE, OpKind.DELEGATE, OpKind.CONTROL, OpKind.INPUT]

    def node_at(i: int) -> Node:
        kind = rnd.choice(kinds)
        wide = rnd.random() < 0.4
        ins = tuple(rnd.choice(slots) for _ in range(rnd.randint(cfgmod._SCAN + 1, 60) if wide else rnd.randint(0, 3)))
        outs = tuple(rnd.sample(slots, k=rnd.randint(0, min(4, len(slots)))))
        return Node(index=i, name=f"n{i}", kind=kind, target=kind.value, inputs=ins, outputs=outs,
                    mutates=bool(ins) and rnd.random() < 0.1)

    return random_method(rnd, n, slots, node_at, jump=0.35)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_wide_reads_are_useful_as_the_dense_dataflow_says(seed):
    method = _wide_cfg(seed)
    reaching, at_exit = _dense(method)
    facts = FlowFacts.compute(method, method.cfg)
    assert facts.reaching_at == reaching
    assert facts.at_exit == at_exit
    assert facts.useful == _dense_useful(method, reaching, at_exit)
    live = {v for v in method.outputs if v is not None}
    live.update(v for u in facts.useful for v in method.nodes[u].inputs)
    assert facts.live_values == live
