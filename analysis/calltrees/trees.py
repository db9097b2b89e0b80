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

import hashlib
from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.spans.table import ROOT, SpanTable


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


class _Shapes:
    """Shapes seen so far (canonical labels of subtrees) and the categories they make."""

    def __init__(self, names: list[str]):
        self.names = names
        self.code: dict[tuple, int] = {}
        self.method: list[int] = []  # per label: its method
        self.kids: list[tuple] = []  # per label: its children's labels
        self.sortkey: list[tuple] = []  # per label: (method name, 64-bit hash of the shape): the canonical order
        self.cat_of_shape: dict[int, int] = {}
        self.meta: list[tuple] = []  # per category: shape text, methods, depths, parents
        self.rows: list[list[np.ndarray]] = []  # per category: blocks of (requests, columns) span rows
        self.traces: list[list[np.ndarray]] = []
        self._rows_blk: list[list[list[int]]] = []
        self._traces_blk: list[list[int]] = []

    def label(self, method: int, kid_labels: tuple) -> int:
        key = (method, kid_labels)
        c = self.code.get(key)
        if c is None:
            # no text per subtree (a chain of n calls would hold n texts of up to n names: 10 GB
            # for 40,000): a hash of the name and the children's hashes, the same in every run
            c = self.code[key] = len(self.method)
            name = self.names[method]
            kids = sorted(kid_labels, key=lambda k: self.sortkey[k])
            h = hashlib.blake2b(name.encode("utf-8", "replace"), digest_size=8)
            for k in kids:
                h.update(self.sortkey[k][1].to_bytes(8, "little"))
            self.method.append(method)
            self.kids.append(tuple(kids))
            self.sortkey.append((name, int.from_bytes(h.digest(), "little")))
        return c

    def text(self, label: int) -> str:
        """The canonical form of a shape, ``a(b,c(d))``, children by name (then shape); built
        once per category, in time linear in its size."""
        out: list[str] = []
        stack: list = [label]
        while stack:
            x = stack.pop()
            if isinstance(x, str):
                out.append(x)
                continue
            out.append(self.names[self.method[x]])
            kids = self.kids[x]
            if kids:
                out.append("(")
                stack.append(")")
                for i, k in enumerate(reversed(kids)):
                    stack.append(k)
                    if i < len(kids) - 1:
                        stack.append(",")
        return "".join(out)

    def add(self, shape: int, seq: list[int], methods: list[int], depths: list[int], parents: list[int],
            trace: int) -> int:
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
        """Python lists of a block of requests into arrays."""
        for c in range(len(self.meta)):
            if self._rows_blk[c]:
                self.rows[c].append(np.array(self._rows_blk[c], np.int64))
                self.traces[c].append(np.array(self._traces_blk[c], np.int64))
                self._rows_blk[c] = []
                self._traces_blk[c] = []


def build_call_trees(spans: SpanTable, block: int = 20_000) -> CallTrees:
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
    shapes = _Shapes(spans.methods)
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
        notes.append(f"{incomplete:,} requests do not form one call tree (orphan spans, no or several roots): "
                     "left out of the categories")
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
