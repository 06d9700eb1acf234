/* Shared by test_primitives.c and test_sha512_many.c: deterministic inputs (xorshift64*, from a state each test
 * keeps, so that a test's inputs do not depend on which tests ran before it) and a test-side hex encoder. */
#ifndef PASARELA_TEST_HELPERS_H
#define PASARELA_TEST_HELPERS_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* in[0, n) as lowercase hex at out, NUL-terminated (2n + 1 bytes): the reference the library's encoders meet. */
static inline void to_hex(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

#endif
