/*
 * Förstner–Moonen distances for the bootstrap's batches in C (covariance.fm_condensed): for
 * every set b of k covariance matrices and every pair i < j of the set,
 *   d(C_i, C_j) = sqrt(sum ln^2 lambda), lambda the eigenvalues of S = L_i^-1 C_j L_i^-T.
 * The caller gives the Cholesky factors L (C = L L'), made by numpy (covariance.safe_cholesky)
 * for the whole batch; their inverses and log-determinants are made here. Per pair:
 * M = L_i^-1 L_j (lower triangular), S = M M'; the pair's overall scale is taken out
 * (m = (ln det C_j - ln det C_i) / p, S e^-m, plus p m^2), then sum ln^2 lambda by the series
 * of covariance.fm_condensed_fast (in double) where the eigenvalues are near 1, and where they
 * are not (most pairs of real threads: 94% of a webserver's 33 threads of 6 metrics) by cyclic
 * Jacobi rotations, eight pairs at a time, until every off-diagonal entry is negligible beside
 * its two diagonal entries (a_rc^2 <= 1e-24 |a_rr a_cc|: small eigenvalues stay accurate
 * relative to themselves, as near-singular covariances need). tests/test_threads.py compares it
 * with LAPACK's generalized eigenvalues, pair by pair. Runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define MAXP 32
#define SWEEPS 60

/* artanh^2(y) = sum_n a_n y^2n: a_n = sum over a + b = n - 1 of 1 / ((2a + 1)(2b + 1)) */
static double atanh2_coef(int n) {
    double s = 0.0;
    for (int a = 0; a < n; a++)
        s += 1.0 / ((2.0 * a + 1.0) * (2.0 * (n - 1 - a) + 1.0));
    return s;
}

#define NEAR 0.6
static double COEF[9];

/* The pairs go through in blocks of NB "lanes": every matrix entry is an array over the block's
 * pairs and every loop's innermost level runs over the lanes, independent of one another (the
 * compiler's vector instructions; one pair at a time is a chain of dependent additions). */
#define NB 8
#define E(X, r, c) ((X) + ((r) * p + (c)) * NB)
#define LANES for (int l = 0; l < NB; l++)

/* Pairs whose eigenvalues are far from 1 wait here, NB at a time, for vectorised Jacobi
 * rotations (one pair at a time, each rotation's square roots and divisions wait on the last:
 * 1.6 us a pair of 6 metrics, 0.6 us eight at a time). */
typedef struct {
    double *A;         /* NB lane matrices, p x p */
    double *dst[NB];   /* where each lane's distance goes */
    double base[NB];   /* its p m^2 */
    int n, p;
} Far;

/* Cyclic Jacobi rotations on all lanes at once until, in every lane, every off-diagonal entry
 * is negligible beside its two diagonal entries (a_rc^2 <= 1e-24 |a_rr a_cc|: small eigenvalues
 * stay accurate relative to themselves, as near-singular covariances need); a lane already
 * there is rotated by the identity, an entry already there in every lane not at all (at most
 * SWEEPS sweeps: NaN never gets there). Then sum ln^2 of the diagonal into each lane's place. */
static void far_run(Far *f) {
    int p = f->p, pp = p * p;
    double *A = f->A;
    if (!f->n)
        return;
    for (int l = f->n; l < NB; l++) /* a short block repeats its first lane */
        for (int q = 0; q < pp; q++)
            A[q * NB + l] = A[q * NB];
    for (int sweep = 0; sweep < SWEEPS; sweep++) {
        int open = 0;
        for (int r = 0; r < p - 1 && !open; r++)
            for (int c = r + 1; c < p && !open; c++) {
                const double *x = E(A, r, c), *d1 = E(A, r, r), *d2 = E(A, c, c);
                LANES open |= !(x[l] * x[l] <= 1e-24 * fabs(d1[l] * d2[l]));
            }
        if (!open)
            break;
        for (int r = 0; r < p - 1; r++)
            for (int c = r + 1; c < p; c++) {
                double *apq = E(A, r, c), *aqp = E(A, c, r), *app = E(A, r, r), *aqq = E(A, c, c);
                /* on local copies: the compiler cannot tell the lanes of different entries apart */
                double x[NB], pv[NB], qv[NB], cs[NB], sn[NB], t[NB], keep[NB];
                int open_ = 0;
                LANES {
                    x[l] = apq[l];
                    pv[l] = app[l];
                    qv[l] = aqq[l];
                    open_ |= !(x[l] * x[l] <= 1e-24 * fabs(pv[l] * qv[l]));
                }
                if (!open_) /* this entry is done in every lane: no rotation */
                    continue;
                LANES {
                    int small = (x[l] * x[l] <= 1e-24 * fabs(pv[l] * qv[l])) | !(fabs(x[l]) < INFINITY);
                    double theta = (qv[l] - pv[l]) / (2.0 * (small ? 1.0 : x[l]));
                    double tl = copysign(1.0, theta) / (fabs(theta) + sqrt(theta * theta + 1.0));
                    tl = (small | !(fabs(tl) < INFINITY)) ? 0.0 : tl;
                    double cv = 1.0 / sqrt(tl * tl + 1.0);
                    t[l] = tl;
                    cs[l] = cv;
                    sn[l] = tl * cv;
                    keep[l] = small ? x[l] : 0.0;
                }
                LANES {
                    app[l] = pv[l] - t[l] * x[l];
                    aqq[l] = qv[l] + t[l] * x[l];
                    apq[l] = keep[l];
                    aqp[l] = keep[l];
                }
                for (int q = 0; q < p; q++) {
                    if (q == r || q == c)
                        continue;
                    double *aqr = E(A, q, r), *arq = E(A, r, q), *aqc = E(A, q, c), *acq = E(A, c, q);
                    double nr[NB], nc[NB];
                    LANES {
                        nr[l] = cs[l] * aqr[l] - sn[l] * aqc[l];
                        nc[l] = sn[l] * aqr[l] + cs[l] * aqc[l];
                    }
                    LANES {
                        aqr[l] = nr[l];
                        arq[l] = nr[l];
                        aqc[l] = nc[l];
                        acq[l] = nc[l];
                    }
                }
            }
    }
    for (int l = 0; l < f->n; l++) {
        double d2 = f->base[l];
        for (int q = 0; q < p; q++) {
            double lam = A[(q * p + q) * NB + l];
            double lg = log(lam > 1e-300 ? lam : 1e-300);
            d2 += lg * lg;
        }
        *f->dst[l] = sqrt(d2 > 0 ? d2 : 0.0);
    }
    f->n = 0;
}

static void far_push(Far *f, const double *S, int lane, double *dst, double base) {
    int pp = f->p * f->p, k = f->n;
    for (int q = 0; q < pp; q++)
        f->A[q * NB + k] = S[q * NB + lane];
    f->dst[k] = dst;
    f->base[k] = base;
    if (++f->n == NB)
        far_run(f);
}

/* Z = X Y for symmetric X, Y whose product is symmetric (powers of one matrix) */
static void sym_mul(const double *X, const double *Y, double *Z, int p) {
    for (int a = 0; a < p; a++)
        for (int b = 0; b <= a; b++) {
            double s[NB] = {0};
            for (int c = 0; c < p; c++) {
                const double *x = E(X, a, c), *y = E(Y, c, b);
                LANES s[l] += x[l] * y[l];
            }
            double *z = E(Z, a, b), *zt = E(Z, b, a);
            LANES z[l] = zt[l] = s[l];
        }
}

/* tr(X Y) of symmetric X, Y, per lane */
static void inner(const double *X, const double *Y, int p, double *t) {
    LANES t[l] = 0.0;
    for (int q = 0; q < p * p; q++) {
        const double *x = X + q * NB, *y = Y + q * NB;
        LANES t[l] += x[l] * y[l];
    }
}

/* One block of pairs (i[l], j[l]) of one set: A = L_i^-1, C = L_j gathered into lanes, then
 * M = A C (lower triangular), S = M M' e^-m (the pair's overall scale m taken out), and
 * sum ln^2 lambda by the series when the eigenvalues are near 1 (covariance.fm_condensed_fast's,
 * in double): with the Cayley transform Y = (S - I)(S + I)^-1 = I - 2 (S + I)^-1, eigenvalues
 * y = (lambda - 1) / (lambda + 1), sum ln^2 lambda = 4 tr(artanh^2 Y) = 4 sum_n a_n tr(Y^2n) to
 * y^16, used when the spectral radius of Y is at most NEAR (bounded by ||Y||_F and by
 * tr(Y^4)^(1/4)): lambda within [0.25, 4], error below 1e-3 of the distance. Lanes beyond
 * take the eigenvalues by Jacobi rotations. W: room for 11 lane matrices. */
static void block(const double *Li, const double *L, const double *ld, const Py_ssize_t *i,
                  const Py_ssize_t *j, int n, int p, double *out, double *W, Far *far) {
    int pp = p * p;
    double *A = W, *C = W + pp * NB, *M = W + 2 * pp * NB, *S = W + 3 * pp * NB, *Lc = W + 4 * pp * NB,
           *X = W + 5 * pp * NB, *Y = W + 6 * pp * NB, *Y2 = W + 7 * pp * NB, *Y4 = W + 8 * pp * NB,
           *Y6 = W + 9 * pp * NB, *Y8 = W + 10 * pp * NB;
    double m[NB], sc[NB];
    for (int l = 0; l < NB; l++) {
        int k = l < n ? l : 0; /* a short block repeats its first pair */
        const double *a = Li + i[k] * pp, *c = L + j[k] * pp;
        for (int q = 0; q < pp; q++) {
            A[q * NB + l] = a[q];
            C[q * NB + l] = c[q];
        }
        m[l] = (ld[j[k]] - ld[i[k]]) / p;
        sc[l] = exp(-m[l]);
    }
    for (int r = 0; r < p; r++)
        for (int c = 0; c <= r; c++) {
            double s[NB] = {0};
            for (int q = c; q <= r; q++) {
                const double *x = E(A, r, q), *y = E(C, q, c);
                LANES s[l] += x[l] * y[l];
            }
            double *z = E(M, r, c);
            LANES z[l] = s[l];
        }
    for (int r = 0; r < p; r++)
        for (int c = 0; c <= r; c++) {
            double s[NB] = {0};
            for (int q = 0; q <= c; q++) {
                const double *x = E(M, r, q), *y = E(M, c, q);
                LANES s[l] += x[l] * y[l];
            }
            double *z = E(S, r, c), *zt = E(S, c, r);
            LANES z[l] = zt[l] = s[l] * sc[l];
        }
    /* Cholesky factor of S + I (well conditioned even when S is nearly singular) */
    int bad[NB] = {0};
    for (int c = 0; c < p; c++) {
        double d[NB];
        const double *sc_ = E(S, c, c);
        LANES d[l] = sc_[l] + 1.0;
        for (int q = 0; q < c; q++) {
            const double *x = E(Lc, c, q);
            LANES d[l] -= x[l] * x[l];
        }
        double inv[NB];
        double *lcc = E(Lc, c, c);
        LANES {
            bad[l] |= !(d[l] > 0);
            lcc[l] = sqrt(d[l] > 0 ? d[l] : 1.0);
            inv[l] = 1.0 / lcc[l];
        }
        for (int r = c + 1; r < p; r++) {
            double v[NB];
            const double *srl = E(S, r, c);
            LANES v[l] = srl[l];
            for (int q = 0; q < c; q++) {
                const double *x = E(Lc, r, q), *y = E(Lc, c, q);
                LANES v[l] -= x[l] * y[l];
            }
            double *z = E(Lc, r, c);
            LANES z[l] = v[l] * inv[l];
        }
    }
    /* X = Lc^-1, lower triangular */
    for (int c = 0; c < p; c++) {
        double *x = E(X, c, c);
        const double *y = E(Lc, c, c);
        LANES x[l] = 1.0 / y[l];
    }
    for (int c = 0; c < p; c++)
        for (int r = c + 1; r < p; r++) {
            double v[NB] = {0};
            for (int q = c; q < r; q++) {
                const double *x = E(Lc, r, q), *y = E(X, q, c);
                LANES v[l] += x[l] * y[l];
            }
            double *z = E(X, r, c);
            const double *d = E(X, r, r);
            LANES z[l] = -v[l] * d[l];
        }
    /* Y = I - 2 X'X */
    for (int a = 0; a < p; a++)
        for (int b = 0; b <= a; b++) {
            double w[NB] = {0};
            for (int q = a; q < p; q++) {
                const double *x = E(X, q, a), *y = E(X, q, b);
                LANES w[l] += x[l] * y[l];
            }
            double *z = E(Y, a, b), *zt = E(Y, b, a);
            double id = a == b ? 1.0 : 0.0;
            LANES z[l] = zt[l] = id - 2.0 * w[l];
        }
    double tr[9][NB];
    inner(Y, Y, p, tr[1]);
    sym_mul(Y, Y, Y2, p);
    inner(Y2, Y2, p, tr[2]);
    int near[NB], any = 0;
    LANES near[l] = !bad[l] && (tr[1][l] <= NEAR * NEAR || tr[2][l] <= NEAR * NEAR * NEAR * NEAR);
    for (int l = 0; l < n; l++)
        any |= near[l];
    if (any) {
        sym_mul(Y2, Y2, Y4, p);
        sym_mul(Y2, Y4, Y6, p);
        sym_mul(Y4, Y4, Y8, p);
        inner(Y2, Y4, p, tr[3]);
        inner(Y4, Y4, p, tr[4]);
        inner(Y4, Y6, p, tr[5]);
        inner(Y6, Y6, p, tr[6]);
        inner(Y6, Y8, p, tr[7]);
        inner(Y8, Y8, p, tr[8]);
    }
    for (int l = 0; l < n; l++) {
        double d2 = p * m[l] * m[l];
        if (near[l]) {
            double s = 0.0;
            for (int q = 8; q >= 1; q--)
                s += COEF[q] * tr[q][l];
            d2 += 4.0 * s;
            out[l] = sqrt(d2 > 0 ? d2 : 0.0);
        } else { /* far apart: the eigenvalues themselves */
            far_push(far, S, l, out + l, d2);
        }
    }
}

static int get(PyObject *o, Py_buffer *v, int writable) {
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (v->itemsize != 8 || !v->format || strcmp(v->format, "d") != 0) {
        PyBuffer_Release(v);
        PyErr_SetString(PyExc_TypeError, "float64 arrays expected");
        return -1;
    }
    return 0;
}

/* Inverse (lower triangular) and log-determinant of every Cholesky factor */
static void inverses(const double *L, Py_ssize_t n, int p, double *Li, double *ld) {
    int pp = p * p;
    for (Py_ssize_t m = 0; m < n; m++) {
        const double *A = L + m * pp;
        double *X = Li + m * pp;
        double s = 0.0;
        for (int q = 0; q < pp; q++)
            X[q] = 0.0;
        for (int c = 0; c < p; c++) {
            X[c * p + c] = 1.0 / A[c * p + c];
            s += log(A[c * p + c]);
        }
        for (int c = 0; c < p; c++)
            for (int r = c + 1; r < p; r++) {
                double v = 0.0;
                for (int q = c; q < r; q++)
                    v += A[r * p + q] * X[q * p + c];
                X[r * p + c] = -v * X[r * p + r];
            }
        ld[m] = 2.0 * s;
    }
}

static PyObject *distances(PyObject *self, PyObject *args) {
    PyObject *oL, *oOut;
    Py_ssize_t B, k, p;
    if (!PyArg_ParseTuple(args, "OOnnn", &oL, &oOut, &B, &k, &p))
        return NULL;
    if (p < 1 || p > MAXP || k < 0 || B < 0) {
        PyErr_SetString(PyExc_ValueError, "bad shape");
        return NULL;
    }
    Py_buffer vL, vOut;
    if (get(oL, &vL, 0) < 0)
        return NULL;
    if (get(oOut, &vOut, 1) < 0) {
        PyBuffer_Release(&vL);
        return NULL;
    }
    Py_ssize_t pairs = k * (k - 1) / 2;
    if (vL.len != B * k * p * p * 8 || vOut.len != B * pairs * 8) {
        PyBuffer_Release(&vL);
        PyBuffer_Release(&vOut);
        PyErr_SetString(PyExc_ValueError, "array sizes do not match the shape");
        return NULL;
    }
    const double *L = vL.buf;
    double *out = vOut.buf;
    int P = (int)p;
    double *W = PyMem_RawMalloc(((12 * NB) * p * p + B * k * (p * p + 1)) * sizeof(double));
    if (!W) {
        PyBuffer_Release(&vL);
        PyBuffer_Release(&vOut);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    double *Li = W + 12 * NB * p * p, *ld = Li + B * k * p * p;
    Far far = {W + 11 * NB * p * p, {0}, {0}, 0, P};
    inverses(L, B * k, P, Li, ld);
    Py_ssize_t bi[NB], bj[NB];
    int n = 0;
    double *dst = out;
    for (Py_ssize_t b = 0; b < B; b++)
        for (Py_ssize_t i = 0; i < k; i++)
            for (Py_ssize_t j = i + 1; j < k; j++) {
                bi[n] = b * k + i;
                bj[n] = b * k + j;
                if (++n == NB) {
                    block(Li, L, ld, bi, bj, n, P, dst, W, &far);
                    dst += n;
                    n = 0;
                }
            }
    if (n)
        block(Li, L, ld, bi, bj, n, P, dst, W, &far);
    far_run(&far);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(W);
    PyBuffer_Release(&vL);
    PyBuffer_Release(&vOut);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"distances", distances, METH_VARARGS,
     "distances(L, out, B, k, p): Förstner–Moonen distances of every pair of every set, from the Cholesky factors L (B, k, p, p) into out (B, k(k-1)/2)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fm", "Förstner–Moonen distances in C.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fm(void) {
    for (int n = 0; n < 9; n++)
        COEF[n] = n ? atanh2_coef(n) : 0.0;
    return PyModule_Create(&module);
}
