"""The vectorised call-tree builder against the walk it replaced (tests/reference_calltrees.py),
on random requests built to be hard: siblings of one method with different subtrees, identical
siblings told apart by start time only, deep chains, wide fan-outs, and requests that are not
one tree (orphans, two roots, a parent cycle). Every category, column and row must be the same."""

from __future__ import annotations

import numpy as np
import pytest
from reference_calltrees import build_call_trees_by_walk

from perftriage.analysis.calltrees.trees import build_call_trees
from perftriage.analysis.spans.table import SpanBuilder

METHODS = [("web", "home"), ("web", "cart"), ("auth", "verify"), ("db", "query"), ("db", "write"), ("cache", "get")]


def random_spans(seed: int, requests: int = 300):
    rng = np.random.default_rng(seed)
    b = SpanBuilder()
    templates = []
    for _ in range(6):  # a few shapes, so that categories have many requests
        n = int(rng.integers(1, 14))
        parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
        if rng.random() < 0.3:  # a chain
            parents = [-1] + list(range(n - 1))
        methods = [int(rng.integers(0, len(METHODS))) for _ in range(n)]
        templates.append((parents, methods))
    for r in range(requests):
        parents, methods = templates[int(rng.integers(0, len(templates)))]
        parents, methods = list(parents), list(methods)
        trace = f"t{r:05d}"
        t0 = int(rng.integers(0, 10**12))
        starts = [t0 + int(x) for x in rng.integers(0, 10**6, len(parents))]
        if rng.random() < 0.05 and len(parents) > 1:
            parents[int(rng.integers(1, len(parents)))] = 10_000  # an orphan
        if rng.random() < 0.03:
            parents.append(-1)  # a second root
            methods.append(0)
            starts.append(t0)
        for i, (p, m) in enumerate(zip(parents, methods)):
            svc, op = METHODS[m]
            b.add(trace, i + 1, None if p == -1 else p + 1, svc, op, f"{svc}-{int(rng.integers(1, 3))}",
                  starts[i] if i < len(starts) else t0, (starts[i] if i < len(starts) else t0) + 1000)
        if rng.random() < 0.02:  # two spans naming each other: a cycle, detached by the builder
            b.add(trace, 9001, 9002, "db", "query", "db-1", t0, t0 + 5)
            b.add(trace, 9002, 9001, "db", "query", "db-1", t0, t0 + 5)
    return b.finish()


def assert_same(a, b):
    assert a.incomplete == b.incomplete and a.notes == b.notes
    assert [c.shape for c in a.categories] == [c.shape for c in b.categories]
    for x, y in zip(a.categories, b.categories):
        assert (x.index, x.methods, x.depths, x.parents) == (y.index, y.methods, y.depths, y.parents)
        np.testing.assert_array_equal(x.rows, y.rows)
        np.testing.assert_array_equal(x.traces, y.traces)
    np.testing.assert_array_equal(a.request_root, b.request_root)
    np.testing.assert_array_equal(a.request_category, b.request_category)


@pytest.mark.parametrize("seed", range(12))
def test_the_vectorised_builder_equals_the_walk(seed):
    st = random_spans(seed)
    walk, vec = build_call_trees_by_walk(st), build_call_trees(st)
    assert len(vec.categories) >= 2
    assert_same(walk, vec)


def test_same_method_siblings_with_different_subtrees_are_ordered_by_shape_then_start():
    b = SpanBuilder()
    for r, flip in enumerate((False, True, False)):
        t = f"r{r}"
        b.add(t, 1, None, "web", "home", "w", 0, 100)
        # two db:query children, one with a cache:get below it; their start order flips
        s1, s2 = (10, 20) if not flip else (20, 10)
        b.add(t, 2, 1, "db", "query", "d", s1, 50)
        b.add(t, 3, 1, "db", "query", "d", s2, 50)
        b.add(t, 4, 3, "cache", "get", "c", s2 + 1, 40)
    st = b.finish()
    vec = build_call_trees(st)
    assert_same(build_call_trees_by_walk(st), vec)
    (cat,) = vec.categories
    assert cat.size == 3 and cat.width == 4
    # whatever the start order, the column of the db:query with a child holds that span
    with_child = {int(st.parent[r]) for r in range(len(st)) if st.methods[st.method[r]] == "cache:get"}
    col = [i for i, d in enumerate(cat.depths) if d == 1 and i + 1 < cat.width and cat.parents[i + 1] == i]
    assert len(col) == 1 and set(cat.rows[:, col[0]].tolist()) == with_child


def test_empty_and_only_broken_requests():
    b = SpanBuilder()
    b.add("a", 1, 5, "x", "y", "r", 0, 1)
    b.add("a", 2, 6, "x", "y", "r", 0, 1)
    st = b.finish()
    vec = build_call_trees(st)
    assert_same(build_call_trees_by_walk(st), vec)
    assert vec.categories == [] and vec.incomplete == 1
