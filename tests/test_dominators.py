"""Lengauer-Tarjan immediate dominators (`xferlint.analyzer.dominators`) against the
definition, on random flow graphs, and on the deep shapes that made the iterative
algorithm quadratic."""

from __future__ import annotations

import random

import pytest

from xferlint.analyzer.cfg import ControlFlowGraph
from xferlint.analyzer.dominators import immediate_dominators


def _dominator_sets(succ: list[list[int]], root: int) -> dict[int, set[int]]:
    """Dom(v) by the textbook fixed point: {v} plus the intersection over predecessors."""
    reach, stack = {root}, [root]
    while stack:
        for w in succ[stack.pop()]:
            if w not in reach:
                reach.add(w)
                stack.append(w)
    preds = {v: [u for u in reach if v in succ[u]] for v in reach}
    dom = {v: set(reach) for v in reach}
    dom[root] = {root}
    changed = True
    while changed:
        changed = False
        for v in reach - {root}:
            new = set.intersection(*(dom[p] for p in preds[v])) | {v}
            if new != dom[v]:
                dom[v], changed = new, True
    return dom


def _idom_from_sets(dom: dict[int, set[int]], root: int) -> dict[int, int]:
    """The strict dominator of v that every other strict dominator dominates."""
    idom = {root: root}
    for v, ds in dom.items():
        if v != root:
            strict = ds - {v}
            idom[v] = next(d for d in strict if strict <= dom[d])
    return idom


@pytest.mark.parametrize("seed", range(60))
def test_matches_the_definition_on_random_graphs(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    succ = [sorted({rng.randrange(n) for _ in range(rng.randint(0, 3))}) for _ in range(n)]
    if n > 1 and rng.random() < 0.7:  # mostly a spine, as a method's fall-through edges make
        for v in range(n - 1):
            succ[v] = sorted(set(succ[v]) | {v + 1})
    expected = _idom_from_sets(_dominator_sets(succ, 0), 0)
    assert immediate_dominators(0, succ.__getitem__) == expected


def test_unreachable_blocks_have_no_dominator():
    succ = [[1], [], [1]]  # block 2 is never entered
    assert immediate_dominators(0, succ.__getitem__) == {0: 0, 1: 0}


@pytest.mark.parametrize("depth", [50_000])
def test_nested_loops_deeper_than_the_recursion_limit(depth):
    # loop k's head is block k; the latch blocks close the innermost loop first
    succ: list[list[int]] = [[k + 1] for k in range(depth)]
    latches = list(range(depth, 2 * depth))
    for k, latch in enumerate(latches):
        succ.append([depth - 1 - k, latch + 1] if latch + 1 < 2 * depth else [depth - 1 - k])
    idom = immediate_dominators(0, succ.__getitem__)
    assert idom[depth - 1] == depth - 2  # a head: dominated by the head around it
    assert idom[latches[0]] == depth - 1  # the innermost latch, by the innermost block
    assert idom[latches[-1]] == latches[-2]


def test_block_on_every_path_to_the_exit():
    # 0 -> 1 -> {2, 3} -> 4 (exit): 2 and 3 are a branch, 0, 1 and 4 are on every path
    cfg = ControlFlowGraph(((1,), (2, 3), (4,), (4,), ()), frozenset({4}))
    assert cfg.conditional_nodes == frozenset({2, 3})
