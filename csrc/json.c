/*
 * JSON text -> exactly what JavaScript's JSON.stringify(JSON.parse(text)) writes.
 *
 * The input's numbers must already carry their shortest round-trip digits (orjson, Python's
 * repr and JavaScript all write them so): a number is then only re-formatted, never converted,
 * which keeps this pass exact without a float printing algorithm. Objects are re-ordered the way
 * JavaScript orders properties: integer-like keys first, ascending, then the others in insertion
 * order. Duplicate keys (JSON.parse keeps the last value at the first position) and nesting deeper
 * than PASARELA_JSON_MAX_DEPTH are left to the caller's slower path.
 */
#include <stdbool.h>
#include <string.h>

#include "byte_classes.h"
#include "internal.h"
#include "utf8.h"

#if defined(PASARELA_SSE2)
#include <emmintrin.h>
#elif defined(PASARELA_NEON)
#include <arm_neon.h>
#endif
#define PASARELA_JSON_MAX_DEPTH 1000

#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define HOT_INLINE static __forceinline
#else
#define HOT_INLINE static inline
#endif
/* The trusted path's calls into the general code: kept out of its loop. */
#if defined(__GNUC__) || defined(__clang__)
#define COLD_CALL static __attribute__((noinline))
#elif defined(_MSC_VER)
#define COLD_CALL static __declspec(noinline)
#else
#define COLD_CALL static
#endif
#define NOT_INT_KEY UINT64_C(0x100000000)

typedef struct member {
    size_t start;       /* output offset of the key's opening quote */
    size_t end;         /* output offset just past the value */
    uint64_t order;     /* integer-like key value, or 2^32 + position: sorting on it gives JS order */
    uint32_t hash;      /* of the canonical key bytes, to find duplicates in large objects */
    uint32_t key_len;   /* canonical key bytes, without quotes */
} member;

typedef struct frame {
    size_t body_start;  /* output offset just past '{' or '[' */
    uint32_t first;     /* first member record of this object */
    uint32_t is_object; /* the trusted path also sets HAS_INT_KEY */
} frame;

/* frame.is_object in the trusted path: a member has an integer-like key (else no re-ordering) */
#define HAS_INT_KEY 2u

typedef struct state {
    const uint8_t *in;
    size_t n, pos;
    uint8_t *out;
    size_t cap, len;
    member *members;
    size_t members_cap, members_top;
    uint8_t *temp;
    size_t temp_cap;
    unsigned facts;     /* PASARELA_JSON_FACT_* seen so far */
    unsigned flags;
} state;

static int is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

#if !defined(PASARELA_SSE2)
/* Bytes of an 8-byte word that need attention inside a string: below 0x20, '"', '\\' or >= 0x80
 * (SWAR: each such byte gets its high bit set in the result). */
static inline uint64_t special_bytes(uint64_t w) {
    const uint64_t ones = UINT64_C(0x0101010101010101), high = UINT64_C(0x8080808080808080);
    uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
    uint64_t control = (w - ones * 0x20) & ~w;                     /* bytes < 0x20 */
    uint64_t is_quote = (quote - ones) & ~quote;                   /* bytes == '"' */
    uint64_t is_backslash = (backslash - ones) & ~backslash;
    return (control | is_quote | is_backslash | w) & high;
}
#endif

/* No bounds checks: pasarela_json_canonicalize refuses an output buffer smaller than
 * PASARELA_JSON_OUT_MAX(n), and no input can outgrow it (strings never grow when re-escaped; the
 * largest growth is a number token such as 1e20, 4 bytes, written as 21). */
static int put(state *s, const void *p, size_t k) {
    memcpy(s->out + s->len, p, k);
    s->len += k;
    return PASARELA_OK;
}

static int put_byte(state *s, uint8_t c) {
    s->out[s->len++] = c;
    return PASARELA_OK;
}

static int read_u4(state *s, size_t at, uint32_t *u) {
    uint32_t v = 0;
    if (s->n - at < 4) return PASARELA_E_JSON_SYNTAX;
    for (size_t i = 0; i < 4; i++) {
        int h = pasarela_hex_digit(s->in[at + i]);
        if (h < 0) return PASARELA_E_JSON_SYNTAX;
        v = (v << 4) | (uint32_t)h;
    }
    *u = v;
    return PASARELA_OK;
}

/* Writes one UTF-16 code unit or code point the way JSON.stringify writes it. */
static int put_code_point(state *s, uint32_t cp) {
    static const char hexdigits[] = "0123456789abcdef";
    uint8_t b[6];
    if (cp == '"' || cp == '\\') {
        b[0] = '\\'; b[1] = (uint8_t)cp;
        return put(s, b, 2);
    }
    if (cp < 0x20) {
        b[0] = '\\';
        switch (cp) {
        case '\b': b[1] = 'b'; return put(s, b, 2);
        case '\f': b[1] = 'f'; return put(s, b, 2);
        case '\n': b[1] = 'n'; return put(s, b, 2);
        case '\r': b[1] = 'r'; return put(s, b, 2);
        case '\t': b[1] = 't'; return put(s, b, 2);
        default: break;
        }
    }
    if (cp < 0x20 || (cp >= 0xD800 && cp <= 0xDFFF)) { /* control character or lone surrogate */
        b[0] = '\\'; b[1] = 'u';
        b[2] = (uint8_t)hexdigits[(cp >> 12) & 15]; b[3] = (uint8_t)hexdigits[(cp >> 8) & 15];
        b[4] = (uint8_t)hexdigits[(cp >> 4) & 15]; b[5] = (uint8_t)hexdigits[cp & 15];
        return put(s, b, 6);
    }
    if (cp < 0x80) return put_byte(s, (uint8_t)cp);
    if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | (cp >> 6)); b[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return put(s, b, 2);
    }
    if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | (cp >> 12)); b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return put(s, b, 3);
    }
    b[0] = (uint8_t)(0xF0 | (cp >> 18)); b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return put(s, b, 4);
}

#if defined(PASARELA_SSE2)
/* Bits of the 16 bytes at p that need attention inside a string: below 0x20, '"', '\\' or >= 0x80
 * (a signed compare with 0x20 catches both the controls and the bytes >= 0x80). */
static inline unsigned special_bytes16(__m128i v) {
    __m128i low = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
    __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"')), backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(low, _mm_or_si128(quote, backslash)));
}
#endif

/* The first byte at or after in[q] (q <= n) that needs attention inside a string, or n. */
HOT_INLINE size_t plain_run_end(const uint8_t *in, size_t q, size_t n) {
#if defined(PASARELA_SSE2)
    while (n - q >= 16) {
        unsigned m = special_bytes16(_mm_loadu_si128((const __m128i *)(const void *)(in + q)));
        if (m) return q + pasarela_lowest_bit(m);
        q += 16;
    }
#else
    while (n - q >= 8) {
        uint64_t w;
        memcpy(&w, in + q, 8);
        if (special_bytes(w)) break;
        q += 8;
    }
#endif
    while (q < n) {
        uint8_t c = in[q];
        if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
        q++;
    }
    return q;
}

/* The rest of a checked string: s->pos is inside it (past the opening quote, which is written),
 * where the general scan would be. */
static int string_rest(state *s) {
    int rc;
    for (;;) {
        size_t run = plain_run_end(s->in, s->pos, s->n);
        if (run > s->pos) {
            if ((rc = put(s, s->in + s->pos, run - s->pos)) != PASARELA_OK) return rc;
            s->pos = run;
        }
        if (s->pos >= s->n) return PASARELA_E_JSON_SYNTAX;
        uint8_t c = s->in[s->pos];
        if (c == '"') {
            s->pos++;
            return put_byte(s, '"');
        }
        if (c < 0x20) return PASARELA_E_JSON_SYNTAX;
        if (c >= 0x80) {
            size_t k = pasarela_utf8_sequence(s->in + s->pos, s->n - s->pos);
            if (k == 0) return PASARELA_E_JSON_UNSUPPORTED; /* not UTF-8: let the caller decide */
            if ((rc = put(s, s->in + s->pos, k)) != PASARELA_OK) return rc;
            s->pos += k;
            continue;
        }
        /* backslash escape */
        if (s->n - s->pos < 2) return PASARELA_E_JSON_SYNTAX;
        uint8_t e = s->in[s->pos + 1];
        uint32_t cp;
        switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
            if ((rc = read_u4(s, s->pos + 2, &cp)) != PASARELA_OK) return rc;
            if (cp >= 0xD800 && cp <= 0xDBFF && s->n - s->pos >= 12 && s->in[s->pos + 6] == '\\' &&
                s->in[s->pos + 7] == 'u') {
                uint32_t low;
                if (read_u4(s, s->pos + 8, &low) == PASARELA_OK && low >= 0xDC00 && low <= 0xDFFF) {
                    s->pos += 12;
                    if ((rc = put_code_point(s, 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00))) != PASARELA_OK)
                        return rc;
                    continue;
                }
            }
            s->pos += 6;
            if ((rc = put_code_point(s, cp)) != PASARELA_OK) return rc;
            continue;
        }
        default: return PASARELA_E_JSON_SYNTAX;
        }
        s->pos += 2;
        if ((rc = put_code_point(s, cp)) != PASARELA_OK) return rc;
    }
}

/* The checked string whose opening quote is in[pos], when it has no escape, no control byte and only
 * well-formed UTF-8: copied to dst (room writable bytes; a block copy may write garbage past the
 * string, within room), returns its end. Else returns 0 with *stop at the first byte the general scan
 * is to look at (an escape, a control byte, bytes that are not UTF-8, the end of the input), the bytes
 * before it copied: what string_rest would have written when it gets there. */
HOT_INLINE size_t plain_string(const uint8_t *in, size_t pos, size_t n, uint8_t *dst, size_t room, size_t *stop) {
    size_t q = pos + 1;
    dst[0] = '"';
#if defined(PASARELA_SSE2)
    while (n - q >= 16 && room - (q - pos) >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in + q));
        unsigned m = special_bytes16(v);
        _mm_storeu_si128((__m128i *)(void *)(dst + (q - pos)), v);
        if (m) {
            q += pasarela_lowest_bit(m);
            goto found;
        }
        q += 16;
    }
#else
    (void)room;
#endif
    while (q < n) {
        uint8_t c = in[q];
        if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
        dst[q - pos] = c;
        q++;
    }
#if defined(PASARELA_SSE2)
found:
#endif
    if (q < n && in[q] == '"') {
        dst[q - pos] = '"';
        return q + 1;
    }
    /* text with non-ASCII characters: byte by byte (predictable branches instead of a chain of
     * dependent block scans), each character copied as the general scan copies it */
    while (q < n) {
        uint8_t c = in[q];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            dst[q - pos] = c;
            q++;
        } else if (c >= 0x80) {
            size_t k = pasarela_utf8_sequence(in + q, n - q);
            if (k == 0) break;
            for (size_t i = 0; i < k; i++) dst[q - pos + i] = in[q + i];
            q += k;
        } else {
            if (c != '"') break; /* a control byte or an escape */
            dst[q - pos] = '"';
            return q + 1;
        }
    }
    *stop = q;
    return 0;
}

/* Length of the checked number token at in[pos] ('-' or a digit) when number_token would write it
 * unchanged, else 0: -?(0|[1-9][0-9]*) of at most 15 digits, except "-0"; or with a fraction that
 * does not end in '0', at most 15 significant digits, and when the integer part is 0 at most 5
 * zeros after the point (0.000001 is written 0.000001, 0.0000001 as 1e-7); never before 'e'/'E'. */
HOT_INLINE size_t plain_number_length(const uint8_t *in, size_t pos, size_t n) {
    size_t p = pos + (in[pos] == '-'), int_start = p, digits;
#if defined(PASARELA_SSE2)
    if (n - pos >= 16) { /* the same rule on the bits of one block, when the token ends in it */
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in + pos));
        unsigned digit = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
            _mm_max_epu8(_mm_sub_epi8(v, _mm_set1_epi8('0')), _mm_set1_epi8(9)), _mm_set1_epi8(9)));
        unsigned i0 = (unsigned)(p - pos), other = ~digit & 0xFFFFu & (0xFFFFu << i0);
        if (other != 0 && in[p] != '0') {
            unsigned i1 = pasarela_lowest_bit(other), end = i1; /* the first byte past the integer part */
            if (i1 == i0) return 0;                   /* no digit */
            if (in[pos + i1] == '.') {
                unsigned rest = other & (0xFFFEu << i1);
                if (rest == 0) goto scalar;
                end = pasarela_lowest_bit(rest);
                if (end == i1 + 1 || in[pos + end - 1] == '0' || end - i0 - 1 > 15) return 0;
            }
            if (in[pos + end] == 'e' || in[pos + end] == 'E') return 0;
            return end; /* at most 15 digits: the block has 16 bytes */
        }
    }
scalar:
#endif
    if (p >= n) return 0;
    if (in[p] == '0') {
        p++;
        digits = 0;
    } else {
        while (p < n && is_digit(in[p])) p++;
        digits = p - int_start;
        if (digits == 0 || digits > 15) return 0;
    }
    if (p < n && in[p] == '.') {
        size_t frac_start = ++p;
        while (p < n && is_digit(in[p])) p++;
        if (p == frac_start || in[p - 1] == '0') return 0;
        if (digits == 0) {
            size_t z = frac_start;
            while (in[z] == '0') z++; /* stops at the last digit, not '0' */
            if (z - frac_start > 5 || p - z > 15) return 0;
        } else if (digits + (p - frac_start) > 15) {
            return 0;
        }
    } else if (digits == 0 && int_start != pos) {
        return 0; /* "-0" is written 0 */
    }
    if (p < n && (in[p] == 'e' || in[p] == 'E')) return 0;
    return p - pos;
}

/* Writes digits[0..k) with decimal point position n (value = 0.digits * 10^n) as
 * Number.prototype.toString does (ECMA-262 Number::toString, radix 10). */
HOT_INLINE int put_js_number(state *s, int negative, const uint8_t *digits, int k, int n) {
    uint8_t buf[64];
    size_t w = 0;
    int i;
    if (negative) buf[w++] = '-';
    if (k <= n && n <= 21) {
        if (n >= 17) s->facts |= PASARELA_JSON_FACT_LONG_INT; /* maybe not the double itself: see the fact */
        for (i = 0; i < k; i++) buf[w++] = digits[i];
        for (i = 0; i < n - k; i++) buf[w++] = '0';
    } else if (0 < n && n <= 21) {
        for (i = 0; i < n; i++) buf[w++] = digits[i];
        buf[w++] = '.';
        for (i = n; i < k; i++) buf[w++] = digits[i];
    } else if (-6 < n && n <= 0) {
        buf[w++] = '0';
        buf[w++] = '.';
        for (i = 0; i < -n; i++) buf[w++] = '0';
        for (i = 0; i < k; i++) buf[w++] = digits[i];
    } else {
        int e = n - 1;
        buf[w++] = digits[0];
        if (k > 1) {
            buf[w++] = '.';
            for (i = 1; i < k; i++) buf[w++] = digits[i];
        }
        buf[w++] = 'e';
        buf[w++] = e < 0 ? '-' : '+';
        if (e < 0) e = -e;
        if (e >= 100) buf[w++] = (uint8_t)('0' + e / 100);
        if (e >= 10) buf[w++] = (uint8_t)('0' + (e / 10) % 10);
        buf[w++] = (uint8_t)('0' + e % 10);
    }
    return put(s, buf, w);
}

/* s->pos is at '-' or a digit. Under PASARELA_JSON_SHORTEST_DIGITS, the trusted token pass copies the
 * numbers already in JavaScript form and hands the others to this. */
HOT_INLINE int number_token(state *s) {
    const uint8_t *in = s->in;
    size_t p = s->pos, start = s->pos;
    int negative = 0, is_integer = 1;
    uint8_t digits[24];
    int k = 0;          /* significant digits kept */
    long point = 0;     /* decimal point position relative to the first significant digit */
    int seen_nonzero = 0;
    if (in[p] == '-') { negative = 1; p++; }
    if (p >= s->n || !is_digit(in[p])) return PASARELA_E_JSON_SYNTAX;
    int too_many_digits = 0; /* more significant digits than a shortest double has */
    if (in[p] == '0') {
        p++;
    } else {
        while (p < s->n && is_digit(in[p])) {
            uint8_t c = in[p++];
            point++;
            if (k < 17) digits[k++] = c;
            else if (c != '0') too_many_digits = 1;
        }
        seen_nonzero = 1;
    }
    if (p < s->n && in[p] == '.') {
        is_integer = 0;
        p++;
        if (p >= s->n || !is_digit(in[p])) return PASARELA_E_JSON_SYNTAX;
        while (p < s->n && is_digit(in[p])) {
            uint8_t c = in[p++];
            if (!seen_nonzero) {
                if (c == '0') { point--; continue; }
                seen_nonzero = 1;
            }
            if (k < 17) digits[k++] = c;
            else if (c != '0') too_many_digits = 1;
        }
    }
    long exponent = 0;
    if (p < s->n && (in[p] == 'e' || in[p] == 'E')) {
        int exp_negative = 0;
        is_integer = 0;
        p++;
        if (p < s->n && (in[p] == '+' || in[p] == '-')) { exp_negative = in[p] == '-'; p++; }
        if (p >= s->n || !is_digit(in[p])) return PASARELA_E_JSON_SYNTAX;
        while (p < s->n && is_digit(in[p])) {
            if (exponent < 100000) exponent = exponent * 10 + (in[p] - '0');
            p++;
        }
        if (exp_negative) exponent = -exponent;
    }
    s->pos = p;
    while (k > 0 && digits[k - 1] == '0') k--; /* 100.0 and 1.50 carry trailing zeros */
    if (k == 0) return put_byte(s, '0');       /* 0, -0, 0.0, 0e5 */
    if (is_integer && (point > 16 || (point == 16 && memcmp(in + start + negative, "9007199254740991", 16) > 0)))
        return PASARELA_E_JSON_UNSAFE_INTEGER;
    if (too_many_digits) return PASARELA_E_JSON_UNSUPPORTED;
    long n = point + exponent;
    if (n > 309 || n < -323) return PASARELA_E_JSON_UNSUPPORTED; /* not the shortest form of a finite double */
    /* Digits of unknown origin: a decimal of at most 15 significant digits within the normal range
     * maps to a double whose shortest form is that decimal itself (DBL_DIG is 15), so it is kept;
     * anything else needs a real conversion, which the caller's slower path does. */
    if (!(s->flags & PASARELA_JSON_SHORTEST_DIGITS) && !is_integer && (k > 15 || n > 308 || n < -306))
        return PASARELA_E_JSON_UNSUPPORTED;
    return put_js_number(s, negative, digits, k, (int)n);
}

/* An integer-like key is "0" or [1-9][0-9]* below 2^32 - 1: JavaScript's array index. */
HOT_INLINE uint64_t key_order(const uint8_t *key, size_t len, size_t position) {
    uint64_t v = 0;
    if (len == 0 || len > 10 || (key[0] == '0' && len > 1)) return NOT_INT_KEY + position;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(key[i])) return NOT_INT_KEY + position;
        v = v * 10 + (uint64_t)(key[i] - '0');
    }
    return v < UINT64_C(4294967295) ? v : NOT_INT_KEY + position;
}

static uint32_t fnv1a(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

typedef int (*member_less)(const state *s, const member *a, const member *b);
static int by_order(const state *s, const member *a, const member *b) {
    (void)s;
    return a->order < b->order;
}
/* A total order on the keys, cheap when their hashes differ: equal keys end up next to each other
 * whatever the hashes of the others (keys made to collide only cost their byte comparisons). */
static int by_key(const state *s, const member *a, const member *b) {
    if (a->hash != b->hash) return a->hash < b->hash;
    if (a->key_len != b->key_len) return a->key_len < b->key_len;
    return memcmp(s->out + a->start + 1, s->out + b->start + 1, a->key_len) < 0;
}

static void sift_down(const state *s, member *m, size_t root, size_t count, member_less less) {
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= count) return;
        if (child + 1 < count && less(s, &m[child], &m[child + 1])) child++;
        if (!less(s, &m[root], &m[child])) return;
        member t = m[root]; m[root] = m[child]; m[child] = t;
        root = child;
    }
}

/* In-place heap sort: no allocation and O(k log k) comparisons whatever the input. */
static void sort_members(const state *s, member *m, size_t count, member_less less) {
    if (count < 2) return;
    for (size_t i = count / 2; i-- > 0;) sift_down(s, m, i, count, less);
    for (size_t end = count - 1; end > 0; end--) {
        member t = m[0]; m[0] = m[end]; m[end] = t;
        sift_down(s, m, 0, end, less);
    }
}

static int same_key(const state *s, const member *a, const member *b) {
    return a->key_len == b->key_len && s->out[a->start + 1] == s->out[b->start + 1] &&
           memcmp(s->out + a->start + 1, s->out + b->start + 1, a->key_len) == 0;
}

/* Called at the closing brace: refuses duplicates and puts the members in JavaScript order. */
HOT_INLINE int close_object(state *s, const frame *f) {
    member *m = s->members + f->first;
    size_t count = s->members_top - f->first;
    int in_order = 1;
    if (count < 2) return PASARELA_OK;
    for (size_t i = 1; i < count; i++)
        if (m[i].order < m[i - 1].order) in_order = 0;
    if (s->flags & PASARELA_JSON_SHORTEST_DIGITS) {
        /* a trusted serializer writes no duplicate keys (a Python dict has none) */
    } else if (count <= 16) {
        for (size_t i = 1; i < count; i++)
            for (size_t j = 0; j < i; j++)
                if (same_key(s, &m[i], &m[j])) return PASARELA_E_JSON_UNSUPPORTED;
    } else {
        /* sorted by key, a duplicate is next to its twin: O(k log k) comparisons, linear scan */
        for (size_t i = 0; i < count; i++) m[i].hash = fnv1a(s->out + m[i].start + 1, m[i].key_len);
        sort_members(s, m, count, by_key);
        for (size_t i = 1; i < count; i++)
            if (m[i].hash == m[i - 1].hash && same_key(s, &m[i], &m[i - 1])) return PASARELA_E_JSON_UNSUPPORTED;
    }
    if (in_order) return PASARELA_OK;
    sort_members(s, m, count, by_order);
    size_t body_len = s->len - f->body_start - 1; /* without the closing brace */
    if (body_len > s->temp_cap) return PASARELA_E_BUFFER_TOO_SMALL;
    size_t w = 0;
    for (size_t i = 0; i < count; i++) {
        if (i) s->temp[w++] = ',';
        memcpy(s->temp + w, s->out + m[i].start, m[i].end - m[i].start);
        w += m[i].end - m[i].start;
    }
    memcpy(s->out + f->body_start, s->temp, w);
    return PASARELA_OK;
}

/* ---- The trusted mode's scans (PASARELA_JSON_SHORTEST_DIGITS; token_pass below) ----
 * Strings copied up to their first unescaped quote, numbers already in JavaScript form copied. */

#if !defined(PASARELA_SSE2)
/* Bytes of an 8-byte word that are '"' or '\\' (high bit set in the result; exact up to the first). */
static inline uint64_t quote_or_backslash(uint64_t w) {
    const uint64_t ones = UINT64_C(0x0101010101010101), high = UINT64_C(0x8080808080808080);
    uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
    return (((quote - ones) & ~quote) | ((backslash - ones) & ~backslash)) & high;
}
#endif

/* End (just past the closing quote) of the trusted string whose opening quote is in[start], or 0
 * when it has none: the first '"' not escaped by a backslash (a backslash escapes the next byte,
 * whatever it is, which is the old rule "preceded by an even number of backslashes"). */
HOT_INLINE size_t trusted_string_end(const uint8_t *in, size_t start, size_t n) {
    size_t q = start + 1;
#if defined(PASARELA_SSE2)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
#endif
    for (;;) {
#if defined(PASARELA_SSE2)
        while (q + 16 <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in + q));
            unsigned quotes = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote));
            unsigned backslashes = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash));
            if (quotes != 0 && (backslashes & ((quotes & (0u - quotes)) - 1)) == 0)
                return q + pasarela_lowest_bit(quotes) + 1; /* the first quote, no backslash before it */
            if (backslashes != 0) {
                q += pasarela_lowest_bit(backslashes) + 2; /* a backslash and the byte it escapes */
                continue;
            }
            q += 16;
        }
#else
        while (q + 8 <= n) {
            uint64_t w;
            memcpy(&w, in + q, 8);
            if (quote_or_backslash(w)) break;
            q += 8;
        }
#endif
        while (q < n && in[q] != '"' && in[q] != '\\') q++;
        if (q >= n) return 0;
        if (in[q] == '"') return q + 1;
        q += 2; /* a backslash and the byte it escapes */
    }
}

/* Copies k bytes; src has src_avail readable bytes and dst dst_avail writable ones (both >= k).
 * A short copy may write up to 16 bytes (garbage past k, overwritten later or past the result). */
HOT_INLINE void copy_token(uint8_t *dst, const uint8_t *src, size_t k, size_t src_avail, size_t dst_avail) {
    if (k <= 16 && src_avail >= 16 && dst_avail >= 16) {
        memcpy(dst, src, 16);
    } else if (k >= 16 && k <= 32) {
        memcpy(dst, src, 16);
        memcpy(dst + k - 16, src + k - 16, 16);
    } else {
        memcpy(dst, src, k);
    }
}

/* Copies the trusted string whose opening quote is in[start] to dst (room writable bytes, at least
 * what the string takes); returns its end, or 0 when it has no closing quote. */
HOT_INLINE size_t trusted_string(const uint8_t *in, size_t start, size_t n, uint8_t *dst, size_t room) {
    size_t end;
#if defined(PASARELA_SSE2)
    if (n - start >= 16 && room >= 16) { /* the common short string: one load, one store */
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in + start));
        unsigned quotes = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))) & ~1u;
        unsigned backslashes = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
        _mm_storeu_si128((__m128i *)(void *)dst, v);
        if (quotes != 0 && (backslashes & ((quotes & (0u - quotes)) - 1)) == 0)
            return start + pasarela_lowest_bit(quotes) + 1;
    }
#endif
    end = trusted_string_end(in, start, n);
    if (end != 0) copy_token(dst, in + start, end - start, n - start, room);
    return end;
}

/* Length of the number token at in[pos] when it is written as it is (token_pass's trusted mode),
 * else 0. The run of digits, '.' and '-' there is copied when the old trusted check copied it: it
 * has a point, is not followed by an exponent, does not end in ".0" and is not "-0." or "-0.x";
 * anything else went to the full parser, whose result is the integer itself when it has at most 15
 * digits and no leading zero (its range check only concerns 16 digits or more), or "0". */
HOT_INLINE size_t trusted_plain_number_length(const uint8_t *in, size_t pos, size_t n) {
    uint8_t c = in[pos];
#if defined(PASARELA_SSE2)
    if (n - pos >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in + pos));
        __m128i t = _mm_sub_epi8(v, _mm_set1_epi8('0'));
        unsigned digit = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(t, _mm_set1_epi8(9)),
                                                                    _mm_set1_epi8(9)));
        unsigned point = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
        unsigned minus = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
        unsigned stop = ~(digit | point | minus) & 0xFFFFu;
        if (stop != 0) {
            unsigned k = pasarela_lowest_bit(stop), run = (1u << k) - 1;
            unsigned exponent = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)),
                                                                           _mm_set1_epi8('e')));
            unsigned zero = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('0')));
            unsigned sign = minus & 1u;
            if ((exponent >> k) & 1u) return 0;
            if (point & run) { /* k >= 2: in[pos] is '-' or a digit */
                if ((point >> (k - 2)) & (zero >> (k - 1)) & 1u) return 0;
                if (sign && (zero & 2u) && k <= 3) return 0;
                return k;
            }
            if (minus & run & ~1u) return 0;
            if (k - sign >= 1 && k - sign <= 15 && !((zero >> sign) & 1u)) return k;
            return k == 1 && (zero & 1u) ? 1 : 0;
        }
    }
#endif
    size_t p = pos + (c == '-'), digits_start = p;
    while (p < n && is_digit(in[p])) p++;
    size_t digits = p - digits_start;
    if (p < n && (in[p] == '.' || in[p] == '-')) {
        int has_point = 0;
        while (p < n) {
            uint8_t d = in[p];
            if (d == '.') has_point = 1;
            else if (!is_digit(d) && d != '-') break;
            p++;
        }
        size_t k = p - pos;
        if (!has_point || (p < n && (in[p] == 'e' || in[p] == 'E'))) return 0;
        if (in[p - 1] == '0' && in[p - 2] == '.') return 0;
        if (c == '-' && in[pos + 1] == '0' && k <= 3) return 0;
        return k;
    }
    if (p < n && (in[p] == 'e' || in[p] == 'E')) return 0;
    if (digits >= 1 && digits <= 15 && in[digits_start] != '0') return p - pos;
    return p - pos == 1 && c == '0' ? 1 : 0;
}

#if defined(PASARELA_SSE2)
/* Bits of the 64 input bytes from base (bit i: in[base + i]; none past n): the classes the token
 * scans of the trusted path look up, so that finding where a token ends is a shift and a bit scan
 * instead of a chain of dependent loads (what limits a byte-at-a-time or vector-at-a-time scan). */
typedef struct byte_classes {
    size_t base;
    uint64_t quote, backslash, number, point, minus; /* '"', '\\', [0-9.-], '.', '-' */
} byte_classes;

static void classify(const uint8_t *in, size_t base, size_t n, byte_classes *b) {
    pasarela_classes m;
    pasarela_classes_sse2(in + base, n - base, &m);
    b->base = base;
    b->quote = m.quote;
    b->backslash = m.backslash;
    b->number = m.digit | m.point | m.minus;
    b->point = m.point;
    b->minus = m.minus;
}

#define UNCLASSIFIED ((size_t)0 - 1) /* classes do not reach the end of the token: classify again */

/* End of the string whose opening quote is in[pos] when classes shows its closing quote with no
 * backslash before it; 0 when a backslash comes first (the general scan decides), UNCLASSIFIED when
 * classes show no closing quote. */
HOT_INLINE size_t classified_string_end(const byte_classes *b, size_t pos) {
    size_t o = pos - b->base;
    if (o >= 64) return UNCLASSIFIED;
    uint64_t quotes = (b->quote >> o) >> 1, backslashes = (b->backslash >> o) >> 1;
    if (quotes == 0) return backslashes ? 0 : UNCLASSIFIED;
    if ((backslashes & ((quotes & (0 - quotes)) - 1)) != 0) return 0;
    return pos + 2 + pasarela_lowest_bit64(quotes);
}

/* The length of the number token at in[pos] when it is copied as it is, from classes (the rule of
 * trusted_plain_number_length); 0 when trusted_plain_number_length is to decide, UNCLASSIFIED when
 * classes do not show the end of the token. */
HOT_INLINE size_t classified_number_length(const byte_classes *b, const uint8_t *in, size_t pos, size_t n) {
    size_t o = pos - b->base;
    if (o >= 64) return UNCLASSIFIED;
    uint64_t stop = ~b->number >> o;
    if (stop == 0) return UNCLASSIFIED;
    unsigned k = pasarela_lowest_bit64(stop);
    uint64_t run = (UINT64_C(1) << k) - 1;
    uint8_t c = in[pos];
    if (pos + k < n && (in[pos + k] == 'e' || in[pos + k] == 'E')) return 0;
    if ((b->point >> o) & run) { /* k >= 2: in[pos] is '-' or a digit */
        if (in[pos + k - 1] == '0' && in[pos + k - 2] == '.') return 0;
        if (c == '-' && in[pos + 1] == '0' && k <= 3) return 0;
        return k;
    }
    if ((b->minus >> o) & run & ~UINT64_C(1)) return 0;
    unsigned sign = c == '-';
    if (k - sign >= 1 && k - sign <= 15 && in[pos + sign] != '0') return k;
    return 0; /* "0" and the rest: trusted_plain_number_length */
}
HOT_INLINE size_t trusted_string_classified(const uint8_t *in, size_t pos, size_t n, uint8_t *dst, size_t room,
                                            byte_classes *b) {
    size_t end = classified_string_end(b, pos);
    if (end == UNCLASSIFIED && b->base != pos) {
        classify(in, pos, n, b);
        end = classified_string_end(b, pos);
    }
    if (end == 0 || end == UNCLASSIFIED) return trusted_string(in, pos, n, dst, room);
    copy_token(dst, in + pos, end - pos, n - pos, room);
    return end;
}

HOT_INLINE size_t trusted_number_classified(const uint8_t *in, size_t pos, size_t n, byte_classes *b) {
    size_t k = classified_number_length(b, in, pos, n);
    if (k == UNCLASSIFIED && b->base != pos) {
        classify(in, pos, n, b);
        k = classified_number_length(b, in, pos, n);
    }
    if (k == 0 || k == UNCLASSIFIED) return trusted_plain_number_length(in, pos, n);
    return k;
}
#endif

/* At the closing brace of an object with an integer-like key: the trusted path records only where
 * each member starts, so first each member's order (from its key in the output, copied verbatim
 * from the input) and end (the next member starts just past the comma that ends it, the last ends
 * at the brace), then the common re-ordering. */
COLD_CALL int trusted_close_object(state *s, const frame *f, size_t top, size_t len) {
    member *m = s->members;
    for (size_t i = f->first; i < top; i++) {
        /* the key as it was copied: from its opening quote to the first quote no backslash escapes */
        size_t key_end = trusted_string_end(s->out, m[i].start, len);
        m[i].order = key_order(s->out + m[i].start + 1, key_end - m[i].start - 2, i - f->first);
        m[i].end = i + 1 < top ? m[i + 1].start - 1 : len - 1;
    }
    s->len = len;
    s->members_top = top;
    return close_object(s, f);
}

/* The general code the token pass calls where its fast scans do not decide: kept out of its loop. */
COLD_CALL int string_rest_cold(state *s) { return string_rest(s); }
COLD_CALL int number_token_cold(state *s) { return number_token(s); }

/* The token by token pass, written once for both modes: trusted is a constant in each of the two callers below,
 * and the compiler makes a copy of this body for each with only that mode's scans in it (the specialization is
 * checked: docs/performance.md). The state is in locals (writes through the uint8_t output pointer would
 * otherwise force it back to memory at every byte); whitespace is skipped where it is found (where a value, a key,
 * ':' or what follows a value is expected), which is where the general code would skip it.
 *   - checked (no flag): printable ASCII strings and numbers already in JavaScript form are copied after a check,
 *     the rest handed to the general string and number code at the very position, and with the very output, it
 *     would have had: the same output, statuses, error offsets and facts as a plain token by token parse. Every
 *     member is recorded, for the duplicate check and the re-ordering at its object's end.
 *   - trusted (PASARELA_JSON_SHORTEST_DIGITS): the same grammar, statuses and error offsets on any input, but a
 *     string is copied up to its first quote no backslash escapes (scanned with the 64-byte classes on SSE2),
 *     numbers already in JavaScript form are copied, and members are recorded only where they start: an object
 *     is looked at again only when it has an integer-like key (a trusted serializer writes no duplicates). */
HOT_INLINE int token_pass(state *s, const bool trusted) {
    frame stack[PASARELA_JSON_MAX_DEPTH];
    frame *f = NULL; /* stack[depth - 1] when depth > 0 */
    size_t depth = 0;
    int in_object = 0; /* f->is_object & 1 */
    const uint8_t *const in = s->in;
    const size_t n = s->n, cap = s->cap, members_cap = s->members_cap;
    uint8_t *const out = s->out;
    member *const members = s->members;
    size_t pos = s->pos, len = s->len, top = s->members_top;
    unsigned facts = 0;
    int rc;
#if defined(PASARELA_SSE2)
    byte_classes classes; /* (the trusted mode's) */
    classes.base = (size_t)0 - 64; /* nothing classified yet: pos - base >= 64 */
#define TRUSTED_STRING_END() trusted_string_classified(in, pos, n, out + len, cap - len, &classes)
#define TRUSTED_NUMBER_LENGTH() trusted_number_classified(in, pos, n, &classes)
#else
#define TRUSTED_STRING_END() trusted_string(in, pos, n, out + len, cap - len)
#define TRUSTED_NUMBER_LENGTH() trusted_plain_number_length(in, pos, n)
#endif
#define SKIP_WS() while (pos < n && is_ws(in[pos])) pos++
#define FAIL(code) do { rc = (code); goto done; } while (0)
    /* the string at pos, written; on error FAIL */
#define STRING() do { \
        if (trusted) { \
            size_t end_ = TRUSTED_STRING_END(); \
            if (end_ == 0) FAIL(PASARELA_E_JSON_SYNTAX); \
            len += end_ - pos; \
            pos = end_; \
            break; \
        } \
        size_t stop_ = pos, end_ = plain_string(in, pos, n, out + len, cap - len, &stop_); \
        if (end_ != 0) { \
            len += end_ - pos; \
            pos = end_; \
        } else { \
            s->len = len + (stop_ - pos); \
            s->pos = stop_; \
            rc = string_rest_cold(s); \
            pos = s->pos; \
            len = s->len; \
            if (rc != PASARELA_OK) FAIL(rc); \
        } \
    } while (0)
value:
    if (pos >= n) FAIL(PASARELA_E_JSON_SYNTAX);
    {
        uint8_t c = in[pos];
        if (c == '"') {
            STRING();
        } else if (c == '-' || is_digit(c)) {
            size_t k = trusted ? TRUSTED_NUMBER_LENGTH() : plain_number_length(in, pos, n);
            if (k != 0) {
                copy_token(out + len, in + pos, k, n - pos, cap - len);
                len += k;
                pos += k;
            } else {
                s->pos = pos;
                s->len = len;
                rc = number_token_cold(s);
                pos = s->pos;
                len = s->len;
                if (rc != PASARELA_OK) FAIL(rc);
            }
        } else if (c == '{' || c == '[') {
            if (depth == PASARELA_JSON_MAX_DEPTH) FAIL(PASARELA_E_JSON_UNSUPPORTED);
            f = &stack[depth++];
            in_object = c == '{';
            f->is_object = (uint32_t)in_object;
            f->first = (uint32_t)top;
            pos++;
            out[len++] = c;
            f->body_start = len;
            SKIP_WS();
            uint8_t close = (uint8_t)(c + 2); /* '}' or ']' */
            if (pos < n && in[pos] == close) {
                pos++;
                out[len++] = close;
                goto pop;
            }
            if (in_object) goto key;
            goto value;
        } else if (c == 't' && n - pos >= 4 && memcmp(in + pos, "true", 4) == 0) {
            memcpy(out + len, "true", 4);
            len += 4;
            pos += 4;
        } else if (c == 'f' && n - pos >= 5 && memcmp(in + pos, "false", 5) == 0) {
            memcpy(out + len, "false", 5);
            len += 5;
            pos += 5;
        } else if (c == 'n' && n - pos >= 4 && memcmp(in + pos, "null", 4) == 0) {
            memcpy(out + len, "null", 4);
            len += 4;
            pos += 4;
            facts |= PASARELA_JSON_FACT_NULL;
        } else if (is_ws(c)) {
            SKIP_WS();
            goto value;
        } else {
            FAIL(PASARELA_E_JSON_SYNTAX);
        }
    }
after_value:
    if (depth == 0) {
        SKIP_WS();
        FAIL(pos == n ? PASARELA_OK : PASARELA_E_JSON_SYNTAX);
    }
    if (pos >= n) FAIL(PASARELA_E_JSON_SYNTAX);
    {
        uint8_t d = in[pos++];
        if (!trusted && in_object) members[top - 1].end = len;
        if (d == ',') {
            out[len++] = ',';
            if (in_object) goto key;
            goto value;
        }
        if (d == (in_object ? '}' : ']')) {
            out[len++] = d;
            if (!in_object) goto pop;
            if (trusted) {
                /* without an integer-like key the members are already in JavaScript order (and a trusted
                 * serializer writes no duplicates): nothing to check or move */
                if ((f->is_object & HAS_INT_KEY) && (rc = trusted_close_object(s, f, top, len)) != PASARELA_OK)
                    FAIL(rc);
            } else {
                s->pos = pos;
                s->len = len;
                s->members_top = top;
                if ((rc = close_object(s, f)) != PASARELA_OK) FAIL(rc);
            }
            goto pop;
        }
        if (is_ws(d)) {
            pos--;
            SKIP_WS();
            goto after_value;
        }
        FAIL(PASARELA_E_JSON_SYNTAX); /* at the offset past the unexpected byte */
    }
pop:
    if (in_object) top = f->first;
    depth--;
    if (depth) {
        f = &stack[depth - 1];
        in_object = (int)(f->is_object & 1u);
    }
    goto after_value;
key:
    if (pos >= n) FAIL(PASARELA_E_JSON_SYNTAX);
    if (in[pos] != '"') {
        if (!is_ws(in[pos])) FAIL(PASARELA_E_JSON_SYNTAX);
        SKIP_WS();
        goto key;
    }
    if (top >= members_cap) FAIL(PASARELA_E_BUFFER_TOO_SMALL);
    {
        member *m = &members[top++];
        size_t start = len;
        STRING();
        const uint8_t *key = out + start + 1; /* as written; when key_len is 0, key[0] is the closing quote */
        size_t key_len = len - start - 2;
        m->start = start;
        if (trusted) { /* the rest of the record only if the object is re-ordered (trusted_close_object) */
            if (is_digit(key[0]) && key_order(key, key_len, 0) < NOT_INT_KEY) f->is_object |= HAS_INT_KEY;
        } else {
            m->key_len = (uint32_t)key_len;
            m->order = is_digit(key[0]) ? key_order(key, key_len, top - 1 - f->first)
                                        : NOT_INT_KEY + (top - 1 - f->first);
        }
        if (depth == 1 && key_len == 3 && memcmp(key, "key", 3) == 0) facts |= PASARELA_JSON_FACT_KEY;
        if (depth == 1 && key_len == 9 && memcmp(key, "__proto__", 9) == 0) facts |= PASARELA_JSON_FACT_PROTO;
    }
    if (pos >= n || in[pos] != ':') {
        SKIP_WS();
        if (pos >= n || in[pos] != ':') FAIL(PASARELA_E_JSON_SYNTAX);
    }
    pos++;
    out[len++] = ':';
    goto value;
done:
#undef TRUSTED_STRING_END
#undef TRUSTED_NUMBER_LENGTH
#undef SKIP_WS
#undef FAIL
#undef STRING
    s->pos = pos;
    s->len = len;
    s->members_top = top;
    s->facts |= facts; /* with what the number writer reported */
    return rc;
}

/* The two modes, each its own specialized copy of the pass. */
static int canonicalize_checked(state *s) { return token_pass(s, false); }
static int canonicalize_trusted(state *s) { return token_pass(s, true); }

/* ---- Text that is already canonical (PASARELA_JSON_SHORTEST_DIGITS) ----
 * A serializer's text is most often exactly what the trusted pass would write: that pass copies
 * strings and most numbers as they are, and re-writes only numbers with an exponent, ending in ".0",
 * "-0" and runs of 16 digits or more, drops whitespace and re-orders objects with integer-like keys.
 * This check finds out, 64 bytes at a time, that the text has none of those but the ".0" of integral
 * numbers (orjson's 100.0, which is also what a Decimal("100.00") becomes), no "key" or "__proto__"
 * member (whose facts need the depth) and no nesting deeper than PASARELA_JSON_MAX_DEPTH: then the
 * result is the text itself without those ".0" and the token by token pass is not needed. It works on classes of bytes
 * as bit masks (bit i: byte i of the block), where strings are (quotes not escaped by a backslash),
 * and, for the few strings that start with a digit, whether they are integer-like keys. It trusts the
 * text to be JSON, as the flag vouches: on other text it may accept what the trusted pass refuses. */
#if defined(PASARELA_SSE2) || defined(PASARELA_NEON)
static inline unsigned popcount64(uint64_t x) {
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
    return (unsigned)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* What one block leaves to the next: where it ends (in a string, after an escaping backslash), the
 * depth so far, and its masks that patterns spanning two blocks look back at. */
typedef struct previous_block {
    uint64_t open_quote, quote, digit, point, minus, zero, run2, run4, run8, e_or_underscore, y_or_underscore;
} previous_block;
typedef struct canonical_scan {
    uint64_t in_string, escape_next, nulls; /* nulls: a null literal seen */
    previous_block before;
    size_t depth;
} canonical_scan;

/* A scan at the start of a text. Zeroed a field at a time: gcc makes a memset of the whole struct a REP STOSQ,
 * whose start-up cost was a quarter of the check of a 64-byte text on Zen 3; these stores are a few vector
 * moves. */
HOT_INLINE void canonical_scan_start(canonical_scan *s) {
    s->in_string = s->escape_next = s->nulls = 0;
    s->before.open_quote = s->before.quote = s->before.digit = s->before.point = s->before.minus = 0;
    s->before.zero = s->before.run2 = s->before.run4 = s->before.run8 = 0;
    s->before.e_or_underscore = s->before.y_or_underscore = 0;
    s->depth = 0;
}

/* The ".0" of integral numbers (orjson writes 100.0 where JavaScript writes 100), dropped from the copy:
 * the offsets of their points, in order. Text with more of them goes to the token pass. */
#define POINT_ZEROS_MAX 32
typedef struct point_zeros {
    size_t at[POINT_ZEROS_MAX];
    size_t count;
} point_zeros;

HOT_INLINE int drop_point_zero(point_zeros *z, size_t at) {
    if (z->count == POINT_ZEROS_MAX) return 0;
    z->at[z->count++] = at;
    return 1;
}

/* Where the strings of a block are, from its quotes and backslashes (a backslash escapes the next byte,
 * whatever it is): returns the bits of opening quotes and of the strings' contents, *delimiters those of
 * the quotes no backslash escapes; *escape_next (the next block's first byte is escaped: 1) and
 * *in_string (the block ends inside a string: all ones) carry from one block to the next. */
HOT_INLINE uint64_t string_bits(uint64_t quote, uint64_t backslash, uint64_t *escape_next, uint64_t *in_string,
                                uint64_t *delimiters) {
    uint64_t escaped = *escape_next, escapes = backslash & ~*escape_next;
    *escape_next = 0;
    while (escapes != 0) {
        uint64_t bit = escapes & (0 - escapes);
        if (bit == UINT64_C(1) << 63) {
            *escape_next = 1;
            break;
        }
        escaped |= bit << 1;
        escapes &= ~(bit | bit << 1);
    }
    quote &= ~escaped;
    uint64_t inside = pasarela_prefix_xor(quote) ^ *in_string; /* opening quote and contents: 1; closing quote: 0 */
    *in_string = (uint64_t)0 - (inside >> 63);
    *delimiters = quote;
    return inside;
}

/* mask moved k bytes later (bit i: byte i - k), with the previous block's last k bits coming in */
#define FROM_BEFORE(now, before, k) (((now) << (k)) | ((before) >> (64 - (k))))

/* The block at in + base with classes m: 0 when the text may not be its own result (but for the ".0" in z). */
HOT_INLINE int canonical_block(canonical_scan *s, point_zeros *z, const uint8_t *in, size_t n, size_t base,
                               const pasarela_classes *m) {
    /* exponents, and the last letters of "key" and "__proto__" */
    uint64_t e_or_underscore = m->e | m->underscore, y_or_underscore = m->y | m->underscore;
    uint64_t valid = n - base < 64 ? (UINT64_C(1) << (n - base)) - 1 : ~UINT64_C(0);
    uint64_t quote, inside = string_bits(m->quote, m->backslash, &s->escape_next, &s->in_string, &quote);
    uint64_t outside = ~inside & ~quote & valid, open_quote = quote & inside;
    uint64_t digit = m->digit & outside, point = m->point & outside, minus = m->minus & outside,
             zero = m->zero & outside;
    /* whitespace to drop; an exponent; "-0" */
    if ((m->space & outside) != 0) return 0;
    if ((e_or_underscore & outside & FROM_BEFORE(digit, s->before.digit, 1)) != 0) return 0;
    if ((zero & FROM_BEFORE(minus, s->before.minus, 1)) != 0) return 0;
    /* ".0" ending a number: followed by none of the bytes the trusted pass reads as the number's (an exponent
     * is refused above; ".0" ending the text: canonical_end) */
    uint64_t after_point_zero = ~(m->digit | m->point | m->minus) & valid & FROM_BEFORE(zero, s->before.zero, 1) &
                                FROM_BEFORE(point, s->before.point, 2);
    while (after_point_zero != 0) {
        size_t at = base + pasarela_lowest_bit64(after_point_zero);
        after_point_zero &= after_point_zero - 1;
        if (!drop_point_zero(z, at - 2)) return 0;
    }
    /* a run of 16 digits or more (bit i of run_k: bytes i - k + 1 .. i are digits) */
    uint64_t run2 = digit & FROM_BEFORE(digit, s->before.digit, 1);
    uint64_t run4 = run2 & FROM_BEFORE(run2, s->before.run2, 2);
    uint64_t run8 = run4 & FROM_BEFORE(run4, s->before.run4, 4);
    if ((run8 & FROM_BEFORE(run8, s->before.run8, 8)) != 0) return 0;
    /* a member named "key" or "__proto__", at any depth (the trusted pass tells at which) */
    uint64_t named = m->colon & outside & FROM_BEFORE(quote, s->before.quote, 1) &
                     FROM_BEFORE(y_or_underscore, s->before.y_or_underscore, 2) &
                     FROM_BEFORE(e_or_underscore, s->before.e_or_underscore, 3);
    while (named != 0) {
        size_t colon = base + pasarela_lowest_bit64(named);
        named &= named - 1;
        if (colon >= 5 && memcmp(in + colon - 5, "\"key\"", 5) == 0) return 0;
        if (colon >= 11 && memcmp(in + colon - 11, "\"__proto__\"", 11) == 0) return 0;
    }
    /* a string that starts with a digit: an integer-like key? */
    uint64_t digit_first = m->digit & valid & FROM_BEFORE(open_quote, s->before.open_quote, 1);
    while (digit_first != 0) {
        size_t start = base + pasarela_lowest_bit64(digit_first) - 1, end = trusted_string_end(in, start, n);
        digit_first &= digit_first - 1;
        if (end == 0) return 0;
        if (end < n && in[end] == ':' && key_order(in + start + 1, end - start - 2, 0) < NOT_INT_KEY) return 0;
    }
    /* null literals (their fact), each checked whole, so that the fact is exact on any text */
    uint64_t nulls = m->n & outside;
    while (nulls != 0) {
        size_t at = base + pasarela_lowest_bit64(nulls);
        nulls &= nulls - 1;
        if (n - at < 4 || memcmp(in + at, "null", 4) != 0) return 0;
        s->nulls = 1;
    }
    /* nesting: never deeper than the depth before this block plus its opening brackets */
    unsigned opens = popcount64(m->open & outside), closes = popcount64(m->close & outside);
    if (s->depth + opens > PASARELA_JSON_MAX_DEPTH || s->depth + opens < closes) return 0;
    s->depth = s->depth + opens - closes;
    previous_block now = {open_quote, quote, digit, point, minus, zero, run2, run4, run8, e_or_underscore,
                          y_or_underscore}; /* in the order of previous_block's members */
    s->before = now;
    return 1;
}
#undef FROM_BEFORE

/* After the last block: 1 when the text is its own result but for the ".0" in z. */
HOT_INLINE int canonical_end(const canonical_scan *s, point_zeros *z, const uint8_t *in, size_t n) {
    if (s->in_string != 0 || s->depth != 0) return 0;
    return n < 2 || in[n - 1] != '0' || in[n - 2] != '.' || drop_point_zero(z, n - 2);
}

/* A check of the whole text, block by block, with the classes of the width of CLASSES: 1 (the facts, a
 * null literal, and the ".0" to drop in z) when the copy is the result, else 0. */
#define CANONICAL_CHECK(name, ATTRIBUTES, CLASSES)                                                            \
    static ATTRIBUTES int name(const uint8_t *in, size_t n, point_zeros *z, unsigned *facts) {                \
        canonical_scan s;                                                                                     \
        canonical_scan_start(&s);                                                                             \
        for (size_t base = 0; base < n; base += 64) {                                                         \
            pasarela_classes m;                                                                               \
            CLASSES(in + base, n - base, &m);                                                                 \
            if (!canonical_block(&s, z, in, n, base, &m)) return 0;                                           \
        }                                                                                                     \
        if (!canonical_end(&s, z, in, n)) return 0;                                                           \
        *facts = s.nulls != 0 ? PASARELA_JSON_FACT_NULL : 0;                                                  \
        return 1;                                                                                             \
    }
#if defined(PASARELA_SSE2)
CANONICAL_CHECK(trusted_text_is_canonical_sse2, , pasarela_classes_sse2)
#else
CANONICAL_CHECK(trusted_text_is_canonical_neon, , pasarela_classes_neon)
#endif
#if defined(PASARELA_X86_WIDE)
CANONICAL_CHECK(trusted_text_is_canonical_avx2, __attribute__((target("avx2"))), pasarela_classes_avx2)
#endif
#undef CANONICAL_CHECK

/* When the text is what the trusted pass would write but for the ".0" of integral numbers: writes that
 * result (the text without those) to out, its length to *out_len and its facts (a null literal) to *facts,
 * and returns 1; else 0, and the trusted pass is to decide. cpu: pasarela_cpu_features() bits (AVX2 classifies a
 * block in two instructions a class, SSE2 in four; AArch64 has NEON only). No AVX-512 instance: it made no
 * difference to a seal (docs/performance.md, issue 54), where AVX2's saves 2-6% against SSE2's. */
static int canonical_copy(unsigned cpu, const uint8_t *in, size_t n, uint8_t *out, size_t *out_len, unsigned *facts) {
    point_zeros z;
    int copy;
    if (n == 0) return 0;
    z.count = 0;
#if defined(PASARELA_X86_WIDE)
    if (cpu & PASARELA_CPU_AVX2) copy = trusted_text_is_canonical_avx2(in, n, &z, facts);
    else
#endif
#if defined(PASARELA_SSE2)
        copy = trusted_text_is_canonical_sse2(in, n, &z, facts);
#else
        copy = trusted_text_is_canonical_neon(in, n, &z, facts);
#endif
    (void)cpu;
    if (!copy) return 0;
    size_t from = 0, len = 0;
    for (size_t k = 0; k < z.count; k++) {
        memcpy(out + len, in + from, z.at[k] - from);
        len += z.at[k] - from;
        from = z.at[k] + 2;
    }
    memcpy(out + len, in + from, n - from);
    *out_len = len + n - from;
    return 1;
}
#else
static int canonical_copy(unsigned cpu, const uint8_t *in, size_t n, uint8_t *out, size_t *out_len, unsigned *facts) {
    (void)cpu;
    (void)in;
    (void)n;
    (void)out;
    (void)out_len;
    (void)facts;
    return 0; /* no vector classes on this target: the trusted pass decides */
}
#endif

int pasarela_json_canonicalize_cpu(unsigned cpu, const uint8_t *in, size_t n, unsigned flags, uint8_t *out,
                                  size_t out_cap, size_t *out_len, void *scratch, size_t scratch_cap,
                                  size_t *error_offset, unsigned *facts) {
    state s;
    int rc;
    if ((in == NULL && n > 0) || out == NULL || out_len == NULL || scratch == NULL)
        return PASARELA_E_INVALID_ARGUMENT;
    if (((uintptr_t)scratch & (sizeof(size_t) - 1)) != 0) return PASARELA_E_INVALID_ARGUMENT;
    if (n > PASARELA_MAX_JSON_LEN) return PASARELA_E_TOO_LARGE;
    if (out_cap < PASARELA_JSON_OUT_MAX(n) || scratch_cap < PASARELA_JSON_SCRATCH_SIZE(n))
        return PASARELA_E_BUFFER_TOO_SMALL;
    memset(&s, 0, sizeof s);
    s.in = in;
    s.n = n;
    s.flags = flags;
    s.out = out;
    s.cap = out_cap;
    s.members = (member *)scratch;
    s.members_cap = n / 4 + 4; /* a member takes at least 4 input bytes ("":0) */
    s.temp = (uint8_t *)scratch + s.members_cap * sizeof(member);
    s.temp_cap = scratch_cap - s.members_cap * sizeof(member);
    if (flags & PASARELA_JSON_STRINGIFIED) { /* the writer's text, already canonical: as it is */
        if (n > 0) memcpy(out, in, n);
        *out_len = n;
        if (error_offset) *error_offset = 0;
        if (facts) *facts = 0;
        return PASARELA_OK;
    }
    if ((flags & (PASARELA_JSON_SHORTEST_DIGITS | PASARELA_JSON_NO_SHORTCUT)) == 0 &&
        pasarela_json_checked_canonical(cpu, in, n, scratch, scratch_cap, &s.facts)) { /* json_checked.c */
        memcpy(out, in, n);
        *out_len = n;
        if (error_offset) *error_offset = 0;
        if (facts) *facts = s.facts;
        return PASARELA_OK;
    }
    if ((flags & (PASARELA_JSON_SHORTEST_DIGITS | PASARELA_JSON_NO_SHORTCUT)) == PASARELA_JSON_SHORTEST_DIGITS &&
        canonical_copy(cpu, in, n, out, out_len, &s.facts)) {
        if (error_offset) *error_offset = 0;
        if (facts) *facts = s.facts;
        return PASARELA_OK;
    }
    rc = (flags & PASARELA_JSON_SHORTEST_DIGITS) ? canonicalize_trusted(&s) : canonicalize_checked(&s);
    *out_len = rc == PASARELA_OK ? s.len : 0;
    if (error_offset) *error_offset = rc == PASARELA_OK ? 0 : s.pos;
    if (facts) *facts = s.facts;
    return rc;
}

int pasarela_json_canonicalize(const uint8_t *in, size_t n, unsigned flags, uint8_t *out, size_t out_cap,
                               size_t *out_len, void *scratch, size_t scratch_cap, size_t *error_offset,
                               unsigned *facts) {
    return pasarela_json_canonicalize_cpu(0, in, n, flags, out, out_cap, out_len, scratch, scratch_cap, error_offset,
                                          facts);
}

/* Appends json[start, end) to items as the next item: 0 when it is empty or one too many. */
static int array_item(const uint8_t *json, size_t start, size_t end, uint8_t *items, size_t *lens, size_t max_items,
                      size_t *count, size_t *used) {
    if (end == start || *count == max_items) return 0;
    memcpy(items + *used, json + start, end - start);
    lens[(*count)++] = end - start;
    *used += end - start;
    return 1;
}

/* Offset of the first '"' or '\\' in in[i, end) (the end of a string's plain run), else end. */
HOT_INLINE size_t string_run_end(const uint8_t *in, size_t i, size_t end) {
#if defined(PASARELA_SSE2)
    for (; end - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                              _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
        if (m != 0) return i + pasarela_lowest_bit(m);
    }
#endif
    while (i < end && in[i] != '"' && in[i] != '\\') i++;
    return i;
}

/* The bytes at which the item scan of pasarela_json_array_items stops (public data: a table is fine). */
static const uint8_t array_scan_stop[256] = {['"'] = 1, ['{'] = 1, ['['] = 1, ['}'] = 1, [']'] = 1, [','] = 1};

/* pasarela_json_array_items a byte at a time (the stops above): what targets without SSE2 or NEON run, and
 * what the fuzz target holds the block scan to. */
size_t pasarela_json_array_items_portable(const uint8_t *json, size_t n, uint8_t *items, size_t *lens,
                                          size_t max_items) {
    size_t count = 0, depth = 0, start = 1, used = 0, last = n - 1; /* json[last]: the array's ']' */
    if (json == NULL || items == NULL || lens == NULL || n < 2 || json[0] != '[' || json[last] != ']') return 0;
    for (size_t i = 1; i < last; i++) {
        while (i < last && !array_scan_stop[json[i]]) i++;
        if (i == last) break;
        uint8_t c = json[i];
        if (c == '"') { /* to the closing quote: a backslash takes the byte after it along */
            for (i = string_run_end(json, i + 1, last); i < last && json[i] == '\\';)
                i = string_run_end(json, i + 2 < last ? i + 2 : last, last);
            if (i == last) return 0;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return 0; /* a closer without its opener */
            depth--;
        } else if (depth == 0) { /* a comma between two items */
            if (!array_item(json, start, i, items, lens, max_items, &count, &used)) return 0;
            start = i + 1;
        }
    }
    if (depth != 0 || !array_item(json, start, last, items, lens, max_items, &count, &used)) return 0;
    return count;
}

#if defined(PASARELA_SSE2) || defined(PASARELA_NEON)
/* The same split 64 bytes at a time: where strings are from the block's quotes and backslashes (as the
 * check for canonical text finds them), then only the brackets outside strings are visited, one by one,
 * for the depth; the commas between them at depth 0 separate the items. On JSON text the same result as
 * the byte scan (which the fuzz target checks); on other text (a backslash outside strings) it may split
 * differently, still into consecutive pieces between commas or none. */
static size_t array_items_by_blocks(const uint8_t *json, size_t n, uint8_t *items, size_t *lens, size_t max_items) {
    size_t count = 0, depth = 0, start = 1, used = 0, last = n - 1;
    uint64_t escape_next = 0, in_string = 0;
    for (size_t base = 1; base < last; base += 64) {
        pasarela_classes m;
        uint64_t delimiters;
        pasarela_classes_base(json + base, last - base, &m);
        uint64_t inside = string_bits(m.quote, m.backslash, &escape_next, &in_string, &delimiters);
        uint64_t outside = ~inside & ~delimiters, brackets = (m.open | m.close) & outside, top = 0;
        unsigned from = 0; /* bits from here on are at the depth reached */
        while (brackets != 0) {
            unsigned b = pasarela_lowest_bit64(brackets);
            brackets &= brackets - 1;
            if (depth == 0) top |= ((UINT64_C(1) << b) - 1) & ~((UINT64_C(1) << from) - 1);
            if ((m.open >> b) & 1u) {
                depth++;
            } else if (depth-- == 0) {
                return 0; /* a closer without its opener */
            }
            from = b + 1;
        }
        if (depth == 0 && from < 64) top |= ~UINT64_C(0) << from;
        for (uint64_t separators = m.comma & outside & top; separators != 0; separators &= separators - 1) {
            size_t at = base + pasarela_lowest_bit64(separators);
            if (!array_item(json, start, at, items, lens, max_items, &count, &used)) return 0;
            start = at + 1;
        }
    }
    if (in_string != 0 || depth != 0 || !array_item(json, start, last, items, lens, max_items, &count, &used)) return 0;
    return count;
}
#endif

size_t pasarela_json_array_items(const uint8_t *json, size_t n, uint8_t *items, size_t *lens, size_t max_items) {
#if defined(PASARELA_SSE2) || defined(PASARELA_NEON)
    if (json == NULL || items == NULL || lens == NULL || n < 2 || json[0] != '[' || json[n - 1] != ']') return 0;
    return array_items_by_blocks(json, n, items, lens, max_items);
#else
    return pasarela_json_array_items_portable(json, n, items, lens, max_items);
#endif
}
