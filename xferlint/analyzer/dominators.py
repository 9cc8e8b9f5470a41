"""Immediate dominators in O(edges log nodes): Lengauer and Tarjan's algorithm with path
compression ("A fast algorithm for finding dominators in a flowgraph", TOPLAS 1979).

The iterative algorithm of Cooper, Harvey and Kennedy, which the CFG used before, walks the
dominator tree up from every join once per pass; on a method of thousands of nested loops
the tree is a chain as long as the method and each back edge's walk climbs most of it, so
it was quadratic (10,000 nested loops: 12 s in `_immediate_dominators` alone). This is
iterative throughout: deep chains must not hit the recursion limit.
"""

from __future__ import annotations

from typing import Callable, Hashable, Sequence, TypeVar

B = TypeVar("B", bound=Hashable)


def immediate_dominators(root: B, successors: Callable[[B], Sequence[B]]) -> dict[B, B]:
    """Each block reachable from `root` -> its immediate dominator (`root` -> `root`)."""
    vertex, parent, preds = _depth_first(root, successors)
    n = len(vertex)
    semi = list(range(n))  # semidominators, as preorder numbers
    label = list(range(n))
    ancestor = [-1] * n  # the forest `link` builds; -1: a tree root
    idom = [0] * n
    bucket: list[list[int]] = [[] for _ in range(n)]

    def evaluate(v: int) -> int:
        """The vertex of least semidominator on v's forest path (compressing the path)."""
        if ancestor[v] < 0:
            return v
        path = []
        x = v
        while ancestor[ancestor[x]] >= 0:
            path.append(x)
            x = ancestor[x]
        while path:  # from the top down: each takes its ancestor's answer, then skips it
            y = path.pop()
            a = ancestor[y]
            if semi[label[a]] < semi[label[y]]:
                label[y] = label[a]
            ancestor[y] = ancestor[a]
        return label[v]

    for w in range(n - 1, 0, -1):
        for v in preds[w]:
            u = evaluate(v)
            if semi[u] < semi[w]:
                semi[w] = semi[u]
        bucket[semi[w]].append(w)
        p = parent[w]
        ancestor[w] = p
        for v in bucket[p]:
            u = evaluate(v)
            idom[v] = u if semi[u] < semi[v] else p
        bucket[p] = []
    for w in range(1, n):
        if idom[w] != semi[w]:
            idom[w] = idom[idom[w]]
    return {vertex[w]: vertex[idom[w]] for w in range(n)}


def _depth_first(root: B, successors: Callable[[B], Sequence[B]]) -> tuple[list[B], list[int], list[list[int]]]:
    """Preorder of a depth-first search from `root`: the blocks, each one's tree parent and
    its predecessors (reachable ones), all as preorder numbers."""
    number: dict[B, int] = {}
    vertex: list[B] = []
    parent: list[int] = []
    edges: list[tuple[int, B]] = []
    stack: list[tuple[B, int]] = [(root, 0)]
    while stack:  # a block is numbered when popped; its latest pusher is its tree parent
        b, by = stack.pop()
        if b in number:
            continue
        k = number[b] = len(vertex)
        vertex.append(b)
        parent.append(by)
        out = successors(b)
        edges.extend((k, c) for c in out)
        stack.extend((c, k) for c in reversed(out) if c not in number)
    preds: list[list[int]] = [[] for _ in vertex]
    for k, c in edges:
        preds[number[c]].append(k)
    return vertex, parent, preds
