"""The call-tree builder as it was before it was vectorised (one Python walk per request): the
oracle the vectorised :func:`perftriage.analysis.calltrees.trees.build_call_trees` is checked
against, category by category, row by row."""

from __future__ import annotations

import numpy as np

from perftriage.analysis.calltrees.trees import CallTrees, Category, _Shapes
from perftriage.analysis.spans.table import ROOT, SpanTable
from perftriage.analysis.units import count_of


class _WalkShapes(_Shapes):
    """The shapes with the categories the walk files requests under, block by block."""

    def __init__(self, names):
        super().__init__(names)
        self.cat_of_shape: dict[int, int] = {}
        self.meta: list[tuple] = []
        self.rows: list[list[np.ndarray]] = []
        self.traces: list[list[np.ndarray]] = []
        self._rows_blk: list[list[list[int]]] = []
        self._traces_blk: list[list[int]] = []

    def add(self, shape, seq, methods, depths, parents, trace) -> int:
        c = self.cat_of_shape.get(shape)
        if c is None:
            c = self.cat_of_shape[shape] = len(self.meta)
            self.meta.append((self.text(shape), methods, depths, parents))
            self.rows.append([])
            self.traces.append([])
            self._rows_blk.append([])
            self._traces_blk.append([])
        self._rows_blk[c].append(seq)
        self._traces_blk[c].append(trace)
        return c

    def flush(self) -> None:
        for c in range(len(self.meta)):
            if self._rows_blk[c]:
                self.rows[c].append(np.array(self._rows_blk[c], np.int64))
                self.traces[c].append(np.array(self._traces_blk[c], np.int64))
                self._rows_blk[c] = []
                self._traces_blk[c] = []


def build_call_trees_by_walk(spans: SpanTable, block: int = 20_000) -> CallTrees:
    n = len(spans)
    n_req = len(spans.traces)
    request_root = np.full(n_req, -1, np.int64)
    request_category = np.full(n_req, -1, np.int64)
    if n == 0:
        return CallTrees(spans, [], request_root, request_category)
    # spans grouped by request; within a request, by parent, then by method name and start
    method_name_rank = np.argsort(np.argsort(np.array(spans.methods, dtype=object)))
    order = np.lexsort((spans.start, method_name_rank[spans.method], spans.parent, spans.trace))
    trace_sorted = spans.trace[order]
    bounds = np.flatnonzero(np.r_[True, trace_sorted[1:] != trace_sorted[:-1], True])
    shapes = _WalkShapes(spans.methods)
    incomplete = 0
    # Python lookups (parent, method, start of a span row) one block of requests at a time, so
    # that the Python objects they need stay bounded whatever the number of spans
    for blk in range(0, len(bounds) - 1, block):
        bb = bounds[blk: blk + block + 1].tolist()
        rows_blk = order[bb[0]: bb[-1]]
        rows_l = rows_blk.tolist()
        parent = dict(zip(rows_l, spans.parent[rows_blk].tolist()))
        method = dict(zip(rows_l, spans.method[rows_blk].tolist()))
        start = dict(zip(rows_l, spans.start[rows_blk].tolist()))
        trace_l = spans.trace[rows_blk].tolist()
        base = bb[0]
        for b0, b1 in zip(bb[:-1], bb[1:]):
            t = trace_l[b0 - base]
            root, ok = _one_request(rows_l[b0 - base: b1 - base], t, parent, method, start, shapes, request_category)
            request_root[t] = root
            incomplete += not ok
        shapes.flush()
    categories = [
        Category(i, meta[0], meta[1], meta[2], meta[3], np.concatenate(shapes.rows[i]),
                 np.concatenate(shapes.traces[i]))
        for i, meta in enumerate(shapes.meta)
    ]
    categories.sort(key=lambda c: -c.size)
    remap = np.empty(len(categories), np.int64)
    for new, c in enumerate(categories):
        remap[c.index] = new
        c.index = new
    ok = request_category >= 0
    request_category[ok] = remap[request_category[ok]]
    notes = []
    if incomplete:
        notes.append(f"{count_of(incomplete, 'requests')} {'does' if incomplete == 1 else 'do'} not form one call tree "
                     "(orphan spans, no or several roots): left out of the categories")
    return CallTrees(spans, categories, request_root, request_category, incomplete, notes)


def _one_request(rows, t, parent, method, start, shapes: _Shapes, request_category) -> tuple[int, bool]:
    """Label one request's tree and file it under its category. Returns (root row or -1, complete?)."""
    children: dict[int, list[int]] = {}
    roots = []
    bad = False
    for r in rows:
        p = parent[r]
        if p == ROOT:
            roots.append(r)
        elif p < 0:
            bad = True
        else:
            children.setdefault(p, []).append(r)
    if len(roots) != 1 or bad:
        return (roots[0] if roots else -1), False
    root = roots[0]
    # labels bottom-up (post-order, iterative)
    label: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        kids = children.get(node, ())
        if not done:
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
            continue
        label[node] = shapes.label(method[node], tuple(sorted(label[k] for k in kids)))
    # depth-first order of the canonical tree: children by (shape, start)
    sortkey = shapes.sortkey
    seq, depths, parents = [], [], []
    stack = [(root, 0, -1)]
    while stack:
        node, depth, pcol = stack.pop()
        col = len(seq)
        seq.append(node)
        depths.append(depth)
        parents.append(pcol)
        kids = sorted(children.get(node, ()), key=lambda k: (sortkey[label[k]], start[k]))
        stack.extend((k, depth + 1, col) for k in reversed(kids))
    request_category[t] = shapes.add(label[root], seq, [method[r] for r in seq], depths, parents, t)
    return root, True
