/* sha512_many.c — SHA-512 (FIPS 180-4) of many independent messages, side by side.
 *
 * A scheduler keeps L lanes busy (L = 8 with AVX-512, 4 with AVX2): each lane hashes one message,
 * and when it finishes, its digest is written out and the lane is refilled with the next pending
 * message, so mixed lengths do not leave lanes empty. A lane's blocks come in two segments: the whole
 * blocks of the message, read in place, then its last one or two blocks (the tail bytes, 0x80, zeros
 * and the 128-bit big-endian bit length), built in a per-lane padding buffer. Each call of the vector
 * block function runs every lane through as many blocks as the shortest current segment has left;
 * lanes without a message read a constant zero block and their state is ignored.
 *
 * The vector block functions hold word t of every lane in one register (lane i in element i): the
 * message words are loaded as rows (one lane's block per register, byte-swapped) and transposed.
 * The 16-word rolling schedule and the working variables stay in registers; their spills are
 * overwritten by a stack wipe once the run is over (block functions need at most ~2.6 KiB of stack,
 * the wipe covers 4 KiB), and the vector registers are zeroed. (Loading with 64-bit gathers instead
 * of load + transpose measured 5-15% slower overall on Zen 4.)
 *
 * When no message is pending and the lanes still running would take longer side by side than one
 * after another (few lanes, or one much longer than the rest), they are finished one at a time with
 * sha512.c's single-stream block function.
 *
 * Neither path branches on message bytes; only lengths steer the scheduler. */
#include <string.h>

#include "internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PAS_SHA512_MB 1
#include <immintrin.h>
#endif

#if defined(PAS_SHA512_MB)

#define K512 pasarela_sha512_k /* the round constants, from sha512.c */

static const uint64_t IV512[8] = {
    UINT64_C(0x6a09e667f3bcc908), UINT64_C(0xbb67ae8584caa73b), UINT64_C(0x3c6ef372fe94f82b), UINT64_C(0xa54ff53a5f1d36f1),
    UINT64_C(0x510e527fade682d1), UINT64_C(0x9b05688c2b3e6c1f), UINT64_C(0x1f83d9abfb41bd6b), UINT64_C(0x5be0cd19137e2179),
};

/* What idle lanes read. */
static const uint8_t zero_block[128];

#define PAS_MB_MAX_LANES 8

/* The state of every lane, word-major: st[j][i] is word j of lane i. */
typedef uint64_t pas_mb_state[8][PAS_MB_MAX_LANES];

/* Runs lane i through nblocks blocks starting at ptr[i], advancing by step[i] (128 or 0) per block. */
typedef void (*pas_mb_fn)(pas_mb_state st, const uint8_t *const ptr[PAS_MB_MAX_LANES],
                          const size_t step[PAS_MB_MAX_LANES], size_t nblocks);

/* Eight rounds over the working variables a..h, renamed rather than moved (the argument order
 * rotates the roles). RND(a, ..., h, j) is round r + j of a 16-round stretch starting at round r:
 * it reads W[r + j] from w[j] and K[r + j] from k[j] (k = K512 + r). Shared by both vector paths. */
#define PAS_MB_RND8(RND, t)                                      \
    do {                                                         \
        RND(a, b, c, d, e, f, g, h, (t) + 0);                    \
        RND(h, a, b, c, d, e, f, g, (t) + 1);                    \
        RND(g, h, a, b, c, d, e, f, (t) + 2);                    \
        RND(f, g, h, a, b, c, d, e, (t) + 3);                    \
        RND(e, f, g, h, a, b, c, d, (t) + 4);                    \
        RND(d, e, f, g, h, a, b, c, (t) + 5);                    \
        RND(c, d, e, f, g, h, a, b, (t) + 6);                    \
        RND(b, c, d, e, f, g, h, a, (t) + 7);                    \
    } while (0)

/* ---- AVX-512 F+VL+BW: 8 lanes in zmm registers ---- */
#define PAS_AVX512_FN __attribute__((target("avx2,avx512f,avx512vl,avx512bw")))

#define Z_ADD(x, y) _mm512_add_epi64((x), (y))
#define Z_ROR(x, n) _mm512_ror_epi64((x), (n))
#define Z_XOR3(x, y, z) _mm512_ternarylogic_epi64((x), (y), (z), 0x96)
#define Z_BSIG0(x) Z_XOR3(Z_ROR((x), 28), Z_ROR((x), 34), Z_ROR((x), 39))
#define Z_BSIG1(x) Z_XOR3(Z_ROR((x), 14), Z_ROR((x), 18), Z_ROR((x), 41))
#define Z_SSIG0(x) Z_XOR3(Z_ROR((x), 1), Z_ROR((x), 8), _mm512_srli_epi64((x), 7))
#define Z_SSIG1(x) Z_XOR3(Z_ROR((x), 19), Z_ROR((x), 61), _mm512_srli_epi64((x), 6))
#define Z_CH(e, f, g) _mm512_ternarylogic_epi64((e), (f), (g), 0xca)  /* e ? f : g */
#define Z_MAJ(a, b, c) _mm512_ternarylogic_epi64((a), (b), (c), 0xe8) /* majority */

/* Round r + t of a stretch (see PAS_MB_RND8). */
#define ZRND(a, b, c, d, e, f, g, h, t)                                                             \
    do {                                                                                            \
        __m512i t1_ = Z_ADD(Z_ADD((h), Z_ADD(w[(t)], _mm512_set1_epi64((long long)k[(t)]))), \
                            Z_ADD(Z_BSIG1(e), Z_CH((e), (f), (g))));                                \
        (d) = Z_ADD((d), t1_);                                                                      \
        (h) = Z_ADD(t1_, Z_ADD(Z_BSIG0(a), Z_MAJ((a), (b), (c))));                                  \
    } while (0)
/* The same with r >= 16: first W[r + t] in place of W[r + t - 16]. */
#define ZRNDW(a, b, c, d, e, f, g, h, t)                                                               \
    do {                                                                                               \
        w[(t)] = Z_ADD(Z_ADD(w[(t)], Z_SSIG1(w[((t) + 14) & 15])),                                   \
                       Z_ADD(w[((t) + 9) & 15], Z_SSIG0(w[((t) + 1) & 15])));                             \
        ZRND(a, b, c, d, e, f, g, h, t);                                                               \
    } while (0)

/* In-lane 8x8 transpose of 64-bit elements: r[i] element j -> r[j] element i. */
static inline PAS_AVX512_FN void z_transpose8(__m512i r[8])
{
    __m512i t0 = _mm512_unpacklo_epi64(r[0], r[1]), t1 = _mm512_unpackhi_epi64(r[0], r[1]);
    __m512i t2 = _mm512_unpacklo_epi64(r[2], r[3]), t3 = _mm512_unpackhi_epi64(r[2], r[3]);
    __m512i t4 = _mm512_unpacklo_epi64(r[4], r[5]), t5 = _mm512_unpackhi_epi64(r[4], r[5]);
    __m512i t6 = _mm512_unpacklo_epi64(r[6], r[7]), t7 = _mm512_unpackhi_epi64(r[6], r[7]);
    /* t0: {w0, w2, w4, w6} of lanes 0, 1 as 128-bit pairs; t1: {w1, w3, w5, w7}; ... */
    __m512i u0 = _mm512_shuffle_i64x2(t0, t2, 0x88), u1 = _mm512_shuffle_i64x2(t0, t2, 0xdd);
    __m512i u2 = _mm512_shuffle_i64x2(t1, t3, 0x88), u3 = _mm512_shuffle_i64x2(t1, t3, 0xdd);
    __m512i u4 = _mm512_shuffle_i64x2(t4, t6, 0x88), u5 = _mm512_shuffle_i64x2(t4, t6, 0xdd);
    __m512i u6 = _mm512_shuffle_i64x2(t5, t7, 0x88), u7 = _mm512_shuffle_i64x2(t5, t7, 0xdd);
    /* u0: {w0, w4} of lanes 0-1, then of lanes 2-3; u1: {w2, w6}; u2: {w1, w5}; u3: {w3, w7} */
    r[0] = _mm512_shuffle_i64x2(u0, u4, 0x88);
    r[4] = _mm512_shuffle_i64x2(u0, u4, 0xdd);
    r[2] = _mm512_shuffle_i64x2(u1, u5, 0x88);
    r[6] = _mm512_shuffle_i64x2(u1, u5, 0xdd);
    r[1] = _mm512_shuffle_i64x2(u2, u6, 0x88);
    r[5] = _mm512_shuffle_i64x2(u2, u6, 0xdd);
    r[3] = _mm512_shuffle_i64x2(u3, u7, 0x88);
    r[7] = _mm512_shuffle_i64x2(u3, u7, 0xdd);
}

static PAS_AVX512_FN __attribute__((noinline)) void mb8_blocks(pas_mb_state st, const uint8_t *const ptr[8],
                                                              const size_t step[8], size_t nblocks)
{
    const __m512i bswap = _mm512_set_epi64(
        0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
        0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
    __m512i s[8], w[16];
    __m512i a, b, c, d, e, f, g, h;
    const uint64_t *k;
    size_t blk, off = 0;
    int i;

    for (i = 0; i < 8; i++) {
        s[i] = _mm512_loadu_si512((const void *)st[i]);
    }
    for (blk = 0; blk < nblocks; blk++, off += 128) {
        for (i = 0; i < 8; i++) { /* rows: words 0..7 of lane i, then words 8..15 */
            const uint8_t *p = ptr[i] + (step[i] ? off : 0);
            w[i] = _mm512_shuffle_epi8(_mm512_loadu_si512((const void *)p), bswap);
            w[8 + i] = _mm512_shuffle_epi8(_mm512_loadu_si512((const void *)(p + 64)), bswap);
        }
        z_transpose8(w);
        z_transpose8(w + 8);
        a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
        k = K512;
        PAS_MB_RND8(ZRND, 0);
        PAS_MB_RND8(ZRND, 8);
        for (k = K512 + 16; k != K512 + 80; k += 16) {
            PAS_MB_RND8(ZRNDW, 0);
            PAS_MB_RND8(ZRNDW, 8);
        }
        s[0] = Z_ADD(s[0], a), s[1] = Z_ADD(s[1], b), s[2] = Z_ADD(s[2], c), s[3] = Z_ADD(s[3], d);
        s[4] = Z_ADD(s[4], e), s[5] = Z_ADD(s[5], f), s[6] = Z_ADD(s[6], g), s[7] = Z_ADD(s[7], h);
    }
    for (i = 0; i < 8; i++) {
        _mm512_storeu_si512((void *)st[i], s[i]);
    }
}

/* Zeroes every vector register: zmm16-31 (which vzeroall leaves alone), then zmm0-15. */
static PAS_AVX512_FN __attribute__((noinline)) void mb8_clear_registers(void)
{
    __asm__ __volatile__("vpxord %%xmm16, %%xmm16, %%xmm16\n\t"
                         "vpxord %%xmm17, %%xmm17, %%xmm17\n\t"
                         "vpxord %%xmm18, %%xmm18, %%xmm18\n\t"
                         "vpxord %%xmm19, %%xmm19, %%xmm19\n\t"
                         "vpxord %%xmm20, %%xmm20, %%xmm20\n\t"
                         "vpxord %%xmm21, %%xmm21, %%xmm21\n\t"
                         "vpxord %%xmm22, %%xmm22, %%xmm22\n\t"
                         "vpxord %%xmm23, %%xmm23, %%xmm23\n\t"
                         "vpxord %%xmm24, %%xmm24, %%xmm24\n\t"
                         "vpxord %%xmm25, %%xmm25, %%xmm25\n\t"
                         "vpxord %%xmm26, %%xmm26, %%xmm26\n\t"
                         "vpxord %%xmm27, %%xmm27, %%xmm27\n\t"
                         "vpxord %%xmm28, %%xmm28, %%xmm28\n\t"
                         "vpxord %%xmm29, %%xmm29, %%xmm29\n\t"
                         "vpxord %%xmm30, %%xmm30, %%xmm30\n\t"
                         "vpxord %%xmm31, %%xmm31, %%xmm31\n\t"
                         "vzeroall"
                         :
                         :
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                           "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",
                           "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30",
                           "xmm31");
}

/* ---- AVX2: 4 lanes in ymm registers (rotates are two shifts) ---- */
#define PAS_AVX2_FN __attribute__((target("avx2")))

#define Y_ADD(x, y) _mm256_add_epi64((x), (y))
#define Y_XOR(x, y) _mm256_xor_si256((x), (y))
#define Y_SHR(x, n) _mm256_srli_epi64((x), (n))
#define Y_SHL(x, n) _mm256_slli_epi64((x), (n))
#define Y_ROR(x, n) Y_XOR(Y_SHR((x), (n)), Y_SHL((x), 64 - (n)))
#define Y_BSIG0(x) Y_XOR(Y_XOR(Y_ROR((x), 28), Y_ROR((x), 34)), Y_ROR((x), 39))
#define Y_BSIG1(x) Y_XOR(Y_XOR(Y_ROR((x), 14), Y_ROR((x), 18)), Y_ROR((x), 41))
#define Y_SSIG0(x) Y_XOR(Y_XOR(Y_ROR((x), 1), _mm256_shuffle_epi8((x), rot8)), Y_SHR((x), 7))
#define Y_SSIG1(x) Y_XOR(Y_XOR(Y_ROR((x), 19), Y_ROR((x), 61)), Y_SHR((x), 6))
#define Y_CH(e, f, g) Y_XOR(_mm256_and_si256((e), Y_XOR((f), (g))), (g))

/* Round r + t of a stretch (see PAS_MB_RND8); Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b, where b ^ c is
 * the previous round's a ^ b (in bc). */
#define YRND(a, b, c, d, e, f, g, h, t)                                                             \
    do {                                                                                            \
        __m256i t1_ = Y_ADD(Y_ADD((h), Y_ADD(w[(t)], _mm256_set1_epi64x((long long)k[(t)]))),       \
                            Y_ADD(Y_BSIG1(e), Y_CH((e), (f), (g))));                                \
        __m256i ab_ = Y_XOR((a), (b));                                                              \
        (d) = Y_ADD((d), t1_);                                                                      \
        (h) = Y_ADD(t1_, Y_ADD(Y_BSIG0(a), Y_XOR(_mm256_and_si256(ab_, bc), (b))));                 \
        bc = ab_;                                                                                   \
    } while (0)
/* The same with r >= 16: first W[r + t] in place of W[r + t - 16]. */
#define YRNDW(a, b, c, d, e, f, g, h, t)                                                               \
    do {                                                                                               \
        w[(t)] = Y_ADD(Y_ADD(w[(t)], Y_SSIG1(w[((t) + 14) & 15])),                                   \
                       Y_ADD(w[((t) + 9) & 15], Y_SSIG0(w[((t) + 1) & 15])));                             \
        YRND(a, b, c, d, e, f, g, h, t);                                                               \
    } while (0)

/* 4x4 transpose of 64-bit elements. */
static inline PAS_AVX2_FN void y_transpose4(__m256i r[4])
{
    __m256i t0 = _mm256_unpacklo_epi64(r[0], r[1]), t1 = _mm256_unpackhi_epi64(r[0], r[1]);
    __m256i t2 = _mm256_unpacklo_epi64(r[2], r[3]), t3 = _mm256_unpackhi_epi64(r[2], r[3]);
    r[0] = _mm256_permute2x128_si256(t0, t2, 0x20);
    r[1] = _mm256_permute2x128_si256(t1, t3, 0x20);
    r[2] = _mm256_permute2x128_si256(t0, t2, 0x31);
    r[3] = _mm256_permute2x128_si256(t1, t3, 0x31);
}

static PAS_AVX2_FN __attribute__((noinline)) void mb4_blocks(pas_mb_state st, const uint8_t *const ptr[8],
                                                            const size_t step[8], size_t nblocks)
{
    const __m256i bswap = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
                                           7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
    const __m256i rot8 = _mm256_setr_epi8(1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8,
                                          1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8);
    __m256i s[8], w[16];
    __m256i a, b, c, d, e, f, g, h, bc;
    const uint64_t *k;
    size_t blk, off = 0;
    int i, q;

    for (i = 0; i < 8; i++) {
        s[i] = _mm256_loadu_si256((const __m256i *)(const void *)st[i]);
    }
    for (blk = 0; blk < nblocks; blk++, off += 128) {
        for (q = 0; q < 4; q++) { /* words 4q..4q+3 of the four lanes */
            for (i = 0; i < 4; i++) {
                const uint8_t *p = ptr[i] + (step[i] ? off : 0);
                w[4 * q + i] = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * q)),
                                                   bswap);
            }
            y_transpose4(w + 4 * q);
        }
        a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
        bc = Y_XOR(b, c);
        k = K512;
        PAS_MB_RND8(YRND, 0);
        PAS_MB_RND8(YRND, 8);
        for (k = K512 + 16; k != K512 + 80; k += 16) {
            PAS_MB_RND8(YRNDW, 0);
            PAS_MB_RND8(YRNDW, 8);
        }
        s[0] = Y_ADD(s[0], a), s[1] = Y_ADD(s[1], b), s[2] = Y_ADD(s[2], c), s[3] = Y_ADD(s[3], d);
        s[4] = Y_ADD(s[4], e), s[5] = Y_ADD(s[5], f), s[6] = Y_ADD(s[6], g), s[7] = Y_ADD(s[7], h);
    }
    for (i = 0; i < 8; i++) {
        _mm256_storeu_si256((__m256i *)(void *)st[i], s[i]);
    }
    _mm256_zeroall(); /* no message-derived words left in vector registers */
}

/* Overwrites the stack the block functions used (their spills of schedule words and working
 * variables): called by their caller, from the same depth, once it is done with them. */
static __attribute__((noinline)) void mb_wipe_stack(void)
{
    uint8_t burn[4096];
    pasarela_wipe(burn, sizeof burn);
    __asm__ __volatile__("" : : "r"(burn) : "memory");
}

static void store64_be(uint8_t *p, uint64_t v)
{
    int i;
    for (i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

/* Side-by-side cost of one block step over the single-stream (AVX2/BMI2) cost of one block, in
 * eighths, as measured on Zen 4 (gcc 12 / clang 14: 8 lanes ~2.5x / ~2.1x, 4 lanes ~3.4x / ~2.3x). The
 * running lanes are finished one by one when their blocks left, summed, cost no more that way than
 * the longest of them does side by side. */
#define PAS_MB8_COST8 20u
#define PAS_MB4_COST8 26u

/* One lane's progress through its message. */
typedef struct pas_mb_lane {
    const uint8_t *p; /* next block of the current segment */
    size_t left;      /* blocks left in the current segment */
    size_t pad_n;     /* blocks in the padding buffer (1 or 2) */
    size_t msg;       /* index of the message */
    int in_pad;       /* current segment: 0 = the message's whole blocks, 1 = the padding buffer */
    int busy;
} pas_mb_lane;

/* Starts message m in lane i: state, padding buffer, first segment. */
static void mb_start(pas_mb_state st, pas_mb_lane *ln, uint8_t pad[256], int i, size_t m, const uint8_t *msg,
                     size_t len)
{
    size_t whole = len / 128u, tail = len % 128u;
    uint64_t bits_lo = (uint64_t)len << 3, bits_hi = (uint64_t)len >> 61;
    int j;

    for (j = 0; j < 8; j++) {
        st[j][i] = IV512[j];
    }
    if (tail > 0) {
        memcpy(pad, msg + 128u * whole, tail);
    }
    pad[tail] = 0x80;
    ln->pad_n = tail + 17u > 128u ? 2u : 1u;
    memset(pad + tail + 1, 0, 128u * ln->pad_n - 16u - tail - 1u);
    store64_be(pad + 128u * ln->pad_n - 16u, bits_hi);
    store64_be(pad + 128u * ln->pad_n - 8u, bits_lo);
    ln->msg = m;
    ln->busy = 1;
    if (whole > 0) {
        ln->p = msg, ln->left = whole, ln->in_pad = 0;
    } else {
        ln->p = pad, ln->left = ln->pad_n, ln->in_pad = 1;
    }
}

static void mb_idle(pas_mb_lane *ln)
{
    ln->p = zero_block, ln->left = 0, ln->busy = 0, ln->in_pad = 0, ln->pad_n = 0;
}

static void mb_output(pas_mb_state st, int i, uint8_t *out)
{
    int j;
    for (j = 0; j < 8; j++) {
        store64_be(out + 8 * j, st[j][i]);
    }
}

static void mb_run(unsigned cpu, int lanes, pas_mb_fn fn, unsigned cost8, const uint8_t *const *msgs,
                   const size_t *lens, size_t n, uint8_t *digests)
{
    pas_mb_state st __attribute__((aligned(64)));
    uint8_t pad[PAS_MB_MAX_LANES][256];
    uint64_t one[8];
    pas_mb_lane ln[PAS_MB_MAX_LANES];
    const uint8_t *ptr[PAS_MB_MAX_LANES];
    size_t step[PAS_MB_MAX_LANES];
    size_t next = 0, k, sum, max, rest;
    int i, j, busy;

    memset(st, 0, sizeof st);
    for (i = 0; i < PAS_MB_MAX_LANES; i++) {
        if (i < lanes && next < n) {
            mb_start(st, &ln[i], pad[i], i, next, msgs[next], lens[next]);
            next++;
        } else {
            mb_idle(&ln[i]);
        }
    }
    for (;;) {
        busy = 0, k = SIZE_MAX, sum = 0, max = 0;
        for (i = 0; i < lanes; i++) {
            if (ln[i].busy) {
                busy++;
                if (ln[i].left < k) {
                    k = ln[i].left;
                }
                rest = ln[i].left + (ln[i].in_pad ? 0 : ln[i].pad_n);
                sum += rest;
                if (rest > max) {
                    max = rest;
                }
            }
        }
        if (busy == 0) {
            break;
        }
        if (next == n && (uint64_t)sum * 8u <= (uint64_t)max * cost8) {
            /* cheaper one at a time from here */
            for (i = 0; i < lanes; i++) {
                if (!ln[i].busy) {
                    continue;
                }
                for (j = 0; j < 8; j++) {
                    one[j] = st[j][i];
                }
                if (!ln[i].in_pad) {
                    pasarela_sha512_blocks(cpu, one, ln[i].p, ln[i].left);
                    ln[i].p = pad[i], ln[i].left = ln[i].pad_n;
                }
                pasarela_sha512_blocks(cpu, one, ln[i].p, ln[i].left);
                for (j = 0; j < 8; j++) {
                    store64_be(digests + 64u * ln[i].msg + 8u * (size_t)j, one[j]);
                }
                mb_idle(&ln[i]);
            }
            break;
        }
        for (i = 0; i < lanes; i++) {
            ptr[i] = ln[i].p;
            step[i] = ln[i].busy ? 128u : 0u;
        }
        fn(st, ptr, step, k);
        for (i = 0; i < lanes; i++) {
            if (!ln[i].busy) {
                continue;
            }
            ln[i].left -= k;
            ln[i].p += 128u * k;
            if (ln[i].left > 0) {
                continue;
            }
            if (!ln[i].in_pad) {
                ln[i].p = pad[i], ln[i].left = ln[i].pad_n, ln[i].in_pad = 1;
                continue;
            }
            mb_output(st, i, digests + 64u * ln[i].msg);
            if (next < n) {
                mb_start(st, &ln[i], pad[i], i, next, msgs[next], lens[next]);
                next++;
            } else {
                mb_idle(&ln[i]);
            }
        }
    }
    mb_wipe_stack();
    pasarela_wipe(st, sizeof st);
    pasarela_wipe(pad, sizeof pad[0] * (size_t)lanes);
    pasarela_wipe(one, sizeof one);
}

/* Whether n messages are worth running side by side at all: with no more messages than lanes, the
 * test mb_run applies once no message is pending (here before any setup, to skip its cost). */
static int mb_worth(size_t lanes, unsigned cost8, const size_t *lens, size_t n)
{
    uint64_t sum = 0, max = 0, blocks;
    size_t i;

    if (n == 0) {
        return 0;
    }
    if (n > lanes) {
        return 1;
    }
    for (i = 0; i < n; i++) {
        blocks = (uint64_t)(lens[i] / 128u) + (lens[i] % 128u + 17u > 128u ? 2u : 1u);
        sum += blocks;
        max = blocks > max ? blocks : max;
    }
    return sum * 8u > max * cost8;
}
#endif

int pasarela_sha512_many_side_by_side(unsigned cpu, const size_t *lens, size_t n)
{
#if defined(PAS_SHA512_MB)
    if (cpu & PASARELA_CPU_AVX512) {
        return mb_worth(8, PAS_MB8_COST8, lens, n);
    }
    if (cpu & PASARELA_CPU_AVX2) {
        return mb_worth(4, PAS_MB4_COST8, lens, n);
    }
#endif
    (void)cpu, (void)lens, (void)n;
    return 0;
}

void pasarela_sha512_many(unsigned cpu, const uint8_t *const *msgs, const size_t *lens, size_t n, uint8_t *digests)
{
    pasarela_sha512_ctx ctx;
    size_t i;

#if defined(PAS_SHA512_MB)
    if (cpu & PASARELA_CPU_AVX512) { /* when not worth 8 lanes, 4 are not either */
        if (mb_worth(8, PAS_MB8_COST8, lens, n)) {
            mb_run(cpu, 8, mb8_blocks, PAS_MB8_COST8, msgs, lens, n, digests);
            mb8_clear_registers();
            return;
        }
    } else if ((cpu & PASARELA_CPU_AVX2) && mb_worth(4, PAS_MB4_COST8, lens, n)) {
        mb_run(cpu, 4, mb4_blocks, PAS_MB4_COST8, msgs, lens, n, digests);
        return;
    }
#endif
    for (i = 0; i < n; i++) {
        pasarela_sha512_init(&ctx, cpu);
        pasarela_sha512_update(&ctx, msgs[i], lens[i]);
        pasarela_sha512_final(&ctx, digests + 64u * i);
    }
}
