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
from perftriage.analysis.units import count_of


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


_M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)
_SEED = np.uint64(0x632BE59BD9B4E019)  # methods' hashes start elsewhere than the children's sums


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (wrapping)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def build_call_trees(spans: SpanTable) -> CallTrees:
    """Categories of the requests' call trees, vectorised over all spans at once: depths by
    pointer doubling; per level, bottom-up, a structural 64-bit hash of each subtree (its method
    and the multiset of its children's hashes: order-free, so no sort per node), its height and
    size; the exact canonical label (:class:`_Shapes`) computed once per distinct subtree, not
    per span; then, top-down, each span's column (its place in the depth-first order of the
    canonical tree, siblings by shape then start)."""
    n = len(spans)
    n_req = len(spans.traces)
    request_root = np.full(n_req, -1, np.int64)
    request_category = np.full(n_req, -1, np.int64)
    if n == 0:
        return CallTrees(spans, [], request_root, request_category)
    par, tr, method = spans.parent, spans.trace.astype(np.int64), spans.method.astype(np.int64)
    name_rank = np.argsort(np.argsort(np.array(spans.methods, dtype=object), kind="stable"), kind="stable")
    # a request's root: its first root by (method name, start), as the walk met them
    is_root = par == ROOT
    roots = np.flatnonzero(is_root)
    roots = roots[np.lexsort((spans.start[roots], name_rank[method[roots]], tr[roots]))]
    first = np.r_[True, tr[roots][1:] != tr[roots][:-1]][:len(roots)]
    request_root[tr[roots][first]] = roots[first]
    n_roots = np.bincount(tr[is_root], minlength=n_req)
    n_bad = np.bincount(tr[par < ROOT], minlength=n_req)
    has_spans = np.bincount(tr, minlength=n_req) > 0
    complete = (n_roots == 1) & (n_bad == 0)
    incomplete = int((has_spans & ~complete).sum())
    keep = np.flatnonzero(complete[tr])
    categories: list[Category] = []
    if len(keep):
        categories = _categorise(spans, keep, name_rank, request_category)
    notes = []
    if incomplete:
        notes.append(f"{count_of(incomplete, 'requests')} {'does' if incomplete == 1 else 'do'} not form one call tree "
                     "(orphan spans, no or several roots): "
                     "left out of the categories")
    return CallTrees(spans, categories, request_root, request_category, incomplete, notes)


def _categorise(spans: SpanTable, keep: np.ndarray, name_rank: np.ndarray, request_category: np.ndarray
                ) -> list[Category]:
    """The categories of the complete requests, whose spans are the rows ``keep``."""
    m = len(keep)
    local = np.full(len(spans), -1, np.int64)
    local[keep] = np.arange(m)
    gpar = spans.parent[keep]
    par = np.where(gpar >= 0, local[np.maximum(gpar, 0)], -1)  # parent as a local index, -1 at a root
    method = spans.method[keep].astype(np.int64)
    start = spans.start[keep]
    tr = spans.trace[keep].astype(np.int64)
    # depth: hops to the root, by pointer doubling (every chain ends at its request's root)
    up = np.where(par >= 0, par, np.arange(m))
    depth = (par >= 0).astype(np.int64)
    while True:
        nxt = up[up]
        if np.array_equal(nxt, up):
            break
        depth = depth + depth[up]
        up = nxt
    by_depth = np.argsort(depth, kind="stable")
    level_bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
    # bottom-up: structural hash, height and subtree size
    acc = np.zeros(m, np.uint64)
    height = np.zeros(m, np.int64)
    size = np.ones(m, np.int64)
    h = np.zeros(m, np.uint64)
    mhash = _mix(np.arange(len(spans.methods), dtype=np.uint64) + _SEED)
    for d in range(len(level_bounds) - 2, -1, -1):
        idx = by_depth[level_bounds[d]:level_bounds[d + 1]]
        h[idx] = _mix(mhash[method[idx]] ^ _mix(acc[idx] + _GOLD))
        sub = idx[par[idx] >= 0]
        if len(sub):
            p = par[sub]
            np.add.at(acc, p, _mix(h[sub]))
            np.maximum.at(height, p, height[sub] + 1)
            np.add.at(size, p, size[sub])
    # the exact canonical label of each distinct subtree, children before parents
    uniq, rep, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    kids_order = np.argsort(par, kind="stable")
    kids_sorted_par = par[kids_order]
    shapes = _Shapes(spans.methods)
    label_of = np.full(len(uniq), -1, np.int64)
    for u in np.argsort(height[rep], kind="stable").tolist():
        node = int(rep[u])
        lo, hi = np.searchsorted(kids_sorted_par, [node, node + 1])
        kid_labels = tuple(sorted(label_of[inv[kids_order[lo:hi]]].tolist()))
        label_of[u] = shapes.label(int(method[node]), kid_labels)
    label = label_of[inv]
    n_labels = len(shapes.sortkey)
    key_rank = np.empty(n_labels, np.int64)  # rank of each label's canonical sort key
    key_rank[sorted(range(n_labels), key=lambda k: shapes.sortkey[k])] = np.arange(n_labels)
    # top-down: columns; siblings in canonical order (shape, then start), each after the
    # subtrees of the siblings before it
    sib = np.lexsort((start, key_rank[label], par))
    sib = sib[par[sib] >= 0]
    sp = par[sib]
    csum = np.cumsum(size[sib])
    group_start = np.r_[True, sp[1:] != sp[:-1]]
    base = np.maximum.accumulate(np.where(group_start, csum - size[sib], 0))
    offset = np.zeros(m, np.int64)
    offset[sib] = csum - size[sib] - base
    col = np.zeros(m, np.int64)
    for d in range(1, len(level_bounds) - 1):
        idx = by_depth[level_bounds[d]:level_bounds[d + 1]]
        col[idx] = col[par[idx]] + 1 + offset[idx]
    # categories: the requests of one root label, in the order of their request codes
    root_nodes = np.flatnonzero(par < 0)
    root_nodes = root_nodes[np.argsort(tr[root_nodes], kind="stable")]
    root_label = label[root_nodes]
    first_seen = {}
    for lab in root_label.tolist():
        first_seen.setdefault(lab, len(first_seen))
    cat_of_label = np.full(n_labels, -1, np.int64)
    cat_of_label[list(first_seen)] = np.arange(len(first_seen))
    req_cat = cat_of_label[root_label]
    # each request's rank within its category, for its row in the category's matrix
    o = np.argsort(req_cat, kind="stable")
    counts = np.bincount(req_cat, minlength=len(first_seen))
    req_lo = np.cumsum(counts) - counts  # category c's requests: o[req_lo[c]:req_lo[c] + counts[c]]
    pos_in_cat = np.empty(len(root_nodes), np.int64)
    pos_in_cat[o] = np.arange(len(o)) - np.repeat(req_lo, counts)
    req_index = np.full(int(tr.max()) + 1, -1, np.int64)
    req_index[tr[root_nodes]] = np.arange(len(root_nodes))
    span_req = req_index[tr]
    span_cat = req_cat[span_req]
    cats = []
    span_order = np.argsort(span_cat, kind="stable")
    bounds = np.searchsorted(span_cat[span_order], np.arange(len(first_seen) + 1))
    for c, lab in enumerate(first_seen):
        mine = o[req_lo[c]:req_lo[c] + counts[c]]
        width = int(size[root_nodes[mine[0]]])
        members = span_order[bounds[c]:bounds[c + 1]]
        rows = np.empty((int(counts[c]), width), np.int64)
        rows[pos_in_cat[span_req[members]], col[members]] = keep[members]
        first_req = local[rows[0]]  # the category's first request, column by column
        depths = depth[first_req].tolist()
        parents = np.where(par[first_req] >= 0, col[np.maximum(par[first_req], 0)], -1).tolist()
        traces = tr[root_nodes[mine]]
        cats.append(Category(c, shapes.text(lab), method[first_req].tolist(), depths, parents, rows, traces))
    request_category[tr[root_nodes]] = req_cat
    order = sorted(range(len(cats)), key=lambda i: -cats[i].size)
    remap = np.empty(len(cats), np.int64)
    for new, i in enumerate(order):
        remap[i] = new
        cats[i].index = new
    ok = request_category >= 0
    request_category[ok] = remap[request_category[ok]]
    return [cats[i] for i in order]

