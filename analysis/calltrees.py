"""Call trees of requests and their categories (CloudDiag, paper 002, section III).

Each request's spans form a tree through their parent ids (never through timestamps, so clock
drift between hosts cannot reorder calls). Its *shape* is the canonical form of the tree of
method names, children ordered by name: ``frontend:home(auth:verify,catalog:list(db:query))``.
Requests with the same shape form a *category*; in a category every request has the same
number of calls, and the depth-first order of its canonical tree lines them up, so that column
j of the category's matrix is "the j-th call of this tree" in every request (identical sibling
subtrees are ordered by start time). Requests whose spans do not make one tree (orphans, a
missing root, several roots) are counted and left out of the categories.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .spans.table import ROOT, SpanTable


@dataclass
class Category:
    index: int
    shape: str  # canonical form
    methods: list[int]  # method code of each column (depth-first order)
    depths: list[int]  # depth of each column in the tree
    parents: list[int]  # column of each column's parent (-1 for the root)
    rows: np.ndarray  # (requests, columns) span rows
    traces: np.ndarray  # request codes, one per matrix row

    @property
    def size(self) -> int:
        return len(self.traces)

    @property
    def width(self) -> int:
        return len(self.methods)


@dataclass
class CallTrees:
    spans: SpanTable
    categories: list[Category]
    request_root: np.ndarray  # per request code: root span row (-1 if none)
    request_category: np.ndarray  # per request code: category index (-1 incomplete)
    incomplete: int = 0
    notes: list[str] = field(default_factory=list)

    def latency(self, cat: Category) -> np.ndarray:
        """Request latencies (root span durations, ns) of a category."""
        return self.spans.duration[cat.rows[:, 0]]

    def self_time(self, cat: Category) -> np.ndarray:
        """Exclusive time of every call (its duration minus its children's), ns, floored at 0."""
        d = self.spans.duration[cat.rows].astype(np.float64)
        out = d.copy()
        for j, p in enumerate(cat.parents):
            if p >= 0:
                out[:, p] -= d[:, j]
        return np.maximum(out, 0.0)


def build_call_trees(spans: SpanTable) -> CallTrees:
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
    parent = spans.parent.tolist()
    method = spans.method.tolist()
    start = spans.start.tolist()
    names = spans.methods
    shape_code: dict[tuple, int] = {}
    shape_text: list[str] = []
    cat_of_shape: dict[int, int] = {}
    cat_rows: list[list[list[int]]] = []
    cat_traces: list[list[int]] = []
    cat_meta: list[tuple] = []
    incomplete = 0
    order_l = order.tolist()
    for b0, b1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        rows = order_l[b0:b1]
        t = int(spans.trace[rows[0]])
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
            incomplete += 1
            if roots:
                request_root[t] = roots[0]
            continue
        root = roots[0]
        request_root[t] = root
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
            key = (method[node], tuple(sorted(label[k] for k in kids)))
            code = shape_code.get(key)
            if code is None:
                code = shape_code[key] = len(shape_text)
                shape_text.append(names[method[node]] + ("(" + ",".join(sorted(shape_text[c] for c in key[1])) + ")"
                                                         if key[1] else ""))
            label[node] = code
        # depth-first order of the canonical tree: children by (label, start)
        seq, depths, parents = [], [], []
        stack = [(root, 0, -1)]
        while stack:
            node, depth, pcol = stack.pop()
            col = len(seq)
            seq.append(node)
            depths.append(depth)
            parents.append(pcol)
            kids = sorted(children.get(node, ()), key=lambda k: (shape_text[label[k]], start[k]))
            stack.extend((k, depth + 1, col) for k in reversed(kids))
        sc = label[root]
        c = cat_of_shape.get(sc)
        if c is None:
            c = cat_of_shape[sc] = len(cat_rows)
            cat_rows.append([])
            cat_traces.append([])
            cat_meta.append((shape_text[sc], [method[r] for r in seq], depths, parents))
        cat_rows[c].append(seq)
        cat_traces[c].append(t)
        request_category[t] = c
    categories = [
        Category(i, meta[0], meta[1], meta[2], meta[3], np.array(cat_rows[i], np.int64),
                 np.array(cat_traces[i], np.int64))
        for i, meta in enumerate(cat_meta)
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
        notes.append(f"{incomplete:,} requests do not form one call tree (orphan spans, no or several roots): "
                     "left out of the categories")
    return CallTrees(spans, categories, request_root, request_category, incomplete, notes)
