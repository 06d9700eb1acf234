/* parse.c: the Python values of a JSON text that JSON.stringify wrote, built straight from the text.
 *
 * Why this exists beside orjson: Terminal.open returns the payload of the plaintext it verified, and orjson.loads
 * of that text was the largest part of open after the C core's own work. orjson parses into a document first, then makes the objects from it;
 * this reader makes them in one pass over a text it expects in JSON.stringify's form (no whitespace), with keys
 * made once and remembered (parse.h: parse_keys). It has to give exactly orjson.loads's values for
 * what it accepts, and it declines the rest (the tests compare the two on generated texts): then orjson, or the
 * reference reader, runs as before.
 *
 * Numbers. An integer literal (no fraction, no exponent) of up to 18 digits is an int. Any other number is the
 * double nearest to its decimal value: when its digits as an integer w are at most 2**53 and its decimal
 * exponent e is within [-22, 22], w and 10**|e| are exact doubles and one IEEE multiplication or division
 * rounds their product or quotient correctly (Clinger's fast path); otherwise PyOS_string_to_double (David
 * Gay's correctly rounded strtod) reads it. Strings are decoded as strict UTF-8 (PyUnicode_DecodeUTF8), their
 * escapes replaced first when they have any. No mutable globals. */
#include "parse.h"

#include <float.h>
#include <stdint.h>
#include <string.h>

#include "json_bytes.h"

#define PARSE_MAX_DEPTH 64
#define PARSE_MAX_DIGITS 18 /* the longest integer literal made an int here (10**18 < 2**63) */
#define PARSE_SCRATCH 256   /* a string's unescaped text up to this size is made on the stack */

/* One IEEE operation rounds correctly only where doubles are evaluated as doubles (not in x87's extended
 * registers): elsewhere every number takes PyOS_string_to_double */
#if (defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0) || defined(_M_X64) || defined(_M_ARM64)
#define PARSE_FAST_DOUBLES 1
#endif

typedef struct {
    const char *at, *end;
    parse_keys *keys;
    int canonical; /* pasarela_parse_canonical_json, until the text is found not to be confirmed canonical */
} parser;

/* The canonical reading cannot confirm the text: it reads on as pasarela_parse_json, checking nothing more. */
static void unconfirmed(parser *p) { p->canonical = 0; }

/* NULL, with no exception left set unless it is a MemoryError (which the caller passes on). */
static PyObject *declined(void) {
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError))
        PyErr_Clear(); /* UnicodeDecodeError, ValueError: the general path names them */
    return NULL;
}

static PyObject *value(parser *p, int depth);

/* The end of the run of bytes from s that are neither '"', '\\' nor controls, at most up to end. */
static const char *plain_run(const char *s, const char *end) {
#if defined(PASARELA_SSE2)
    for (; end - s >= 16; s += 16) {
        int mask = json_special_mask16(_mm_loadu_si128((const __m128i *)(const void *)s));
        if (mask != 0) return s + pasarela_lowest_bit((unsigned)mask);
    }
#endif
    for (; end - s >= 8; s += 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        if (json_special8(v)) break;
    }
    for (; s < end; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == '"' || c == '\\') break;
    }
    return s;
}

/* Whether JSON.stringify writes the code unit code as the \u escape whose four hex digits are at digits: a control
 * character without a short escape (\b \t \n \f \r), in lowercase hex. (The lone surrogates it also writes so
 * are declined anyway: see escaped_string.) */
static int written_as_u_escape(unsigned code, const char *digits) {
    if (code >= 0x20 || code == '\b' || code == '\t' || code == '\n' || code == '\f' || code == '\r') return 0;
    for (int k = 0; k < 4; k++)
        if (digits[k] >= 'A' && digits[k] <= 'F') return 0;
    return 1;
}

/* A string with escapes, p->at just after its opening quote: its text with them replaced (in scratch, or in a
 * heap block when longer), decoded. Declines \u escapes of surrogates (JSON.stringify writes them for lone
 * surrogates only, which a str made from UTF-8 cannot hold: the general path makes them). */
static PyObject *escaped_string(parser *p) {
    char scratch[PARSE_SCRATCH], *out = scratch, *heap = NULL;
    size_t cap = (size_t)(p->end - p->at); /* the text left: no unescaped string is longer */
    if (cap > sizeof scratch) {
        heap = out = (char *)PyMem_Malloc(cap);
        if (heap == NULL) return PyErr_NoMemory();
    }
    size_t n = 0;
    PyObject *result = NULL;
    for (;;) {
        const char *run_end = plain_run(p->at, p->end);
        memcpy(out + n, p->at, (size_t)(run_end - p->at));
        n += (size_t)(run_end - p->at);
        p->at = run_end;
        if (p->at >= p->end || (unsigned char)*p->at < 0x20) goto done; /* unterminated, or a raw control */
        if (*p->at == '"') break;
        if (p->end - p->at < 2) goto done;
        char c = p->at[1];
        p->at += 2;
        switch (c) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': /* JSON.stringify never writes this escape */
            if (p->canonical) unconfirmed(p);
            out[n++] = '/';
            break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            if (p->end - p->at < 4) goto done;
            unsigned code = 0;
            for (int k = 0; k < 4; k++) {
                int d = pasarela_hex_digit((unsigned char)p->at[k]);
                if (d < 0) goto done;
                code = code << 4 | (unsigned)d;
            }
            if (p->canonical && !written_as_u_escape(code, p->at)) unconfirmed(p);
            p->at += 4;
            if (code >= 0xd800 && code <= 0xdfff) goto done;
            if (code < 0x80) {
                out[n++] = (char)code;
            } else if (code < 0x800) { /* \uXXXX takes 6 bytes of text, its UTF-8 at most 3: it fits */
                out[n++] = (char)(0xc0 | code >> 6);
                out[n++] = (char)(0x80 | (code & 0x3f));
            } else {
                out[n++] = (char)(0xe0 | code >> 12);
                out[n++] = (char)(0x80 | (code >> 6 & 0x3f));
                out[n++] = (char)(0x80 | (code & 0x3f));
            }
            break;
        }
        default: goto done;
        }
    }
    p->at++; /* the closing quote */
    result = PyUnicode_DecodeUTF8(out, (Py_ssize_t)n, NULL);
done:
    PyMem_Free(heap);
    return result;
}

/* A string, p->at at its opening quote. */
static PyObject *string(parser *p) {
    const char *start = ++p->at, *run_end = plain_run(start, p->end);
    if (run_end < p->end && *run_end == '"') {
        p->at = run_end + 1;
        return PyUnicode_DecodeUTF8(start, run_end - start, NULL);
    }
    return escaped_string(p);
}

/* Whether a[0, n) == b[0, n), for the few bytes of a key (the C library's memcmp, a call, took 2% of open at 1 KiB). */
static inline int same_bytes(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* Whether JavaScript keeps the key text[0, len) out of the order members come in: an integer-like key ("0" or
 * [1-9][0-9]* below 2**32 - 1, an array index: such keys come first, in numeric order), or "__proto__" (JSON.parse
 * makes it an own member, which an object literal would not). */
static unsigned char reordered_key(const char *text, size_t len) {
    if (len == 9 && same_bytes(text, "__proto__", 9)) return 1;
    if (len == 0 || len > 10 || (text[0] == '0' && len > 1)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)text[i] - '0';
        if (d > 9) return 0;
        v = v * 10 + d;
    }
    return v < UINT64_C(4294967295);
}

/* A key, p->at at its opening quote: one made before when it has the same text (see parse_keys). A reordered key
 * (reordered_key) and a top-level "key" (depth 1: the payload's own members) are not confirmed canonical. */
static PyObject *key(parser *p, int depth) {
    const char *start = p->at + 1, *run_end = plain_run(start, p->end);
    size_t len = (size_t)(run_end - start);
    if (run_end >= p->end || *run_end != '"' || len > PARSE_KEY_MAX || len == 0) return string(p);
    size_t slot = (len * 31u + (unsigned char)start[0] * 7u + (unsigned char)start[len - 1] +
                   (unsigned char)start[len / 2] * 131u) % PARSE_KEYS;
    parse_keys *keys = p->keys;
    PyObject *made = keys->key[slot];
    if (made == NULL || keys->len[slot] != len || !same_bytes(keys->text[slot], start, len)) {
        made = PyUnicode_DecodeUTF8(start, (Py_ssize_t)len, NULL);
        if (made == NULL) return NULL;
        Py_XDECREF(keys->key[slot]);
        keys->key[slot] = made;
        keys->len[slot] = len;
        memcpy(keys->text[slot], start, len);
        keys->reordered[slot] = reordered_key(start, len);
    }
    if (p->canonical && (keys->reordered[slot] || (depth == 1 && len == 3 && same_bytes(start, "key", 3))))
        unconfirmed(p);
    Py_INCREF(made);
    p->at = run_end + 1;
    return made;
}

static PyObject *object(parser *p, int depth) {
    PyObject *dict = PyDict_New();
    if (dict == NULL) return NULL;
    if (++p->at < p->end && *p->at == '}') {
        p->at++;
        return dict;
    }
    for (Py_ssize_t members = 1;; members++) {
        if (p->at >= p->end || *p->at != '"') break;
        PyObject *name = key(p, depth);
        if (name == NULL) break;
        if (p->at >= p->end || *p->at != ':') {
            Py_DECREF(name);
            break;
        }
        p->at++;
        PyObject *item = value(p, depth);
        int rc = item == NULL ? -1 : PyDict_SetItem(dict, name, item);
        Py_DECREF(name);
        Py_XDECREF(item);
        if (rc < 0 || p->at >= p->end) break;
        char c = *p->at++;
        if (c == '}') {
            if (p->canonical && PyDict_Size(dict) != members) unconfirmed(p); /* a repeated key */
            return dict;
        }
        if (c != ',') break;
    }
    Py_DECREF(dict);
    return NULL;
}

/* A list of the n items at items (new references, handed over): NULL with an exception set when it cannot be
 * made (the items released). */
static PyObject *list_of(PyObject **items, Py_ssize_t n) {
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (list == NULL)
            Py_DECREF(items[i]);
        else
            PyList_SetItem(list, i, items[i]); /* steals; cannot fail on a new list */
    }
    return list;
}

/* An array: its first PARSE_ARRAY_HELD items are held until the list is made at its size (growing a list item by
 * item reallocated it at 4, 8, 16 items: a third of the time of the items of a 1 KiB payload), the rest appended. */
#define PARSE_ARRAY_HELD 32

static PyObject *array(parser *p, int depth) {
    PyObject *held[PARSE_ARRAY_HELD], *list = NULL;
    Py_ssize_t n = 0;
    if (++p->at < p->end && *p->at == ']') {
        p->at++;
        return PyList_New(0);
    }
    for (;;) {
        PyObject *item = value(p, depth);
        if (item == NULL) break;
        if (list != NULL) {
            int rc = PyList_Append(list, item);
            Py_DECREF(item);
            if (rc < 0) break;
        } else if (n < PARSE_ARRAY_HELD) {
            held[n++] = item;
        } else {
            list = list_of(held, n);
            n = 0;
            int rc = list == NULL ? -1 : PyList_Append(list, item);
            Py_DECREF(item);
            if (rc < 0) break;
        }
        if (p->at >= p->end) break;
        char c = *p->at++;
        if (c == ']') return list != NULL ? list : list_of(held, n);
        if (c != ',') break;
    }
    for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(held[i]);
    Py_XDECREF(list);
    return NULL;
}

#if defined(PARSE_FAST_DOUBLES)
/* 10**k, exact in a double for k <= 22. */
static const double exact_powers[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#endif

static int digit_at(const char *t, size_t i, size_t len) { return i < len && (unsigned char)(t[i] - '0') <= 9; }

/* What a number token shows of being what JSON.stringify writes for the double it reads as: 1 when it is, 2 when it
 * is if its digits are the double's shortest (checked_by_repr), 0 when it is not known to be. Its digits must be
 * laid out as Number::toString lays out k digits of value 0.d1..dk * 10**n: for -6 < n <= 21 without an exponent
 * (canonical_plain_number: the integer's trailing zeros, a fraction without any, "0." and up to 5 zeros below 1;
 * never "-0"), otherwise as d1[.d2..dk]e+X or e-X, X = n - 1 without leading zeros, kept within 10**+-307
 * (canonical_exponent_number). With at most 15 significant digits that is all (1): two decimals of up to 15
 * significant digits are never the same double (DBL_DIG), so the double's shortest digits, which JavaScript writes,
 * are the token's own. With 16 or 17 (a double's shortest digits are never more) it is 2; integers of more than 15
 * digits are left out (0). This is the verdict on the layout's k significant digits. */
static int form_of_digits(size_t k) { return k <= 15 ? 1 : k <= 17 ? 2 : 0; }

/* The verdict (form_of_digits) on the well-formed number token t[0, len), which has an exponent. */
static int canonical_exponent_number(const char *t, size_t len) {
    size_t i = t[0] == '-', int_start = i, frac_len = 0;
    while (digit_at(t, i, len)) i++;
    if (i - int_start != 1 || t[int_start] == '0') return 0; /* one digit, not 0, before the point */
    if (t[i] == '.') {
        size_t frac_start = ++i;
        while (digit_at(t, i, len)) i++;
        frac_len = i - frac_start;
        if (t[i - 1] == '0') return 0; /* a trailing zero of the fraction */
    }
    if (t[i] != 'e' || len - i < 3 || len - i > 5) return 0;
    char sign = t[i + 1];
    if ((sign != '+' && sign != '-') || t[i + 2] == '0') return 0;
    unsigned x = 0;
    for (size_t e = i + 2; e < len; e++) x = x * 10 + (unsigned)(t[e] - '0');
    if (x > 307 || (sign == '+' ? x < 21 : x < 7)) return 0;
    return form_of_digits(1 + frac_len);
}

/* The significant digits of the decimal s[0, len) (leading and trailing zeros left out; at most cap) and the n
 * of its value 0.d1..dk * 10**n: 0 when it has more digits than cap. */
static int decimal_of(const char *s, size_t len, char *digits, size_t cap, size_t *k, long *n) {
    size_t count = 0, i = 0;
    long before_point = 0, zeros_after_point = 0, e = 0;
    int after_point = 0, leading = 1;
    for (; i < len && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] == '.') {
            after_point = 1;
        } else if (leading && s[i] == '0') {
            zeros_after_point += after_point;
        } else {
            if (count == cap) return 0;
            leading = 0;
            digits[count++] = s[i];
            before_point += !after_point;
        }
    }
    if (i < len) { /* the exponent: e, a sign or none, digits (a few: from repr, or checked by canonical_exponent_number) */
        int negative = ++i < len && s[i] == '-';
        if (i < len && (s[i] == '-' || s[i] == '+')) i++;
        for (; i < len; i++) e = e * 10 + (s[i] - '0');
        if (negative) e = -e;
    }
    while (count > 0 && digits[count - 1] == '0') count--;
    *k = count;
    *n = (before_point > 0 ? before_point : -zeros_after_point) + e;
    return 1;
}

/* Whether the token t[0, len), JavaScript's layout of a double x (form_of_digits: 2), has x's shortest digits:
 * those of repr(x) (PyOS_double_to_string, mode 'r'), which are JavaScript's (both take the fewest digits that read
 * back as x and, of those, the nearest to x; the tests hold Python's layout of them to node's). */
static int checked_by_repr(double x, const char *t, size_t len) {
    char *shortest = PyOS_double_to_string(x < 0 ? -x : x, 'r', 0, 0, NULL);
    if (shortest == NULL) {
        PyErr_Clear(); /* no memory for it: not confirmed */
        return 0;
    }
    char a[32], b[32];
    size_t ka, kb;
    long na, nb;
    size_t sign = t[0] == '-';
    int same = decimal_of(shortest, strlen(shortest), a, sizeof a, &ka, &na) &&
               decimal_of(t + sign, len - sign, b, sizeof b, &kb, &nb) && ka == kb && na == nb && memcmp(a, b, ka) == 0;
    PyMem_Free(shortest);
    return same;
}

static int is_digit_char(char c) { return (unsigned char)(c - '0') <= 9; }

/* The verdict (form_of_digits) on a number token without an exponent, from what number() found as it read it:
 * whether it is negative, its integer part "0", its integer digits, its fraction digits (none: an integer), the
 * fraction's last digit, the zeros that lead the fraction of a number below 1, and its significant digits as it
 * counted them (k; 18 when it left digits out, past 19). */
static int canonical_plain_number(int negative, int zero_int, size_t int_len, size_t frac_len, char last,
                                  size_t fraction_zeros, size_t k) {
    if (frac_len == 0) return zero_int ? !negative : int_len <= 15;
    if (last == '0' || fraction_zeros > 5) return 0;
    return form_of_digits(k);
}

/* A number, p->at at its '-' or first digit (see the notes at the top). Read with its position in a local, and the
 * canonical form of one without an exponent judged from what the reading found, not by a second scan (number() and
 * that scan took a tenth of the reader's time at 1 KiB, in perf); one with an exponent is scanned again. */
static PyObject *number(parser *p) {
    const char *start = p->at, *s = start, *end = p->end;
    int negative = *s == '-';
    s += negative;
    if (s >= end || !is_digit_char(*s)) return NULL;
    const char *int_start = s;
    uint64_t w = 0;
    int digits = 0;       /* in w, leading zeros left out */
    int w_full = 0;       /* digits beyond w's 19 were left out (then the slow way) */
    long exponent = 0;    /* of the last digit in w */
    int zero_int = *s == '0';
    if (zero_int) {
        if (++s < end && is_digit_char(*s)) return NULL; /* a leading zero */
    } else {
        for (; s < end && is_digit_char(*s); s++) {
            if (digits < 19) {
                w = w * 10 + (uint64_t)(*s - '0');
                digits++;
            } else {
                w_full = 1;
            }
        }
    }
    size_t int_len = (size_t)(s - int_start), frac_len = 0, fraction_zeros = 0;
    int integral = 1, exponent_form = 0;
    if (s < end && *s == '.') {
        integral = 0;
        const char *frac_start = ++s;
        for (; s < end && is_digit_char(*s); s++) {
            if (w == 0 && *s == '0') {
                exponent--; /* a leading zero of the fraction */
                fraction_zeros++;
            } else if (digits < 19) {
                w = w * 10 + (uint64_t)(*s - '0');
                digits++;
                exponent--;
            } else {
                w_full = 1;
            }
        }
        frac_len = (size_t)(s - frac_start);
        if (frac_len == 0) return NULL;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        integral = 0;
        exponent_form = 1;
        int exponent_negative = 0;
        if (++s < end && (*s == '+' || *s == '-')) exponent_negative = *s++ == '-';
        if (s >= end || !is_digit_char(*s)) return NULL;
        long e = 0;
        for (; s < end && is_digit_char(*s); s++)
            if (e < 100000) e = e * 10 + (*s - '0');
        exponent += exponent_negative ? -e : e;
    }
    p->at = s;
    int form = 1;
    if (p->canonical) {
        form = exponent_form ? canonical_exponent_number(start, (size_t)(s - start))
                             : canonical_plain_number(negative, zero_int, int_len, frac_len, s[-1], fraction_zeros,
                                                      w_full ? 18 : (size_t)digits);
        if (form == 0) unconfirmed(p);
    }
    if (integral) {
        if (w_full || digits > PARSE_MAX_DIGITS) return NULL; /* orjson: an int to 2**64, then a float */
        long long v = (long long)w;
        return PyLong_FromLongLong(negative ? -v : v);
    }
    double x;
    int read = 0;
#if defined(PARSE_FAST_DOUBLES)
    if (!w_full && w <= (UINT64_C(1) << 53) && exponent >= -22 && exponent <= 22) {
        x = exponent < 0 ? (double)w / exact_powers[-exponent] : (double)w * exact_powers[exponent];
        x = negative ? -x : x;
        read = 1;
    }
#endif
    if (!read) {
        if (s >= end) return NULL; /* strtod reads up to a byte that ends the number: there must be one */
        char *stop = NULL;
        x = PyOS_string_to_double(start, &stop, NULL);
        if ((x == -1.0 && PyErr_Occurred()) || stop != s || x - x != 0.0)
            return NULL; /* infinities: orjson refuses them */
    }
    if (form == 2 && p->canonical && !checked_by_repr(x, start, (size_t)(s - start))) unconfirmed(p);
    return PyFloat_FromDouble(x);
}

static int literal(parser *p, const char *word, size_t len) {
    if ((size_t)(p->end - p->at) < len || memcmp(p->at, word, len) != 0) return 0;
    p->at += len;
    return 1;
}

static PyObject *value(parser *p, int depth) {
    if (p->at >= p->end) return NULL;
    PyObject *constant;
    switch (*p->at) {
    case '"': return string(p);
    case '{': return depth < PARSE_MAX_DEPTH ? object(p, depth + 1) : NULL;
    case '[': return depth < PARSE_MAX_DEPTH ? array(p, depth + 1) : NULL;
    case 't': constant = literal(p, "true", 4) ? Py_True : NULL; break;
    case 'f': constant = literal(p, "false", 5) ? Py_False : NULL; break;
    case 'n': constant = literal(p, "null", 4) ? Py_None : NULL; break;
    default: return number(p);
    }
    Py_XINCREF(constant);
    return constant;
}

void pasarela_parse_keys_clear(parse_keys *keys) {
    for (size_t k = 0; k < PARSE_KEYS; k++) {
        Py_CLEAR(keys->key[k]);
        keys->len[k] = 0;
    }
}

/* pasarela_parse_json, and with confirmed (not NULL) the canonical reading: *confirmed says whether it confirmed
 * the text. */
static PyObject *parse(const char *text, size_t len, parse_keys *keys, int *confirmed) {
    parse_keys own;
#if defined(Py_GIL_DISABLED)
    keys = NULL; /* see parse_keys */
#endif
    if (keys == NULL) {
        for (size_t k = 0; k < PARSE_KEYS; k++) own.key[k] = NULL;
        keys = &own;
    }
    parser p;
    p.at = text;
    p.end = text + len;
    p.keys = keys;
    p.canonical = confirmed != NULL && len > 0 && text[0] == '{'; /* an object's text, or nothing to confirm */
    PyObject *result = value(&p, 0);
    if (keys == &own) pasarela_parse_keys_clear(&own);
    if (result != NULL && p.at != p.end) { /* something after the value */
        Py_DECREF(result);
        result = NULL;
    }
    if (confirmed != NULL) *confirmed = result != NULL && p.canonical;
    return result == NULL ? declined() : result;
}

PyObject *pasarela_parse_json(const char *text, size_t len, parse_keys *keys) { return parse(text, len, keys, NULL); }

PyObject *pasarela_parse_canonical_json(const char *text, size_t len, parse_keys *keys, int *confirmed) {
    return parse(text, len, keys, confirmed);
}
