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

/* ---- Base64 of public bytes (the request plaintext) ----
 *
 * Public data, so table lookups are fine here; pasarela_base64_encode above encodes what is derived from
 * a secret, and pasarela_base64_encode_secret (below) hands it all but its last 0..23 bytes to the AVX2
 * code, whose lookups (pshufb) stay within a register. Dispatch on the caller's cpu bits:
 *  - PASARELA_CPU_AVX512 (F+BW) with PASARELA_CPU_AVX512_SHORT (not on Intel: pasarela.h): the AVX2
 *    algorithm below on 512-bit vectors, 48 input bytes -> 64
 *    chars per step; the last < 64 bytes with masked loads and stores (no access beyond in + n or past
 *    the output).
 *  - PASARELA_CPU_AVX2: 24 input bytes -> 32 chars per step (W. Mula and D. Lemire, "Faster Base64
 *    Encoding and Decoding Using AVX2 Instructions", 2018): shuffle each 3-byte group into a 32-bit
 *    lane, split it into four 6-bit indices with mulhi/mullo, map the indices to characters by adding
 *    an offset looked up with pshufb from the index's range. Loads never leave [in, in + n).
 *  - otherwise, and for what the vector code leaves over: a 64-entry table.
 * The x86 code is compiled with target attributes (GCC, clang on x86-64 only), so the rest of the
 * library needs no -m flags; elsewhere (MSVC, ARM) only the table code is built. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PAS_B64_X86 1
#include <immintrin.h>
#endif

static const char b64_alphabet[64] = {
    'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O', 'P', 'Q', 'R', 'S', 'T', 'U',
    'V', 'W', 'X', 'Y', 'Z', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p',
    'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '+',
    '/'};

/* in[i..n) -> out + o with the table, '=' padded; returns the total output length. */
static size_t b64_table(const uint8_t *in, size_t n, size_t i, char *out, size_t o)
{
    while (n - i >= 3) {
        uint32_t x = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8) | (uint32_t)in[i + 2];
        out[o] = b64_alphabet[x >> 18];
        out[o + 1] = b64_alphabet[(x >> 12) & 63u];
        out[o + 2] = b64_alphabet[(x >> 6) & 63u];
        out[o + 3] = b64_alphabet[x & 63u];
        i += 3;
        o += 4;
    }
    if (i < n) { /* 1 or 2 bytes left */
        uint32_t x = (uint32_t)in[i] << 16;
        if (n - i == 2)
            x |= (uint32_t)in[i + 1] << 8;
        out[o] = b64_alphabet[x >> 18];
        out[o + 1] = b64_alphabet[(x >> 12) & 63u];
        out[o + 2] = n - i == 2 ? b64_alphabet[(x >> 6) & 63u] : '=';
        out[o + 3] = '=';
        o += 4;
    }
    return o;
}

#if defined(PAS_B64_X86)
#define PAS_B64_AVX2_FN __attribute__((target("avx2")))
#define PAS_B64_AVX512_FN __attribute__((target("avx512f,avx512bw")))

/* Each 128-bit lane holds 12 input bytes at lane offsets 0..11 (shuffle SHUF0) or 4..15 (SHUF4): the
 * bytes b0 b1 b2 of each group are placed as b1 b0 b2 b1 in a 32-bit lane. */
#define PAS_B64_SHUF0 1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10
#define PAS_B64_SHUF4 5, 4, 6, 5, 8, 7, 9, 8, 11, 10, 12, 11, 14, 13, 15, 14
/* Offset to add to an index, by the pshufb key computed from it: key 0 for 26..51 ('a' - 26), 1..10 for
 * 52..61 ('0' - 52), 11 for 62 ('+' - 62), 12 for 63 ('/' - 63), 13 for 0..25 ('A'). */
#define PAS_B64_OFFSETS                                                                                          \
    'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, \
        '+' - 62, '/' - 63, 'A', 0, 0

/* Shuffled groups (b1 b0 b2 b1 per 32-bit lane) -> 32 Base64 characters. */
static PAS_B64_AVX2_FN inline __m256i b64_avx2_chars(__m256i v)
{
    /* 16-bit halves: (b1 b0) keeps a = b0 >> 2 and b = (b0 & 3) << 4 | b1 >> 4 in bits 10..15 and 4..9;
     * (b2 b1) keeps c = (b1 & 15) << 2 | b2 >> 6 and d = b2 & 63 in bits 6..11 and 0..5. */
    __m256i ac = _mm256_mulhi_epu16(_mm256_and_si256(v, _mm256_set1_epi32(0x0fc0fc00)), _mm256_set1_epi32(0x04000040));
    __m256i bd = _mm256_mullo_epi16(_mm256_and_si256(v, _mm256_set1_epi32(0x003f03f0)), _mm256_set1_epi32(0x01000010));
    __m256i idx = _mm256_or_si256(ac, bd); /* bytes a b c d, each 0..63 */
    __m256i key = _mm256_subs_epu8(idx, _mm256_set1_epi8(51));
    key = _mm256_or_si256(key, _mm256_and_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(26), idx), _mm256_set1_epi8(13)));
    return _mm256_add_epi8(idx, _mm256_shuffle_epi8(_mm256_setr_epi8(PAS_B64_OFFSETS, PAS_B64_OFFSETS), key));
}

/* Exactly the 24 bytes at p, as two lanes of 12 bytes at lane offsets 0..11. */
static PAS_B64_AVX2_FN inline __m256i b64_avx2_load24(const uint8_t *p)
{
    __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i hi = _mm_loadl_epi64((const __m128i *)(const void *)(p + 16));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), _mm_alignr_epi8(hi, lo, 12), 1);
}

static PAS_B64_AVX2_FN void b64_avx2_block24(const uint8_t *in, char *out)
{
    __m256i v = _mm256_shuffle_epi8(b64_avx2_load24(in), _mm256_setr_epi8(PAS_B64_SHUF0, PAS_B64_SHUF0));
    _mm256_storeu_si256((__m256i *)(void *)out, b64_avx2_chars(v));
}

/* The whole 3-byte groups of in[0, n) from the first 24 bytes on, when there are that many: the bytes done, and
 * in *o_out the characters written (0 and 0 below 24 bytes). Register operations only (the characters are looked
 * up with pshufb, within a register), at addresses that depend on n alone: constant-time, as secret-derived bytes
 * need (pasarela_base64_encode_secret). */
static PAS_B64_AVX2_FN size_t b64_avx2_groups(const uint8_t *in, size_t n, char *out, size_t *o_out)
{
    size_t i = 24, o = 32, whole = n - n % 3;
    *o_out = 0;
    if (n < 24)
        return 0;
    b64_avx2_block24(in, out);
    /* Then 32-byte loads from in + i - 4 (bytes i-4 .. i+27): the low lane's group starts at offset 4. */
    while (n - i >= 28) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(in + i - 4));
        v = _mm256_shuffle_epi8(v, _mm256_setr_epi8(PAS_B64_SHUF4, PAS_B64_SHUF0));
        _mm256_storeu_si256((__m256i *)(void *)(out + o), b64_avx2_chars(v));
        i += 24;
        o += 32;
    }
    /* 0..27 bytes left, whole - i of them in whole groups (0..27): one more 24-byte block if they
     * fill one, then one ending at whole (rewriting characters already written with the same ones). */
    if (whole - i >= 24) {
        b64_avx2_block24(in + i, out + o);
        i += 24;
        o += 32;
    }
    if (i < whole) {
        b64_avx2_block24(in + whole - 24, out + whole / 3 * 4 - 32);
        o = whole / 3 * 4;
        i = whole;
    }
    /* explicit: gcc once made the call after it a jump without the VZEROUPPER it puts before calls and returns,
     * and the SSE code after it (the next batch item's canonical text check) then took about three times as long
     * on Zen 3. scripts/hardening's upper step checks every AVX function for this. */
    _mm256_zeroupper();
    *o_out = o;
    return i;
}

static size_t b64_avx2(const uint8_t *in, size_t n, char *out)
{
    size_t o, i = b64_avx2_groups(in, n, out, &o);
    return b64_table(in, n, i, out, o);
}

/* 48 input bytes (the low 48 of v) -> 64 Base64 characters: the AVX2 steps above on four lanes, with
 * the 12-byte groups first spread to one 128-bit lane each by vpermd with spread. */
static PAS_B64_AVX512_FN inline __m512i b64_avx512_chars(__m512i v, __m512i spread)
{
    const __m512i shuf = _mm512_broadcast_i32x4(_mm_setr_epi8(PAS_B64_SHUF0));
    const __m512i offsets = _mm512_broadcast_i32x4(_mm_setr_epi8(PAS_B64_OFFSETS));
    v = _mm512_shuffle_epi8(_mm512_permutexvar_epi32(spread, v), shuf);
    __m512i ac = _mm512_mulhi_epu16(_mm512_and_si512(v, _mm512_set1_epi32(0x0fc0fc00)), _mm512_set1_epi32(0x04000040));
    __m512i bd = _mm512_mullo_epi16(_mm512_and_si512(v, _mm512_set1_epi32(0x003f03f0)), _mm512_set1_epi32(0x01000010));
    __m512i idx = _mm512_or_si512(ac, bd);
    __m512i key = _mm512_subs_epu8(idx, _mm512_set1_epi8(51));
    key = _mm512_mask_mov_epi8(key, _mm512_cmplt_epu8_mask(idx, _mm512_set1_epi8(26)), _mm512_set1_epi8(13));
    return _mm512_add_epi8(idx, _mm512_shuffle_epi8(offsets, key));
}

static PAS_B64_AVX512_FN size_t b64_avx512(const uint8_t *in, size_t n, char *out)
{
    size_t i = 0, o = 0, whole = n - n % 3;
    __m512i spread = _mm512_setr_epi32(0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 0);
    /* Hidden from the optimizer: clang otherwise turns vpermd + vpshufb into several narrower
     * shuffles and inserts, about 1.4 times slower on Zen 4. */
    __asm__("" : "+v"(spread));
    while (n - i >= 64) {
        __m512i v = _mm512_loadu_si512((const void *)(in + i));
        _mm512_storeu_si512((void *)(out + o), b64_avx512_chars(v, spread));
        i += 48;
        o += 64;
    }
    /* The last 0..63 bytes in whole groups: masked loads read no byte at or past whole. */
    if (whole - i >= 48) {
        __m512i v = _mm512_maskz_loadu_epi8(UINT64_C(0xFFFFFFFFFFFF), in + i);
        _mm512_storeu_si512((void *)(out + o), b64_avx512_chars(v, spread));
        i += 48;
        o += 64;
    }
    if (i < whole) { /* 3..45 bytes */
        size_t take = whole - i, chars = take / 3 * 4;
        __m512i v = _mm512_maskz_loadu_epi8((UINT64_C(1) << take) - 1u, in + i);
        _mm512_mask_storeu_epi8(out + o, (UINT64_C(1) << chars) - 1u, b64_avx512_chars(v, spread));
        i = whole;
        o += chars;
    }
    _mm256_zeroupper(); /* as in b64_avx2 (VZEROUPPER also clears the upper halves of the ZMM registers) */
    return b64_table(in, n, i, out, o);
}
#endif

size_t pasarela_base64_encode_secret(unsigned cpu, const uint8_t *in, size_t n, char *out)
{
#if defined(PAS_B64_X86)
    if (cpu & PASARELA_CPU_AVX2) { /* the groups AVX2 takes, then the rest (0..23 bytes) constant-time too */
        size_t o, i = b64_avx2_groups(in, n, out, &o);
        return o + pasarela_base64_encode(in + i, n - i, out + o);
    }
#endif
    (void)cpu;
    return pasarela_base64_encode(in, n, out);
}

size_t pasarela_base64_encode_public(unsigned cpu, const uint8_t *in, size_t n, char *out)
{
#if defined(PAS_B64_X86)
    if ((cpu & PASARELA_CPU_AVX512) && (cpu & PASARELA_CPU_AVX512_SHORT)) /* (pasarela.h: not on Intel) */
        return b64_avx512(in, n, out);
    if (cpu & PASARELA_CPU_AVX2)
        return b64_avx2(in, n, out);
#endif
    (void)cpu;
    return b64_table(in, n, 0, out, 0);
}
