/* hex.c — constant-time hex encoding and decoding (no data-indexed tables, no data-dependent branches). */
#include <string.h>

#include "internal.h"

/* 0xFFFFFFFF when a < b, else 0; a and b must be below 2^31. */
static inline uint32_t ct_lt(uint32_t a, uint32_t b)
{
    return 0u - ((a - b) >> 31);
}

/* Nibble 0..15 to '0'..'9', 'a'..'f': add 39 more when v > 9. */
static inline char hex_nibble(uint32_t v)
{
    return (char)(uint8_t)(v + 48u + (((9u - v) >> 8) & 39u));
}

void pasarela_hex_encode(const uint8_t *in, size_t n, char *out)
{
    size_t i;

    for (i = 0; i < n; i++) {
        uint32_t b = in[i];
        out[2 * i] = hex_nibble(b >> 4);
        out[2 * i + 1] = hex_nibble(b & 15u);
    }
}

/* Value of one hex digit; *err gets all bits set when c is not [0-9a-fA-F]. */
static inline uint32_t hex_value(uint32_t c, uint32_t *err)
{
    uint32_t lc = c | 32u; /* 'A'..'F' -> 'a'..'f' */
    uint32_t is_digit = ct_lt(c, 58u) & ~ct_lt(c, 48u);
    uint32_t is_alpha = ct_lt(lc, 103u) & ~ct_lt(lc, 97u);

    *err |= ~(is_digit | is_alpha);
    return ((c - 48u) & is_digit) | ((lc - 87u) & is_alpha);
}

/* Eight hex digits at once (SWAR, no branches on the data): their four bytes to out; *err gets bits
 * set when one of them is not [0-9a-fA-F]. Bytes of w are the digits in memory order (little-endian). */
static inline void hex_decode8(uint64_t w, uint8_t *out, uint64_t *err)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), high = ones * 0x80u, low7 = ones * 0x7Fu;
    uint64_t c = w & low7, lc = c | (ones * 0x20u);
    /* for a 7-bit byte x, (x + (0x80 - k)) has its high bit set iff x >= k: no carry crosses bytes */
    uint64_t digit = (c + ones * 0x50u) & ~(c + ones * 0x46u);  /* 0x30 <= c <= 0x39 */
    uint64_t alpha = (lc + ones * 0x1Fu) & ~(lc + ones * 0x19u); /* 0x61 <= lc <= 0x66 */
    *err |= (w & high) | (~(digit | alpha) & high);
    uint64_t v = (c & (ones * 0x0Fu)) + 9u * ((c >> 6) & ones); /* '0'..'9' -> 0..9, 'a'..'f'/'A'..'F' -> 10..15 */
    uint64_t pairs = ((v & UINT64_C(0x00FF00FF00FF00FF)) << 4) | ((v >> 8) & UINT64_C(0x00FF00FF00FF00FF));
    out[0] = (uint8_t)pairs;
    out[1] = (uint8_t)(pairs >> 16);
    out[2] = (uint8_t)(pairs >> 32);
    out[3] = (uint8_t)(pairs >> 48);
}

static inline uint64_t load64_le(const char *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24 |
           (uint64_t)b[4] << 32 | (uint64_t)b[5] << 40 | (uint64_t)b[6] << 48 | (uint64_t)b[7] << 56;
}

int pasarela_hex_decode(const char *in, size_t n, uint8_t *out)
{
    uint64_t err64 = 0;
    uint32_t err = 0;
    size_t i = 0;

    if (n == 0) {
        return PASARELA_OK;
    }
    if (in == NULL || out == NULL) {
        return PASARELA_E_INVALID_ARGUMENT;
    }
    if (n & 1u) {
        return PASARELA_E_BAD_HEX;
    }
    for (; i + 8 <= n; i += 8) {
        hex_decode8(load64_le(in + i), out + i / 2, &err64);
    }
    for (; i < n; i += 2) {
        uint32_t hi = hex_value((uint32_t)(uint8_t)in[i], &err);
        uint32_t lo = hex_value((uint32_t)(uint8_t)in[i + 1], &err);
        out[i / 2] = (uint8_t)((hi << 4) | lo);
    }
    if ((err | (uint32_t)(err64 != 0)) != 0) {
        memset(out, 0, n / 2); /* no partial output on failure */
        return PASARELA_E_BAD_HEX;
    }
    return PASARELA_OK;
}
