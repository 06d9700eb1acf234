/* sha512.c — streaming SHA-512 (FIPS 180-4), portable C tuned for 64-bit targets.
 *
 * The 80 rounds are fully unrolled via macros over a 16-word rolling message schedule, with the
 * working variables renamed instead of shifted. Rotates are written so compilers emit ror, and
 * big-endian loads use __builtin_bswap64 where available. The only table is the K constants,
 * indexed by round number, never by data. */
#include <string.h>

#include "internal.h"

static const uint64_t K512[80] = {
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

static void sha512_blocks(uint64_t state[8], const uint8_t *p, size_t nblocks)
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

void pasarela_sha512_init(pasarela_sha512_ctx *ctx)
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
}

void pasarela_sha512_update(pasarela_sha512_ctx *ctx, const uint8_t *in, size_t n)
{
    if (n == 0) {
        return;
    }
    ctx->length += (uint64_t)n;
    if (ctx->used > 0) {
        size_t take = 128u - ctx->used;
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
        sha512_blocks(ctx->state, ctx->block, 1);
        ctx->used = 0;
    }
    if (n >= 128u) {
        sha512_blocks(ctx->state, in, n / 128u);
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
    size_t used = ctx->used;
    int i;

    ctx->block[used++] = 0x80;
    if (used > 112u) {
        memset(ctx->block + used, 0, 128u - used);
        sha512_blocks(ctx->state, ctx->block, 1);
        used = 0;
    }
    memset(ctx->block + used, 0, 112u - used);
    /* 128-bit big-endian bit length. */
    store64_be(ctx->block + 112, ctx->length >> 61);
    store64_be(ctx->block + 120, ctx->length << 3);
    sha512_blocks(ctx->state, ctx->block, 1);
    for (i = 0; i < 8; i++) {
        store64_be(out + 8 * i, ctx->state[i]);
    }
    pasarela_wipe(ctx, sizeof *ctx);
}

void pasarela_sha512(const uint8_t *in, size_t n, uint8_t out[64])
{
    pasarela_sha512_ctx ctx;

    pasarela_sha512_init(&ctx);
    pasarela_sha512_update(&ctx, in, n);
    pasarela_sha512_final(&ctx, out);
}
