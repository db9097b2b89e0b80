/*
 * The CTF reader's per-event work in C, over libbabeltrace2's C API (see decoder.py).
 *
 * A Decoder is driven by our bt2 sink component: run() pulls message batches straight from the
 * sink's message iterator (bt_message_iterator_next) and, for each event whose event class has a
 * plan, appends its time, CPU (from its packet's cpu_id), plan index, tid/pid context and the
 * asked payload/context members to column buffers. It returns to Python only when the chunk is
 * full, the iterator ends/must be retried/fails, an event class has no plan yet (Python makes
 * one from the class description returned), or a stream begins / events or packets are
 * discarded (described as plain tuples). take() hands the buffers over as Block objects that
 * numpy wraps without a copy (np.frombuffer).
 *
 * What it decodes is exactly what sink.py's Python loop decodes (tests compare the columns of
 * both readers bit for bit on every shared trace).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <babeltrace2/babeltrace.h>
#include "growbuf.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define MISSING INT64_MIN
#define MAX_CPUS (1 << 16)

enum { G_SIGNED = 0, G_UNSIGNED = 1, G_STRING = 2, G_BOOL = 3, G_DOUBLE = 4, G_SINGLE = 5, G_NESTED = 6 };
enum { K_INT = 0, K_STR = 1, K_FLOAT = 2 };
enum {
    R_FULL = 0, R_END = 1, R_AGAIN = 2, R_ERROR = 3, R_PLAN = 4, R_STREAM = 5, R_DISCARDED = 6,
    R_BAD_CPU = 7, R_PAUSE = 8
};

/* ---- Block: memory handed to numpy ------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len;
} Block;

static void block_dealloc(Block *self) {
    PyMem_RawFree(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int block_getbuffer(Block *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : "", self->len, 0, flags);
}

static Py_ssize_t block_length(Block *self) { return self->len; }

static PyBufferProcs block_as_buffer = {(getbufferproc)block_getbuffer, NULL};
static PySequenceMethods block_as_sequence = {(lenfunc)block_length};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "perftriage.analysis.ctf._decode.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = (destructor)block_dealloc,
    .tp_as_buffer = &block_as_buffer,
    .tp_as_sequence = &block_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Bytes decoded by the C reader, wrapped by numpy without a copy.",
};

/* ---- growable buffers (growbuf.h) --------------------------------------------------------- */

#define BUF_PUSH(b, type, v)                                      \
    do {                                                          \
        if (buf_reserve((b), sizeof(type)) < 0)                   \
            return -1;                                            \
        *(type *)((b)->data + (b)->len) = (type)(v);              \
        (b)->len += sizeof(type);                                 \
    } while (0)

/* The buffer as a Block (taking its memory), the buffer left empty. */
static PyObject *buf_take(Buf *b) {
    Block *blk = PyObject_New(Block, &BlockType);
    if (!blk)
        return NULL;
    blk->data = b->data;
    blk->len = (Py_ssize_t)b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return (PyObject *)blk;
}

/* ---- plans ------------------------------------------------------------------------------- */

typedef struct {
    int ncomp;       /* path components */
    char **names;    /* each component's name */
    int column;
} Path;

typedef struct {
    int column;      /* first column (nested: the first path's column) */
    uint64_t index;  /* member index in the payload or context structure */
    int getter;      /* G_* */
    int in_ctx;
    int npaths;      /* G_NESTED: the dotted fields under this member */
    Path *paths;
} Member;

typedef struct {
    int index;       /* Python plan index, -1: events of this class are skipped */
    int has_packet;
    int has_ctx;
    int64_t tid_index, pid_index;  /* context member indices, -1 when absent */
    int tid_getter, pid_getter;
    int nmembers;
    Member *members;
    int has_strings;
} Plan;

typedef struct {
    uintptr_t key;
    void *value;
} Slot;

/* Open-addressing map from a pointer to a pointer or an integer (cpu). */
typedef struct {
    Slot *slots;
    size_t cap, used;
} Map;

static size_t ptr_hash(uintptr_t k) { return (size_t)((k >> 4) * 0x9E3779B97F4A7C15ull); }

static Slot *map_find(Map *m, uintptr_t key) {
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1, i = ptr_hash(key) & mask;
    for (;;) {
        Slot *s = &m->slots[i];
        if (s->key == key)
            return s;
        if (s->key == 0)
            return NULL;
        i = (i + 1) & mask;
    }
}

static int map_put(Map *m, uintptr_t key, void *value) {
    if ((m->used + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        Slot *slots = PyMem_RawCalloc(cap, sizeof(Slot));
        if (!slots)
            return -1;
        Slot *old = m->slots;
        size_t oldcap = m->cap;
        m->slots = slots;
        m->cap = cap;
        m->used = 0;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].key)
                map_put(m, old[i].key, old[i].value);
        PyMem_RawFree(old);
    }
    size_t mask = m->cap - 1, i = ptr_hash(key) & mask;
    for (;;) {
        Slot *s = &m->slots[i];
        if (s->key == key) {
            s->value = value;
            return 0;
        }
        if (s->key == 0) {
            s->key = key;
            s->value = value;
            m->used++;
            return 0;
        }
        i = (i + 1) & mask;
    }
}

/* ---- the decoder ------------------------------------------------------------------------- */

typedef struct {
    int kind;
    Buf rows, vals;
} Column;

/* Strings already interned: bytes -> code, so that a comm name seen a million times is turned
 * into a Python str and looked up in the pool once. */
typedef struct {
    uint64_t hash;
    char *s;
    size_t len;
    int64_t code;
} StrSlot;

typedef struct {
    StrSlot *slots;
    size_t cap, used;
} StrMap;

static uint64_t str_hash(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h | 1;  /* 0 marks an empty slot */
}

static StrSlot *strmap_find(StrMap *m, uint64_t h, const char *s, size_t len) {
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1, i = h & mask;
    for (;;) {
        StrSlot *e = &m->slots[i];
        if (e->hash == 0)
            return NULL;
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
            return e;
        i = (i + 1) & mask;
    }
}

static int strmap_add(StrMap *m, uint64_t h, const char *s, size_t len, int64_t code) {
    if ((m->used + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        StrSlot *slots = PyMem_RawCalloc(cap, sizeof(StrSlot));
        if (!slots)
            return -1;
        for (size_t i = 0; i < m->cap; i++) {
            StrSlot *e = &m->slots[i];
            if (!e->hash)
                continue;
            size_t j = e->hash & (cap - 1);
            while (slots[j].hash)
                j = (j + 1) & (cap - 1);
            slots[j] = *e;
        }
        PyMem_RawFree(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    char *copy = PyMem_RawMalloc(len ? len : 1);
    if (!copy)
        return -1;
    memcpy(copy, s, len);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].hash)
        j = (j + 1) & (m->cap - 1);
    m->slots[j] = (StrSlot){h, copy, len, code};
    m->used++;
    return 0;
}

typedef struct {
    PyObject_HEAD
    PyObject *intern;          /* str -> int (the reader's StringPool.code) */
    StrMap strings;            /* bytes already interned -> code */
    Map plans;                 /* event class -> Plan* */
    Map packet_cpu;            /* packet -> cpu + 1 (0: unknown) */
    Column *columns;
    int ncolumns;
    Buf ts, cpu, plan, ctx_rows, ctx_tid, ctx_pid;
    Buf packet_log;            /* (trace class address, cpu) per packet with a CPU */
    int64_t n;
    int64_t last_ts;
    int has_last_ts;
    const bt_message *const *batch;  /* pending batch from bt_message_iterator_next */
    uint64_t batch_count, batch_pos;
} Decoder;

static void free_plan(Plan *p) {
    if (!p)
        return;
    for (int i = 0; i < p->nmembers; i++) {
        Member *m = &p->members[i];
        for (int j = 0; j < m->npaths; j++) {
            for (int k = 0; k < m->paths[j].ncomp; k++)
                PyMem_RawFree(m->paths[j].names[k]);
            PyMem_RawFree(m->paths[j].names);
        }
        PyMem_RawFree(m->paths);
    }
    PyMem_RawFree(p->members);
    PyMem_RawFree(p);
}

static void release_batch(Decoder *self) {
    /* messages not consumed yet (the decoder is dropped part-way) */
    for (uint64_t i = self->batch_pos; i < self->batch_count; i++)
        bt_message_put_ref(self->batch[i]);
    self->batch = NULL;
    self->batch_count = self->batch_pos = 0;
}

static void decoder_dealloc(Decoder *self) {
    release_batch(self);
    for (size_t i = 0; i < self->plans.cap; i++)
        if (self->plans.slots[i].key)
            free_plan(self->plans.slots[i].value);
    PyMem_RawFree(self->plans.slots);
    PyMem_RawFree(self->packet_cpu.slots);
    for (size_t i = 0; i < self->strings.cap; i++)
        PyMem_RawFree(self->strings.slots[i].s);
    PyMem_RawFree(self->strings.slots);
    for (int i = 0; i < self->ncolumns; i++) {
        PyMem_RawFree(self->columns[i].rows.data);
        PyMem_RawFree(self->columns[i].vals.data);
    }
    PyMem_RawFree(self->columns);
    Buf *bufs[] = {&self->ts, &self->cpu, &self->plan, &self->ctx_rows, &self->ctx_tid, &self->ctx_pid, &self->packet_log};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        PyMem_RawFree(bufs[i]->data);
    Py_XDECREF(self->intern);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int decoder_init(Decoder *self, PyObject *args, PyObject *kw) {
    PyObject *intern;
    if (!PyArg_ParseTuple(args, "O", &intern))
        return -1;
    Py_INCREF(intern);
    Py_XSETREF(self->intern, intern);
    return 0;
}

/* add_column(kind) -> index */
static PyObject *decoder_add_column(Decoder *self, PyObject *args) {
    int kind;
    if (!PyArg_ParseTuple(args, "i", &kind))
        return NULL;
    Column *c = PyMem_RawRealloc(self->columns, sizeof(Column) * (self->ncolumns + 1));
    if (!c)
        return PyErr_NoMemory();
    self->columns = c;
    memset(&c[self->ncolumns], 0, sizeof(Column));
    c[self->ncolumns].kind = kind;
    return PyLong_FromLong(self->ncolumns++);
}

static char *dup_utf8(PyObject *s) {
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(s, &len);
    if (!u)
        return NULL;
    char *out = PyMem_RawMalloc(len + 1);
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, u, len + 1);
    return out;
}

/* set_plan(class address, plan index or -1, has_packet, (tid index, getter) or None,
 *          (pid index, getter) or None, [(column, member index, getter, in_ctx, paths)])
 * where paths (G_NESTED only) is [(column, (name, ...)), ...] */
static PyObject *decoder_set_plan(Decoder *self, PyObject *args) {
    unsigned long long cls;
    int index, has_packet;
    PyObject *tid, *pid, *members;
    if (!PyArg_ParseTuple(args, "KiiOOO!", &cls, &index, &has_packet, &tid, &pid, &PyList_Type, &members))
        return NULL;
    Plan *p = PyMem_RawCalloc(1, sizeof(Plan));
    if (!p)
        return PyErr_NoMemory();
    p->index = index;
    p->has_packet = has_packet;
    p->tid_index = p->pid_index = -1;
    if (tid != Py_None && !PyArg_ParseTuple(tid, "Li", &p->tid_index, &p->tid_getter))
        goto fail;
    if (pid != Py_None && !PyArg_ParseTuple(pid, "Li", &p->pid_index, &p->pid_getter))
        goto fail;
    p->has_ctx = tid != Py_None || pid != Py_None;
    p->nmembers = (int)PyList_GET_SIZE(members);
    p->members = PyMem_RawCalloc(p->nmembers ? p->nmembers : 1, sizeof(Member));
    if (!p->members) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int i = 0; i < p->nmembers; i++) {
        Member *m = &p->members[i];
        PyObject *paths;
        unsigned long long idx;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(members, i), "iKiiO", &m->column, &idx, &m->getter, &m->in_ctx, &paths))
            goto fail;
        m->index = idx;
        if (m->getter == G_STRING)
            p->has_strings = 1;
        if (m->column < 0 || m->column >= self->ncolumns) {
            PyErr_SetString(PyExc_ValueError, "unknown column");
            goto fail;
        }
        if (m->getter != G_NESTED)
            continue;
        if (!PyList_Check(paths)) {
            PyErr_SetString(PyExc_TypeError, "nested member without a list of paths");
            goto fail;
        }
        m->npaths = (int)PyList_GET_SIZE(paths);
        m->paths = PyMem_RawCalloc(m->npaths ? m->npaths : 1, sizeof(Path));
        if (!m->paths) {
            PyErr_NoMemory();
            goto fail;
        }
        for (int j = 0; j < m->npaths; j++) {
            PyObject *names;
            Path *path = &m->paths[j];
            if (!PyArg_ParseTuple(PyList_GET_ITEM(paths, j), "iO!", &path->column, &PyTuple_Type, &names))
                goto fail;
            if (path->column < 0 || path->column >= self->ncolumns) {
                PyErr_SetString(PyExc_ValueError, "unknown column");
                goto fail;
            }
            path->names = PyMem_RawCalloc(PyTuple_GET_SIZE(names) + 1, sizeof(char *));
            if (!path->names) {
                PyErr_NoMemory();
                goto fail;
            }
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++) {
                path->names[k] = dup_utf8(PyTuple_GET_ITEM(names, k));
                if (!path->names[k])
                    goto fail;
                path->ncomp++;
            }
        }
    }
    Slot *old = map_find(&self->plans, (uintptr_t)cls);
    if (old) {
        free_plan(old->value);
        old->value = p;
    } else if (map_put(&self->plans, (uintptr_t)cls, p) < 0) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_RETURN_NONE;
fail:
    free_plan(p);
    return NULL;
}

/* ---- field values ------------------------------------------------------------------------ */

static const bt_field *through_variants(const bt_field *f, bt_field_class_type *t) {
    *t = bt_field_get_class_type(f);
    while (*t & BT_FIELD_CLASS_TYPE_VARIANT) {
        f = bt_field_variant_borrow_selected_option_field_const(f);
        *t = bt_field_get_class_type(f);
    }
    return f;
}

static int is_type(bt_field_class_type t, bt_field_class_type want) { return (t & want) == want; }

/* An integer leaf, or an array of unsigned integers folded into one integer (elements
 * big-endian; wider than 63 bits: XOR of its 63-bit pieces), else MISSING (sink.py: scalar). */
static int64_t scalar(const bt_field *f) {
    bt_field_class_type t;
    f = through_variants(f, &t);
    if (is_type(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
        return bt_field_integer_signed_get_value(f);
    if (is_type(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
        return (int64_t)bt_field_integer_unsigned_get_value(f);
    if (!(t & BT_FIELD_CLASS_TYPE_ARRAY))
        return MISSING;
    uint64_t n = bt_field_array_get_length(f);
    if (n == 0)
        return MISSING;
    const bt_field *e0 = bt_field_array_borrow_element_field_by_index_const(f, 0);
    if (!is_type(bt_field_get_class_type(e0), BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
        return MISSING;
    uint64_t w = bt_field_class_integer_get_field_value_range(bt_field_borrow_class_const(e0));
    if (w * n <= 63) {
        uint64_t v = 0;
        for (uint64_t i = 0; i < n; i++)
            v = (v << w) | bt_field_integer_unsigned_get_value(bt_field_array_borrow_element_field_by_index_const(f, i));
        return (int64_t)v;
    }
    /* bit j (from the least significant end) of the whole value lands on bit j % 63 */
    uint64_t folded = 0, j = 0;
    for (uint64_t i = n; i-- > 0;) {
        uint64_t e = bt_field_integer_unsigned_get_value(bt_field_array_borrow_element_field_by_index_const(f, i));
        for (uint64_t b = 0; b < w; b++, j++)
            if (b < 64 && (e >> b) & 1)
                folded ^= 1ull << (j % 63);
    }
    return (int64_t)folded;
}

static int64_t int_value(const bt_field *f, int getter) {
    switch (getter) {
    case G_SIGNED:
        return bt_field_integer_signed_get_value(f);
    case G_UNSIGNED:
        return (int64_t)bt_field_integer_unsigned_get_value(f);
    case G_BOOL:
        return bt_field_bool_get_value(f) ? 1 : 0;
    default:
        return MISSING;
    }
}

/* A structure's member by name, or by "_" + name (CTF escapes names that clash with keywords). */
static const bt_field *member_named(const bt_field *s, const char *name) {
    const bt_field *g = bt_field_structure_borrow_member_field_by_name_const(s, name);
    if (g)
        return g;
    char buf[256];
    size_t len = strlen(name);
    if (len + 2 > sizeof buf)
        return NULL;
    buf[0] = '_';
    memcpy(buf + 1, name, len + 1);
    return bt_field_structure_borrow_member_field_by_name_const(s, buf);
}

static int push_row_value(Column *c, int64_t row, int64_t v) {
    BUF_PUSH(&c->rows, int64_t, row);
    BUF_PUSH(&c->vals, int64_t, v);
    return 0;
}

/* The dotted fields under one member: the first path's value is returned (always appended by
 * the caller), the others appended only where present. */
static int nested(Decoder *self, const Member *m, const bt_field *top, int64_t row, int64_t *first) {
    bt_field_class_type t;
    *first = MISSING;
    const bt_field *g = through_variants(top, &t);
    if ((t & BT_FIELD_CLASS_TYPE_STRUCTURE) && bt_field_class_structure_get_member_count(bt_field_borrow_class_const(g)) == 0)
        return 0;  /* a header of unknown type: nothing under it */
    for (int j = 0; j < m->npaths; j++) {
        const Path *p = &m->paths[j];
        const bt_field *f = g;
        int64_t v = MISSING;
        int k;
        for (k = 0; k < p->ncomp; k++) {
            f = through_variants(f, &t);
            if (!(t & BT_FIELD_CLASS_TYPE_STRUCTURE))
                break;
            f = member_named(f, p->names[k]);
            if (!f)
                break;
        }
        if (k == p->ncomp)
            v = scalar(f);
        if (j == 0)
            *first = v;
        else if (v != MISSING && push_row_value(&self->columns[p->column], row, v) < 0)
            return -1;
    }
    return 0;
}

/* ---- messages ---------------------------------------------------------------------------- */

/* A name or a string from a trace's metadata as text (None for none): bytes that are no UTF-8
 * (damaged metadata) replaced, where decoding them strictly raised UnicodeDecodeError out of run(). */
static PyObject *text_of(const char *s) {
    if (!s)
        return Py_NewRef(Py_None);
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

static PyObject *env_dict(const bt_trace *trace) {
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    uint64_t n = bt_trace_get_environment_entry_count(trace);
    for (uint64_t i = 0; i < n; i++) {
        const char *name;
        const bt_value *v;
        bt_trace_borrow_environment_entry_by_index_const(trace, i, &name, &v);
        PyObject *pv;
        bt_value_type vt = bt_value_get_type(v);
        if (vt == BT_VALUE_TYPE_SIGNED_INTEGER)
            pv = PyLong_FromLongLong(bt_value_integer_signed_get(v));
        else if (vt == BT_VALUE_TYPE_UNSIGNED_INTEGER)
            pv = PyLong_FromUnsignedLongLong(bt_value_integer_unsigned_get(v));
        else if (vt == BT_VALUE_TYPE_STRING)
            pv = text_of(bt_value_string_get(v));
        else if (vt == BT_VALUE_TYPE_REAL)
            pv = PyFloat_FromDouble(bt_value_real_get(v));
        else
            pv = PyUnicode_FromString("?");
        PyObject *key = pv ? text_of(name) : NULL;
        if (!key || PyDict_SetItem(d, key, pv) < 0) {
            Py_XDECREF(key);
            Py_XDECREF(pv);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(key);
        Py_DECREF(pv);
    }
    return d;
}

static uintptr_t trace_class_of_stream(const bt_stream *s) {
    return (uintptr_t)bt_stream_class_borrow_trace_class_const(bt_stream_borrow_class_const(s));
}

/* Member descriptions of a structure class: [(name, kind)], kind as in decoder.py (FIELD_*). */
static PyObject *members_of(const bt_field_class *fc) {
    if (!fc)
        return Py_NewRef(Py_None);
    uint64_t n = bt_field_class_structure_get_member_count(fc);
    PyObject *out = PyList_New((Py_ssize_t)n);
    if (!out)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        const bt_field_class_structure_member *mem = bt_field_class_structure_borrow_member_by_index_const(fc, i);
        const bt_field_class *mc = bt_field_class_structure_member_borrow_field_class_const(mem);
        bt_field_class_type t = bt_field_class_get_type(mc);
        const char *kind = "other";
        if (is_type(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
            kind = "signed";
        else if (is_type(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
            kind = bt_field_class_integer_get_field_value_range(mc) >= 64 ? "unsigned64" : "unsigned";
        else if (is_type(t, BT_FIELD_CLASS_TYPE_STRING))
            kind = "string";
        else if (is_type(t, BT_FIELD_CLASS_TYPE_BOOL))
            kind = "bool";
        else if (is_type(t, BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL))
            kind = "double";
        else if (is_type(t, BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL))
            kind = "single";
        PyObject *item = Py_BuildValue("(Ns)", text_of(bt_field_class_structure_member_get_name(mem)), kind);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, item);
    }
    return out;
}

/* (R_PLAN, class address, name, trace class address, supports packets, context members,
 *  payload members) */
static PyObject *describe_class(const bt_event_class *ec) {
    const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);
    PyObject *ctx = members_of(bt_stream_class_borrow_event_common_context_field_class_const(sc));
    PyObject *payload = members_of(bt_event_class_borrow_payload_field_class_const(ec));
    PyObject *out = NULL;
    if (ctx && payload) {
        const char *name = bt_event_class_get_name(ec);
        out = Py_BuildValue("(iKNKiOO)", R_PLAN, (unsigned long long)(uintptr_t)ec, text_of(name),
                            (unsigned long long)(uintptr_t)bt_stream_class_borrow_trace_class_const(sc),
                            (int)bt_stream_class_supports_packets(sc), ctx, payload);
    }
    Py_XDECREF(ctx);
    Py_XDECREF(payload);
    return out;
}

static int push_packet(Decoder *self, uintptr_t tc, int64_t cpu) {
    BUF_PUSH(&self->packet_log, int64_t, (int64_t)tc);
    BUF_PUSH(&self->packet_log, int64_t, cpu);
    return 0;
}

/* A packet beginning: its cpu_id remembered for its events. Returns 1 when the cpu_id is not a
 * CPU number (*bad, *bad_unsigned: the value, for Python to note the damage), 0 otherwise, -1 when
 * out of memory. Runs without the GIL. */
static int packet_begins(Decoder *self, const bt_message *msg, uint64_t *bad, int *bad_unsigned) {
    const bt_packet *pkt = bt_message_packet_beginning_borrow_packet_const(msg);
    const bt_field *ctx = bt_packet_borrow_context_field_const(pkt);
    int64_t cpu = -1;
    int has = 0, out_of_range = 0;
    if (ctx) {
        const bt_field *f = bt_field_structure_borrow_member_field_by_name_const(ctx, "cpu_id");
        if (f) {
            bt_field_class_type t = bt_field_get_class_type(f);
            if (is_type(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
                cpu = bt_field_integer_signed_get_value(f);
                has = 1;
            } else if (is_type(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
                uint64_t u = bt_field_integer_unsigned_get_value(f);
                if (u >= MAX_CPUS) {
                    out_of_range = 1;
                    *bad = u;
                    *bad_unsigned = 1;
                } else {
                    cpu = (int64_t)u;
                }
                has = 1;
            }
        }
    }
    if (has && !out_of_range && !(cpu >= 0 && cpu < MAX_CPUS) && cpu != -1) {
        out_of_range = 1;
        *bad = (uint64_t)cpu;
        *bad_unsigned = 0;
    }
    if (out_of_range)
        cpu = -1;
    if (map_put(&self->packet_cpu, (uintptr_t)pkt, (void *)(intptr_t)(cpu + 1)) < 0
        || (cpu >= 0 && push_packet(self, trace_class_of_stream(bt_packet_borrow_stream_const(pkt)), cpu) < 0))
        return -1;
    return out_of_range;
}

/* The pool code of a string already interned (strlen, not bt_field_string_get_length: the latter
 * was 0 for a string of a real trace): 1 found, 0 not yet interned. Runs without the GIL. */
static int cached_string(Decoder *self, const char *sv, int64_t *code) {
    size_t len = strlen(sv);
    StrSlot *e = strmap_find(&self->strings, str_hash(sv, len), sv, len);
    if (!e)
        return 0;
    *code = e->code;
    return 1;
}

/* Interns a string through the reader's pool and caches its code (with the GIL): -1 on error. */
static int intern_string(Decoder *self, const char *sv) {
    size_t len = strlen(sv);
    PyObject *str = PyUnicode_DecodeUTF8(sv, (Py_ssize_t)len, "surrogateescape");
    if (!str)
        return -1;
    PyObject *res = PyObject_CallOneArg(self->intern, str);
    Py_DECREF(str);
    if (!res)
        return -1;
    long long v = PyLong_AsLongLong(res);
    Py_DECREF(res);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (strmap_add(&self->strings, str_hash(sv, len), sv, len, v) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

#define MAX_STRINGS_PER_EVENT 64

/* One event message with its plan, without the GIL: 0 done, 1 a string must be interned first
 * (*miss: nothing was written), -1 out of memory. */
static int decode_event(Decoder *self, const bt_message *msg, const bt_event *ev, const Plan *p, const char **miss) {
    int64_t row = self->n;
    int64_t codes[MAX_STRINGS_PER_EVENT];
    int nstr = 0;
    if (p->has_strings) {
        const bt_field *pl = bt_event_borrow_payload_field_const(ev), *cx = bt_event_borrow_common_context_field_const(ev);
        for (int i = 0; i < p->nmembers; i++) {
            const Member *m = &p->members[i];
            if (m->getter != G_STRING)
                continue;
            const char *sv = bt_field_string_get_value(bt_field_structure_borrow_member_field_by_index_const(m->in_ctx ? cx : pl, m->index));
            if (nstr < MAX_STRINGS_PER_EVENT && !cached_string(self, sv, &codes[nstr])) {
                *miss = sv;
                return 1;
            }
            nstr++;
        }
    }
    int istr = 0;
    int64_t ns = 0;
    bt_clock_snapshot_get_ns_from_origin(bt_message_event_borrow_default_clock_snapshot_const(msg), &ns);
    BUF_PUSH(&self->ts, int64_t, ns);
    self->last_ts = ns;
    self->has_last_ts = 1;
    int32_t cpu = -1;
    if (p->has_packet) {
        Slot *s = map_find(&self->packet_cpu, (uintptr_t)bt_event_borrow_packet_const(ev));
        if (s)
            cpu = (int32_t)((intptr_t)s->value - 1);
    }
    BUF_PUSH(&self->cpu, int32_t, cpu);
    BUF_PUSH(&self->plan, int32_t, p->index);
    const bt_field *ctx = NULL, *payload = NULL;
    if (p->has_ctx) {
        ctx = bt_event_borrow_common_context_field_const(ev);
        BUF_PUSH(&self->ctx_rows, int64_t, row);
        BUF_PUSH(&self->ctx_tid, int64_t, p->tid_index >= 0 ? int_value(bt_field_structure_borrow_member_field_by_index_const(ctx, p->tid_index), p->tid_getter) : -1);
        BUF_PUSH(&self->ctx_pid, int64_t, p->pid_index >= 0 ? int_value(bt_field_structure_borrow_member_field_by_index_const(ctx, p->pid_index), p->pid_getter) : -1);
    }
    for (int i = 0; i < p->nmembers; i++) {
        const Member *m = &p->members[i];
        const bt_field *s;
        if (m->in_ctx) {
            if (!ctx)
                ctx = bt_event_borrow_common_context_field_const(ev);
            s = ctx;
        } else {
            if (!payload)
                payload = bt_event_borrow_payload_field_const(ev);
            s = payload;
        }
        const bt_field *f = bt_field_structure_borrow_member_field_by_index_const(s, m->index);
        Column *c = &self->columns[m->column];
        BUF_PUSH(&c->rows, int64_t, row);
        switch (m->getter) {
        case G_DOUBLE:
            BUF_PUSH(&c->vals, double, bt_field_real_double_precision_get_value(f));
            break;
        case G_SINGLE:
            BUF_PUSH(&c->vals, double, (double)bt_field_real_single_precision_get_value(f));
            break;
        case G_STRING: {
            int64_t v = -1;
            if (istr < MAX_STRINGS_PER_EVENT)
                v = codes[istr];
            else if (!cached_string(self, bt_field_string_get_value(f), &v)) {
                *miss = bt_field_string_get_value(f);
                return 1;  /* beyond 64 strings in one event: cannot happen with LTTng's events */
            }
            istr++;
            BUF_PUSH(&c->vals, int64_t, v);
            break;
        }
        case G_NESTED: {
            int64_t first;
            if (nested(self, m, f, row, &first) < 0)
                return -1;
            BUF_PUSH(&c->vals, int64_t, first);
            break;
        }
        default:
            BUF_PUSH(&c->vals, int64_t, int_value(f, m->getter));
        }
    }
    self->n++;
    return 0;
}

/* A fork waits until no decoding loop runs: the loop runs without the GIL inside libbabeltrace2
 * and glib, whose locks a child forked meanwhile would inherit held (the range query forks a
 * child; one forked while the reading thread was inside g_slice_alloc hung in it). Every other
 * babeltrace2 call of the process holds the GIL, which the forking thread holds. */
static pthread_rwlock_t fork_lock = PTHREAD_RWLOCK_INITIALIZER;

static void fork_prepare(void) { pthread_rwlock_wrlock(&fork_lock); }

static void fork_after(void) { pthread_rwlock_unlock(&fork_lock); }

/* In the child, the lock the parent's thread took is made new: glibc's unlock by the child's
 * thread (another thread id) leaves it taken, and the child's own decoding loop then waits
 * forever (the child of isolated.py decodes). */
static void fork_child(void) {
    pthread_rwlock_t fresh = PTHREAD_RWLOCK_INITIALIZER;
    memcpy(&fork_lock, &fresh, sizeof fresh);
}

/* Why the loop without the GIL stopped, and what Python must do about it. */
typedef struct {
    int why;                 /* R_* or W_INTERN / W_NOMEM */
    int status;              /* R_ERROR: the iterator's status */
    const bt_message *msg;   /* R_STREAM, R_DISCARDED: the message (its reference is ours) */
    const bt_event_class *ec;  /* R_PLAN */
    const char *str;         /* W_INTERN: the string (valid while its message is pending) */
    uintptr_t tc;            /* R_BAD_CPU */
    uint64_t bad;
    int bad_unsigned;
} Stop;

enum { W_INTERN = 100, W_NOMEM = 101 };

/* The decoding loop, run without the GIL (no Python object is touched). */
static void run_nogil(Decoder *self, bt_message_iterator *iter, int64_t limit, int64_t until, Stop *out) {
    for (;;) {
        if (self->batch_pos >= self->batch_count) {
            if (self->n >= limit) {
                out->why = R_FULL;
                return;
            }
            if (self->n >= until) {
                out->why = R_PAUSE;
                return;
            }
            bt_message_array_const msgs;
            uint64_t count = 0;
            bt_message_iterator_next_status st = bt_message_iterator_next(iter, &msgs, &count);
            if (st == BT_MESSAGE_ITERATOR_NEXT_STATUS_END) {
                out->why = R_END;
                return;
            }
            if (st == BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN) {
                out->why = R_AGAIN;
                return;
            }
            if (st != BT_MESSAGE_ITERATOR_NEXT_STATUS_OK) {
                out->why = R_ERROR;
                out->status = (int)st;
                return;
            }
            self->batch = msgs;
            self->batch_count = count;
            self->batch_pos = 0;
        }
        while (self->batch_pos < self->batch_count) {
            const bt_message *msg = self->batch[self->batch_pos];
            bt_message_type mt = bt_message_get_type(msg);
            if (mt == BT_MESSAGE_TYPE_EVENT) {
                const bt_event *ev = bt_message_event_borrow_event_const(msg);
                const bt_event_class *ec = bt_event_borrow_class_const(ev);
                Slot *s = map_find(&self->plans, (uintptr_t)ec);
                if (!s) {  /* the message stays pending until Python sets the plan */
                    out->why = R_PLAN;
                    out->ec = ec;
                    return;
                }
                const Plan *p = s->value;
                if (p->index >= 0) {
                    int r = decode_event(self, msg, ev, p, &out->str);
                    if (r) {  /* pending: decoded again once the string is interned */
                        out->why = r < 0 ? W_NOMEM : W_INTERN;
                        return;
                    }
                }
            } else if (mt == BT_MESSAGE_TYPE_PACKET_BEGINNING) {
                int r = packet_begins(self, msg, &out->bad, &out->bad_unsigned);
                if (r < 0) {
                    out->why = W_NOMEM;
                    return;
                }
                if (r) {
                    self->batch_pos++;
                    out->why = R_BAD_CPU;
                    out->tc = trace_class_of_stream(bt_packet_borrow_stream_const(bt_message_packet_beginning_borrow_packet_const(msg)));
                    bt_message_put_ref(msg);
                    return;
                }
            } else if (mt == BT_MESSAGE_TYPE_STREAM_BEGINNING || mt == BT_MESSAGE_TYPE_DISCARDED_EVENTS
                       || mt == BT_MESSAGE_TYPE_DISCARDED_PACKETS) {
                self->batch_pos++;
                out->why = mt == BT_MESSAGE_TYPE_STREAM_BEGINNING ? R_STREAM : R_DISCARDED;
                out->msg = msg;
                return;
            }
            self->batch_pos++;
            bt_message_put_ref(msg);
        }
    }
}

/* run(iterator address, limit, pause): decode until the chunk holds `limit` events, `pause`
 * events were decoded by this call (the reader reports progress), or Python is needed. The
 * decoding runs without the GIL (the reader's other thread analyses the previous chunk).
 * Returns (R_FULL,), (R_PAUSE,), (R_END,), (R_AGAIN,), (R_ERROR, status), a class description
 * (R_PLAN...), (R_STREAM, trace class, stream name, environment), (R_DISCARDED, trace class,
 * "events" or "packets", count or None), (R_BAD_CPU, trace class, cpu_id). */
static PyObject *decoder_run(Decoder *self, PyObject *args) {
    unsigned long long iter_addr;
    long long limit, pause;
    if (!PyArg_ParseTuple(args, "KLL", &iter_addr, &limit, &pause))
        return NULL;
    bt_message_iterator *iter = (bt_message_iterator *)(uintptr_t)iter_addr;
    int64_t until = self->n + pause;
    for (;;) {
        Stop out;
        memset(&out, 0, sizeof out);
        Py_BEGIN_ALLOW_THREADS
        pthread_rwlock_rdlock(&fork_lock);
        run_nogil(self, iter, limit, until, &out);
        pthread_rwlock_unlock(&fork_lock);
        Py_END_ALLOW_THREADS
        switch (out.why) {
        case W_INTERN:
            if (intern_string(self, out.str) < 0)
                return NULL;
            continue;
        case W_NOMEM:
            return PyErr_NoMemory();
        case R_FULL:
        case R_PAUSE:
        case R_END:
        case R_AGAIN:
            return Py_BuildValue("(i)", out.why);
        case R_ERROR:
            return Py_BuildValue("(ii)", R_ERROR, out.status);
        case R_PLAN:
            return describe_class(out.ec);
        case R_BAD_CPU:
            return out.bad_unsigned ? Py_BuildValue("(iKK)", R_BAD_CPU, (unsigned long long)out.tc, (unsigned long long)out.bad)
                                    : Py_BuildValue("(iKL)", R_BAD_CPU, (unsigned long long)out.tc, (long long)(int64_t)out.bad);
        case R_STREAM: {
            const bt_stream *stream = bt_message_stream_beginning_borrow_stream_const(out.msg);
            PyObject *env = env_dict(bt_stream_borrow_trace_const(stream));
            PyObject *res = env ? Py_BuildValue("(iKNN)", R_STREAM, (unsigned long long)trace_class_of_stream(stream),
                                                text_of(bt_stream_get_name(stream)), env) : NULL;
            bt_message_put_ref(out.msg);
            return res;
        }
        case R_DISCARDED: {
            int events = bt_message_get_type(out.msg) == BT_MESSAGE_TYPE_DISCARDED_EVENTS;
            const bt_stream *stream = events ? bt_message_discarded_events_borrow_stream_const(out.msg)
                                             : bt_message_discarded_packets_borrow_stream_const(out.msg);
            uint64_t count = 0;
            bt_property_availability av = events ? bt_message_discarded_events_get_count(out.msg, &count)
                                                 : bt_message_discarded_packets_get_count(out.msg, &count);
            PyObject *cnt = av == BT_PROPERTY_AVAILABILITY_AVAILABLE ? PyLong_FromUnsignedLongLong(count) : Py_NewRef(Py_None);
            PyObject *res = cnt ? Py_BuildValue("(iKsN)", R_DISCARDED, (unsigned long long)trace_class_of_stream(stream),
                                                events ? "events" : "packets", cnt) : NULL;
            bt_message_put_ref(out.msg);
            return res;
        }
        default:
            PyErr_Format(PyExc_SystemError, "decoder: unexpected stop %d", out.why);
            return NULL;
        }
    }
}

static PyObject *take_columns(Decoder *self) {
    PyObject *cols = PyList_New(self->ncolumns);
    if (!cols)
        return NULL;
    for (int i = 0; i < self->ncolumns; i++) {
        PyObject *pair = Py_BuildValue("(NN)", buf_take(&self->columns[i].rows), buf_take(&self->columns[i].vals));
        if (!pair) {
            Py_DECREF(cols);
            return NULL;
        }
        PyList_SET_ITEM(cols, i, pair);
    }
    return cols;
}

/* take() -> (n, ts, cpu, plan, ctx_rows, ctx_tid, ctx_pid, [(rows, vals) per column], packet log) */
static PyObject *decoder_take(Decoder *self, PyObject *noargs) {
    PyObject *cols = take_columns(self);
    if (!cols)
        return NULL;
    PyObject *out = Py_BuildValue("(LNNNNNNNN)", (long long)self->n, buf_take(&self->ts), buf_take(&self->cpu),
                                  buf_take(&self->plan), buf_take(&self->ctx_rows), buf_take(&self->ctx_tid),
                                  buf_take(&self->ctx_pid), cols, buf_take(&self->packet_log));
    self->n = 0;
    return out;
}

/* release(): the messages of the pending batch are given back (before their graph goes). */
static PyObject *decoder_release(Decoder *self, PyObject *noargs) {
    release_batch(self);
    Py_RETURN_NONE;
}

static PyObject *decoder_get_n(Decoder *self, void *closure) { return PyLong_FromLongLong(self->n); }

static PyObject *decoder_get_last_ts(Decoder *self, void *closure) {
    if (!self->has_last_ts)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(self->last_ts);
}

/* hold_fork_lock(seconds): holds the lock as a decoding loop does, GIL released (for a test that
 * a fork waits for decoding loops). */
static PyObject *hold_fork_lock(PyObject *module, PyObject *args) {
    double seconds;
    if (!PyArg_ParseTuple(args, "d", &seconds))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&fork_lock);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    pthread_rwlock_unlock(&fork_lock);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* ---- the task current on each CPU (current_task.py) --------------------------------------- */

#define TASK_KEYS (16 * 4096) /* host < 16, cpu < 4096: key = host * 4096 + cpu */

static int task_buf(PyObject *o, Py_buffer *v, Py_ssize_t itemsize, Py_ssize_t len, int writable) {
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (v->itemsize != itemsize || v->len != len * itemsize) {
        PyErr_SetString(PyExc_ValueError, "current_tasks: an array of the wrong type or length");
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

/* current_tasks(tid, need, is_switch, host, cpu, prev_tid, next_tid, state, known): the rules of
 * CurrentTask.fill in one pass per chunk. tid[i] (where need[i]) becomes the task current on
 * row i's (host, cpu): the next_tid of the CPU's last sched_switch before it, else the task
 * carried from the chunks before (state/known, per key, updated), else the prev_tid of the
 * CPU's first switch in this chunk, else -1; a switch itself runs as its prev_tid; MISSING as
 * -1. The caller checks that every row's host < 16 and cpu < 4096. */
static PyObject *current_tasks(PyObject *module, PyObject *args) {
    PyObject *o[9];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8]))
        return NULL;
    Py_buffer v[9];
    int got = 0;
    Py_ssize_t n = PyObject_Length(o[0]);
    const Py_ssize_t sizes[9] = {4, 1, 1, 2, 4, 8, 8, 8, 1};
    PyObject *ret = NULL;
    uint8_t *seen = NULL;
    int64_t *first = NULL;
    if (n < 0)
        goto done;
    for (; got < 9; got++)
        if (task_buf(o[got], &v[got], sizes[got], got >= 7 ? TASK_KEYS : n, got == 0 || got >= 7) < 0)
            goto done;
    seen = calloc(TASK_KEYS, 1);
    first = malloc(TASK_KEYS * sizeof(int64_t));
    if (!seen || !first) {
        PyErr_NoMemory();
        goto done;
    }
    int32_t *tid = v[0].buf;
    const uint8_t *need = v[1].buf, *sw = v[2].buf;
    const int16_t *host = v[3].buf;
    const int32_t *cpu = v[4].buf;
    const int64_t *pt = v[5].buf, *nt = v[6].buf;
    int64_t *state = v[7].buf;
    uint8_t *known = v[8].buf;
    for (Py_ssize_t i = 0; i < n; i++) { /* a CPU not carried over: its first switch's prev_tid */
        if (!sw[i])
            continue;
        int k = host[i] * 4096 + cpu[i];
        if (!known[k] && !seen[k]) {
            seen[k] = 1;
            first[k] = pt[i];
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!need[i] && !sw[i])
            continue;
        int k = host[i] * 4096 + cpu[i];
        int64_t cur;
        if (sw[i]) {
            cur = pt[i];
            state[k] = nt[i];
            known[k] = 1;
        } else {
            cur = known[k] ? state[k] : seen[k] ? first[k] : -1;
        }
        if (need[i])
            tid[i] = cur == MISSING ? -1 : (int32_t)cur;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    free(seen);
    free(first);
    for (int j = 0; j < got; j++)
        PyBuffer_Release(&v[j]);
    return ret;
}

static PyMethodDef module_methods[] = {
    {"hold_fork_lock", hold_fork_lock, METH_VARARGS, "hold the decoding loops' fork lock for so many seconds (tests)"},
    {"current_tasks", current_tasks, METH_VARARGS,
     "current_tasks(tid, need, is_switch, host, cpu, prev_tid, next_tid, state, known): CurrentTask.fill in C"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef decoder_methods[] = {
    {"add_column", (PyCFunction)decoder_add_column, METH_VARARGS, "add_column(kind) -> column index"},
    {"set_plan", (PyCFunction)decoder_set_plan, METH_VARARGS, "set_plan(class, index, has_packet, tid, pid, members)"},
    {"run", (PyCFunction)decoder_run, METH_VARARGS, "run(iterator address, limit, pause) -> why it stopped"},
    {"take", (PyCFunction)decoder_take, METH_NOARGS, "take() -> the chunk's buffers (the decoder starts a new chunk)"},
    {"release", (PyCFunction)decoder_release, METH_NOARGS, "release(): give back the pending messages (before the graph goes)"},
    {NULL},
};

static PyGetSetDef decoder_getset[] = {
    {"n", (getter)decoder_get_n, NULL, "events in the chunk being filled", NULL},
    {"last_ts", (getter)decoder_get_last_ts, NULL, "time of the last event decoded (ns), or None", NULL},
    {NULL},
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "perftriage.analysis.ctf._decode.Decoder",
    .tp_basicsize = sizeof(Decoder),
    .tp_dealloc = (destructor)decoder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Decodes event messages of a babeltrace2 message iterator into column buffers.",
    .tp_methods = decoder_methods,
    .tp_getset = decoder_getset,
    .tp_init = (initproc)decoder_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_decode", "The CTF reader's per-event work in C over libbabeltrace2.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__decode(void) {
    if (PyType_Ready(&BlockType) < 0 || PyType_Ready(&DecoderType) < 0)
        return NULL;
    static int atfork_done = 0;
    if (!atfork_done) {
        if (pthread_atfork(fork_prepare, fork_after, fork_child) != 0) {
            PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
            return NULL;
        }
        atfork_done = 1;
    }
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&DecoderType);
    Py_INCREF(&BlockType);
    if (PyModule_AddObject(m, "Decoder", (PyObject *)&DecoderType) < 0 || PyModule_AddObject(m, "Block", (PyObject *)&BlockType) < 0
        || PyModule_AddIntConstant(m, "LIBBABELTRACE2_MAJOR", (long)bt_version_get_major()) < 0
        || PyModule_AddIntConstant(m, "LIBBABELTRACE2_MINOR", (long)bt_version_get_minor()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    const char *names[] = {"R_FULL", "R_END", "R_AGAIN", "R_ERROR", "R_PLAN", "R_STREAM", "R_DISCARDED", "R_BAD_CPU", "R_PAUSE"};
    for (int i = 0; i < 9; i++)
        PyModule_AddIntConstant(m, names[i], i);
    const char *getters[] = {"G_SIGNED", "G_UNSIGNED", "G_STRING", "G_BOOL", "G_DOUBLE", "G_SINGLE", "G_NESTED"};
    for (int i = 0; i < 7; i++)
        PyModule_AddIntConstant(m, getters[i], i);
    return m;
}
