/*
 * The critical-path walk of critical_path.PathFinder.path in C, for the paths that stay on one
 * host's graph (most of them): the same rules, the same pieces, expanded, clipped and merged
 * into segments as critical_path.materialise does, written straight to column buffers.
 *
 * A path that meets a packet edge (FOLLOW_NET / FOLLOW_REMOTE to follow, or a waker whose
 * history starts with a received packet) is left to the Python walk: walk() marks the request
 * and writes nothing for it. tests/test_features.py compares both walks on every request of the
 * samples and real traces.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define NONE INT64_MIN
enum { RU = 0, RS = 1, BP = 2, BLOCKED = 3, UNKNOWN = 4, EXITED = 5 };
enum { ST_BN = 4, ST_BT = 8 };
enum { FOLLOW = -1, FOLLOW_NET = -2, FOLLOW_REMOTE = -3 };

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = PyMem_RawRealloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

typedef struct {
    int64_t T, pos, b, depth, via;
} Frame;

typedef struct {
    /* graph */
    const int64_t *iv_start, *iv_end;
    const int8_t *iv_state, *iv_block;
    const int32_t *iv_waker, *nnp;
    const int64_t *tids, *t_lo, *t_hi;  /* threads with intervals, sorted by tid */
    Py_ssize_t ntids;
    const int64_t *i_tid, *i_parent, *i_fork, *i_seen;  /* thread infos, sorted by tid (NONE: None) */
    Py_ssize_t ninfo;
    const int64_t *a_tid, *a_t;  /* arrivals, sorted by (tid, time) */
    Py_ssize_t narr;
    int64_t max_depth;
    /* output: per request, time per state and segments per state (n x NSTATES), and the states
     * of its merged segments in time order */
    int64_t *dur, *cnt;
    Buf seq;
    /* the last segment of the path being walked (for merging) */
    int has_last;
    int64_t last_tid, last_end, last_state;
    Buf stack;
} Walk;

#define NSTATES 9

static Py_ssize_t find_sorted(const int64_t *a, Py_ssize_t n, int64_t v) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo] == v ? lo : -1;
}

/* first index in [lo, hi) with a[i] > v */
static int64_t bisect_right(const int64_t *a, int64_t v, int64_t lo, int64_t hi) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (v < a[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* A segment of the path of request r: merged into the previous one when it continues it
 * (same thread and state, no gap), as critical_path.materialise merges. */
static int row(Walk *w, int64_t r, int64_t T, int64_t s, int64_t e, int64_t st, int64_t via, int64_t first_row) {
    (void)via;
    (void)first_row;
    if (e <= s)
        return 0;
    w->dur[r * NSTATES + st] += e - s;
    if (w->has_last && w->last_tid == T && w->last_state == st && w->last_end == s) {
        w->last_end = e;
        return 0;
    }
    if (buf_reserve(&w->seq, 1) < 0)
        return -1;
    w->seq.data[w->seq.len++] = (char)st;
    w->cnt[r * NSTATES + st] += 1;
    w->has_last = 1;
    w->last_tid = T;
    w->last_state = st;
    w->last_end = e;
    return 0;
}

static int push_frame(Walk *w, int64_t T, int64_t pos, int64_t b, int64_t depth, int64_t via) {
    if (buf_reserve(&w->stack, sizeof(Frame)) < 0)
        return -1;
    *(Frame *)(w->stack.data + w->stack.len) = (Frame){T, pos, b, depth, via};
    w->stack.len += sizeof(Frame);
    return 0;
}

/* The walk of one request: 0 done, 1 left to Python (a packet edge), -1 out of memory. */
static int walk_one(Walk *w, int64_t r, int64_t tid0, int64_t t0, int64_t t1) {
    int64_t first_row = 0;
    size_t first_len = w->seq.len;
    w->has_last = 0;
    w->stack.len = 0;
    if (push_frame(w, tid0, t0, t1, 0, -1) < 0)
        return -1;
    int rc = 0;
    while (w->stack.len) {
        w->stack.len -= sizeof(Frame);
        Frame f = *(Frame *)(w->stack.data + w->stack.len);
        int64_t T = f.T, pos = f.pos, b = f.b, depth = f.depth, via = f.via;
        if (depth && w->narr && depth < w->max_depth) {
            /* PathFinder._arrival: a waker whose history begins after pos but that received a
             * packet inside the window: the Python walk follows the packet */
            Py_ssize_t i = find_sorted(w->i_tid, w->ninfo, T);
            if (i >= 0 && w->i_seen[i] != NONE && w->i_seen[i] > pos) {
                Py_ssize_t lo = 0, hi = w->narr;
                while (lo < hi) {
                    Py_ssize_t mid = (lo + hi) / 2;
                    if (w->a_tid[mid] < T)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo < w->narr && w->a_tid[lo] == T) {
                    int64_t t_r = w->a_t[lo];
                    if (pos < t_r && t_r < b && !(w->i_fork[i] != NONE && w->i_fork[i] > pos)) {
                        rc = 1;
                        break;
                    }
                }
            }
        }
        Py_ssize_t ti = find_sorted(w->tids, w->ntids, T);
        int64_t lo = ti >= 0 ? w->t_lo[ti] : 0, hi = ti >= 0 ? w->t_hi[ti] : 0;
        int64_t k = bisect_right(w->iv_end, pos, lo, hi);
        int stop = 0;
        while (pos < b && !stop) {
            if (k >= hi) {
                if (row(w, r, T, pos, b, ST_BT, via, first_row) < 0)
                    return -1;
                break;
            }
            int64_t s = w->iv_start[k];
            if (s > pos) {
                int64_t e = s < b ? s : b;
                if (row(w, r, T, pos, e, ST_BT, via, first_row) < 0)
                    return -1;
                pos = e;
                continue;
            }
            int64_t j = w->nnp[k];
            if (j > hi)
                j = hi;
            if (j > k) {
                int64_t run_end = w->iv_end[j - 1];
                int last = run_end >= b;
                if (last) {
                    int64_t j2 = bisect_right(w->iv_end, b - 1, lo, hi) + 1;
                    if (j2 < j)
                        j = j2;
                    run_end = b;
                }
                for (int64_t q = k; q < j; q++) {  /* the range's intervals, clipped to [pos, run_end] */
                    int64_t qs = w->iv_start[q] > pos ? w->iv_start[q] : pos;
                    int64_t qe = w->iv_end[q] < run_end ? w->iv_end[q] : run_end;
                    if (row(w, r, T, qs, qe, w->iv_state[q], via, first_row) < 0)
                        return -1;
                }
                pos = run_end;
                if (last)
                    break;
                k = j;
                continue;
            }
            int64_t e = w->iv_end[k] < b ? w->iv_end[k] : b;
            int st = w->iv_state[k];
            if (st == BLOCKED) {
                int blk = w->iv_block[k];
                int64_t waker = w->iv_waker[k];
                if ((blk == FOLLOW_NET || blk == FOLLOW_REMOTE) && depth < w->max_depth && e > pos) {
                    rc = 1;  /* a packet edge: the Python walk follows it */
                    stop = 1;
                    break;
                }
                if (blk == FOLLOW && depth < w->max_depth && waker != T && e > pos) {
                    if (push_frame(w, T, e, b, depth, via) < 0 || push_frame(w, waker, pos, e, depth + 1, T) < 0)
                        return -1;
                    stop = 1;
                    break;
                }
                int state = blk == FOLLOW ? ST_BT : (blk == FOLLOW_NET || blk == FOLLOW_REMOTE) ? ST_BN : blk;
                if (row(w, r, T, pos, e, state, via, first_row) < 0)
                    return -1;
            } else if (st == EXITED) {
                Py_ssize_t i = find_sorted(w->i_tid, w->ninfo, T);
                int64_t parent = i >= 0 ? w->i_parent[i] : NONE;
                if (parent != NONE && w->i_fork[i] != NONE && w->i_fork[i] >= e && depth < w->max_depth && parent != T) {
                    if (push_frame(w, T, e, b, depth, via) < 0 || push_frame(w, parent, pos, e, depth + 1, T) < 0)
                        return -1;
                    stop = 1;
                    break;
                }
                if (row(w, r, T, pos, e, ST_BT, via, first_row) < 0)
                    return -1;
            } else {
                if (row(w, r, T, pos, e, ST_BT, via, first_row) < 0)
                    return -1;
            }
            pos = e;
            k++;
        }
        if (rc)
            break;
    }
    if (rc) {  /* drop what this request wrote */
        w->seq.len = first_len;
        memset(w->dur + r * NSTATES, 0, NSTATES * sizeof(int64_t));
        memset(w->cnt + r * NSTATES, 0, NSTATES * sizeof(int64_t));
    }
    return rc;
}

static int get_buf(PyObject *o, Py_buffer *v, const char *fmt, Py_ssize_t itemsize, const char *name) {
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (v->itemsize != itemsize || (fmt && strchr(fmt, v->format[0] == '<' || v->format[0] == '=' ? v->format[1] : v->format[0]) == NULL)) {
        PyErr_Format(PyExc_TypeError, "%s: wrong item type %s", name, v->format);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

static PyObject *take(Buf *b) {
    PyObject *out = PyByteArray_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
    PyMem_RawFree(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    return out;
}

/* walk(iv_start, iv_end, iv_state, iv_block, iv_waker, nnp, tids, t_lo, t_hi,
 *      info_tid, info_parent, info_fork, info_seen, arr_tid, arr_t,
 *      req_index, req_tid, req_t0, req_t1, max_depth, dur, cnt, seq_len)
 * dur, cnt: int64 (requests x 9), rows req_index filled; seq_len: int64 per request (req_index).
 * -> (left to Python: bytearray of int8 per walked request, the states of every walked request's
 *     segments, request after request: bytearray of int8) */
static PyObject *walk(PyObject *self, PyObject *args) {
    enum { NARR = 19 };
    PyObject *objs[NARR];
    long long max_depth;
    PyObject *o_dur, *o_cnt, *o_len;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOOLOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &objs[12], &objs[13],
                          &objs[14], &objs[15], &objs[16], &objs[17], &objs[18], &max_depth, &o_dur, &o_cnt, &o_len))
        return NULL;
    Py_buffer vd, vc, vl;
    int got_out = 0;
    static const char *names[NARR] = {"iv_start", "iv_end", "iv_state", "iv_block", "iv_waker", "nnp", "tids", "t_lo",
                                      "t_hi", "info_tid", "info_parent", "info_fork", "info_seen", "arr_tid", "arr_t",
                                      "req_index", "req_tid", "req_t0", "req_t1"};
    static const Py_ssize_t sizes[NARR] = {8, 8, 1, 1, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
    static const char *fmts[NARR] = {"qlq", "qlq", "bc", "bc", "ii", "ii", "qlq", "qlq", "qlq", "qlq", "qlq", "qlq",
                                     "qlq", "qlq", "qlq", "qlq", "qlq", "qlq", "qlq"};
    Py_buffer v[NARR];
    int got = 0;
    PyObject *result = NULL;
    for (; got < NARR; got++)
        if (get_buf(objs[got], &v[got], fmts[got], sizes[got], names[got]) < 0)
            goto done;
    if (PyObject_GetBuffer(o_dur, &vd, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    got_out = 1;
    if (PyObject_GetBuffer(o_cnt, &vc, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    got_out = 2;
    if (PyObject_GetBuffer(o_len, &vl, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    got_out = 3;
    Py_ssize_t n = v[15].len / 8;
    Py_ssize_t total = vl.len / 8;
    if (vd.len != total * NSTATES * 8 || vc.len != total * NSTATES * 8) {
        PyErr_SetString(PyExc_ValueError, "walk: dur and cnt must be (requests x 9) int64");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (((int64_t *)v[15].buf)[i] < 0 || ((int64_t *)v[15].buf)[i] >= total) {
            PyErr_SetString(PyExc_IndexError, "walk: request index out of range");
            goto done;
        }
    if (v[16].len / 8 != n || v[17].len / 8 != n || v[18].len / 8 != n || v[0].len != v[1].len
        || v[0].len / 8 != v[2].len || v[2].len != v[3].len || v[2].len != v[4].len / 4 || v[2].len != v[5].len / 4
        || v[6].len != v[7].len || v[6].len != v[8].len || v[9].len != v[10].len || v[9].len != v[11].len
        || v[9].len != v[12].len || v[13].len != v[14].len) {
        PyErr_SetString(PyExc_ValueError, "walk: arrays of different lengths");
        goto done;
    }
    Walk w;
    memset(&w, 0, sizeof w);
    w.iv_start = v[0].buf;
    w.iv_end = v[1].buf;
    w.iv_state = v[2].buf;
    w.iv_block = v[3].buf;
    w.iv_waker = v[4].buf;
    w.nnp = v[5].buf;
    w.tids = v[6].buf;
    w.t_lo = v[7].buf;
    w.t_hi = v[8].buf;
    w.ntids = v[6].len / 8;
    w.i_tid = v[9].buf;
    w.i_parent = v[10].buf;
    w.i_fork = v[11].buf;
    w.i_seen = v[12].buf;
    w.ninfo = v[9].len / 8;
    w.a_tid = v[13].buf;
    w.a_t = v[14].buf;
    w.narr = v[13].len / 8;
    w.max_depth = max_depth;
    w.dur = vd.buf;
    w.cnt = vc.buf;
    int64_t *seq_len = vl.buf;
    PyObject *left = PyByteArray_FromStringAndSize(NULL, n);
    if (!left)
        goto done;
    char *lp = PyByteArray_AS_STRING(left);
    const int64_t *ri = v[15].buf, *rt = v[16].buf, *r0 = v[17].buf, *r1 = v[18].buf;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t before = w.seq.len;
        int rc = walk_one(&w, ri[i], rt[i], r0[i], r1[i]);
        if (rc < 0) {
            failed = 1;
            break;
        }
        lp[i] = (char)rc;
        if (!rc)
            seq_len[ri[i]] = (int64_t)(w.seq.len - before);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(w.stack.data);
    if (failed) {
        PyMem_RawFree(w.seq.data);
        Py_DECREF(left);
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("(NN)", left, take(&w.seq));
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&v[i]);
    if (got_out > 0)
        PyBuffer_Release(&vd);
    if (got_out > 1)
        PyBuffer_Release(&vc);
    if (got_out > 2)
        PyBuffer_Release(&vl);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Critical paths of requests that stay on one graph, as merged segments."},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_walk", "The critical-path walk in C for paths that stay on one host's graph.", -1, methods,
};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&module); }
