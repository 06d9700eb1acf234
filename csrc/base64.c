/* base64.c — constant-time Base64 encoding (RFC 4648, standard alphabet, '=' padding).
 *
 * Each 6-bit value v is turned into its character with branch-free SWAR arithmetic on eight
 * byte lanes of a uint64_t at once (6 input bytes -> 8 chars per iteration):
 *   v in  0..25 -> v + 65 ('A'..'Z')      v in 52..61 -> v - 4  ('0'..'9')
 *   v in 26..51 -> v + 71 ('a'..'z')      v == 62 -> '+' (v - 19), v == 63 -> '/' (v - 16)
 * No table is indexed by data and no branch depends on data; only the (public) length
 * decides the loop count and the padding. */
#include <string.h>

#include "internal.h"

#define B64_L UINT64_C(0x0101010101010101)
#define B64_H UINT64_C(0x8080808080808080)

/* Per lane 0xFF when the lane value (0..63) is >= t (1..64), else 0: v + 128 - t stays below 256,
 * so no carry crosses lanes, and its top bit is the comparison result. */
#define B64_GE(v, t) (((((v) + (128u - (t)) * B64_L) & B64_H) >> 7) * 0xFFu)

/* Eight lanes of 6-bit values -> eight lanes of Base64 characters. */
static inline uint64_t b64_lanes(uint64_t v)
{
    /* Offsets mod 256 chained by XOR: the masks are nested (>=63 implies >=62 implies ...). */
    uint64_t off = 65u * B64_L;
    off ^= B64_GE(v, 26u) & ((65u ^ 71u) * B64_L);
    off ^= B64_GE(v, 52u) & ((71u ^ 252u) * B64_L);
    off ^= B64_GE(v, 62u) & ((252u ^ 237u) * B64_L);
    off ^= B64_GE(v, 63u) & ((237u ^ 240u) * B64_L);
    /* Lane-wise v + off mod 256: v < 64, so adding the low 7 bits of off cannot carry out of a
     * lane; the top bit of off is then applied with XOR. */
    return (v + (off & (0x7Fu * B64_L))) ^ (off & B64_H);
}

/* 48 bits (6 bytes, big-endian in x) -> 8 chars. */
static inline void b64_encode6(uint64_t x, char *out)
{
    uint64_t v = ((x >> 42) & 63u) | (((x >> 36) & 63u) << 8) | (((x >> 30) & 63u) << 16) |
                 (((x >> 24) & 63u) << 24) | (((x >> 18) & 63u) << 32) | (((x >> 12) & 63u) << 40) |
                 (((x >> 6) & 63u) << 48) | ((x & 63u) << 56);
    uint64_t c = b64_lanes(v);
    out[0] = (char)(uint8_t)c;
    out[1] = (char)(uint8_t)(c >> 8);
    out[2] = (char)(uint8_t)(c >> 16);
    out[3] = (char)(uint8_t)(c >> 24);
    out[4] = (char)(uint8_t)(c >> 32);
    out[5] = (char)(uint8_t)(c >> 40);
    out[6] = (char)(uint8_t)(c >> 48);
    out[7] = (char)(uint8_t)(c >> 56);
}

static inline uint64_t load48(const uint8_t *p)
{
    return ((uint64_t)p[0] << 40) | ((uint64_t)p[1] << 32) | ((uint64_t)p[2] << 24) |
           ((uint64_t)p[3] << 16) | ((uint64_t)p[4] << 8) | (uint64_t)p[5];
}

size_t pasarela_base64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t i = 0, o = 0;

    while (n - i >= 6) {
        b64_encode6(load48(in + i), out + o);
        i += 6;
        o += 8;
    }
    if (i < n) {
        /* 1..5 bytes left: zero-extend to 6 bytes, encode, keep 4*ceil(rem/3) chars, pad. */
        size_t rem = n - i, outlen = 4u * ((rem + 2u) / 3u), j;
        uint8_t tail[6] = {0, 0, 0, 0, 0, 0};
        char chars[8];

        for (j = 0; j < rem; j++) {
            tail[j] = in[i + j];
        }
        b64_encode6(load48(tail), chars);
        memcpy(out + o, chars, outlen);
        if (rem % 3u == 1u) {
            out[o + outlen - 2] = '=';
            out[o + outlen - 1] = '=';
        } else if (rem % 3u == 2u) {
            out[o + outlen - 1] = '=';
        }
        o += outlen;
        pasarela_wipe(tail, sizeof tail);
        pasarela_wipe(chars, sizeof chars);
    }
    return o;
}

/* Base64 of public bytes (the request plaintext): a 64-entry table, several times faster than the
 * constant-time encoder above, which stays in use for everything derived from a secret. */
size_t pasarela_base64_encode_public(const uint8_t *in, size_t n, char *out)
{
    static const char alphabet[64] = {
        'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O', 'P', 'Q', 'R', 'S', 'T', 'U',
        'V', 'W', 'X', 'Y', 'Z', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p',
        'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '+',
        '/'};
    size_t i = 0, o = 0;
    while (n - i >= 3) {
        uint32_t x = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8) | (uint32_t)in[i + 2];
        out[o] = alphabet[x >> 18];
        out[o + 1] = alphabet[(x >> 12) & 63u];
        out[o + 2] = alphabet[(x >> 6) & 63u];
        out[o + 3] = alphabet[x & 63u];
        i += 3;
        o += 4;
    }
    if (i < n) /* 1 or 2 bytes left: the constant-time encoder pads them */
        o += pasarela_base64_encode(in + i, n - i, out + o);
    return o;
}
