/* stringify.h: JSON.stringify's exact text of plain Python payloads, written straight from the objects (see
 * stringify.c). Private to pasarela._fastcall. */
#ifndef PASARELA_CPYTHON_STRINGIFY_H
#define PASARELA_CPYTHON_STRINGIFY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

/* PyUnicode_AsUTF8AndSize: in the limited API only from 3.10, so its address comes from the running
 * interpreter (ctypes.pythonapi, which every CPython 3 exports it from). */
typedef const char *(*utf8_of_fn)(PyObject *, Py_ssize_t *);

/* Where a text is written: out[0, cap), of which len are used. A writer that may grow (growable != 0)
 * moves to the heap (heap: the block to free, or NULL) when it runs out; a fixed one reports it. */
typedef struct stringify_out {
    char *out;
    size_t len, cap;
    char *heap;
    int growable;
} stringify_out;

/* What pasarela_stringify_dict returns. */
#define STRINGIFY_DONE 0      /* written */
#define STRINGIFY_DECLINED 1  /* a value this writer leaves to the general path (no exception set) */
#define STRINGIFY_FULL 2      /* a fixed writer ran out of room (no exception set) */
#define STRINGIFY_ERROR (-1)  /* an exception is set (out of memory) */

#define STRINGIFY_KEY_SET_BITS 5                       /* keys remembered: in 32 sets of two */
#define STRINGIFY_KEY_SETS (1 << STRINGIFY_KEY_SET_BITS)
#define STRINGIFY_KEY_TEXT 48 /* the longest text of a key remembered: its quotes, escapes and ':' */

/* A writer: where the text goes, how strings are read, and the keys written lately, by the address of their str
 * (a payload's keys are mostly the same few objects: "sku", "qty", "price" in every item), with their text, which
 * is then copied without reading or checking the str again. An address stands for one str during one call of
 * _fastcall: no Python code runs while it writes, so no object is freed or made in its place. */
typedef struct stringify_writer {
    stringify_out w;
    utf8_of_fn utf8_of;
    PyObject *key[2 * STRINGIFY_KEY_SETS]; /* a set's two entries side by side, the more recent first */
    unsigned char key_len[2 * STRINGIFY_KEY_SETS];
    char key_text[2 * STRINGIFY_KEY_SETS][STRINGIFY_KEY_TEXT];
} stringify_writer;

/* A writer of out[0, cap), which may move to the heap when it runs out (growable != 0; then PyMem_Free its
 * w.heap when done) or reports it. */
void pasarela_stringify_start(stringify_writer *writer, utf8_of_fn utf8_of, char *out, size_t cap, int growable);

/* Appends JSON.stringify's text of payload, a dict, to writer->w. Declines (nothing to undo but w.len, which the
 * caller resets) anything it does not write exactly as the reference (pasarela.terminal.stringify) does:
 * types other than exact dict, list, tuple, str, int, float, bool and None; keys other than str; keys that
 * JavaScript orders first (array indices start with a digit: all such keys) or treats apart ("__proto__"
 * anywhere, "key" at the top level); str with lone surrogates; int beyond 2**53 - 1; float that is not finite,
 * below 1e-5 or from 2**53 in size, or whose shortest digits it cannot prove with doubles; nesting deeper
 * than 64; a growable writer's text beyond 32 KiB. On a free-threaded build (no GIL) it declines every payload. */
int pasarela_stringify_dict(stringify_writer *writer, PyObject *payload);

#endif
