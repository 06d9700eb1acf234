/* pasarela_utf8_invalid_at (utf8.h): runs of ASCII skipped 16 bytes at a time with SSE2 (part of x86-64), the rest
 * a sequence at a time. */
#include "utf8.h"

#if defined(PASARELA_SSE2)
#include <emmintrin.h>
#endif

size_t pasarela_utf8_invalid_at(const uint8_t *in, size_t n) {
    size_t q = 0;
    while (q < n) {
#if defined(PASARELA_SSE2)
        while (n - q >= 16 && _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(in + q))) == 0)
            q += 16; /* ASCII */
        if (q >= n) break;
#endif
        if (in[q] < 0x80) {
            q++;
            continue;
        }
        size_t k = pasarela_utf8_sequence(in + q, n - q);
        if (k == 0) return q;
        q += k;
    }
    return n;
}
