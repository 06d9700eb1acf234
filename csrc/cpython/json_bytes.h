/* json_bytes.h: which bytes of a JSON string's text are special (a quote, a backslash, a control below 0x20),
 * tested 16 or 8 at a time. Shared by the writer (stringify.c: the bytes it must escape) and the reader
 * (parse.c: the bytes that end a run it can take as it is). Private to pasarela._fastcall. */
#ifndef PASARELA_CPYTHON_JSON_BYTES_H
#define PASARELA_CPYTHON_JSON_BYTES_H

#include <stdint.h>

#include "bits.h" /* PASARELA_SSE2, pasarela_lowest_bit, pasarela_hex_digit */

#if defined(PASARELA_SSE2)
#include <emmintrin.h>

/* One bit for each of the 16 bytes of v that is below 0x20, '"' or '\\'. */
static inline int json_special_mask16(__m128i v) {
    __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f)); /* <= 0x1f */
    __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"')), backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    return _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, backslash)));
}

#endif

#define JSON_BYTES_ONES UINT64_C(0x0101010101010101)
#define JSON_BYTES_HIGHS UINT64_C(0x8080808080808080)

/* Whether any of the 8 bytes in v is below 0x20, '"' or '\\' (each test exact as to "any": no byte is missed,
 * none is taken for another; bytes from 0x80 up are none of them). */
static inline int json_special8(uint64_t v) {
    uint64_t quote = v ^ (JSON_BYTES_ONES * '"'), backslash = v ^ (JSON_BYTES_ONES * '\\');
    uint64_t control = (v - JSON_BYTES_ONES * 0x20) & ~v, zero_quote = (quote - JSON_BYTES_ONES) & ~quote,
             zero_backslash = (backslash - JSON_BYTES_ONES) & ~backslash;
    return ((control | zero_quote | zero_backslash) & JSON_BYTES_HIGHS) != 0;
}

#endif
