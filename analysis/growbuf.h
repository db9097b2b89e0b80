/* A growable byte buffer, for the C parts (ctf/_decode.c, requests/_walk.c). Growing sets no
 * Python error: both grow their buffers in loops that run without the GIL; the caller says
 * "out of memory" once it holds the GIL again. Include after Python.h. */
#ifndef PERFTRIAGE_GROWBUF_H
#define PERFTRIAGE_GROWBUF_H

#include <stddef.h>

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

/* Room for `extra` more bytes (capacity doubled from 4 KiB): 0, or -1 when out of memory. */
static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = PyMem_RawRealloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

#endif
