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

int pasarela_hex_decode(const char *in, size_t n, uint8_t *out)
{
    uint32_t err = 0;
    size_t i;

    if (n == 0) {
        return PASARELA_OK;
    }
    if (in == NULL || out == NULL) {
        return PASARELA_E_INVALID_ARGUMENT;
    }
    if (n & 1u) {
        return PASARELA_E_BAD_HEX;
    }
    for (i = 0; i < n / 2; i++) {
        uint32_t hi = hex_value((uint32_t)(uint8_t)in[2 * i], &err);
        uint32_t lo = hex_value((uint32_t)(uint8_t)in[2 * i + 1], &err);
        out[i] = (uint8_t)((hi << 4) | lo);
    }
    if (err != 0) {
        memset(out, 0, n / 2); /* no partial output on failure */
        return PASARELA_E_BAD_HEX;
    }
    return PASARELA_OK;
}
