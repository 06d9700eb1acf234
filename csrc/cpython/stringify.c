/* stringify.c: JSON.stringify's exact text of a plain Python payload, written straight from the objects.
 *
 * Why this exists beside orjson: seal and seal_many serialized with orjson, whose text the C core then checked
 * for being JSON.stringify's already (and a batch's array of it split into items), 64 bytes at a time. For the
 * payloads that are most of the traffic (dicts of str, int, float, bool, None, lists of them) this writer
 * produces the exact text directly, so neither pass is needed, and a batch's items are written back to back
 * where the C core reads them. Anything it cannot write exactly it declines, and the caller takes the general
 * path (orjson and the check; the reference writer for what orjson cannot write), so it only has to be exact
 * on what it accepts: the tests compare it with the reference (pasarela.terminal.stringify) and with Node.
 *
 * Numbers. An int is written in decimal when JavaScript's double holds it exactly (|n| <= 2**53 - 1). A float x
 * needs JavaScript's Number::toString: the fewest significant digits that read back as x, laid out in plain
 * notation from 1e-6 up to 1e21. This writer takes integral x below 2**53 (written as the integer: no shorter
 * digits read back as it, and -0 is "0") and other x from 1e-5 to 2**52 / 10 in size, for which it finds the
 * fewest decimals j >= 1 such that some integer c gives c / 10**j == x in doubles (then the text is c with a
 * point before its last j digits). Why that is exact: c / 10**j is an exact quotient correctly rounded, so c at
 * 10**-j reads back as x; and any c' that reads back as x lies within 10**j * ulp(x) / 2 <= P * 2**-53 < 1/2 of
 * P = x * 10**j, while the computed product is within ulp(P) / 2 <= 1/4 of P, so with the product below 2**52
 * every such c' is floor(product) or floor(product) + 1, both tried: a j that has one is never skipped. (Two
 * cannot both read back: they are 10**-j apart, more than the ulp(x) <= x * 2**-52 that the doubles reading back
 * as x span, P being below 2**52.) The bounds above put c' within P * 2**-52 < product * 2**-51 of the product:
 * below 2**49 that is less than 1/4, so only the nearest integer can be c', and only when the product lies within
 * product * 2**-50 of it; most j are then ruled out without a division. Fewer decimals means fewer significant
 * digits at the same magnitude, and c cannot end in 0 (c / 10 would have read back at j - 1), so c's digits are
 * the shortest. Anything else (NaN, infinities, exponent notation, larger or smaller magnitudes) is declined.
 *
 * Strings are read as UTF-8 (PyUnicode_AsUTF8AndSize, which fails on lone surrogates: declined) and escaped as
 * JSON.stringify escapes: '"', '\\', \b \t \n \f \r, and the other controls below 0x20 as \u00xx (lowercase).
 * No Python code runs while a payload is written (exact built-in types only), so the containers cannot change
 * under the walk. No mutable globals. */
#include "stringify.h"

#include <stdint.h>
#include <string.h>

#include "json_bytes.h"

#define STRINGIFY_MAX_DEPTH 64
#define MAX_SAFE_INTEGER INT64_C(9007199254740991) /* 2**53 - 1 */

/* The longest text a growable writer writes: it declines larger payloads, which orjson then writes. Its buffer
 * (twice the text) stays below glibc's mmap threshold (128 KiB), and the text is copied into bytes once: past it,
 * each call faulted in a fresh mapping and orjson's way was the faster, while from 16 KiB down this writer is. */
#define STRINGIFY_GROWN_MAX 32768

/* Room for need more bytes at w->out + w->len, w->cap - w->len being short of them. */
static int grow(stringify_out *w, size_t need) {
    if (!w->growable) return STRINGIFY_FULL;
    if (w->len > STRINGIFY_GROWN_MAX || need > STRINGIFY_GROWN_MAX - w->len) return STRINGIFY_DECLINED;
    size_t cap = 2 * (w->len + need) + 256;
    char *grown = (char *)PyMem_Malloc(cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return STRINGIFY_ERROR;
    }
    memcpy(grown, w->out, w->len);
    PyMem_Free(w->heap);
    w->out = w->heap = grown;
    w->cap = cap;
    return STRINGIFY_DONE;
}

/* Makes room for need more bytes (or returns why it cannot) in the function it is used in. */
#define RESERVE(w, need)                                                                                      \
    do {                                                                                                      \
        if ((need) > (w)->cap - (w)->len) {                                                                   \
            int rc_ = grow((w), (need));                                                                      \
            if (rc_ != STRINGIFY_DONE) return rc_;                                                            \
        }                                                                                                     \
    } while (0)

/* Room enough for any token but strings: a number (at most 24 bytes), a literal, punctuation. */
#define TOKEN_ROOM 32

/* Appends a token of n <= 24 bytes at text, TOKEN_ROOM reserved, in one copy of a fixed size (a call of the C
 * library's memcpy for a few bytes cost more than writing them): text must have TOKEN_ROOM readable bytes. */
static inline void append_token(stringify_out *w, const char *text, size_t n) {
    memcpy(w->out + w->len, text, TOKEN_ROOM);
    w->len += n;
}

/* Appends one byte, the room for it reserved. */
static inline void append_byte(stringify_out *w, char c) {
    w->out[w->len++] = c;
}

/* The number of decimal digits of v (1 for 0). */
static unsigned decimal_length(uint64_t v) {
    unsigned n = 1;
    for (uint64_t bound = 10; v >= bound && n < 20; bound *= 10) n++;
    return n;
}

/* Writes the decimal digits of v backwards, ending just before end: returns where they start. */
static char *digits_of(uint64_t v, char *end) {
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return end;
}

/* Appends a decimal integer, TOKEN_ROOM reserved. The digits are written in place, from the right: made in a
 * buffer of their own and then copied, the copy's wide loads waited for the byte stores before them to retire
 * (a failed store-to-load forwarding). */
static void append_integer(stringify_out *w, int negative, uint64_t magnitude) {
    char *start = w->out + w->len;
    size_t n = (size_t)negative + decimal_length(magnitude);
    digits_of(magnitude, start + n);
    if (negative) *start = '-';
    w->len += n;
}

/* 10**j, exact in a double for j <= 22. */
static const double powers_of_ten[18] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,
                                         1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17};

/* Appends Number::toString of x (see the notes at the top), TOKEN_ROOM reserved: STRINGIFY_DECLINED for what
 * they leave out. */
static int append_double(stringify_out *w, double x) {
    if (x - x != 0.0) return STRINGIFY_DECLINED; /* NaN, infinities */
    int negative = x < 0.0;
    double a = negative ? -x : x;
    if (a >= 9007199254740992.0) return STRINGIFY_DECLINED; /* 2**53 */
    uint64_t whole = (uint64_t)a;                           /* truncation: floor, a being positive */
    if ((double)whole == a) {
        append_integer(w, negative && whole != 0, whole); /* -0 is "0" */
        return STRINGIFY_DONE;
    }
    if (a < 1e-5) return STRINGIFY_DECLINED;
    for (unsigned j = 1; j < sizeof powers_of_ten / sizeof powers_of_ten[0]; j++) {
        double product = a * powers_of_ten[j];
        if (product >= 4503599627370496.0) return STRINGIFY_DECLINED; /* 2**52 */
        uint64_t c;
        if (product < 562949953421312.0) { /* 2**49: one candidate, the nearest integer, if near enough */
            c = (uint64_t)(product + 0.5);
            double off = product - (double)c, reach = product * (1.0 / 1125899906842624.0); /* exact; 2**-50 */
            if ((off < 0 ? -off : off) > reach || (double)c / powers_of_ten[j] != a) continue;
        } else { /* both neighbours (two cannot both read back: see the notes at the top) */
            c = (uint64_t)product;
            if ((double)c / powers_of_ten[j] != a) {
                if ((double)(c + 1) / powers_of_ten[j] != a) continue;
                c++;
            }
        }
        /* c with a point before its last j digits ("0.00c" when c has j digits or fewer), written in place from
         * the right (see append_integer) */
        unsigned digits = decimal_length(c);
        size_t n = (size_t)negative + (digits > j ? digits - j : 1) + 1 + j;
        char *start = w->out + w->len, *end = start + n;
        for (unsigned k = 0; k < j; k++, c /= 10) *--end = (char)('0' + c % 10);
        *--end = '.';
        digits_of(c, end);
        if (negative) *start = '-';
        w->len += n;
        return STRINGIFY_DONE;
    }
    return STRINGIFY_DECLINED;
}

/* Appends '"', then s with JSON.stringify's escapes, then '"'. */
static int put_string(stringify_out *w, const char *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    RESERVE(w, (size_t)n + 2); /* and 5 more for each escape (\u00xx), when there is one */
    char *o = w->out + w->len;
    *o++ = '"';
    Py_ssize_t i = 0;
#if defined(PASARELA_SSE2)
    for (; n - i >= 16; i += 16, o += 16) { /* 16 bytes at a time while none needs an escape */
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        if (json_special_mask16(v) != 0) break;
        _mm_storeu_si128((__m128i *)(void *)o, v);
    }
#endif
    for (; n - i >= 8; i += 8, o += 8) { /* 8 bytes at a time while none needs an escape */
        uint64_t v;
        memcpy(&v, s + i, 8);
        if (json_special8(v)) break;
        memcpy(o, &v, 8);
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        w->len = (size_t)(o - w->out);
        RESERVE(w, (size_t)(n - i) + 6);
        o = w->out + w->len;
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\t': *o++ = 't'; break;
        case '\n': *o++ = 'n'; break;
        case '\f': *o++ = 'f'; break;
        case '\r': *o++ = 'r'; break;
        default:
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o++ = '"';
    w->len = (size_t)(o - w->out);
    return STRINGIFY_DONE;
}

/* The UTF-8 of an exact str, or NULL when it has lone surrogates (then no exception is left set). */
static const char *utf8(utf8_of_fn utf8_of, PyObject *s, Py_ssize_t *n) {
    const char *text = utf8_of(s, n);
    if (text == NULL) PyErr_Clear(); /* UnicodeEncodeError: the general path names the string */
    return text;
}

static int put_value(stringify_writer *writer, PyObject *value, int depth);

/* The first of the two entries of a key's set in the writer's keys: its address, Fibonacci-hashed (the low bits of
 * addresses are mostly alike: with a direct-mapped table indexed by a few shifted bits, "sku" and "price" of
 * benchmarks/payloads.py shared a slot and were written anew in every item). */
static size_t key_set(PyObject *key) {
    uint64_t hashed = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(hashed >> (64 - STRINGIFY_KEY_SET_BITS)) * 2;
}

/* Appends '"name":' for key (a str seen first: read, checked, escaped, then remembered when it is not "key",
 * which is declined at the top level only). */
static int put_new_key(stringify_writer *writer, PyObject *key, int depth) {
    stringify_out *w = &writer->w;
    Py_ssize_t n;
    const char *name = PyUnicode_CheckExact(key) ? utf8(writer->utf8_of, key, &n) : NULL;
    if (name == NULL) return STRINGIFY_DECLINED;
    /* keys JavaScript orders first (array indices start with a digit) or treats apart */
    if (n > 0 && (unsigned char)(name[0] - '0') <= 9) return STRINGIFY_DECLINED;
    if (n == 9 && memcmp(name, "__proto__", 9) == 0) return STRINGIFY_DECLINED;
    int named_key = n == 3 && memcmp(name, "key", 3) == 0;
    if (depth == 1 && named_key) return STRINGIFY_DECLINED;
    size_t start = w->len;
    int rc = put_string(w, name, n);
    if (rc != STRINGIFY_DONE) return rc;
    RESERVE(w, 1);
    append_byte(w, ':');
    size_t len = w->len - start, e = key_set(key);
    if (len <= STRINGIFY_KEY_TEXT && !named_key) { /* the set's first entry moves to its second (least recent) */
        writer->key[e + 1] = writer->key[e];
        writer->key_len[e + 1] = writer->key_len[e];
        memcpy(writer->key_text[e + 1], writer->key_text[e], STRINGIFY_KEY_TEXT);
        writer->key[e] = key;
        writer->key_len[e] = (unsigned char)len;
        memcpy(writer->key_text[e], w->out + start, len);
    }
    return STRINGIFY_DONE;
}

static int put_dict(stringify_writer *writer, PyObject *dict, int depth) {
    stringify_out *w = &writer->w;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    RESERVE(w, 2);
    append_byte(w, '{');
    for (int first = 1; PyDict_Next(dict, &pos, &key, &value); first = 0) {
        RESERVE(w, STRINGIFY_KEY_TEXT + 1);
        if (!first) append_byte(w, ',');
        size_t e = key_set(key);
        if (writer->key[e] != key) e++;
        int rc = STRINGIFY_DONE;
        if (writer->key[e] == key) { /* the text of a key written before, copied whole */
            memcpy(w->out + w->len, writer->key_text[e], STRINGIFY_KEY_TEXT);
            w->len += writer->key_len[e];
        } else if ((rc = put_new_key(writer, key, depth)) != STRINGIFY_DONE) {
            return rc;
        }
        if ((rc = put_value(writer, value, depth)) != STRINGIFY_DONE) return rc;
    }
    RESERVE(w, 1);
    append_byte(w, '}');
    return STRINGIFY_DONE;
}

/* A list or tuple (items: PyList_GetItem or PyTuple_GetItem, borrowed). */
static int put_array(stringify_writer *writer, PyObject *array, Py_ssize_t n,
                     PyObject *(*item)(PyObject *, Py_ssize_t), int depth) {
    stringify_out *w = &writer->w;
    RESERVE(w, 2);
    append_byte(w, '[');
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i > 0) {
            RESERVE(w, 1);
            append_byte(w, ',');
        }
        int rc = put_value(writer, item(array, i), depth);
        if (rc != STRINGIFY_DONE) return rc;
    }
    RESERVE(w, 1);
    append_byte(w, ']');
    return STRINGIFY_DONE;
}

static int put_value(stringify_writer *writer, PyObject *value, int depth) {
    stringify_out *w = &writer->w;
    if (PyUnicode_CheckExact(value)) {
        Py_ssize_t n;
        const char *text = utf8(writer->utf8_of, value, &n);
        return text == NULL ? STRINGIFY_DECLINED : put_string(w, text, n);
    }
    RESERVE(w, TOKEN_ROOM);
    if (PyFloat_CheckExact(value)) return append_double(w, PyFloat_AsDouble(value));
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow != 0 || v > MAX_SAFE_INTEGER || v < -MAX_SAFE_INTEGER) return STRINGIFY_DECLINED;
        append_integer(w, v < 0, v < 0 ? (uint64_t)-v : (uint64_t)v);
        return STRINGIFY_DONE;
    }
    if (value == Py_True || value == Py_False || value == Py_None) {
        static const char literals[3][TOKEN_ROOM] = {"true", "false", "null"};
        int k = value == Py_True ? 0 : value == Py_False ? 1 : 2;
        append_token(w, literals[k], k == 1 ? 5 : 4);
        return STRINGIFY_DONE;
    }
    if (depth == STRINGIFY_MAX_DEPTH) return STRINGIFY_DECLINED;
    if (PyDict_CheckExact(value)) return put_dict(writer, value, depth + 1);
    if (PyList_CheckExact(value)) return put_array(writer, value, PyList_Size(value), PyList_GetItem, depth + 1);
    if (PyTuple_CheckExact(value)) return put_array(writer, value, PyTuple_Size(value), PyTuple_GetItem, depth + 1);
    return STRINGIFY_DECLINED;
}

void pasarela_stringify_start(stringify_writer *writer, utf8_of_fn utf8_of, char *out, size_t cap, int growable) {
    writer->w.out = out;
    writer->w.len = 0;
    writer->w.cap = cap;
    writer->w.heap = NULL;
    writer->w.growable = growable;
    writer->utf8_of = utf8_of;
    for (size_t k = 0; k < 2 * STRINGIFY_KEY_SETS; k++) writer->key[k] = NULL;
}

int pasarela_stringify_dict(stringify_writer *writer, PyObject *payload) {
#if defined(Py_GIL_DISABLED)
    /* without the GIL another thread may change a container while it is walked (its items borrowed): the
     * general path, which holds references, writes it */
    (void)writer;
    (void)payload;
    (void)put_dict;
    return STRINGIFY_DECLINED;
#else
    return PyDict_CheckExact(payload) ? put_dict(writer, payload, 1) : STRINGIFY_DECLINED;
#endif
}
