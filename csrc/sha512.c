/* sha512.c — streaming SHA-512 (FIPS 180-4).
 *
 * Two block functions, chosen per context by the cpu bits given to pasarela_sha512_init:
 *  - portable C tuned for 64-bit targets: the 80 rounds are fully unrolled via macros over a 16-word
 *    rolling message schedule, with the working variables renamed instead of shifted. Rotates are
 *    written so compilers emit ror, and big-endian loads use __builtin_bswap64 where available;
 *  - on x86-64 with GCC or clang, when cpu has PASARELA_CPU_AVX2: scalar rounds with BMI2 and the
 *    message schedule on AVX2 (see the comment at sha512_blocks_avx2's section), compiled with a
 *    target attribute, so the rest of the library needs no -m flags. Its block functions are written
 *    once, in sha512_avx2_blocks.h, which this file includes twice: plain, and with the AES-CBC hooks
 *    of pasarela_sha512_with_cbc (at the end of this file).
 * The only tables are the K constants, indexed by round number, never by data; neither path
 * branches on data. */
#include <string.h>

#include "internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PAS_SHA512_AVX2 1
#include <immintrin.h>
#endif

/* The SHA-512 round constants (FIPS 180-4, 4.2.3), shared with sha512_many.c. */
const uint64_t pasarela_sha512_k[80] = {
    UINT64_C(0x428a2f98d728ae22), UINT64_C(0x7137449123ef65cd), UINT64_C(0xb5c0fbcfec4d3b2f), UINT64_C(0xe9b5dba58189dbbc),
    UINT64_C(0x3956c25bf348b538), UINT64_C(0x59f111f1b605d019), UINT64_C(0x923f82a4af194f9b), UINT64_C(0xab1c5ed5da6d8118),
    UINT64_C(0xd807aa98a3030242), UINT64_C(0x12835b0145706fbe), UINT64_C(0x243185be4ee4b28c), UINT64_C(0x550c7dc3d5ffb4e2),
    UINT64_C(0x72be5d74f27b896f), UINT64_C(0x80deb1fe3b1696b1), UINT64_C(0x9bdc06a725c71235), UINT64_C(0xc19bf174cf692694),
    UINT64_C(0xe49b69c19ef14ad2), UINT64_C(0xefbe4786384f25e3), UINT64_C(0x0fc19dc68b8cd5b5), UINT64_C(0x240ca1cc77ac9c65),
    UINT64_C(0x2de92c6f592b0275), UINT64_C(0x4a7484aa6ea6e483), UINT64_C(0x5cb0a9dcbd41fbd4), UINT64_C(0x76f988da831153b5),
    UINT64_C(0x983e5152ee66dfab), UINT64_C(0xa831c66d2db43210), UINT64_C(0xb00327c898fb213f), UINT64_C(0xbf597fc7beef0ee4),
    UINT64_C(0xc6e00bf33da88fc2), UINT64_C(0xd5a79147930aa725), UINT64_C(0x06ca6351e003826f), UINT64_C(0x142929670a0e6e70),
    UINT64_C(0x27b70a8546d22ffc), UINT64_C(0x2e1b21385c26c926), UINT64_C(0x4d2c6dfc5ac42aed), UINT64_C(0x53380d139d95b3df),
    UINT64_C(0x650a73548baf63de), UINT64_C(0x766a0abb3c77b2a8), UINT64_C(0x81c2c92e47edaee6), UINT64_C(0x92722c851482353b),
    UINT64_C(0xa2bfe8a14cf10364), UINT64_C(0xa81a664bbc423001), UINT64_C(0xc24b8b70d0f89791), UINT64_C(0xc76c51a30654be30),
    UINT64_C(0xd192e819d6ef5218), UINT64_C(0xd69906245565a910), UINT64_C(0xf40e35855771202a), UINT64_C(0x106aa07032bbd1b8),
    UINT64_C(0x19a4c116b8d2d0c8), UINT64_C(0x1e376c085141ab53), UINT64_C(0x2748774cdf8eeb99), UINT64_C(0x34b0bcb5e19b48a8),
    UINT64_C(0x391c0cb3c5c95a63), UINT64_C(0x4ed8aa4ae3418acb), UINT64_C(0x5b9cca4f7763e373), UINT64_C(0x682e6ff3d6b2b8a3),
    UINT64_C(0x748f82ee5defb2fc), UINT64_C(0x78a5636f43172f60), UINT64_C(0x84c87814a1f0ab72), UINT64_C(0x8cc702081a6439ec),
    UINT64_C(0x90befffa23631e28), UINT64_C(0xa4506cebde82bde9), UINT64_C(0xbef9a3f7b2c67915), UINT64_C(0xc67178f2e372532b),
    UINT64_C(0xca273eceea26619c), UINT64_C(0xd186b8c721c0c207), UINT64_C(0xeada7dd6cde0eb1e), UINT64_C(0xf57d4f7fee6ed178),
    UINT64_C(0x06f067aa72176fba), UINT64_C(0x0a637dc5a2c898a6), UINT64_C(0x113f9804bef90dae), UINT64_C(0x1b710b35131c471b),
    UINT64_C(0x28db77f523047d84), UINT64_C(0x32caab7b40c72493), UINT64_C(0x3c9ebe0a15c9bebc), UINT64_C(0x431d67c49c100d4c),
    UINT64_C(0x4cc5d4becb3e42b6), UINT64_C(0x597f299cfc657e2a), UINT64_C(0x5fcb6fab3ad6faec), UINT64_C(0x6c44198c4a475817),
};
#define K512 pasarela_sha512_k

static inline uint64_t rotr64(uint64_t x, unsigned n)
{
    return (x >> n) | (x << (64u - n)); /* n is always a constant in 1..63 */
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint64_t load64_be(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}
static inline void store64_be(uint8_t *p, uint64_t v)
{
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
}
#else
static inline uint64_t load64_be(const uint8_t *p)
{
    return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) | ((uint64_t)p[3] << 32) |
           ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) | ((uint64_t)p[6] << 8) | (uint64_t)p[7];
}
static inline void store64_be(uint8_t *p, uint64_t v)
{
    p[0] = (uint8_t)(v >> 56);
    p[1] = (uint8_t)(v >> 48);
    p[2] = (uint8_t)(v >> 40);
    p[3] = (uint8_t)(v >> 32);
    p[4] = (uint8_t)(v >> 24);
    p[5] = (uint8_t)(v >> 16);
    p[6] = (uint8_t)(v >> 8);
    p[7] = (uint8_t)v;
}
#endif

#define BSIG0(x) (rotr64((x), 28) ^ rotr64((x), 34) ^ rotr64((x), 39))
#define BSIG1(x) (rotr64((x), 14) ^ rotr64((x), 18) ^ rotr64((x), 41))
#define SSIG0(x) (rotr64((x), 1) ^ rotr64((x), 8) ^ ((x) >> 7))
#define SSIG1(x) (rotr64((x), 19) ^ rotr64((x), 61) ^ ((x) >> 6))
#define CH(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))

/* One round; the caller rotates the roles of a..h instead of moving values. Maj(a,b,c) is
 * ((a ^ b) & (b ^ c)) ^ b, and this round's a ^ b is the next round's b ^ c: ab/bc alternate
 * between two temporaries. */
#define RND(a, b, c, d, e, f, g, h, kw, ab, bc)                  \
    do {                                                         \
        (h) += BSIG1(e) + CH((e), (f), (g)) + (kw);              \
        (ab) = (a) ^ (b);                                        \
        (d) += (h);                                              \
        (h) += BSIG0(a) + (((ab) & (bc)) ^ (b));                 \
    } while (0)

/* Rounds 16..79: update the rolling schedule word in place (j is the index mod 16). */
#define WUPD(j) \
    (w[(j)] += SSIG1(w[((j) + 14) & 15]) + w[((j) + 9) & 15] + SSIG0(w[((j) + 1) & 15]))

#define RND8(kp, W0, W1, W2, W3, W4, W5, W6, W7)                 \
    do {                                                         \
        RND(a, b, c, d, e, f, g, h, (kp)[0] + (W0), x, y);       \
        RND(h, a, b, c, d, e, f, g, (kp)[1] + (W1), y, x);       \
        RND(g, h, a, b, c, d, e, f, (kp)[2] + (W2), x, y);       \
        RND(f, g, h, a, b, c, d, e, (kp)[3] + (W3), y, x);       \
        RND(e, f, g, h, a, b, c, d, (kp)[4] + (W4), x, y);       \
        RND(d, e, f, g, h, a, b, c, (kp)[5] + (W5), y, x);       \
        RND(c, d, e, f, g, h, a, b, (kp)[6] + (W6), x, y);       \
        RND(b, c, d, e, f, g, h, a, (kp)[7] + (W7), y, x);       \
    } while (0)

static void sha512_blocks_scalar(uint64_t state[8], const uint8_t *p, size_t nblocks)
{
    uint64_t w[16];
    const uint64_t *k;
    int r;

    while (nblocks--) {
        uint64_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint64_t e = state[4], f = state[5], g = state[6], h = state[7];
        uint64_t x, y = b ^ c;

        w[0] = load64_be(p);
        w[1] = load64_be(p + 8);
        w[2] = load64_be(p + 16);
        w[3] = load64_be(p + 24);
        w[4] = load64_be(p + 32);
        w[5] = load64_be(p + 40);
        w[6] = load64_be(p + 48);
        w[7] = load64_be(p + 56);
        w[8] = load64_be(p + 64);
        w[9] = load64_be(p + 72);
        w[10] = load64_be(p + 80);
        w[11] = load64_be(p + 88);
        w[12] = load64_be(p + 96);
        w[13] = load64_be(p + 104);
        w[14] = load64_be(p + 112);
        w[15] = load64_be(p + 120);

        RND8(K512, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
        RND8(K512 + 8, w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]);
        for (r = 16, k = K512 + 16; r < 80; r += 16, k += 16) {
            RND8(k, WUPD(0), WUPD(1), WUPD(2), WUPD(3), WUPD(4), WUPD(5), WUPD(6), WUPD(7));
            RND8(k + 8, WUPD(8), WUPD(9), WUPD(10), WUPD(11), WUPD(12), WUPD(13), WUPD(14), WUPD(15));
        }

        state[0] += a;
        state[1] += b;
        state[2] += c;
        state[3] += d;
        state[4] += e;
        state[5] += f;
        state[6] += g;
        state[7] += h;
        p += 128;
    }
    pasarela_wipe(w, sizeof w);
}

#if defined(PAS_SHA512_AVX2)
/* ---- x86-64, AVX2 + BMI2 (used when cpu has PASARELA_CPU_AVX2) ----
 *
 * The rounds run on scalar registers with BMI2 rorx (rotates into a fresh register) and BMI1
 * andn, in as few instructions as they take (about 24 a round):
 *     h += W[t]+K[t] + (e & f) + (~e & g) + S1(e);  d += h;  h += Maj(a, b, c) + S0(a)
 * with Ch(e, f, g) = (e & f) + (~e & g) (the two terms never share a bit) and Maj(a, b, c) =
 * ((a ^ b) & (b ^ c)) ^ b, where b ^ c is the previous round's a ^ b. With the schedule's vector work
 * beside them, the rounds are bound by how many instructions a cycle the core takes in, not by their
 * dependency chains: an earlier arrangement with two four-cycle chains (and 28 instructions a round)
 * took 1.18x this one's time on Zen 3, where this one comes within 1.1x of OpenSSL's AVX2 code.
 *
 * The message schedule runs on ymm registers, two blocks at a time: lane 0 of a register holds two
 * schedule words of one block, lane 1 the same two words of the next block (or a copy of the one
 * block when there is no next). PSTEP computes the next two words of both blocks,
 *     W[t..t+1] = W[t-16..t-15] + W[t-7..t-6] + s0(W[t-15..t-14]) + s1(W[t-2..t-1]),
 * from the last eight such "rows" kept in x0..x7, and stores W + K for the rounds to read with
 * one memory-operand add: table row j = {W[2j]+K[2j], W[2j+1]+K[2j+1] of the first block, the same
 * of the second}, 40 rows per pair of blocks.
 *
 * Only the first block of an update computes the schedule of its own pair during its rounds (two
 * rows per four rounds). From then on the work is spread evenly: the second block of pair i
 * computes the first 16 computed rows of pair i + 1 and the first block of pair i + 1 the other 16,
 * one row per four rounds, so every round has a little vector work next to it. */
#define PAS_AVX2_FN __attribute__((target("avx2,bmi,bmi2")))

/* Pins a value in a register at this point: compilers cannot reassociate across it (emits nothing). */
#define PAS_PIN(v) __asm__("" : "+r"(v))
/* Anchors a schedule step among the rounds (emits nothing): without it, compilers hoist the vector
 * work of several steps into bursts whose waiting instructions stall dispatch of the rounds. */
#define PAS_VPIN5(v, w, x, y, z) __asm__ __volatile__("" : "+x"(v), "+x"(w), "+x"(x), "+x"(y), "+x"(z))

#define XRND(a, b, c, d, e, f, g, h, wk, ab, bc)                 \
    do {                                                         \
        (h) += (wk);                                             \
        (h) += (e) & (f);                                        \
        (h) += ~(e) & (g);                                       \
        (h) += BSIG1(e);                                         \
        (d) += (h);                                              \
        (ab) = (a) ^ (b);                                        \
        (h) += ((ab) & (bc)) ^ (b);                              \
        (h) += BSIG0(a);                                         \
    } while (0)

/* Eight rounds; W(i) is W[t] + K[t] of the i-th of them. */
#define XRND8(W)                                                 \
    do {                                                         \
        XRND(a, b, c, d, e, f, g, h, W(0), x, y);                \
        XRND(h, a, b, c, d, e, f, g, W(1), y, x);                \
        XRND(g, h, a, b, c, d, e, f, W(2), x, y);                \
        XRND(f, g, h, a, b, c, d, e, W(3), y, x);                \
        XRND(e, f, g, h, a, b, c, d, W(4), x, y);                \
        XRND(d, e, f, g, h, a, b, c, W(5), y, x);                \
        XRND(c, d, e, f, g, h, a, b, W(6), x, y);                \
        XRND(b, c, d, e, f, g, h, a, W(7), y, x);                \
    } while (0)

/* Round t of a 16-round stretch reads its W + K from the rows at w (w = table, or table + 2 for the
 * second lane); XW8 is the same eight rounds later. */
#define XW(i) w[4 * ((i) >> 1) + ((i) & 1)]
#define XW8(i) w[16 + 4 * ((i) >> 1) + ((i) & 1)]
#define XW16(i) w[32 + 4 * ((i) >> 1) + ((i) & 1)]

#define XLOAD_STATE()                                            \
    do {                                                         \
        a = state[0], b = state[1], c = state[2], d = state[3];  \
        e = state[4], f = state[5], g = state[6], h = state[7];  \
        y = b ^ c;                                               \
    } while (0)
#define XADD_STATE()                                             \
    do {                                                         \
        state[0] += a;                                           \
        state[1] += b;                                           \
        state[2] += c;                                           \
        state[3] += d;                                           \
        state[4] += e;                                           \
        state[5] += f;                                           \
        state[6] += g;                                           \
        state[7] += h;                                           \
    } while (0)

static inline PAS_AVX2_FN __m256i ssig0_4(__m256i x, __m256i rot8)
{
    __m256i t = _mm256_xor_si256(_mm256_srli_epi64(x, 1), _mm256_slli_epi64(x, 63));
    t = _mm256_xor_si256(t, _mm256_srli_epi64(x, 7));
    return _mm256_xor_si256(t, _mm256_shuffle_epi8(x, rot8)); /* rotr 8 = a byte shuffle */
}

static inline PAS_AVX2_FN __m256i ssig1_4(__m256i x)
{
    __m256i t = _mm256_xor_si256(_mm256_srli_epi64(x, 19), _mm256_slli_epi64(x, 45));
    __m256i u = _mm256_xor_si256(_mm256_srli_epi64(x, 61), _mm256_slli_epi64(x, 3));
    return _mm256_xor_si256(_mm256_xor_si256(t, u), _mm256_srli_epi64(x, 6));
}

static inline PAS_AVX2_FN __m256i kpair(const uint64_t *k) /* {k[0], k[1], k[0], k[1]} */
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)k));
}

/* {lo[1], hi[0] | lo[3], hi[2]}: the two words that straddle lo and hi in each lane (vpalignr by
 * 8 bytes, done with vshufpd, which competes less with the byte shuffles for execution ports). */
static inline PAS_AVX2_FN __m256i mid2(__m256i lo, __m256i hi)
{
    return _mm256_castpd_si256(_mm256_shuffle_pd(_mm256_castsi256_pd(lo), _mm256_castsi256_pd(hi), 5));
}

#define PAS_ROT8 _mm256_setr_epi8(1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8, \
                                  1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8)

/* The next row from the ring X0..X7 (oldest first): stored with K added (kp: K of the row) at dst,
 * and in place of X0. */
#define PSTEP_AT(X0, X1, X2, X3, X4, X5, X6, X7, dst, kp)                                                  \
    do {                                                                                                  \
        __m256i n_;                                                                                       \
        PAS_VPIN5(X0, X1, X4, X5, X7);                                                                    \
        n_ = _mm256_add_epi64(X0, mid2(X4, X5));                                                          \
        n_ = _mm256_add_epi64(n_, ssig0_4(mid2(X0, X1), rot8));                                           \
        n_ = _mm256_add_epi64(n_, ssig1_4(X7));                                                           \
        X0 = n_;                                                                                          \
        _mm256_store_si256((__m256i *)(void *)(dst), _mm256_add_epi64(n_, kpair(kp)));                    \
    } while (0)
/* Row `row` (>= 8) of table wt. */
#define PSTEP(X0, X1, X2, X3, X4, X5, X6, X7, row) \
    PSTEP_AT(X0, X1, X2, X3, X4, X5, X6, X7, wt + 4 * (row), K512 + 2 * (row))
/* Row j of the eight that follow the stretch at w (k: K of the first of them). */
#define PSTEPW(X0, X1, X2, X3, X4, X5, X6, X7, j) \
    PSTEP_AT(X0, X1, X2, X3, X4, X5, X6, X7, w + 32 + 4 * (j), k + 2 * (j))

/* Loads rows 0..7 (the message words) of the pair (p0, p1): into table wt with K added, and as
 * plain words into X0..X7. */
#define PAIR_LOAD(X0, X1, X2, X3, X4, X5, X6, X7, wt, p0, p1)   \
    do {                                                       \
        X0 = pair_row((wt), (p0), (p1), 0);                    \
        X1 = pair_row((wt), (p0), (p1), 1);                    \
        X2 = pair_row((wt), (p0), (p1), 2);                    \
        X3 = pair_row((wt), (p0), (p1), 3);                    \
        X4 = pair_row((wt), (p0), (p1), 4);                    \
        X5 = pair_row((wt), (p0), (p1), 5);                    \
        X6 = pair_row((wt), (p0), (p1), 6);                    \
        X7 = pair_row((wt), (p0), (p1), 7);                    \
    } while (0)

static inline PAS_AVX2_FN __m256i pair_row(uint64_t *wt, const uint8_t *p0, const uint8_t *p1, int j)
{
    const __m256i bswap = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
                                           7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
    __m256i v = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(p0 + 16 * j))),
        _mm_loadu_si128((const __m128i *)(const void *)(p1 + 16 * j)), 1);
    v = _mm256_shuffle_epi8(v, bswap);
    _mm256_store_si256((__m256i *)(void *)(wt + 4 * j), _mm256_add_epi64(v, kpair(K512 + 2 * j)));
    return v;
}

/* Rows 0..7 of the pair (p0, p1) into table wt and the ring (for blk_half to continue). */
static PAS_AVX2_FN void pair_load(uint64_t *wt, __m256i ring[8], const uint8_t *p0, const uint8_t *p1)
{
    PAIR_LOAD(ring[0], ring[1], ring[2], ring[3], ring[4], ring[5], ring[6], ring[7], wt, p0, p1);
}

/* Zeroes n aligned 32-byte units; the empty asm that may read them keeps the stores. */
static inline PAS_AVX2_FN void wipe32(void *p, size_t n)
{
    __m256i *q = (__m256i *)p;
    size_t i;
    for (i = 0; i < n; i++) {
        _mm256_store_si256(q + i, _mm256_setzero_si256());
    }
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

/* blk_full, blk_half, blk_last and sha512_blocks_avx2: written once in sha512_avx2_blocks.h, here with
 * every hook empty (pasarela_sha512_with_cbc below includes it again with its AES hooks). The end of
 * sha512_blocks_avx2 clears the vector registers: no message-derived words left in them. */
#define PAS_BLK_NAME(n) n
#define PAS_BLK_FN PAS_AVX2_FN
#define PAS_BLK_PARAM
#define PAS_BLK_ARG
#define PAS_BLK_BEGIN
#define PAS_BLK_HOOK(bit) \
    do {                  \
    } while (0)
#define PAS_BLK_NEXT(n) \
    do {                \
    } while (0)
#define PAS_BLK_END
#define PAS_BLK_DONE _mm256_zeroall()
#include "sha512_avx2_blocks.h"
#endif

/* nblocks whole blocks: the first at `first` (the context's buffer, or the input), then consecutive
 * ones at p. */
static void sha512_blocks(unsigned cpu, uint64_t state[8], const uint8_t *first, const uint8_t *p, size_t nblocks)
{
    if (nblocks == 0) {
        return;
    }
#if defined(PAS_SHA512_AVX2)
    if (cpu & PASARELA_CPU_AVX2) {
        sha512_blocks_avx2(state, first, p, nblocks);
        return;
    }
#else
    (void)cpu;
#endif
    sha512_blocks_scalar(state, first, 1);
    sha512_blocks_scalar(state, p, nblocks - 1);
}

void pasarela_sha512_init(pasarela_sha512_ctx *ctx, unsigned cpu)
{
    ctx->state[0] = UINT64_C(0x6a09e667f3bcc908);
    ctx->state[1] = UINT64_C(0xbb67ae8584caa73b);
    ctx->state[2] = UINT64_C(0x3c6ef372fe94f82b);
    ctx->state[3] = UINT64_C(0xa54ff53a5f1d36f1);
    ctx->state[4] = UINT64_C(0x510e527fade682d1);
    ctx->state[5] = UINT64_C(0x9b05688c2b3e6c1f);
    ctx->state[6] = UINT64_C(0x1f83d9abfb41bd6b);
    ctx->state[7] = UINT64_C(0x5be0cd19137e2179);
    ctx->length = 0;
    ctx->used = 0;
    ctx->cpu = cpu;
}

void pasarela_sha512_update(pasarela_sha512_ctx *ctx, const uint8_t *in, size_t n)
{
    if (n == 0) {
        return;
    }
    ctx->length += (uint64_t)n;
    if (ctx->used > 0) {
        size_t take = 128u - ctx->used, more;
        if (take > n) {
            take = n;
        }
        memcpy(ctx->block + ctx->used, in, take);
        ctx->used += take;
        in += take;
        n -= take;
        if (ctx->used < 128u) {
            return;
        }
        /* the completed buffer, then the whole blocks that follow it, in one call */
        more = n / 128u;
        sha512_blocks(ctx->cpu, ctx->state, ctx->block, in, 1u + more);
        in += more * 128u;
        n -= more * 128u;
        ctx->used = 0;
    } else if (n >= 128u) {
        sha512_blocks(ctx->cpu, ctx->state, in, in + 128, n / 128u);
        in += n & ~(size_t)127u;
        n &= 127u;
    }
    if (n > 0) {
        memcpy(ctx->block, in, n);
        ctx->used = n;
    }
}

void pasarela_sha512_final(pasarela_sha512_ctx *ctx, uint8_t out[64])
{
    uint8_t last[128]; /* second padding block, when the length does not fit in the first */
    size_t used = ctx->used;
    uint8_t *len_block = ctx->block;
    int i;

    ctx->block[used++] = 0x80;
    if (used > 112u) {
        memset(ctx->block + used, 0, 128u - used);
        memset(last, 0, 112u);
        len_block = last;
    } else {
        memset(ctx->block + used, 0, 112u - used);
    }
    /* 128-bit big-endian bit length. */
    store64_be(len_block + 112, ctx->length >> 61);
    store64_be(len_block + 120, ctx->length << 3);
    sha512_blocks(ctx->cpu, ctx->state, ctx->block, last, len_block == last ? 2u : 1u);
    for (i = 0; i < 8; i++) {
        store64_be(out + 8 * i, ctx->state[i]);
    }
    pasarela_wipe(ctx, sizeof *ctx);
}

/* The portable code, as the other one-shot primitives run: asking the CPU for its features here would
 * cost a CPUID per call, which a hypervisor traps (about 20 us a call in the VMs this was measured on).
 * Hot paths pass the features they were given (pasarela_sha512_init). */
void pasarela_sha512(const uint8_t *in, size_t n, uint8_t out[64])
{
    pasarela_sha512_ctx ctx;

    pasarela_sha512_init(&ctx, 0);
    pasarela_sha512_update(&ctx, in, n);
    pasarela_sha512_final(&ctx, out);
}

/* For sha512_many.c: whole blocks into a bare state, with the block function cpu selects. */
void pasarela_sha512_blocks(unsigned cpu, uint64_t state[8], const uint8_t *p, size_t nblocks)
{
    if (nblocks > 0) {
        sha512_blocks(cpu, state, p, p + 128, nblocks); /* p + 128 is read only when nblocks >= 2 */
    }
}

/* ==================================================================================================
 * pasarela_sha512_with_cbc: SHA-512 of one message while one AES-256-CBC-PKCS#7 job runs alongside.
 *
 * CBC encryption waits on its own latency (14 dependent aesenc a block, ~57 cycles), the hash on its
 * scalar arithmetic (~4 cycles a round); the AES units sit idle during the hash. The _cbc instances
 * below of blk_full, blk_half and blk_last (sha512_avx2_blocks.h again: same rounds, same schedule,
 * same tables) each take a quota of q AES blocks (0..PAS_CBC_MAX) and issue them at q of ten hook
 * points, one every eight rounds, spread over the 80 rounds; the out-of-order core runs each block's
 * aesenc chain under the rounds that follow. The quota of a hash block is the AES blocks left divided
 * by the hash blocks left, rounded up, at most PAS_CBC_MAX; the AES blocks the hash could not cover run
 * alone at the end (aes.c's one-chain code). The message must not overlap the job's output.
 *
 * Measured on Zen 4 (test_aes_many bench): the overlap is partial. Each AES block issued inside a hash
 * block still adds ~10 ns to it (its latency alone is ~15 ns), whether the 14 aesenc come in one burst,
 * in four parts two rounds apart, or one per round (worse: ~23 ns, the per-round tests cost more than
 * they hide). The hash's dense integer work seems to fill the window (integer registers, reorder
 * buffer) well before a 57-cycle chain completes. Net: 1.05-1.16x over hash-then-encrypt.
 * ================================================================================================== */

#if defined(PAS_SHA512_AVX2)
#define PAS_AVX2_AES_FN __attribute__((target("avx2,bmi,bmi2,aes")))

/* The job's state between hash blocks. The chain value is ciphertext (public); src/pad hold
 * plaintext, which the caller wipes. */
typedef struct pas_cbc_chain {
    const uint8_t *rk;  /* ek[0..14] (pasarela_aes256_schedule.round_keys) */
    const uint8_t *src; /* the next plaintext block: in the job's input, then the padded block */
    const uint8_t *pad; /* the padded final block */
    uint8_t *dst;       /* where its ciphertext goes */
    size_t left;        /* blocks left */
    size_t full_left;   /* of which are read from the job's input */
    size_t sha_left;    /* hash blocks left in the fused run */
    uint8_t chain[16];  /* the last ciphertext block (or the IV) */
} pas_cbc_chain;

#define PAS_CBC_MAX 6u

/* Which of the ten hook points (rounds 0, 8, ..., 72) get a block, for a quota of 0..6. */
static const uint16_t pas_cbc_hooks[PAS_CBC_MAX + 1] = {0x000, 0x001, 0x021, 0x049, 0x0a5, 0x155, 0x1ad};

/* Takes this hash block's quota; returns its hook mask. */
static inline unsigned cbc_take_quota(pas_cbc_chain *cc)
{
    size_t q = cc->sha_left > 0 ? (cc->left + cc->sha_left - 1) / cc->sha_left : 0;
    if (q > PAS_CBC_MAX) {
        q = PAS_CBC_MAX;
    }
    if (cc->sha_left > 0) {
        cc->sha_left--;
    }
    return pas_cbc_hooks[q];
}

/* One CBC block from cc, the chain in register c (the round keys are memory operands: the hash keeps
 * the vector registers busy). */
#define PAS_CBC_BLOCK(cc, c)                                                                           \
    do {                                                                                               \
        const uint8_t *rk_ = (cc)->rk;                                                                 \
        __m128i s_ = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(cc)->src),          \
                                   _mm_loadu_si128((const __m128i *)(const void *)rk_));               \
        s_ = _mm_xor_si128(s_, (c));                                                                   \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 16)));         \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 32)));         \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 48)));         \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 64)));         \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 80)));         \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 96)));         \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 112)));        \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 128)));        \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 144)));        \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 160)));        \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 176)));        \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 192)));        \
        s_ = _mm_aesenc_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 208)));        \
        (c) = _mm_aesenclast_si128(s_, _mm_loadu_si128((const __m128i *)(const void *)(rk_ + 224)));   \
        _mm_storeu_si128((__m128i *)(void *)(cc)->dst, (c));                                           \
        (cc)->dst += 16;                                                                               \
        (cc)->left--;                                                                                  \
        if ((cc)->full_left > 1) {                                                                     \
            (cc)->full_left--;                                                                         \
            (cc)->src += 16;                                                                           \
        } else {                                                                                       \
            (cc)->full_left = 0;                                                                       \
            (cc)->src = (cc)->pad;                                                                     \
        }                                                                                              \
    } while (0)
/* The whole block at one hook point, if m has that hook's bit. Spreading the 14 aesenc over the rounds
 * that follow (in four parts two rounds apart, or one after each round) measured no faster on Zen 4:
 * see pasarela_sha512_with_cbc's notes. */
#define PAS_CBC_HOOK(bit)                \
    do {                                 \
        if (m & (bit)) {                 \
            PAS_CBC_BLOCK(cc, cv);       \
        }                                \
    } while (0)

/* blk_full_cbc, blk_half_cbc, blk_last_cbc and sha512_blocks_avx2_cbc: sha512_avx2_blocks.h again, each
 * block function taking its quota at the start (hook mask m, chain value cv in a register), issuing a CBC
 * block at the hooks whose bit m has, shifting m as its loops go, and storing the chain back at the end.
 * The vector registers are cleared by sha512_with_cbc_avx2, after the job's leftover blocks. */
#define PAS_BLK_NAME(n) n##_cbc
#define PAS_BLK_FN PAS_AVX2_AES_FN
#define PAS_BLK_PARAM , pas_cbc_chain *cc
#define PAS_BLK_ARG , cc
#define PAS_BLK_BEGIN                \
    unsigned m = cbc_take_quota(cc); \
    __m128i cv = _mm_loadu_si128((const __m128i *)(const void *)cc->chain);
#define PAS_BLK_HOOK(bit) PAS_CBC_HOOK(bit)
#define PAS_BLK_NEXT(n) \
    do {                \
        m >>= (n);      \
    } while (0)
#define PAS_BLK_END _mm_storeu_si128((__m128i *)(void *)cc->chain, cv);
#define PAS_BLK_DONE (void)0
#include "sha512_avx2_blocks.h"

static PAS_AVX2_AES_FN void sha512_with_cbc_avx2(const uint8_t *msg, size_t len, uint8_t digest[64],
                                                 const pasarela_cbc_job *job)
{
    uint64_t state[8] = {UINT64_C(0x6a09e667f3bcc908), UINT64_C(0xbb67ae8584caa73b), UINT64_C(0x3c6ef372fe94f82b),
                         UINT64_C(0xa54ff53a5f1d36f1), UINT64_C(0x510e527fade682d1), UINT64_C(0x9b05688c2b3e6c1f),
                         UINT64_C(0x1f83d9abfb41bd6b), UINT64_C(0x5be0cd19137e2179)};
    uint8_t tail[256], pad[16];
    pas_cbc_chain cc;
    size_t full = len / 128u, rem = len % 128u, ntail = rem + 17u > 128u ? 2u : 1u, jrem = job->len % 16u, i;

    /* The job's padded block first: with in == out, its full blocks are about to be overwritten. */
    if (jrem > 0) {
        memcpy(pad, job->in + (job->len - jrem), jrem);
    }
    memset(pad + jrem, (int)(16u - jrem), 16u - jrem);
    /* The hash's last one or two blocks: the tail of msg, 0x80, zeros, the 128-bit bit length. */
    if (rem > 0) {
        memcpy(tail, msg + 128u * full, rem);
    }
    tail[rem] = 0x80;
    memset(tail + rem + 1, 0, 128u * ntail - 16u - rem - 1u);
    store64_be(tail + 128u * ntail - 16u, (uint64_t)len >> 61);
    store64_be(tail + 128u * ntail - 8u, (uint64_t)len << 3);

    cc.rk = job->ks->round_keys;
    cc.full_left = job->len / 16u;
    cc.src = cc.full_left > 0 ? job->in : pad;
    cc.pad = pad;
    cc.dst = job->out;
    cc.left = cc.full_left + 1u;
    cc.sha_left = full + ntail;
    memcpy(cc.chain, job->iv, 16);

    if (full > 0) {
        sha512_blocks_avx2_cbc(state, msg, msg + 128, full, &cc);
    }
    sha512_blocks_avx2_cbc(state, tail, tail + 128, ntail, &cc);
    if (cc.left > 0) { /* what the hash could not cover, alone (aes.c keeps the round keys in registers) */
        if (cc.full_left > 0) {
            pasarela_aes256_cbc_encrypt_blocks(PASARELA_CPU_AES_X86, job->ks, cc.chain, cc.src, cc.full_left, cc.dst);
            cc.dst += 16u * cc.full_left;
        }
        pasarela_aes256_cbc_encrypt_blocks(PASARELA_CPU_AES_X86, job->ks, cc.chain, pad, 1, cc.dst);
    }
    for (i = 0; i < 8; i++) {
        store64_be(digest + 8 * i, state[i]);
    }
    _mm256_zeroall(); /* message words, AES states and round keys */
    pasarela_wipe(tail, sizeof tail);
    pasarela_wipe(pad, sizeof pad);
    pasarela_wipe(state, sizeof state);
    pasarela_wipe(&cc, sizeof cc);
}
#endif /* PAS_SHA512_AVX2 */

void pasarela_sha512_with_cbc(unsigned cpu, const uint8_t *msg, size_t len, uint8_t digest[64],
                              const pasarela_cbc_job *job)
{
    pasarela_sha512_ctx ctx;

#if defined(PAS_SHA512_AVX2)
    if ((cpu & PASARELA_CPU_AVX2) && (cpu & PASARELA_CPU_AES_X86)) {
        sha512_with_cbc_avx2(msg, len, digest, job);
        return;
    }
#endif
    pasarela_sha512_init(&ctx, cpu);
    pasarela_sha512_update(&ctx, msg, len);
    pasarela_sha512_final(&ctx, digest);
    pasarela_aes256_cbc_encrypt_many(cpu, job, 1);
}
