/* sha512_avx2_blocks.h — the AVX2 + BMI2 SHA-512 block functions of sha512.c, written once.
 *
 * Not a header to use elsewhere: a template that only sha512.c includes, twice, after its AVX2 macros and
 * helpers (XRND, PSTEP, pair_load, wipe32, ...; see the comment at its AVX2 section), to define
 *  - blk_full, blk_half, blk_last and sha512_blocks_avx2: plain SHA-512 (every hook below empty), and
 *  - blk_full_cbc, ..., sha512_blocks_avx2_cbc: the same rounds, schedule and tables with one AES-256-CBC
 *    job interleaved for pasarela_sha512_with_cbc (see its notes in sha512.c).
 * Before each inclusion sha512.c defines (and the end of this file undefines):
 *   PAS_BLK_NAME(n)    the name of function n in this instance
 *   PAS_BLK_FN         the target attribute
 *   PAS_BLK_PARAM      extra trailing parameters, with a leading comma (or nothing)
 *   PAS_BLK_ARG        the matching extra arguments (or nothing)
 *   PAS_BLK_BEGIN      declarations after those of a block function (or nothing)
 *   PAS_BLK_HOOK(bit)  a hook point; there is one every eight rounds, ten per block, with bit 1u, 2u
 *                      (and in blk_half's loop 4u, 8u) in order
 *   PAS_BLK_NEXT(n)    after n hook points of a loop iteration (shifts the hook mask)
 *   PAS_BLK_END        after a block function's rounds have been added to the state (or nothing)
 *   PAS_BLK_DONE       statement ending sha512_blocks_avx2
 * The plain instance's hooks expand to nothing (a do-while(0) at most), so it compiles to the same code as
 * before the fused variant existed: keep it that way (compare the disassembly of blk_full, blk_half,
 * blk_last and sha512_blocks_avx2 before and after any change here). */
#if !defined(PAS_SHA512_AVX2) || !defined(PAS_BLK_NAME) || !defined(PAS_BLK_FN) || !defined(PAS_BLK_PARAM) || \
    !defined(PAS_BLK_ARG) || !defined(PAS_BLK_BEGIN) || !defined(PAS_BLK_HOOK) || !defined(PAS_BLK_NEXT) ||       \
    !defined(PAS_BLK_END) || !defined(PAS_BLK_DONE)
#error "sha512_avx2_blocks.h is a template for sha512.c only"
#endif

/* The first block of an update, at p0 (p1: the next block, or p0 again): loads the pair into table
 * wt and reads lane 0 of it while computing rows 8..39, each eight rounds before its first use.
 * When it is also the last block (last != 0), it wipes the table. Hooks: 2 per 16 rounds. */
static PAS_BLK_FN __attribute__((noinline)) void PAS_BLK_NAME(blk_full)(uint64_t state[8], uint64_t *wt,
                                                                    const uint8_t *p0, const uint8_t *p1,
                                                                    int last PAS_BLK_PARAM)
{
    const __m256i rot8 = PAS_ROT8;
    __m256i x0, x1, x2, x3, x4, x5, x6, x7;
    uint64_t *w = wt;
    const uint64_t *k = K512 + 16;
    uint64_t a, b, c, d, e, f, g, h, x, y;
    PAS_BLK_BEGIN

    PAIR_LOAD(x0, x1, x2, x3, x4, x5, x6, x7, wt, p0, p1);
    XLOAD_STATE();
    do { /* 16 rounds reading the 8 rows at w, computing the 8 rows after them */
        PAS_PIN(w); /* read the rows back from memory rather than carry them in registers */
        PAS_BLK_HOOK(1u);
        PSTEPW(x0, x1, x2, x3, x4, x5, x6, x7, 0);
        XRND(a, b, c, d, e, f, g, h, XW(0), x, y);
        XRND(h, a, b, c, d, e, f, g, XW(1), y, x);
        PSTEPW(x1, x2, x3, x4, x5, x6, x7, x0, 1);
        XRND(g, h, a, b, c, d, e, f, XW(2), x, y);
        XRND(f, g, h, a, b, c, d, e, XW(3), y, x);
        PSTEPW(x2, x3, x4, x5, x6, x7, x0, x1, 2);
        XRND(e, f, g, h, a, b, c, d, XW(4), x, y);
        XRND(d, e, f, g, h, a, b, c, XW(5), y, x);
        PSTEPW(x3, x4, x5, x6, x7, x0, x1, x2, 3);
        XRND(c, d, e, f, g, h, a, b, XW(6), x, y);
        XRND(b, c, d, e, f, g, h, a, XW(7), y, x);
        PAS_BLK_HOOK(2u);
        PSTEPW(x4, x5, x6, x7, x0, x1, x2, x3, 4);
        XRND(a, b, c, d, e, f, g, h, XW(8), x, y);
        XRND(h, a, b, c, d, e, f, g, XW(9), y, x);
        PSTEPW(x5, x6, x7, x0, x1, x2, x3, x4, 5);
        XRND(g, h, a, b, c, d, e, f, XW(10), x, y);
        XRND(f, g, h, a, b, c, d, e, XW(11), y, x);
        PSTEPW(x6, x7, x0, x1, x2, x3, x4, x5, 6);
        XRND(e, f, g, h, a, b, c, d, XW(12), x, y);
        XRND(d, e, f, g, h, a, b, c, XW(13), y, x);
        PSTEPW(x7, x0, x1, x2, x3, x4, x5, x6, 7);
        XRND(c, d, e, f, g, h, a, b, XW(14), x, y);
        XRND(b, c, d, e, f, g, h, a, XW(15), y, x);
        w += 32;
        k += 16;
        PAS_BLK_NEXT(2);
    } while (k != K512 + 80);
    PAS_PIN(w);
    PAS_BLK_HOOK(1u);
    XRND8(XW);
    PAS_BLK_HOOK(2u);
    XRND8(XW8);
    XADD_STATE();
    PAS_BLK_END
    if (last) {
        wipe32(wt, 40);
    }
}

/* A later block: reads the rows at wr while computing rows row0 .. row0 + 15 of table wt (one
 * every four rounds of the first 64), continuing the ring. Hooks: 4 per 32 rounds, then 2 in the last 16. */
static PAS_BLK_FN __attribute__((noinline)) void PAS_BLK_NAME(blk_half)(uint64_t state[8], const uint64_t *wr,
                                                                    uint64_t *wt, __m256i ring[8],
                                                                    int row0 PAS_BLK_PARAM)
{
    const __m256i rot8 = PAS_ROT8;
    __m256i x0 = ring[0], x1 = ring[1], x2 = ring[2], x3 = ring[3];
    __m256i x4 = ring[4], x5 = ring[5], x6 = ring[6], x7 = ring[7];
    const uint64_t *w;
    uint64_t a, b, c, d, e, f, g, h, x, y;
    int r;
    PAS_BLK_BEGIN

    XLOAD_STATE();
    for (r = 0; r < 2; r++) {
        const int q = row0 + 8 * r;
        w = wr + 64 * r;
        PAS_PIN(w);
        PAS_BLK_HOOK(1u);
        PSTEP(x0, x1, x2, x3, x4, x5, x6, x7, q);
        XRND(a, b, c, d, e, f, g, h, XW(0), x, y);
        XRND(h, a, b, c, d, e, f, g, XW(1), y, x);
        XRND(g, h, a, b, c, d, e, f, XW(2), x, y);
        XRND(f, g, h, a, b, c, d, e, XW(3), y, x);
        PSTEP(x1, x2, x3, x4, x5, x6, x7, x0, q + 1);
        XRND(e, f, g, h, a, b, c, d, XW(4), x, y);
        XRND(d, e, f, g, h, a, b, c, XW(5), y, x);
        XRND(c, d, e, f, g, h, a, b, XW(6), x, y);
        XRND(b, c, d, e, f, g, h, a, XW(7), y, x);
        PAS_BLK_HOOK(2u);
        PSTEP(x2, x3, x4, x5, x6, x7, x0, x1, q + 2);
        XRND(a, b, c, d, e, f, g, h, XW(8), x, y);
        XRND(h, a, b, c, d, e, f, g, XW(9), y, x);
        XRND(g, h, a, b, c, d, e, f, XW(10), x, y);
        XRND(f, g, h, a, b, c, d, e, XW(11), y, x);
        PSTEP(x3, x4, x5, x6, x7, x0, x1, x2, q + 3);
        XRND(e, f, g, h, a, b, c, d, XW(12), x, y);
        XRND(d, e, f, g, h, a, b, c, XW(13), y, x);
        XRND(c, d, e, f, g, h, a, b, XW(14), x, y);
        XRND(b, c, d, e, f, g, h, a, XW(15), y, x);
        PAS_BLK_HOOK(4u);
        PSTEP(x4, x5, x6, x7, x0, x1, x2, x3, q + 4);
        XRND(a, b, c, d, e, f, g, h, XW16(0), x, y);
        XRND(h, a, b, c, d, e, f, g, XW16(1), y, x);
        XRND(g, h, a, b, c, d, e, f, XW16(2), x, y);
        XRND(f, g, h, a, b, c, d, e, XW16(3), y, x);
        PSTEP(x5, x6, x7, x0, x1, x2, x3, x4, q + 5);
        XRND(e, f, g, h, a, b, c, d, XW16(4), x, y);
        XRND(d, e, f, g, h, a, b, c, XW16(5), y, x);
        XRND(c, d, e, f, g, h, a, b, XW16(6), x, y);
        XRND(b, c, d, e, f, g, h, a, XW16(7), y, x);
        PAS_BLK_HOOK(8u);
        PSTEP(x6, x7, x0, x1, x2, x3, x4, x5, q + 6);
        XRND(a, b, c, d, e, f, g, h, XW16(8), x, y);
        XRND(h, a, b, c, d, e, f, g, XW16(9), y, x);
        XRND(g, h, a, b, c, d, e, f, XW16(10), x, y);
        XRND(f, g, h, a, b, c, d, e, XW16(11), y, x);
        PSTEP(x7, x0, x1, x2, x3, x4, x5, x6, q + 7);
        XRND(e, f, g, h, a, b, c, d, XW16(12), x, y);
        XRND(d, e, f, g, h, a, b, c, XW16(13), y, x);
        XRND(c, d, e, f, g, h, a, b, XW16(14), x, y);
        XRND(b, c, d, e, f, g, h, a, XW16(15), y, x);
        PAS_BLK_NEXT(4);
    }
    w = wr + 128;
    PAS_PIN(w);
    PAS_BLK_HOOK(1u);
    XRND8(XW);
    PAS_BLK_HOOK(2u);
    XRND8(XW8);
    XADD_STATE();
    PAS_BLK_END
    ring[0] = x0, ring[1] = x1, ring[2] = x2, ring[3] = x3;
    ring[4] = x4, ring[5] = x5, ring[6] = x6, ring[7] = x7;
}

/* The last block of an update when it is the second of its pair: all its rows are ready and there is
 * no schedule work left, so it wipes as it goes: the rows of its own table zcur once it has read
 * them, the other table and the ring (no conditions, so that compilers keep one copy of the loop).
 * Hooks: 2 per 16 rounds. */
static PAS_BLK_FN __attribute__((noinline)) void PAS_BLK_NAME(blk_last)(uint64_t state[8], const uint64_t *wr,
                                                                    uint64_t *zcur, uint64_t *zother,
                                                                    __m256i zring[8] PAS_BLK_PARAM)
{
    const uint64_t *w;
    uint64_t a, b, c, d, e, f, g, h, x, y;
    int r;
    PAS_BLK_BEGIN

    wipe32(zring, 8);
    XLOAD_STATE();
    for (r = 0; r < 5; r++) {
        w = wr + 32 * r;
        PAS_PIN(w);
        wipe32(zother + 32 * r, 8);
        PAS_BLK_HOOK(1u);
        XRND8(XW);
        PAS_BLK_HOOK(2u);
        XRND8(XW8);
        wipe32(zcur + 32 * r, 8);
        PAS_BLK_NEXT(2);
    }
    XADD_STATE();
    PAS_BLK_END
}

/* nblocks >= 1 blocks: the first at `first`, the others consecutive at p. Blocks 2i and 2i+1 form
 * pair i, whose rows live in table[i % 2]. The schedule rows and the ring are wiped before return:
 * by blk_last as it goes when the last block is the second of a pair, else at the end. */
static PAS_BLK_FN void PAS_BLK_NAME(sha512_blocks_avx2)(uint64_t state[8], const uint8_t *first, const uint8_t *p,
                                                        size_t nblocks PAS_BLK_PARAM)
{
    uint64_t table[2][160] __attribute__((aligned(32)));
    __m256i ring[8];
    size_t i;

#define XBLOCK(k) ((k) == 0 ? first : p + 128 * ((k) - 1))
    PAS_BLK_NAME(blk_full)(state, table[0], first, nblocks >= 2 ? p : first, nblocks == 1 PAS_BLK_ARG);
    for (i = 1; i < nblocks; i++) {
        uint64_t *cur = table[(i >> 1) & 1], *other = table[((i >> 1) + 1) & 1];
        if (i & 1) {
            if (i + 1 < nblocks) { /* start pair i/2 + 1: blocks i + 1 and i + 2 (or i + 1 twice) */
                pair_load(other, ring, XBLOCK(i + 1), XBLOCK(i + 2 < nblocks ? i + 2 : i + 1));
                PAS_BLK_NAME(blk_half)(state, cur + 2, other, ring, 8 PAS_BLK_ARG);
            } else { /* the last block (when nblocks == 2, `other` and the ring were unused) */
                PAS_BLK_NAME(blk_last)(state, cur + 2, cur, other, ring PAS_BLK_ARG);
            }
        } else {
            PAS_BLK_NAME(blk_half)(state, cur, cur, ring, 24 PAS_BLK_ARG);
        }
    }
#undef XBLOCK
    if (nblocks > 1 && (nblocks & 1)) { /* ended on the first block of a pair */
        wipe32(table, sizeof table / 32);
        wipe32(ring, 8);
    }
    PAS_BLK_DONE;
}

/* the parameters are this inclusion's only: the next one defines its own */
#undef PAS_BLK_NAME
#undef PAS_BLK_FN
#undef PAS_BLK_PARAM
#undef PAS_BLK_ARG
#undef PAS_BLK_BEGIN
#undef PAS_BLK_HOOK
#undef PAS_BLK_NEXT
#undef PAS_BLK_END
#undef PAS_BLK_DONE
