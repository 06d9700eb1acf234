/*
 * Whether JSON text a client sent is already exactly what JavaScript's JSON.stringify(JSON.parse(text)) writes,
 * checked 64 bytes at a time: the canonicalizer's question (json.c, flags 0) answered without reading a token at
 * a time, for the text a JavaScript client sends, which is its own canonical form.
 *
 * Unlike json.c's check of a serializer's text (PASARELA_JSON_SHORTEST_DIGITS), which trusts the text to be JSON,
 * this one trusts nothing: it says yes only for a text that is a JSON object whose every byte it has checked, and
 * otherwise no, leaving the verdict (and its status, offset and facts) to the token by token pass. It says yes to
 * the plain text clients write and no to anything else, which the token pass then decides:
 *   - grammar: no whitespace; every byte outside strings is a bracket, ',' ':', or part of a number or literal, and
 *     each follows what JSON lets it follow (a ':' a key, a value a ':' '[' or ',', a ',' or closer a value ...);
 *     the brackets match, a ',' in an object is followed by a key and in an array by a value, and the top-level
 *     object closes at the last byte;
 *   - strings: no backslash (a text with an escape goes to the token pass), no control byte, UTF-8;
 *   - numbers as Number.prototype.toString writes them with 15 significant digits or fewer: -?(0|[1-9][0-9]*), then
 *     optionally '.' and digits not ending in '0'; no "-0", no exponent, no 6 zeros after a point (JavaScript
 *     writes 1e-7), at most 15 characters (so at most 15 digits: such a number is its own shortest form);
 *   - literals true, false, null, each compared whole;
 *   - objects: no duplicate key (JSON.parse keeps the last value at the first position), no key that starts with a
 *     digit (integer-like keys are re-ordered), no "key" or "__proto__" member at the top level (facts the token
 *     pass reports), no nesting deeper than PASARELA_JSON_MAX_DEPTH.
 * The grammar is checked on bit masks of the block's byte classes (bit i: byte i), as rules between a byte and
 * the one before it; only brackets and colons are visited one by one (the nesting, and the keys of each object).
 * The classes come from SSE2, AVX2, or AVX-512 BW, whose compares give a class's 64-bit mask in one instruction.
 * AVX-512 on every CPU that has it, Intel's too (unlike Base64's, PASARELA_CPU_AVX512_SHORT): its
 * 512-bit work here is compares, not the multiplies and permutes that slow an Intel core's clock most, and measured
 * whole there (scripts/compare_trees.py) it pays, the seal after it unchanged (docs/performance.md, "Intel's
 * AVX-512 in short work").
 * The fuzz target and the tests hold it to the token by token pass: same result on every text it says yes to.
 */
#include <string.h>

#include "byte_classes.h"
#include "internal.h"
#include "utf8.h"

#define JSON_CHECKED_MAX_DEPTH 1000 /* json.c's PASARELA_JSON_MAX_DEPTH */

#if defined(PASARELA_X86_WIDE)
#include <immintrin.h>

#define HOT static inline __attribute__((always_inline))
/* (BMI1 and BMI2 with AVX2: PASARELA_CPU_AVX2 requires them. andn, blsr, tzcnt, shlx and bzhi each do in one
 * instruction what the mask arithmetic of the rules otherwise takes two or three for.) */
#define AVX2_FN __attribute__((target("avx2,bmi,bmi2")))
#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx2,bmi,bmi2")))

/* Whether the 64 bytes at p are all printable ASCII but '"' and '\\': the inside of a long string, which needs no
 * more than that. */
static inline __attribute__((always_inline)) int plain_sse2(const uint8_t *p) {
    __m128i stop = _mm_setzero_si128();
    for (unsigned i = 0; i < 64; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        stop = _mm_or_si128(stop, _mm_or_si128(_mm_cmpgt_epi8(_mm_set1_epi8(' '), v), /* controls, >= 0x80 */
                                               _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                            _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')))));
    }
    return _mm_movemask_epi8(stop) == 0;
}

static inline __attribute__((always_inline)) AVX2_FN int plain_avx2(const uint8_t *p) {
    __m256i stop = _mm256_setzero_si256();
    for (unsigned i = 0; i < 64; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        stop = _mm256_or_si256(stop, _mm256_or_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(' '), v),
                                                     _mm256_or_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('"')),
                                                                     _mm256_cmpeq_epi8(v, _mm256_set1_epi8('\\')))));
    }
    return _mm256_testz_si256(stop, stop);
}

static inline __attribute__((always_inline)) AVX512_FN int plain_avx512(const uint8_t *p) {
    __m512i v = _mm512_loadu_si512((const void *)p);
    return (_mm512_cmplt_epi8_mask(v, _mm512_set1_epi8(' ')) | /* controls, >= 0x80 */
            _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('"')) | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\\'))) == 0;
}

HOT unsigned highest(uint64_t m) { return 63u - (unsigned)__builtin_clzll(m); }

/* runs + marks (+ *carry from the block before), *carry set to what goes to the next block: each run of ones in
 * runs with a mark in it is cleared from the mark on and the bit just past the run set. */
HOT uint64_t add_carrying(uint64_t runs, uint64_t marks, uint64_t *carry) {
    uint64_t sum = runs + marks, total = sum + *carry;
    *carry = (uint64_t)(sum < runs) | (uint64_t)(total < sum);
    return total;
}

/* A key of the object being read: where it starts and how long it is, and its first 8 bytes and length mixed. */
typedef struct key_entry {
    uint32_t start, len;
    uint64_t print;
} key_entry;

/* What one block leaves to the next. */
typedef struct checked_scan {
    uint64_t in_string;                                           /* all ones: the block ended inside a string */
    uint64_t carry_key, carry_point;                              /* of add_carrying */
    uint64_t object;                                              /* all ones: the innermost container is an object */
    /* the previous block's masks, which the rules look back at */
    uint64_t scalar, value_ahead, brace_open, comma, close_quote, value_end, opener, minus, point, digit, zero_first,
        zero_after_minus, zero, letter, run2, run4, run8, zero2;
    uint64_t key_string; /* the closing quotes of the strings that are to be keys */
    size_t last_open_quote, depth, keys;
    int utf8, nulls;
} checked_scan;

/* The keys of one object, keys[0, count): 1 when no two are the same; 0 when two are, or when a slot's probe goes
 * past 8 others (keys made to collide in their prints: the token pass, whose sort bounds that work, decides). */
static int keys_differ(const uint8_t *in, const key_entry *keys, size_t count, uint32_t *table) {
    if (count <= 16) {
        for (size_t i = 1; i < count; i++)
            for (size_t j = 0; j < i; j++)
                if (keys[i].print == keys[j].print && keys[i].len == keys[j].len &&
                    memcmp(in + keys[i].start, in + keys[j].start, keys[i].len) == 0)
                    return 0;
        return 1;
    }
    size_t size = 32;
    while (size < 2 * count) size *= 2;
    memset(table, 0, size * sizeof *table);
    for (size_t i = 0; i < count; i++) {
        size_t slot = (size_t)((keys[i].print * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (size - 1);
        for (unsigned probes = 0; table[slot] != 0; slot = (slot + 1) & (size - 1)) {
            const key_entry *other = &keys[table[slot] - 1];
            if (++probes > 8) return 0;
            if (other->print == keys[i].print && other->len == keys[i].len &&
                memcmp(in + other->start, in + keys[i].start, keys[i].len) == 0)
                return 0;
        }
        table[slot] = (uint32_t)(i + 1);
    }
    return 1;
}

/* The first 8 bytes of in[start, start + len) (fewer: zeros after them), little-endian. */
HOT uint64_t key_word(const uint8_t *in, size_t n, size_t start, size_t len) {
    if (start + 8 <= n) {
        uint64_t word;
        memcpy(&word, in + start, 8);
        return len < 8 ? word & ((UINT64_C(1) << (8 * len)) - 1) : word; /* (x86-64: little-endian) */
    }
    uint64_t tail = 0; /* (a word of its own: one whose address is taken GCC zeroes on the stack for every key) */
    memcpy(&tail, in + start, len < 8 ? len : 8);
    return tail;
}

/* A key's print: a key of 8 bytes or fewer is its word (its bytes, none of them 0: the check sees no control byte
 * in a string), so two such keys have the same print only when they are the same key; a longer key's first 8
 * bytes (word), last 8 and length, mixed (keys such as "customer_city" and "customer_name" differ only in their
 * last bytes). */
HOT uint64_t key_print(const uint8_t *in, size_t start, size_t len, uint64_t word) {
    uint64_t last;
    if (len <= 8) return word;
    memcpy(&last, in + start + len - 8, 8);
    return (word ^ (last * UINT64_C(0x9E3779B97F4A7C15))) + (uint64_t)len * UINT64_C(0x100000001B3);
}

/* Whether the prints of keys[0, count) (2 to 4 keys) all differ: then so do the keys. When two are the same, the
 * keys may still differ (long keys' prints collide): keys_differ decides. Compared all at once, without a call. */
HOT int prints_differ(const key_entry *keys, size_t count) {
    uint64_t p0 = keys[0].print, p1 = keys[1].print;
    int same = p0 == p1;
    if (count > 2) {
        uint64_t p2 = keys[2].print;
        same |= (p0 == p2) | (p1 == p2);
        if (count > 3) {
            uint64_t p3 = keys[3].print;
            same |= (p0 == p3) | (p1 == p3) | (p2 == p3);
        }
    }
    return !same;
}

/* Where the nesting and the keys are looked at: the closers, openers and colons of the block at base, in order.
 * Returns the mask of the bytes whose innermost container is an object (it changes just after each bracket), or
 * sets *bad. */
HOT uint64_t visit(checked_scan *s, const uint8_t *in, size_t n, size_t base, uint64_t open, uint64_t brace_open,
                   uint64_t close, uint64_t brace_close, uint64_t colon, uint64_t open_quote, uint8_t *is_object,
                   uint32_t *object_keys, key_entry *keys, uint32_t *table, int *bad) {
    uint64_t object = s->object, events = open | close | colon;
    /* in locals: keys[]'s stores may alias s's fields (4-5% of the AVX-512 check at 16 KiB; AVX2's: no different) */
    size_t depth = s->depth, nkeys = s->keys;
    int inside_object = object != 0;
    while (events != 0) {
        unsigned b = pasarela_lowest_bit64(events);
        uint64_t bit = UINT64_C(1) << b;
        events &= events - 1;
        if (colon & bit) { /* a key ends at b - 1: from the quote that opened it */
            uint64_t before = open_quote & (bit - 1);
            size_t start = (before != 0 ? base + highest(before) : s->last_open_quote) + 1;
            size_t len = base + b - 1 - start;
            uint64_t word = key_word(in, n, start, len);
            if ((unsigned)((word & 0xFF) - '0') <= 9) { /* maybe integer-like: re-ordered */
                *bad = 1;
                return 0;
            }
            if (depth == 1 && ((len == 3 && memcmp(in + start, "key", 3) == 0) ||
                                  (len == 9 && memcmp(in + start, "__proto__", 9) == 0))) {
                *bad = 1;
                return 0;
            }
            keys[nkeys].start = (uint32_t)start;
            keys[nkeys].len = (uint32_t)len;
            keys[nkeys].print = key_print(in, start, len, word);
            nkeys++;
            continue;
        }
        int now_object;
        if (open & bit) {
            if (depth + 1 >= JSON_CHECKED_MAX_DEPTH) { /* (json.c's limit, with a level to spare) */
                *bad = 1;
                return 0;
            }
            now_object = (brace_open & bit) != 0;
            is_object[depth] = (uint8_t)now_object;
            object_keys[depth] = (uint32_t)nkeys;
            depth++;
        } else {
            int brace = (brace_close & bit) != 0;
            if (depth == 0 || is_object[depth - 1] != brace) {
                *bad = 1;
                return 0;
            }
            depth--;
            if (brace) {
                size_t first = object_keys[depth];
                size_t count = nkeys - first;
                if (count > 1 && !(count <= 4 && prints_differ(keys + first, count)) &&
                    !keys_differ(in, keys + first, count, table)) {
                    *bad = 1;
                    return 0;
                }
                nkeys = first;
            }
            if (depth == 0 && base + b != n - 1) { /* the top-level object closes at the last byte */
                *bad = 1;
                return 0;
            }
            now_object = depth > 0 && is_object[depth - 1];
        }
        if (now_object != inside_object) {
            object ^= (~UINT64_C(0) << b) << 1;
            inside_object = now_object;
        }
    }
    s->object = inside_object ? ~UINT64_C(0) : 0;
    s->depth = depth;
    s->keys = nkeys;
    return object;
}

/* mask moved k bytes later (bit i: byte i - k), the previous block's last k bits coming in */
#define BEFORE(now, field, k) (((now) << (k)) | (s->field >> (64 - (k))))

/* The block at in + base with classes m: 0 when the text is not known to be canonical. */
HOT int checked_block(checked_scan *s, const uint8_t *in, size_t n, size_t base, const pasarela_classes *m,
                      uint8_t *is_object, uint32_t *object_keys, key_entry *keys, uint32_t *table) {
    uint64_t valid = n - base < 64 ? (UINT64_C(1) << (n - base)) - 1 : ~UINT64_C(0);
    if ((m->backslash | m->control) != 0) return 0; /* an escape, or a control byte (outside strings too) */
    s->utf8 |= m->high != 0; /* (outside strings, such bytes are in no class the rules allow there) */
    uint64_t inside = pasarela_prefix_xor(m->quote) ^ s->in_string; /* opening quote and contents: 1; closing quote: 0 */
    s->in_string = (uint64_t)0 - (inside >> 63);
    uint64_t open_quote = m->quote & inside, close_quote = m->quote & ~inside;
    uint64_t outside = ~inside & ~m->quote & valid;
    uint64_t brace_open = m->open & m->brace & outside, brace_close = m->close & m->brace & outside;
    uint64_t bracket_open = m->open & ~m->brace & outside, bracket_close = m->close & ~m->brace & outside;
    uint64_t comma = m->comma & outside, colon = m->colon & outside;
    uint64_t digit = m->digit & outside, zero = m->zero & outside, point = m->point & outside,
             minus = m->minus & outside, letter = m->letter & outside;
    uint64_t scalar = digit | point | minus | letter;
    if ((outside & ~(scalar | m->open | m->close | comma | colon)) != 0) return 0; /* whitespace, '+', 'E' ... */

    uint64_t bad = 0;
    uint64_t opener = brace_open | bracket_open, closer = brace_close | bracket_close;
    uint64_t value_ahead = colon | bracket_open | comma, value_end = closer | close_quote; /* (for the next byte) */
    uint64_t scalar_before = BEFORE(scalar, scalar, 1), first = scalar & ~scalar_before;
    uint64_t after_scalar = scalar_before & ~scalar & valid;
    uint64_t value_may_follow = BEFORE(value_ahead, value_ahead, 1);
    uint64_t after_brace_open = BEFORE(brace_open, brace_open, 1), after_comma = BEFORE(comma, comma, 1);
    uint64_t after_close_quote = BEFORE(close_quote, close_quote, 1);
    uint64_t after_value = BEFORE(value_end, value_end, 1) | after_scalar;
    /* what each byte outside strings may follow (a closer of the other kind than its opener: visit) */
    bad |= brace_open & ~(value_may_follow | (base == 0 ? 1u : 0u));
    bad |= (bracket_open | first) & ~value_may_follow;
    bad |= open_quote & ~(value_may_follow | after_brace_open);
    bad |= colon & ~after_close_quote;
    bad |= comma & ~after_value;
    bad |= closer & ~(after_value | BEFORE(opener, opener, 1));
    if (base == 0) bad |= ~brace_open & 1u; /* a text that is an object */
    /* numbers: '-' first and before a digit; a point between digits, one a number; no leading zero, no "-0" */
    uint64_t minus_before = BEFORE(minus, minus, 1), point_before = BEFORE(point, point, 1);
    bad |= minus & ~first;
    bad |= (minus_before | point_before) & valid & ~digit;
    bad |= point & ~BEFORE(digit, digit, 1);
    uint64_t zero_first = zero & (first | minus_before), zero_after_minus = zero & minus_before;
    bad |= BEFORE(zero_first, zero_first, 1) & digit;
    bad |= BEFORE(zero_after_minus, zero_after_minus, 1) & valid & ~point;
    uint64_t fraction = add_carrying(scalar, point, &s->carry_point) ^ scalar; /* each point to its number's end */
    uint64_t zero_before = BEFORE(zero, zero, 1);
    bad |= point & ~fraction;                       /* a second point */
    bad |= after_scalar & fraction & zero_before;   /* a fraction ending in '0' */
    /* letters: in runs that start with one (the literals below are checked whole) */
    bad |= scalar & ~first & (letter ^ BEFORE(letter, letter, 1));
    /* 16 characters or more in a number; 6 zeros after a point */
    uint64_t run2 = scalar & scalar_before;
    uint64_t run4 = run2 & BEFORE(run2, run2, 2);
    uint64_t run8 = run4 & BEFORE(run4, run4, 4);
    bad |= run8 & BEFORE(run8, run8, 8);
    uint64_t zero2 = zero & zero_before;
    bad |= zero2 & BEFORE(zero2, zero2, 2) & BEFORE(zero2, zero2, 4) & BEFORE(point, point, 6);
    if (bad != 0) return 0;

    int nesting_bad = 0;
    uint64_t object = visit(s, in, n, base, brace_open | bracket_open, brace_open, brace_close | bracket_close,
                            brace_close, colon, open_quote, is_object, object_keys, keys, table, &nesting_bad);
    if (nesting_bad) return 0;
    /* keys: a string is one (a ':' follows it) when it follows a '{', or a ',' in an object, and otherwise not; the
     * string's container is that of its opening quote, carried to its closing quote */
    uint64_t key_open = open_quote & (after_brace_open | (after_comma & object));
    uint64_t key_string = (add_carrying(inside, key_open, &s->carry_key) ^ inside) & close_quote;
    bad |= after_close_quote & valid & (colon ^ BEFORE(key_string, key_string, 1));
    /* a ':' only in an object, and there no value after a ',' */
    bad |= colon & ~object;
    bad |= (opener | first) & after_comma & object;
    if (bad != 0) return 0;
    /* literals, each compared whole */
    for (uint64_t starts = letter & first; starts != 0; starts &= starts - 1) {
        size_t at = base + pasarela_lowest_bit64(starts), len;
        if (n - at >= 5 && memcmp(in + at, "false", 5) == 0) {
            len = 5;
        } else if (n - at >= 4 && (memcmp(in + at, "true", 4) == 0 || memcmp(in + at, "null", 4) == 0)) {
            len = 4;
            if (in[at] == 'n') s->nulls = 1;
        } else {
            return 0;
        }
        if (at + len < n && (unsigned)(in[at + len] - 'a') <= 25) return 0;
    }
    if (open_quote != 0) s->last_open_quote = base + highest(open_quote);
    s->scalar = scalar;
    s->value_ahead = value_ahead;
    s->brace_open = brace_open;
    s->comma = comma;
    s->close_quote = close_quote;
    s->value_end = value_end;
    s->opener = opener;
    s->minus = minus;
    s->point = point;
    s->digit = digit;
    s->zero_first = zero_first;
    s->zero_after_minus = zero_after_minus;
    s->zero = zero;
    s->letter = letter;
    s->run2 = run2;
    s->run4 = run4;
    s->run8 = run8;
    s->zero2 = zero2;
    s->key_string = key_string;
    return 1;
}
#undef BEFORE

/* A whole block inside a string, of plain bytes (PLAIN): nothing for the next block to look back at. */
HOT void plain_block(checked_scan *s) {
    s->scalar = s->value_ahead = s->brace_open = s->comma = s->close_quote = s->value_end = s->opener = 0;
    s->minus = s->point = s->digit = s->zero_first = s->zero_after_minus = s->zero = s->letter = 0;
    s->run2 = s->run4 = s->run8 = s->zero2 = s->key_string = 0;
}

/* The whole check with the classes of CLASSES, and PLAIN for blocks inside a string. */
#define CHECKED_TEXT(name, ATTRIBUTES, CLASSES, PLAIN)                                                        \
    static ATTRIBUTES int name(const uint8_t *in, size_t n, key_entry *keys, uint32_t *table, unsigned *facts) { \
        checked_scan s;                                                                                       \
        uint8_t is_object[JSON_CHECKED_MAX_DEPTH];                                                            \
        uint32_t object_keys[JSON_CHECKED_MAX_DEPTH];                                                         \
        memset(&s, 0, sizeof s);                                                                              \
        for (size_t base = 0; base < n; base += 64) {                                                         \
            pasarela_classes m;                                                                               \
            /* (a string already 32 bytes long: a long one's inside, likely plain) */                        \
            if (s.in_string != 0 && base - s.last_open_quote > 32 && n - base >= 64 && PLAIN(in + base)) {   \
                plain_block(&s);                                                                              \
                continue;                                                                                     \
            }                                                                                                 \
            CLASSES(in + base, n - base, &m);                                                                 \
            if (!checked_block(&s, in, n, base, &m, is_object, object_keys, keys, table)) return 0;           \
        }                                                                                                     \
        if (s.in_string != 0 || s.depth != 0) return 0;                                                       \
        if (s.utf8 && pasarela_utf8_invalid_at(in, n) != n) return 0;                                         \
        *facts = s.nulls ? PASARELA_JSON_FACT_NULL : 0;                                                       \
        return 1;                                                                                             \
    }
CHECKED_TEXT(checked_sse2, , pasarela_classes_sse2, plain_sse2)
CHECKED_TEXT(checked_avx2, AVX2_FN, pasarela_classes_avx2, plain_avx2)
CHECKED_TEXT(checked_avx512, AVX512_FN, pasarela_classes_avx512, plain_avx512)
#undef CHECKED_TEXT
#undef AVX2_FN
#undef AVX512_FN

int pasarela_json_checked_canonical(unsigned cpu, const uint8_t *in, size_t n, void *scratch, size_t scratch_cap,
                                    unsigned *facts) {
    /* scratch: a key_entry for each key the text can have (each has a string and a colon of its own when visit
     * records it: 3 bytes), then a table of twice as many slots (rounded up to a power of two) */
    size_t max_keys = n / 3 + 2, slots = 32;
    while (slots < 2 * max_keys) slots *= 2;
    if (n < 2 || n > UINT32_MAX || ((uintptr_t)scratch & 7u) != 0 ||
        scratch_cap < max_keys * sizeof(key_entry) + slots * sizeof(uint32_t))
        return 0;
    key_entry *keys = (key_entry *)scratch;
    uint32_t *table = (uint32_t *)(void *)(keys + max_keys);
    if (cpu & PASARELA_CPU_AVX512) return checked_avx512(in, n, keys, table, facts); /* (on Intel too: above) */
    if (cpu & PASARELA_CPU_AVX2) return checked_avx2(in, n, keys, table, facts);
    return checked_sse2(in, n, keys, table, facts);
}
#else
int pasarela_json_checked_canonical(unsigned cpu, const uint8_t *in, size_t n, void *scratch, size_t scratch_cap,
                                    unsigned *facts) {
    (void)cpu;
    (void)in;
    (void)n;
    (void)scratch;
    (void)scratch_cap;
    (void)facts;
    return 0; /* no block check on this target: the token by token pass decides */
}
#endif
