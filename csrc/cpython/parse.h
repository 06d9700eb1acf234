/* parse.h: the Python values of a JSON text that JSON.stringify wrote, built straight from the text (see
 * parse.c). Private to pasarela._fastcall. */
#ifndef PASARELA_CPYTHON_PARSE_H
#define PASARELA_CPYTHON_PARSE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

#define PARSE_KEYS 64    /* keys remembered */
#define PARSE_KEY_MAX 64 /* the longest key remembered, in bytes of text */

/* Keys made before, by their text (a str and a copy of the text it was made from): an array's items repeat their
 * keys, and so do the payloads of one terminal's requests. Made once, each key's hash is computed once too.
 * Owned by pasarela._fastcall's module state and used with the GIL held (the reader makes objects: it never runs
 * without it); on a free-threaded build, where two threads could use it at once, each call has its own. */
typedef struct parse_keys {
    PyObject *key[PARSE_KEYS];
    size_t len[PARSE_KEYS];
    char text[PARSE_KEYS][PARSE_KEY_MAX];
    unsigned char reordered[PARSE_KEYS]; /* JavaScript would not keep the key where it is: integer-like, or
                                            "__proto__" (pasarela_parse_canonical_json does not confirm it) */
} parse_keys;

/* Releases the keys (then empty). */
void pasarela_parse_keys_clear(parse_keys *keys);

/* The value of the JSON text text[0, len), exactly as orjson.loads returns it (dict, list, str, int, float,
 * True, False, None; a repeated key keeps its last value), as a new reference. NULL with no exception set when
 * it declines the text (the caller then takes the general path, which gives the same values or the precise
 * error): anything that is not JSON, whitespace, nesting deeper than 64, integer literals of more than 18 digits,
 * numbers beyond the doubles, \u escapes of surrogates, text that is not UTF-8. NULL with an exception set when
 * Python runs out of memory. The text need not end with a NUL. The caller holds the GIL, and text[0, len) does
 * not change while this runs (no Python code runs during it). keys: the keys remembered, or NULL for a call of
 * its own. */
PyObject *pasarela_parse_json(const char *text, size_t len, parse_keys *keys);

/* pasarela_parse_json's value of text, and in *confirmed whether the text is also certainly its own canonical form,
 * JSON.stringify(JSON.parse(text)), and an object that JavaScript's server would accept as a payload: for
 * pasarela_open_request_as_sent, which leaves exactly that to its caller. Not confirmed (besides what
 * pasarela_parse_json declines) is what it cannot confirm cheaply while it reads: a value that is not an object; a
 * number of more than 15 significant digits, or not in the form JavaScript's Number::toString gives it; an escape
 * JSON.stringify would not write; an integer-like key or a "__proto__" member anywhere (JavaScript moves the first
 * and treats the second apart), a repeated key, and a top-level "key". From there it reads on without those checks.
 * A text not confirmed is not necessarily refused: the caller asks the C core's canonicalizer. */
PyObject *pasarela_parse_canonical_json(const char *text, size_t len, parse_keys *keys, int *confirmed);

#endif
