/*
 * The critical-path walk of critical_path.PathFinder.path in C: the same rules (runs, wakers,
 * forks, packets sent on the host, packets from other traced hosts with their clock fits, a
 * waker whose history starts with a received packet), the same pieces, expanded, clipped,
 * shifted to the request's clock and merged into segments as critical_path.materialise does,
 * summed straight into per-request arrays. tests/test_features.py compares it with the Python
 * walk on every request of the samples and of real traces.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "growbuf.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define NONE INT64_MIN
#define NSTATES 9
enum { RU = 0, RS = 1, BP = 2, BLOCKED = 3, UNKNOWN = 4, EXITED = 5 };
enum { ST_BN = 4, ST_BT = 8 };
enum { FOLLOW = -1, FOLLOW_NET = -2, FOLLOW_REMOTE = -3 };


/* One graph's arrays (critical_path._CompiledWalk.args gives them in this order). */
enum {
    IV_START, IV_END, IV_STATE, IV_BLOCK, IV_WAKER, TIDS, T_LO, T_HI, I_TID, I_PARENT, I_FORK, I_SEEN,
    A_TID, A_T, A_T_SENT, A_SENDER, A_GRAPH, NL_K, NL_T, RL_K, RL_GRAPH, RL_T, NGARRAYS
};
static const Py_ssize_t GSIZES[NGARRAYS] = {8, 8, 1, 1, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};

typedef struct {
    Py_buffer v[NGARRAYS];
    int got;
    const int64_t *iv_start, *iv_end;
    const int8_t *iv_state, *iv_block;
    const int32_t *iv_waker;
    const int64_t *tids, *t_lo, *t_hi, *i_tid, *i_parent, *i_fork, *i_seen;
    const int64_t *a_tid, *a_t, *a_t_sent, *a_sender, *a_graph, *nl_k, *nl_t, *rl_k, *rl_graph, *rl_t;
    Py_ssize_t ntids, ninfo, narr, nnl, nrl;
} Graph;

typedef struct {
    int64_t T, pos, b, depth, via, shift;
    int g;
    int in_flight;  /* a packet in flight: the blocked thread (in depth) waits on the network */
} Frame;

typedef struct {
    Graph *graphs;
    int H;
    const int64_t *c_has, *c_ref;  /* clock fits, H x H: [a * H + b] takes a time of a to b */
    const double *c_off, *c_drift;
    int64_t max_depth;
    int64_t *dur, *cnt, *host_time, *first;
    Buf seq;
    Buf stack;
    /* the last segment of the path being walked (for merging) */
    int has_last, last_g;
    int64_t last_tid, last_end, last_state;
    int64_t pieces;  /* pieces of the path so far (the order hosts are reached in) */
} Walk;

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

/* A piece of the path on graph g (its host reached, for "elsewhere"). */
static void piece(Walk *w, int64_t r, int g) {
    int64_t *f = &w->first[r * w->H + g];
    if (*f == INT64_MAX)
        *f = w->pieces;
    w->pieces++;
}

/* A segment of request r's path (times on graph g's clock, shift to the request's): merged into
 * the previous one when it continues it (same thread, host and state, no gap). */
static int row(Walk *w, int64_t r, int g, int64_t T, int64_t s, int64_t e, int64_t st, int64_t shift) {
    s += shift;
    e += shift;
    if (e <= s)
        return 0;
    w->dur[r * NSTATES + st] += e - s;
    w->host_time[r * w->H + g] += e - s;
    if (w->has_last && w->last_tid == T && w->last_g == g && w->last_state == st && w->last_end == s) {
        w->last_end = e;
        return 0;
    }
    if (buf_reserve(&w->seq, 1) < 0)
        return -1;
    w->seq.data[w->seq.len++] = (char)st;
    w->cnt[r * NSTATES + st] += 1;
    w->has_last = 1;
    w->last_tid = T;
    w->last_g = g;
    w->last_state = st;
    w->last_end = e;
    return 0;
}

/* A synthetic piece (one state over [a, b]): PathFinder.path's emit. */
static int emit(Walk *w, int64_t r, int g, int64_t T, int64_t a, int64_t b, int64_t st, int64_t shift) {
    if (b <= a)
        return 0;
    piece(w, r, g);
    return row(w, r, g, T, a, b, st, shift);
}

static int push(Walk *w, int64_t T, int64_t pos, int64_t b, int64_t depth, int64_t via, int g, int64_t shift,
                int in_flight) {
    if (buf_reserve(&w->stack, sizeof(Frame)) < 0)
        return -1;
    *(Frame *)(w->stack.data + w->stack.len) = (Frame){T, pos, b, depth, via, shift, g, in_flight};
    w->stack.len += sizeof(Frame);
    return 0;
}

/* PathFinder._sender: the graph of a packet's sender (host graph index hg, -1: not traced) and
 * the shift from graph g's clock to its clock; 0 when there is none (not traced, no fit). */
static int sender(Walk *w, int g, int64_t hg, int64_t pos, int *R, int64_t *d) {
    if (hg == g) {
        *R = g;
        *d = 0;
        return 1;
    }
    if (hg < 0 || hg >= w->H || !w->c_has[g * w->H + hg])
        return 0;
    int k = g * w->H + (int)hg;
    *R = (int)hg;
    *d = (int64_t)nearbyint(w->c_off[k] + w->c_drift[k] * (double)(pos - w->c_ref[k]));
    return 1;
}

/* A wait that ends at `end` when a packet arrives, followed to its sender (task `who` on graph R,
 * whose clock is d ahead): the sender's work up to the send, then the packet's flight (BN, on
 * the waiting thread), then the rest of f's window. Pushed in reverse: popped in time order.
 * PathFinder._follow_packet. */
static int follow_packet(Walk *w, const Frame *f, int64_t end, int64_t who, int R, int64_t d, int64_t t_sent) {
    int64_t sent = t_sent - d;
    if (sent < f->pos)
        sent = f->pos;
    if (sent > end)
        sent = end;
    if (push(w, f->T, end, f->b, f->depth, f->via, f->g, f->shift, 0) < 0
        || push(w, 0, sent, end, f->T, f->via, f->g, f->shift, 1) < 0)
        return -1;
    if (sent > f->pos && push(w, who, f->pos + d, sent + d, f->depth + 1, f->T, R, f->shift - d, 0) < 0)
        return -1;
    return 0;
}

/* The walk of request r: 0 done, -1 out of memory. */
static int walk_one(Walk *w, int64_t r, int g0, int64_t tid0, int64_t t0, int64_t t1) {
    w->has_last = 0;
    w->pieces = 0;
    w->stack.len = 0;
    if (push(w, tid0, t0, t1, 0, -1, g0, 0, 0) < 0)
        return -1;
    while (w->stack.len) {
        w->stack.len -= sizeof(Frame);
        Frame f = *(Frame *)(w->stack.data + w->stack.len);
        int64_t T = f.T, pos = f.pos, b = f.b, depth = f.depth, via = f.via, shift = f.shift;
        int gi = f.g;
        Graph *G = &w->graphs[gi];
        if (f.in_flight) {
            if (emit(w, r, gi, depth, pos, b, ST_BN, shift) < 0)
                return -1;
            continue;
        }
        if (depth && G->narr && depth < w->max_depth) {
            /* PathFinder._arrival */
            Py_ssize_t i = find_sorted(G->i_tid, G->ninfo, T);
            if (i >= 0 && G->i_seen[i] != NONE && G->i_seen[i] > pos) {
                Py_ssize_t lo = 0, hi = G->narr;
                while (lo < hi) {
                    Py_ssize_t mid = (lo + hi) / 2;
                    if (G->a_tid[mid] < T)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo < G->narr && G->a_tid[lo] == T) {
                    int64_t t_r = G->a_t[lo];
                    int R;
                    int64_t d;
                    if (pos < t_r && t_r < b && !(G->i_fork[i] != NONE && G->i_fork[i] > pos)
                        && sender(w, gi, G->a_graph[lo], pos, &R, &d) && !(R == gi && G->a_sender[lo] == T)) {
                        if (follow_packet(w, &f, t_r, G->a_sender[lo], R, d, G->a_t_sent[lo]) < 0)
                            return -1;
                        continue;
                    }
                }
            }
        }
        Py_ssize_t ti = find_sorted(G->tids, G->ntids, T);
        int64_t lo = ti >= 0 ? G->t_lo[ti] : 0, hi = ti >= 0 ? G->t_hi[ti] : 0;
        int64_t k = bisect_right(G->iv_end, pos, lo, hi);
        while (pos < b) {
            if (k >= hi) {
                if (emit(w, r, gi, T, pos, b, ST_BT, shift) < 0)
                    return -1;
                break;
            }
            int64_t s = G->iv_start[k];
            if (s > pos) {
                int64_t e = s < b ? s : b;
                if (emit(w, r, gi, T, pos, e, ST_BT, shift) < 0)
                    return -1;
                pos = e;
                continue;
            }
            /* the run of running intervals from k (RU, RS, BP), up to the one that reaches b: read
               here rather than from an index of next non-running intervals (4 bytes an interval
               beside the graph's 37), since the run's intervals are visited below anyway */
            int64_t j = k;
            while (j < hi && G->iv_state[j] >= RU && G->iv_state[j] <= BP) {
                j++;
                if (G->iv_end[j - 1] >= b)
                    break;
            }
            if (j > k) {
                int64_t run_end = G->iv_end[j - 1];
                int last = run_end >= b;
                if (last)
                    run_end = b;
                piece(w, r, gi);
                for (int64_t q = k; q < j; q++) {  /* the range's intervals, clipped to [pos, run_end] */
                    int64_t qs = G->iv_start[q] > pos ? G->iv_start[q] : pos;
                    int64_t qe = G->iv_end[q] < run_end ? G->iv_end[q] : run_end;
                    if (row(w, r, gi, T, qs, qe, G->iv_state[q], shift) < 0)
                        return -1;
                }
                pos = run_end;
                if (last)
                    break;
                k = j;
                continue;
            }
            int64_t e = G->iv_end[k] < b ? G->iv_end[k] : b;
            int st = G->iv_state[k];
            int pushed = 0;
            if (st == BLOCKED) {
                int blk = G->iv_block[k];
                int64_t waker = G->iv_waker[k];
                if ((blk == FOLLOW_NET || blk == FOLLOW_REMOTE) && depth < w->max_depth && e > pos) {
                    int R = -1;
                    int64_t d = 0, t_sent = pos;
                    if (blk == FOLLOW_NET) {
                        Py_ssize_t i = find_sorted(G->nl_k, G->nnl, k);
                        if (i >= 0)
                            t_sent = G->nl_t[i];
                        if (waker != T)
                            R = gi;
                    } else {
                        Py_ssize_t i = find_sorted(G->rl_k, G->nrl, k);
                        if (i >= 0) {
                            t_sent = G->rl_t[i];
                            if (!sender(w, gi, G->rl_graph[i], pos, &R, &d))
                                R = -1;
                        }
                    }
                    if (R >= 0) {
                        /* the frame's own window starts at pos here: f.pos was moved on */
                        Frame here = {T, pos, b, depth, via, shift, gi, 0};
                        if (follow_packet(w, &here, e, waker, R, d, t_sent) < 0)
                            return -1;
                        pushed = 1;
                    }
                }
                if (!pushed && blk == FOLLOW && depth < w->max_depth && waker != T && e > pos) {
                    if (push(w, T, e, b, depth, via, gi, shift, 0) < 0 || push(w, waker, pos, e, depth + 1, T, gi, shift, 0) < 0)
                        return -1;
                    pushed = 1;
                }
                if (!pushed) {
                    int state = blk == FOLLOW ? ST_BT : (blk == FOLLOW_NET || blk == FOLLOW_REMOTE) ? ST_BN : blk;
                    if (emit(w, r, gi, T, pos, e, state, shift) < 0)
                        return -1;
                }
            } else if (st == EXITED) {
                Py_ssize_t i = find_sorted(G->i_tid, G->ninfo, T);
                int64_t parent = i >= 0 ? G->i_parent[i] : NONE;
                if (parent != NONE && G->i_fork[i] != NONE && G->i_fork[i] >= e && depth < w->max_depth && parent != T) {
                    if (push(w, T, e, b, depth, via, gi, shift, 0) < 0 || push(w, parent, pos, e, depth + 1, T, gi, shift, 0) < 0)
                        return -1;
                    pushed = 1;
                } else if (emit(w, r, gi, T, pos, e, ST_BT, shift) < 0) {
                    return -1;
                }
            } else if (emit(w, r, gi, T, pos, e, ST_BT, shift) < 0) {
                return -1;
            }
            if (pushed)
                break;
            pos = e;
            k++;
        }
    }
    return 0;
}

static int get_buf(PyObject *o, Py_buffer *v, Py_ssize_t itemsize, int writable, const char *name) {
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (v->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "walk: %s has items of %zd bytes, not %zd", name, v->itemsize, itemsize);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

static int load_graph(PyObject *t, Graph *G) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != NGARRAYS) {
        PyErr_SetString(PyExc_TypeError, "walk: a graph is a tuple of its arrays");
        return -1;
    }
    for (; G->got < NGARRAYS; G->got++)
        if (get_buf(PyTuple_GET_ITEM(t, G->got), &G->v[G->got], GSIZES[G->got], 0, "a graph array") < 0)
            return -1;
    Py_ssize_t n = G->v[IV_START].len / 8;
    if (G->v[IV_END].len / 8 != n || G->v[IV_STATE].len != n || G->v[IV_BLOCK].len != n || G->v[IV_WAKER].len / 4 != n
        || G->v[T_LO].len != G->v[TIDS].len || G->v[T_HI].len != G->v[TIDS].len
        || G->v[I_PARENT].len != G->v[I_TID].len || G->v[I_FORK].len != G->v[I_TID].len || G->v[I_SEEN].len != G->v[I_TID].len
        || G->v[A_T].len != G->v[A_TID].len || G->v[A_T_SENT].len != G->v[A_TID].len || G->v[A_SENDER].len != G->v[A_TID].len
        || G->v[A_GRAPH].len != G->v[A_TID].len || G->v[NL_T].len != G->v[NL_K].len || G->v[RL_GRAPH].len != G->v[RL_K].len
        || G->v[RL_T].len != G->v[RL_K].len) {
        PyErr_SetString(PyExc_ValueError, "walk: a graph's arrays of different lengths");
        return -1;
    }
    G->iv_start = G->v[IV_START].buf;
    G->iv_end = G->v[IV_END].buf;
    G->iv_state = G->v[IV_STATE].buf;
    G->iv_block = G->v[IV_BLOCK].buf;
    G->iv_waker = G->v[IV_WAKER].buf;
    G->tids = G->v[TIDS].buf;
    G->t_lo = G->v[T_LO].buf;
    G->t_hi = G->v[T_HI].buf;
    G->i_tid = G->v[I_TID].buf;
    G->i_parent = G->v[I_PARENT].buf;
    G->i_fork = G->v[I_FORK].buf;
    G->i_seen = G->v[I_SEEN].buf;
    G->a_tid = G->v[A_TID].buf;
    G->a_t = G->v[A_T].buf;
    G->a_t_sent = G->v[A_T_SENT].buf;
    G->a_sender = G->v[A_SENDER].buf;
    G->a_graph = G->v[A_GRAPH].buf;
    G->nl_k = G->v[NL_K].buf;
    G->nl_t = G->v[NL_T].buf;
    G->rl_k = G->v[RL_K].buf;
    G->rl_graph = G->v[RL_GRAPH].buf;
    G->rl_t = G->v[RL_T].buf;
    G->ntids = G->v[TIDS].len / 8;
    G->ninfo = G->v[I_TID].len / 8;
    G->narr = G->v[A_TID].len / 8;
    G->nnl = G->v[NL_K].len / 8;
    G->nrl = G->v[RL_K].len / 8;
    return 0;
}

/* walk(graphs, (c_has, c_off, c_drift, c_ref), (req_index, req_graph, req_tid, req_t0, req_t1),
 *      max_depth, (dur, cnt, seq_len, host_time, first))
 * graphs: a tuple of graph tuples (critical_path._CompiledWalk.args), in ordinal order; clock
 * fits H x H; outputs: int64 (requests x 9), (requests x 9), (requests), (requests x H),
 * (requests x H: INT64_MAX where not reached), filled at the rows req_index.
 * -> the states of every walked request's segments, request after request (bytearray of int8) */
static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *graphs, *clocks, *reqs, *outs;
    long long max_depth;
    if (!PyArg_ParseTuple(args, "O!O!O!LO!", &PyTuple_Type, &graphs, &PyTuple_Type, &clocks, &PyTuple_Type, &reqs,
                          &max_depth, &PyTuple_Type, &outs))
        return NULL;
    if (PyTuple_GET_SIZE(clocks) != 4 || PyTuple_GET_SIZE(reqs) != 5 || PyTuple_GET_SIZE(outs) != 5) {
        PyErr_SetString(PyExc_TypeError, "walk: 4 clock arrays, 5 request arrays, 5 outputs");
        return NULL;
    }
    int H = (int)PyTuple_GET_SIZE(graphs);
    Graph *gs = PyMem_Calloc(H ? H : 1, sizeof(Graph));
    if (!gs)
        return PyErr_NoMemory();
    Py_buffer cv[4], rv[5], ov[5];
    int ncv = 0, nrv = 0, nov = 0;
    PyObject *result = NULL;
    Walk w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < H; i++)
        if (load_graph(PyTuple_GET_ITEM(graphs, i), &gs[i]) < 0)
            goto done;
    static const Py_ssize_t csz[4] = {8, 8, 8, 8};
    for (; ncv < 4; ncv++)
        if (get_buf(PyTuple_GET_ITEM(clocks, ncv), &cv[ncv], csz[ncv], 0, "a clock array") < 0)
            goto done;
    for (; nrv < 5; nrv++)
        if (get_buf(PyTuple_GET_ITEM(reqs, nrv), &rv[nrv], 8, 0, "a request array") < 0)
            goto done;
    for (; nov < 5; nov++)
        if (get_buf(PyTuple_GET_ITEM(outs, nov), &ov[nov], 8, 1, "an output array") < 0)
            goto done;
    for (int i = 0; i < 4; i++)
        if (cv[i].len != (Py_ssize_t)H * H * 8) {
            PyErr_SetString(PyExc_ValueError, "walk: clock fits are H x H");
            goto done;
        }
    Py_ssize_t n = rv[0].len / 8, total = ov[2].len / 8;
    for (int i = 1; i < 5; i++)
        if (rv[i].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "walk: request arrays of different lengths");
            goto done;
        }
    if (ov[0].len != total * NSTATES * 8 || ov[1].len != total * NSTATES * 8 || ov[3].len != total * H * 8
        || ov[4].len != total * H * 8) {
        PyErr_SetString(PyExc_ValueError, "walk: outputs of the wrong size");
        goto done;
    }
    const int64_t *ri = rv[0].buf, *rg = rv[1].buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (ri[i] < 0 || ri[i] >= total || rg[i] < 0 || rg[i] >= H) {
            PyErr_SetString(PyExc_IndexError, "walk: request or graph index out of range");
            goto done;
        }
    w.graphs = gs;
    w.H = H;
    w.c_has = cv[0].buf;
    w.c_off = cv[1].buf;
    w.c_drift = cv[2].buf;
    w.c_ref = cv[3].buf;
    w.max_depth = max_depth;
    w.dur = ov[0].buf;
    w.cnt = ov[1].buf;
    w.host_time = ov[3].buf;
    w.first = ov[4].buf;
    int64_t *seq_len = ov[2].buf;
    const int64_t *rt = rv[2].buf, *r0 = rv[3].buf, *r1 = rv[4].buf;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t before = w.seq.len;
        if (walk_one(&w, ri[i], (int)rg[i], rt[i], r0[i], r1[i]) < 0) {
            failed = 1;
            break;
        }
        seq_len[ri[i]] = (int64_t)(w.seq.len - before);
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyByteArray_FromStringAndSize(w.seq.data ? w.seq.data : "", (Py_ssize_t)w.seq.len);
done:
    PyMem_RawFree(w.seq.data);
    PyMem_RawFree(w.stack.data);
    for (int i = 0; i < H; i++)
        for (int j = 0; j < gs[i].got; j++)
            PyBuffer_Release(&gs[i].v[j]);
    PyMem_Free(gs);
    for (int i = 0; i < ncv; i++)
        PyBuffer_Release(&cv[i]);
    for (int i = 0; i < nrv; i++)
        PyBuffer_Release(&rv[i]);
    for (int i = 0; i < nov; i++)
        PyBuffer_Release(&ov[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Critical paths of requests, summed per request (see critical_path.walk_many)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_walk", "The critical-path walk in C.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&module); }
