/* hex.c — constant-time hex encoding and decoding (no data-indexed tables in memory, no data-dependent branches).
 *
 * The bytes encoded include secrets (the password digest, the expected signature of an incoming request) and
 * the text decoded comes from the network, so both directions run in time that depends on the length only.
 * The public pasarela_hex_encode / pasarela_hex_decode run the portable code; the library's hot paths (seal,
 * sign, open) call the _cpu variants with the cpu bits of their credentials.
 * Dispatch on the caller's cpu bits:
 *  - PASARELA_CPU_AVX2 (x86-64, GCC or clang): encode 32 bytes -> 64 chars per step (nibbles to characters with
 *    pshufb on a register constant), decode 64 chars -> 32 bytes per step (each char's kind and value from its
 *    nibbles with pshufb on register constants, nibble pairs joined with pmaddubsw); then one half-width step,
 *    then the portable code for what is left.
 *  - PASARELA_CPU_AVX512_VBMI (with AVX2): decode 64 chars -> 32 bytes per step with each char's value and validity
 *    read from a 64-entry byte table held in two registers (vpermt2b, 256-bit vectors), then AVX2's steps.
 *  - otherwise: encode a byte at a time with arithmetic, decode eight digits at a time in a uint64_t (SWAR).
 * All paths write the same bytes and refuse the same inputs (csrc/tests/test_primitives.c compares them). */
#include <string.h>

#include "internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PAS_HEX_X86 1
#include <immintrin.h>
#endif

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

static void hex_encode_portable(const uint8_t *in, size_t n, char *out)
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

/* n (even) digits at in -> n / 2 bytes at out; non-zero when one of the digits is not [0-9a-fA-F]. */
static uint64_t hex_decode_portable(const char *in, size_t n, uint8_t *out)
{
    uint64_t err64 = 0;
    uint32_t err = 0;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        hex_decode8(load64_le(in + i), out + i / 2, &err64);
    }
    for (; i < n; i += 2) {
        uint32_t hi = hex_value((uint32_t)(uint8_t)in[i], &err);
        uint32_t lo = hex_value((uint32_t)(uint8_t)in[i + 1], &err);
        out[i / 2] = (uint8_t)((hi << 4) | lo);
    }
    return err64 | err;
}

#if defined(PAS_HEX_X86)
#define PAS_HEX_AVX2_FN __attribute__((target("avx2")))
#define PAS_HEX_DIGITS '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'

/* The 16 bytes at in -> 32 chars at out. */
static PAS_HEX_AVX2_FN inline void hex_avx2_encode16(const uint8_t *in, char *out)
{
    const __m128i digits = _mm_setr_epi8(PAS_HEX_DIGITS), low4 = _mm_set1_epi8(15);
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)in);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(x, 4), low4), lo = _mm_and_si128(x, low4);
    _mm_storeu_si128((__m128i *)(void *)out, _mm_shuffle_epi8(digits, _mm_unpacklo_epi8(hi, lo)));
    _mm_storeu_si128((__m128i *)(void *)(out + 16), _mm_shuffle_epi8(digits, _mm_unpackhi_epi8(hi, lo)));
}

/* The first n - n % 16 bytes at in -> twice as many chars at out; returns how many bytes that was. */
static PAS_HEX_AVX2_FN size_t hex_avx2_encode(const uint8_t *in, size_t n, char *out)
{
    const __m256i digits = _mm256_setr_epi8(PAS_HEX_DIGITS, PAS_HEX_DIGITS), low4 = _mm256_set1_epi8(15);
    size_t i = 0;

    for (; n - i >= 32; i += 32) {
        /* quadwords 0 2 | 1 3: the in-lane unpacks then give the characters of bytes 0..15 and 16..31 */
        __m256i x = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(in + i)), 0xD8);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4), lo = _mm256_and_si256(x, low4);
        _mm256_storeu_si256((__m256i *)(void *)(out + 2 * i), _mm256_shuffle_epi8(digits, _mm256_unpacklo_epi8(hi, lo)));
        _mm256_storeu_si256((__m256i *)(void *)(out + 2 * i + 32),
                            _mm256_shuffle_epi8(digits, _mm256_unpackhi_epi8(hi, lo)));
    }
    if (n - i >= 16) {
        hex_avx2_encode16(in + i, out + 2 * i);
        i += 16;
    }
    _mm256_zeroall(); /* the expected signature of an incoming request is a secret: leave none of its nibbles */
    return i;
}

/* 32 chars -> their 32 digit values (garbage where not a digit); *invalid gets 0xFF where they are not digits.
 * By nibbles, with pshufb on register constants: a digit's high nibble is 3 ('0'-'9', low nibble 0-9) or 4 or 6
 * ('A'-'F', 'a'-'f', low nibble 1-6, value low nibble + 9); any byte >= 0x80 has a high nibble of neither. */
static PAS_HEX_AVX2_FN inline __m256i hex_avx2_values(__m256i c, __m256i *invalid)
{
    const __m256i low4 = _mm256_set1_epi8(15);
    const __m256i high_kind = _mm256_setr_epi8(0, 0, 0, 1, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                               0, 0, 0, 1, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i low_kind = _mm256_setr_epi8(1, 3, 3, 3, 3, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0,
                                              1, 3, 3, 3, 3, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0);
    const __m256i letter_add = _mm256_setr_epi8(0, 0, 0, 0, 9, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                0, 0, 0, 0, 9, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), low4), lo = _mm256_and_si256(c, low4);
    __m256i kind = _mm256_and_si256(_mm256_shuffle_epi8(high_kind, hi), _mm256_shuffle_epi8(low_kind, lo));
    *invalid = _mm256_or_si256(*invalid, _mm256_cmpeq_epi8(kind, _mm256_setzero_si256()));
    return _mm256_add_epi8(lo, _mm256_shuffle_epi8(letter_add, hi));
}

/* 32 chars -> 16 bytes, each in the low byte of a 16-bit lane: high digit * 16 + low digit. */
static PAS_HEX_AVX2_FN inline __m256i hex_avx2_pairs(const char *in, __m256i *invalid)
{
    __m256i v = hex_avx2_values(_mm256_loadu_si256((const __m256i *)(const void *)in), invalid);
    return _mm256_maddubs_epi16(v, _mm256_set1_epi16(0x0110));
}

/* The first n - n % 32 chars at in -> half as many bytes at out; returns how many chars that was, and *bad
 * non-zero when one of them is not [0-9a-fA-F]. */
static PAS_HEX_AVX2_FN size_t hex_avx2_decode(const char *in, size_t n, uint8_t *out, uint64_t *bad)
{
    __m256i invalid = _mm256_setzero_si256();
    size_t i = 0;

    for (; n - i >= 64; i += 64) {
        __m256i p0 = hex_avx2_pairs(in + i, &invalid), p1 = hex_avx2_pairs(in + i + 32, &invalid);
        /* packus interleaves the lanes (p0 low, p1 low | p0 high, p1 high): quadwords 0 2 1 3 restore the order */
        __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(p0, p1), 0xD8);
        _mm256_storeu_si256((__m256i *)(void *)(out + i / 2), bytes);
    }
    if (n - i >= 32) {
        __m256i p = hex_avx2_pairs(in + i, &invalid);
        __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
        _mm_storeu_si128((__m128i *)(void *)(out + i / 2), bytes);
        i += 32;
    }
    *bad = (uint64_t)(uint32_t)_mm256_movemask_epi8(invalid);
    return i;
}

#define PAS_HEX_VBMI_FN __attribute__((target("avx2,avx512f,avx512vl,avx512bw,avx512vbmi")))

/* By a char's low 6 bits: its value, with bit 6 set where the char has it ('A'-'F', 'a'-'f'); 0xF0 where no digit
 * has those 6 bits. A char c is a digit exactly when entry ^ (c & 0xC0) has no bit of 0xF0 set, and that is then its
 * value: '0'-'9' are 0x30-0x39 (bits 7, 6 clear), 'A'-'F' 0x41-0x46 and 'a'-'f' 0x61-0x66 (bit 6 set, bit 7 clear);
 * any other char either lands on 0xF0, or differs from the digit of its 6 bits in bit 7 or 6. */
static const uint8_t hex_vbmi_table[64] __attribute__((aligned(32))) = {
    0xF0, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0,
    0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0,
    0xF0, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0,
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0, 0xF0};

/* 32 chars -> 16 bytes, each in the low byte of a 16-bit lane; every char's entry ^ (char & 0xC0) or'd into
 * *seen (a bit of 0xF0 in any byte: not a digit). */
static PAS_HEX_VBMI_FN inline __m256i hex_vbmi_pairs(const char *in, __m256i low, __m256i high, __m256i *seen)
{
    __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)in);
    __m256i entry = _mm256_permutex2var_epi8(low, c, high);
    __m256i v = _mm256_ternarylogic_epi32(entry, c, _mm256_set1_epi8((char)0xC0), 0x78); /* entry ^ (c & 0xC0) */
    *seen = _mm256_or_si256(*seen, v);
    return _mm256_maddubs_epi16(v, _mm256_set1_epi16(0x0110));
}

/* The first n - n % 64 chars at in -> half as many bytes at out; returns how many chars that was, and *bad
 * non-zero when one of them is not [0-9a-fA-F]. */
static PAS_HEX_VBMI_FN size_t hex_vbmi_decode(const char *in, size_t n, uint8_t *out, uint64_t *bad)
{
    const __m256i low = _mm256_load_si256((const __m256i *)(const void *)hex_vbmi_table);
    const __m256i high = _mm256_load_si256((const __m256i *)(const void *)(hex_vbmi_table + 32));
    __m256i seen = _mm256_setzero_si256();
    size_t i = 0;

    for (; n - i >= 64; i += 64) {
        __m256i p0 = hex_vbmi_pairs(in + i, low, high, &seen), p1 = hex_vbmi_pairs(in + i + 32, low, high, &seen);
        /* as in hex_avx2_decode: packus interleaves the lanes, quadwords 0 2 1 3 restore the order */
        _mm256_storeu_si256((__m256i *)(void *)(out + i / 2),
                            _mm256_permute4x64_epi64(_mm256_packus_epi16(p0, p1), 0xD8));
    }
    *bad = (uint64_t)_mm256_test_epi8_mask(seen, _mm256_set1_epi8((char)0xF0));
    return i;
}
#endif /* PAS_HEX_X86 */

void pasarela_hex_encode_cpu(unsigned cpu, const uint8_t *in, size_t n, char *out)
{
    size_t done = 0;

#if defined(PAS_HEX_X86)
    if (cpu & PASARELA_CPU_AVX2)
        done = hex_avx2_encode(in, n, out);
#else
    (void)cpu;
#endif
    hex_encode_portable(in + done, n - done, out + 2 * done);
}

int pasarela_hex_decode_cpu(unsigned cpu, const char *in, size_t n, uint8_t *out)
{
    uint64_t bad = 0;
    size_t done = 0;

    if (n == 0) {
        return PASARELA_OK;
    }
    if (in == NULL || out == NULL) {
        return PASARELA_E_INVALID_ARGUMENT;
    }
    if (n & 1u) {
        return PASARELA_E_BAD_HEX;
    }
#if defined(PAS_HEX_X86)
    if ((cpu & (PASARELA_CPU_AVX512_VBMI | PASARELA_CPU_AVX2)) == (PASARELA_CPU_AVX512_VBMI | PASARELA_CPU_AVX2))
        done = hex_vbmi_decode(in, n, out, &bad);
    if (cpu & PASARELA_CPU_AVX2) {
        uint64_t more = 0;
        done += hex_avx2_decode(in + done, n - done, out + done / 2, &more);
        bad |= more;
    }
#else
    (void)cpu;
#endif
    bad |= hex_decode_portable(in + done, n - done, out + done / 2);
    if (bad != 0) {
        memset(out, 0, n / 2); /* no partial output on failure */
        return PASARELA_E_BAD_HEX;
    }
    return PASARELA_OK;
}

/* The public entry points run the portable code: choosing the AVX2 code would take a cpuid per call (7.5 us in a
 * virtual machine, where the hypervisor traps it), and the library's own callers pass the bits they hold. */
void pasarela_hex_encode(const uint8_t *in, size_t n, char *out)
{
    pasarela_hex_encode_cpu(0, in, n, out);
}

int pasarela_hex_decode(const char *in, size_t n, uint8_t *out)
{
    return pasarela_hex_decode_cpu(0, in, n, out);
}
