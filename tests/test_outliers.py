"""Outliers, clusters and n-grams: the paper's procedure on a dataset of its published shape,
the DBSCAN equivalence, Kneedle, and the explanation of each outlier."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import DBSCAN

from perftriage.analysis.requests.clusters import ClusterParams, cluster_outliers
from perftriage.analysis.requests.features import Ragged, read_features
from perftriage.analysis.requests.knee import kneedle
from perftriage.analysis.requests.ngrams import decode, distinctive_ngrams, ngram_counts
from perftriage.analysis.requests.outliers import OutlierParams, detect_outliers, explain, table3

from conftest import needs_bt2, real_trace


def published_dataset(folder, seed=0):
    """A dataset in the paper's published form (headerless <pid>_times.csv / _count.csv /
    _syscalls.csv, durations in ns) built so that, as in the paper, DBSCAN(eps = 25 ms,
    min_samples = 100) on the state durations finds 157 outliers and k-means (k = 3) on their
    standardised state counts splits them 116 / 36 / 5."""
    rng = np.random.default_rng(seed)
    n_normal = 3000
    # normal requests: a dense blob (each state within a few ms of its centre)
    centre = np.array([0, 12, 80, 0, 15, 5, 10, 0, 0, 0], float)
    normal = np.clip(centre + rng.normal(0, 2.0, (n_normal, 10)), 0, None)
    normal[:, [0, 3, 7, 8, 9]] = 0
    # outliers: far from the blob and from each other (spread over hundreds of ms)
    sizes = (116, 36, 5)
    outl = []
    counts = []
    for g, size in enumerate(sizes):
        d = np.tile(centre, (size, 1))
        d[:, 2] += 400 + rng.uniform(0, 6000, size)  # user mode time spread far apart
        outl.append(d)
        c = np.tile(np.array([0, 60, 80, 1, 20, 3, 8, 0, 0, 0], float), (size, 1))
        c[:, 1 + g * 2] *= 6 + g * 4  # each group: many more segments of its own state
        counts.append(c + rng.integers(0, 3, c.shape))
    dur = np.vstack([normal] + outl)
    normal_counts = np.tile(np.array([0, 60, 80, 1, 20, 3, 8, 0, 0, 0], float), (n_normal, 1)) \
        + rng.integers(0, 3, (n_normal, 10))
    cnt = np.vstack([normal_counts] + counts)
    total = dur.sum(axis=1)
    n = len(dur)
    with open(folder / "15403_times.csv", "w") as f:
        for i in range(n):
            f.write(f"15403_12_{1558061203352552595 + i * 1000000}," + ",".join(str(int(v * 1e6)) for v in dur[i])
                    + f",{int(total[i] * 1e6)}\n")
    with open(folder / "15403_count.csv", "w") as f:
        for i in range(n):
            f.write(f"15403_12_{i}," + ",".join(str(int(v)) for v in cnt[i]) + f",{int(total[i] * 1e6)}\n")
    with open(folder / "15403_syscalls.csv", "w") as f:
        for i in range(n):
            f.write(f"15403_12_{i},read,write,\n")
    return n


def test_the_papers_procedure_on_its_published_form(tmp_path):
    n = published_dataset(tmp_path)
    ft = read_features(tmp_path / "15403_times.csv")
    assert len(ft) == n and len(ft.states) == 10
    out = detect_outliers(ft, OutlierParams(eps=25.0, min_samples=100, minor_fraction=0.0))
    assert out.params["units"] == "ms"
    assert out.n_outliers == 157
    cl = cluster_outliers(ft, out.outlier, ClusterParams(features="counts", k=3))
    sizes = sorted(np.bincount(cl.label[cl.label >= 0]).tolist(), reverse=True)
    assert sizes == [116, 36, 5]
    # Table III / IV shapes
    assert out.table3["outliers"] == 157
    assert out.table3["median_outlier_ms"] > 3 * out.table3["median_all_ms"]
    assert [g.name for g in cl.groups] == ["normal", "cluster 1", "cluster 2", "cluster 3"]
    assert cl.groups[0].size == n - 157


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noise_is_exactly_dbscans(seed):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (400, 3)), rng.normal(6, 0.5, (60, 3)), rng.uniform(-10, 16, (40, 3))])
    from perftriage.analysis.requests.features import FeatureTable

    n = len(X)
    e = np.zeros(n, np.int64)
    ft = FeatureTable(id=np.arange(n), kind=np.full(n, "x", object), host=np.full(n, "", object), pid=e, tid=e,
                      start=e, end=e, states=["a", "b", "c"], durations=np.abs(X) * 1e6 + 1, counts=None,
                      total=(np.abs(X) * 1e6 + 1).sum(axis=1), syscalls=Ragged.empty(n), state_seq=Ragged.empty(n))
    Xms = ft.durations / 1e6
    for eps, ms in ((0.8, 10), (1.5, 20), (0.5, 5)):
        ours = detect_outliers(ft, OutlierParams(eps=eps, min_samples=ms, minor_fraction=0.0)).outlier
        theirs = DBSCAN(eps=eps, min_samples=ms).fit(Xms).labels_ == -1
        assert np.array_equal(ours, theirs)


def test_kneedle():
    k = np.arange(2, 11)
    inertia = np.array([1000, 420, 180, 150, 130, 115, 105, 98, 92], float)
    assert k[kneedle(k, inertia, "convex", "decreasing")] == 4
    x = np.linspace(0, 1, 200)
    y = np.where(x < 0.8, 0.05 * x, 0.04 + (x - 0.8) * 20)
    assert abs(x[kneedle(x, y, "convex", "increasing")] - 0.8) < 0.02
    assert kneedle([1, 2, 3], [5, 5, 5]) is None


def test_explanation_names_the_deviating_state():
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(5, 1, (200, 3)))
    X[0, 1] = 500.0
    out = np.zeros(200, bool)
    out[0] = True
    why, cols = explain(X, out, ["RU", "BN", "BD"], "ms")
    assert why[0].startswith("BN 500 ms (normal ") and cols[0, 0] == 1 and cols[0, 1] == -1
    assert why[1] == ""


def test_table3_thresholds():
    total = np.array([100, 120, 130, 400, 600, 5000]) * 1e6
    out = np.array([False, False, False, True, True, True])
    t = table3(total, out)
    assert t["outliers"] == 3 and t["median_outlier_ms"] == 600 and t["median_all_ms"] == 265
    p = dict(t["p_above"])
    assert p["200 ms"] == 1.0 and p["300 ms"] == 1.0
    assert p["2 x median (530 ms)"] == pytest.approx(2 / 3)


def test_ngrams_are_counted_per_request_and_ranked_by_effect():
    seqs = Ragged.from_lists([["read", "fcntl", "fcntl", "fcntl", "write"]] * 5 + [["read", "write"]] * 50
                             + [["connect", "connect", "read"]] * 5)
    rows, codes, counts = ngram_counts(seqs, 2)
    assert len(rows) == 5 * 3 + 50 + 5 * 2  # unique (request, bigram) pairs
    assert counts[rows == 0].tolist() == [1, 2, 1] or sorted(counts[rows == 0].tolist()) == [1, 1, 2]
    label = np.array([0] * 5 + [-1] * 50 + [1] * 5)
    ng = distinctive_ngrams(seqs, label, 2)
    assert ng[0][0].ngram == "fcntl fcntl" or ng[0][0].ngram == "fcntl"
    top0 = {g.ngram: g for g in ng[0]}
    assert top0["fcntl fcntl fcntl"].mean_group == 1.0 and top0["fcntl fcntl fcntl"].mean_normal == 0.0
    assert top0["fcntl"].mean_group == 3.0
    assert "connect connect" in {g.ngram for g in ng[1]}
    assert not any("read write" == g.ngram for g in ng[0])  # common to everyone: not distinctive


def test_ngrams_counted_in_blocks_of_rows_equal_one_pass():
    rng = np.random.default_rng(3)
    names = ["read", "write", "fcntl", "openat", "close"]
    lists = [[names[i] for i in rng.integers(0, 5, int(rng.integers(0, 9)))] for _ in range(400)]  # empty and short rows
    seqs = Ragged.from_lists(lists)
    for n in (1, 2, 3):
        whole = ngram_counts(seqs, n, block=1 << 40)
        # by hand: each row's n-grams, counted
        want = sorted((r, tuple(row[i:i + n])) for r, row in enumerate(lists) for i in range(len(row) - n + 1))
        got = sorted((int(r), tuple(decode(int(c), n, seqs.vocab).split())) for r, c, k in zip(*whole) for _ in range(k))
        assert got == want
        for block in (1, 5, 37):  # blocks cut anywhere; a row is never split
            assert all(np.array_equal(a, b) for a, b in zip(ngram_counts(seqs, n, block=block), whole))


@pytest.mark.parametrize("block_cells", [1 << 22, 7])  # one block, and blocks of a row or two
def test_distinct_system_calls_per_request_count_each_call_once(block_cells):
    from perftriage.analysis.requests.clusters import _distinct_per_row

    rng = np.random.default_rng(3)
    rows = [rng.integers(0, 5, rng.integers(0, 12)).tolist() for _ in range(40)] + [[], [4, 4, 4]]
    off = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
    s = Ragged(np.array([v for r in rows for v in r], np.int32), off, ["a", "b", "c", "d", "e"])

    class Table:  # what _distinct_per_row reads of a FeatureTable
        syscalls = s

        def __len__(self):
            return len(rows)

    assert _distinct_per_row(Table(), block_cells).tolist() == [len(set(r)) for r in rows]


def test_clusters_of_equal_size_are_numbered_slower_first_whatever_k_means_called_them(tmp_path, monkeypatch):
    from perftriage.analysis.requests import clusters
    from perftriage.analysis.requests.kmeans import KMeansFit

    published_dataset(tmp_path)
    ft = read_features(tmp_path / "15403_times.csv")
    out = detect_outliers(ft, OutlierParams(eps=25.0, min_samples=100, minor_fraction=0.0))
    idx = np.flatnonzero(out.outlier)[:156]  # an even number of outliers, split in two halves of equal size
    outlier = np.zeros(len(ft), bool)
    outlier[idx] = True
    slow = ft.total[idx] > np.median(ft.total[idx])
    got = []
    for slow_label in (0, 1):  # the same two groups, labelled either way round by "k-means"
        monkeypatch.setattr(clusters, "kmeans", lambda Z, k, **kw: KMeansFit(
            np.where(slow, slow_label, 1 - slow_label), 0.0, np.zeros((2, Z.shape[1]))))
        got.append(cluster_outliers(ft, outlier, ClusterParams(k=2)).label)
    assert np.array_equal(got[0], got[1])
    assert np.array_equal(got[0][idx] == 0, slow)  # cluster 1: the slower half


@needs_bt2
def test_clusters_said_as_information_keep_their_summary_beside_them():
    """A trace whose clusters are information only (threads of different programs compared):
    the outliers' summary comes right after its clusters, not among them (it sat between
    cluster 2 and cluster 3 on tc-many-threads, by its number of outliers as a score)."""
    from perftriage.analysis.triage import run_triage

    titles = [f.title for f in run_triage([real_trace("tc-many-threads")]).findings]
    clusters = [i for i, t in enumerate(titles) if t.startswith("Cluster ")]
    assert len(clusters) >= 2 and clusters == list(range(clusters[0], clusters[-1] + 1))
    assert titles[clusters[-1] + 1] == "Outlying threads"


def test_outliers_of_one_kind_split_by_what_hardly_weighs_are_one_cluster():
    # 60 sleeps of 8.4 ms (RU 0.35 ms, BS 8 ms); 20 of them also waited 18 us for a CPU, 10 read
    # 0.2 ms from the disk (one segment where the others have none: far in standardised log
    # counts); 30 disk waits of 3 ms (BD): two kinds, not four clusters
    from perftriage.analysis.requests.clusters import cluster_outliers
    from perftriage.analysis.requests.features import FeatureTable

    rng = np.random.default_rng(4)
    states = ["RU", "BP", "BD", "BS"]
    normal = np.column_stack([rng.normal(0.35, 0.02, 900), np.zeros(900), np.zeros(900), np.zeros(900)])
    sleeps = np.column_stack([rng.normal(0.35, 0.02, 60), np.zeros(60), np.zeros(60), rng.normal(8.0, 0.05, 60)])
    sleeps[:20, 1] = 0.018
    sleeps[20:30, 2] = 0.2
    disk = np.column_stack([rng.normal(0.3, 0.02, 30), np.zeros(30), rng.normal(3.0, 0.1, 30), np.zeros(30)])
    ms = np.vstack([normal, sleeps, disk])
    counts = np.column_stack([np.full(len(ms), 6), (ms[:, 1] > 0).astype(int), (ms[:, 2] > 0).astype(int),
                              (ms[:, 3] > 0).astype(int)])
    n = len(ms)
    e = np.zeros(n, np.int64)
    ft = FeatureTable(id=np.arange(n), kind=np.full(n, "x", object), host=np.full(n, "", object), pid=e, tid=e,
                      start=e, end=e, states=states, durations=ms * 1e6, counts=counts, total=ms.sum(axis=1) * 1e6,
                      syscalls=Ragged.empty(n), state_seq=Ragged.empty(n))
    outlier = np.arange(n) >= 900
    cl = cluster_outliers(ft, outlier, ClusterParams())
    assert cl.k == 2, (cl.k, cl.k_from)
    assert len(set(cl.label[900:960])) == 1 and len(set(cl.label[960:])) == 1 and cl.label[900] != cl.label[960]
    assert "merged" in cl.k_from
    assert cluster_outliers(ft, outlier, ClusterParams(k=4)).k == 4  # a k given is kept


def test_one_dense_group_of_outliers_is_said_in_the_singular():
    # 900 requests running 0.35 ms, 30 alike ones waiting 3 ms for the disk: DBSCAN makes the 30 a
    # dense group of their own (3% of the requests), outliers all the same
    from perftriage.analysis.requests.features import FeatureTable
    from perftriage.analysis.requests.outlier_analysis import analyze_requests, outlier_summary_finding

    rng = np.random.default_rng(4)
    normal = np.column_stack([rng.normal(0.35, 0.02, 900), np.zeros(900)])
    disk = np.column_stack([rng.normal(0.3, 0.02, 30), rng.normal(3.0, 0.02, 30)])
    ms = np.abs(np.vstack([normal, disk]))
    n = len(ms)
    e = np.zeros(n, np.int64)
    ft = FeatureTable(id=np.arange(n), kind=np.full(n, "x", object), host=np.full(n, "", object), pid=e, tid=e,
                      start=e, end=e, states=["RU", "BD"], durations=ms * 1e6, counts=None,
                      total=ms.sum(axis=1) * 1e6, syscalls=Ragged.empty(n), state_seq=Ragged.empty(n))
    ra = analyze_requests(ft)
    assert ra.outliers.outlier[900:].all() and ra.outliers.params["minor_groups"] == 1
    said = outlier_summary_finding(ft, ra).evidence
    assert any(s.startswith("30 outliers come from 1 dense group smaller than 10% of the requests") for s in said), said


def test_clusters_set_apart_by_the_same_calls_and_as_long_are_one():
    # 40 requests syncing a file (2 ms on the disk), 40 syncing and waiting 1 ms for a CPU besides
    # (k-means keeps them apart: their time went elsewhere), 40 syncing 6 ms: the first two are one
    # cause, set apart by the same calls and as long; the third is as set apart but 3x as long
    from perftriage.analysis.requests.features import FeatureTable
    from perftriage.analysis.requests.outlier_analysis import analyze_requests

    rng = np.random.default_rng(7)

    def ms(n, ru, bd, bp):
        return np.column_stack([rng.normal(ru, 0.01, n), rng.normal(bd, 0.02, n) if bd else np.zeros(n),
                                rng.normal(bp, 0.02, n) if bp else np.zeros(n)])

    parts = [(ms(900, 0.35, 0, 0), ["read", "write"]), (ms(40, 0.35, 2.0, 0), ["read", "fdatasync", "write"]),
             (ms(40, 0.35, 1.3, 1.0), ["read", "fdatasync", "write"]), (ms(40, 0.35, 6.0, 0), ["read", "fdatasync", "write"])]
    d = np.abs(np.vstack([p for p, _ in parts]))
    calls = [c for p, c in parts for _ in range(len(p))]
    n = len(d)
    e = np.zeros(n, np.int64)
    ft = FeatureTable(id=np.arange(n), kind=np.full(n, "x", object), host=np.full(n, "", object), pid=e, tid=e,
                      start=e, end=e, states=["RU", "BD", "BP"], durations=d * 1e6, counts=(d > 0).astype(np.int64),
                      total=d.sum(axis=1) * 1e6, syscalls=Ragged.from_lists(calls), state_seq=Ragged.empty(n))
    ra = analyze_requests(ft)
    lab = ra.clusters.label
    assert ra.outliers.outlier[900:].all() and not ra.outliers.outlier[:900].any()
    six = np.bincount(lab[980:]).argmax()  # (k-means puts one of them with the 2 ms syncs)
    assert len(set(lab[900:980])) == 1 and (lab[980:] == six).sum() >= 38 and lab[900] != six, ra.clusters.k_from
    assert ra.clusters.k == 2 and "set apart by the same system calls" in ra.clusters.k_from
    assert analyze_requests(ft, cluster_params=ClusterParams(k=3)).clusters.k == 3  # a k given is kept


def test_where_a_clusters_time_went_says_mostly_only_past_half():
    # 'mostly running on a CPU' was said of syncs that ran 39% of their time and waited 38% on the disk
    from perftriage.analysis.requests.outlier_analysis import _where_time_went

    assert _where_time_went([("BS", 0.89), ("RU", 0.10)], short=True) == "mostly sleeping (timers)"
    assert _where_time_went([("BS", 0.89), ("RU", 0.10)]) == "most of their time sleeping (timers) (89%)"
    two = [("RU", 0.39), ("BD", 0.38)]
    assert _where_time_went(two, short=True) == "running on a CPU and waiting for the disk"
    assert _where_time_went(two) == "their time running on a CPU (39%) and waiting for the disk (38%)"
    assert _where_time_went([("BN", 0.4)], short=True) == "mostly waiting for the network"
