/* The byte classes of a 64-byte block of JSON text as bit masks (bit i: byte i), for the scans that work on masks
 * instead of a byte at a time: json.c's (a serializer's text: the trusted token pass, its check of text that is
 * already canonical, the split of an array's items) and json_checked.c's (a client's text). Not part of the public
 * API.
 *
 * One classifier for all of them, one instance an instruction set: each computes every class below, and a scan
 * reads those it needs. The instances are always inlined into the scan, whose classes are a local, so the compiler
 * drops the classes it does not read (checked on the generated code: docs/performance.md). Bytes past the readable
 * ones are in no class. */
#ifndef PASARELA_BYTE_CLASSES_H
#define PASARELA_BYTE_CLASSES_H

#include <string.h>

#include "internal.h"

#if defined(PASARELA_SSE2)
#include <emmintrin.h>
#elif defined(PASARELA_NEON)
#include <arm_neon.h>
#endif
#if defined(PASARELA_X86_WIDE)
#include <immintrin.h>
#endif

typedef struct pasarela_classes {
    uint64_t quote, backslash, colon, comma, point, minus, zero, n, y, underscore;
    uint64_t digit;   /* 0-9 */
    uint64_t letter;  /* a-z */
    uint64_t e;       /* 'e' or 'E' */
    uint64_t open;    /* '{' or '[' */
    uint64_t close;   /* '}' or ']' */
    uint64_t brace;   /* '{' or '}' (and 'y' and DEL: and-ed with open or close, it tells the two brackets apart) */
    uint64_t space;   /* <= ' ' */
    uint64_t control; /* < ' ' */
    uint64_t high;    /* >= 0x80 */
} pasarela_classes;

#if defined(__GNUC__) || defined(__clang__)
#define PASARELA_CLASSES_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define PASARELA_CLASSES_INLINE static __forceinline
#else
#define PASARELA_CLASSES_INLINE static inline
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PASARELA_UNROLL _Pragma("GCC unroll 4")
#else
#define PASARELA_UNROLL
#endif

#if defined(PASARELA_SSE2) || defined(PASARELA_NEON)
/* The 64 bytes at p, or (avail < 64: what is readable there) a copy padded with zeros in tail. */
PASARELA_CLASSES_INLINE const uint8_t *pasarela_whole_block(const uint8_t *p, size_t avail, uint8_t tail[64]) {
    if (avail >= 64) return p;
    memset(tail, 0, 64);
    memcpy(tail, p, avail);
    return tail;
}

/* The padding's zeros are below ' ': out of the classes that hold such bytes. */
PASARELA_CLASSES_INLINE void pasarela_classes_readable(pasarela_classes *m, size_t avail) {
    if (avail >= 64) return;
    uint64_t readable = (UINT64_C(1) << avail) - 1;
    m->space &= readable;
    m->control &= readable;
}
#endif

/* A function name(p, avail, m): the classes of the (up to) 64 bytes at p, avail of them readable, WIDTH bytes a
 * vector. Written once for SSE2 (16) and AVX2 (32), whose intrinsics the caller names: VEC the vector type, LOAD,
 * OR, AND, SET1, EQ, MAX (unsigned), SUB, and MASK (movemask). */
#define PASARELA_VECTOR_CLASSES(ATTRIBUTES, name, WIDTH, VEC, LOAD, OR, AND, SET1, EQ, MAX, SUB, MASK)              \
    PASARELA_CLASSES_INLINE ATTRIBUTES void name(const uint8_t *p, size_t avail, pasarela_classes *m) {              \
        uint8_t tail[64];                                                                                          \
        p = pasarela_whole_block(p, avail, tail);                                                                  \
        memset(m, 0, sizeof *m);                                                                                   \
        PASARELA_UNROLL /* (whole: each shift a constant; GCC counts the classes the caller drops against it) */   \
        for (unsigned i = 0; i < 64; i += WIDTH) {                                                                 \
            VEC v = LOAD((const VEC *)(const void *)(p + i));                                                      \
            VEC lower = OR(v, SET1(0x20)); /* 'E' -> 'e', '[' -> '{', ']' -> '}' */                                \
            m->quote |= (uint64_t)MASK(EQ(v, SET1('"'))) << i;                                                     \
            m->backslash |= (uint64_t)MASK(EQ(v, SET1('\\'))) << i;                                                \
            m->colon |= (uint64_t)MASK(EQ(v, SET1(':'))) << i;                                                     \
            m->comma |= (uint64_t)MASK(EQ(v, SET1(','))) << i;                                                     \
            m->point |= (uint64_t)MASK(EQ(v, SET1('.'))) << i;                                                     \
            m->minus |= (uint64_t)MASK(EQ(v, SET1('-'))) << i;                                                     \
            m->zero |= (uint64_t)MASK(EQ(v, SET1('0'))) << i;                                                      \
            m->n |= (uint64_t)MASK(EQ(v, SET1('n'))) << i;                                                         \
            m->y |= (uint64_t)MASK(EQ(v, SET1('y'))) << i;                                                         \
            m->underscore |= (uint64_t)MASK(EQ(v, SET1('_'))) << i;                                                \
            m->digit |= (uint64_t)MASK(EQ(MAX(SUB(v, SET1('0')), SET1(9)), SET1(9))) << i;                         \
            m->letter |= (uint64_t)MASK(EQ(MAX(SUB(v, SET1('a')), SET1(25)), SET1(25))) << i;                      \
            m->e |= (uint64_t)MASK(EQ(lower, SET1('e'))) << i;                                                     \
            m->open |= (uint64_t)MASK(EQ(lower, SET1('{'))) << i;                                                  \
            m->close |= (uint64_t)MASK(EQ(lower, SET1('}'))) << i;                                                 \
            m->brace |= (uint64_t)MASK(EQ(AND(v, SET1((char)0xF9)), SET1(0x79))) << i;                             \
            m->space |= (uint64_t)MASK(EQ(MAX(v, SET1(' ')), SET1(' '))) << i;                                     \
            m->control |= (uint64_t)MASK(EQ(MAX(v, SET1(0x1F)), SET1(0x1F))) << i;                                 \
            m->high |= (uint64_t)MASK(v) << i;                                                                     \
        }                                                                                                          \
        pasarela_classes_readable(m, avail);                                                                       \
    }

#if defined(PASARELA_SSE2)
#define PASARELA_SSE2_MASK(x) (uint32_t)_mm_movemask_epi8(x)
PASARELA_VECTOR_CLASSES(, pasarela_classes_sse2, 16, __m128i, _mm_loadu_si128, _mm_or_si128, _mm_and_si128,
                        _mm_set1_epi8, _mm_cmpeq_epi8, _mm_max_epu8, _mm_sub_epi8, PASARELA_SSE2_MASK)
#undef PASARELA_SSE2_MASK
#define pasarela_classes_base pasarela_classes_sse2 /* the instance every build for this target can run */
#endif

#if defined(PASARELA_X86_WIDE)
#define PASARELA_AVX2_MASK(x) (uint32_t)_mm256_movemask_epi8(x)
PASARELA_VECTOR_CLASSES(__attribute__((target("avx2"))), pasarela_classes_avx2, 32, __m256i, _mm256_loadu_si256,
                        _mm256_or_si256, _mm256_and_si256, _mm256_set1_epi8, _mm256_cmpeq_epi8, _mm256_max_epu8,
                        _mm256_sub_epi8, PASARELA_AVX2_MASK)
#undef PASARELA_AVX2_MASK

/* AVX-512 BW: a class in one instruction, its mask at once; the tail read with the unread bytes masked off. */
PASARELA_CLASSES_INLINE __attribute__((target("avx512f,avx512bw"))) void
pasarela_classes_avx512(const uint8_t *p, size_t avail, pasarela_classes *m) {
    __mmask64 readable = avail < 64 ? (UINT64_C(1) << avail) - 1 : ~UINT64_C(0);
    __m512i v = _mm512_maskz_loadu_epi8(readable, p); /* nothing read past p + avail */
    __m512i lower = _mm512_or_si512(v, _mm512_set1_epi8(0x20));
#define PASARELA_IS(x, c) _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8(c))
    m->quote = PASARELA_IS(v, '"');
    m->backslash = PASARELA_IS(v, '\\');
    m->colon = PASARELA_IS(v, ':');
    m->comma = PASARELA_IS(v, ',');
    m->point = PASARELA_IS(v, '.');
    m->minus = PASARELA_IS(v, '-');
    m->zero = PASARELA_IS(v, '0');
    m->n = PASARELA_IS(v, 'n');
    m->y = PASARELA_IS(v, 'y');
    m->underscore = PASARELA_IS(v, '_');
    m->digit = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('0')), _mm512_set1_epi8(10));
    m->letter = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('a')), _mm512_set1_epi8(26));
    m->e = PASARELA_IS(lower, 'e');
    m->open = PASARELA_IS(lower, '{');
    m->close = PASARELA_IS(lower, '}');
    m->brace = PASARELA_IS(_mm512_and_si512(v, _mm512_set1_epi8((char)0xF9)), 0x79);
#undef PASARELA_IS
    m->space = _mm512_mask_cmple_epu8_mask(readable, v, _mm512_set1_epi8(' '));
    m->control = _mm512_mask_cmplt_epu8_mask(readable, v, _mm512_set1_epi8(' '));
    m->high = _mm512_movepi8_mask(v);
}
#endif

#if defined(PASARELA_NEON)
/* The bits of four vectors of 0x00 / 0xFF bytes, 64 of them (what x86's movemask gives, 16 at a time): each byte
 * keeps its own bit of eight, and three rounds of pairwise adds gather them. */
PASARELA_CLASSES_INLINE uint64_t pasarela_neon_bits(uint8x16_t a, uint8x16_t b, uint8x16_t c, uint8x16_t d) {
    static const uint8_t bit_of_byte[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t bit = vld1q_u8(bit_of_byte);
    uint8x16_t ab = vpaddq_u8(vandq_u8(a, bit), vandq_u8(b, bit)), cd = vpaddq_u8(vandq_u8(c, bit), vandq_u8(d, bit));
    uint8x16_t abcd = vpaddq_u8(ab, cd);
    return vgetq_lane_u64(vreinterpretq_u64_u8(vpaddq_u8(abcd, abcd)), 0);
}

/* The mask of the bytes of w[0..4) that are equal to c, at most c, at least c. */
PASARELA_CLASSES_INLINE uint64_t pasarela_neon_equal(const uint8x16_t w[4], uint8_t c) {
    uint8x16_t k = vdupq_n_u8(c);
    return pasarela_neon_bits(vceqq_u8(w[0], k), vceqq_u8(w[1], k), vceqq_u8(w[2], k), vceqq_u8(w[3], k));
}
PASARELA_CLASSES_INLINE uint64_t pasarela_neon_at_most(const uint8x16_t w[4], uint8_t c) {
    uint8x16_t k = vdupq_n_u8(c);
    return pasarela_neon_bits(vcleq_u8(w[0], k), vcleq_u8(w[1], k), vcleq_u8(w[2], k), vcleq_u8(w[3], k));
}
PASARELA_CLASSES_INLINE uint64_t pasarela_neon_at_least(const uint8x16_t w[4], uint8_t c) {
    uint8x16_t k = vdupq_n_u8(c);
    return pasarela_neon_bits(vcgeq_u8(w[0], k), vcgeq_u8(w[1], k), vcgeq_u8(w[2], k), vcgeq_u8(w[3], k));
}

/* The classes of the (up to) 64 bytes at p, with NEON. */
PASARELA_CLASSES_INLINE void pasarela_classes_neon(const uint8_t *p, size_t avail, pasarela_classes *m) {
    uint8_t tail[64];
    uint8x16_t v[4], lower[4], from_0[4], from_a[4], brace_bits[4];
    p = pasarela_whole_block(p, avail, tail);
    for (int i = 0; i < 4; i++) {
        v[i] = vld1q_u8(p + 16 * i);
        lower[i] = vorrq_u8(v[i], vdupq_n_u8(0x20)); /* 'E' -> 'e', '[' -> '{', ']' -> '}' */
        from_0[i] = vsubq_u8(v[i], vdupq_n_u8('0'));
        from_a[i] = vsubq_u8(v[i], vdupq_n_u8('a'));
        brace_bits[i] = vandq_u8(v[i], vdupq_n_u8(0xF9));
    }
    m->quote = pasarela_neon_equal(v, '"');
    m->backslash = pasarela_neon_equal(v, '\\');
    m->colon = pasarela_neon_equal(v, ':');
    m->comma = pasarela_neon_equal(v, ',');
    m->point = pasarela_neon_equal(v, '.');
    m->minus = pasarela_neon_equal(v, '-');
    m->zero = pasarela_neon_equal(v, '0');
    m->n = pasarela_neon_equal(v, 'n');
    m->y = pasarela_neon_equal(v, 'y');
    m->underscore = pasarela_neon_equal(v, '_');
    m->digit = pasarela_neon_at_most(from_0, 9);
    m->letter = pasarela_neon_at_most(from_a, 25);
    m->e = pasarela_neon_equal(lower, 'e');
    m->open = pasarela_neon_equal(lower, '{');
    m->close = pasarela_neon_equal(lower, '}');
    m->brace = pasarela_neon_equal(brace_bits, 0x79);
    m->space = pasarela_neon_at_most(v, ' ');
    m->control = pasarela_neon_at_most(v, 0x1F);
    m->high = pasarela_neon_at_least(v, 0x80);
    pasarela_classes_readable(m, avail);
}
#define pasarela_classes_base pasarela_classes_neon
#endif

#endif
