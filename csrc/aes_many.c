/*
 * aes_many.c — several AES-256-CBC-PKCS#7 encryptions at once (pasarela_aes256_cbc_encrypt_many).
 *
 * CBC encryption of one message is a chain of dependent AES calls: with AES-NI each block waits
 * for the 14 rounds of the previous one (4-cycle latency each on current cores) while the AES
 * units could start one or two rounds every cycle. Independent messages fill that gap: up to eight
 * chains ("lanes") advance side by side, round-major, so that eight independent aesenc are in
 * flight at any time. Each lane has its own copy of its job's 15 encryption round keys at a fixed
 * place on the stack (the keys may differ per job; aesenc reads them as memory operands), the
 * position in its job, and its padded final block. When a lane's job ends, the next pending job
 * takes the lane; when none is left, the last lane moves into the freed one and the kernel for one
 * lane fewer runs.
 *
 * Jobs must not overlap one another's buffers (in == out within one job is allowed, as for
 * pasarela_aes256_cbc_encrypt_blocks). The lane state (round keys, padded blocks) is wiped before
 * return and the vector registers are cleared.
 *
 * ARM and builds without AES-NI run the jobs one after another with
 * pasarela_aes256_cbc_encrypt_blocks (which does nothing without hardware AES for cpu).
 */
#include <string.h>

#include "internal.h"

#if (defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)) && !defined(_M_ARM64EC)
#define PAS_MANY_X86 1
#include <emmintrin.h>
#include <immintrin.h>
#include <wmmintrin.h>
#endif

/* The final block of a job: the last len % 16 bytes and 16 - len % 16 bytes of padding. */
static void pad_block(const pasarela_cbc_job *job, uint8_t blk[16])
{
    size_t full = job->len / 16, rem = job->len % 16, i;
    if (rem > 0)
        memcpy(blk, job->in + 16 * full, rem);
    for (i = rem; i < 16; i++)
        blk[i] = (uint8_t)(16 - rem);
}

/* One job with the one-chain primitive. */
static void one_job(unsigned cpu, const pasarela_cbc_job *job)
{
    uint8_t chain[16], last[16];
    size_t full = job->len / 16;

    /* The padded block is copied first: with in == out the full blocks overwrite nothing of it, but
     * keep the order the same as the interleaved path anyway. */
    pad_block(job, last);
    memcpy(chain, job->iv, 16);
    pasarela_aes256_cbc_encrypt_blocks(cpu, job->ks, chain, job->in, full, job->out);
    pasarela_aes256_cbc_encrypt_blocks(cpu, job->ks, chain, last, 1, job->out + 16 * full);
    pasarela_wipe(last, sizeof last);
    pasarela_wipe(chain, sizeof chain);
}

#if defined(PAS_MANY_X86)
#if defined(__GNUC__) || defined(__clang__)
#define PAS_MANY_FN __attribute__((target("aes,sse2")))
#define PAS_MANY_INLINE static inline __attribute__((always_inline, target("aes,sse2")))
#else
#define PAS_MANY_FN
#define PAS_MANY_INLINE static __forceinline
#endif

#define PAS_LANES 8

typedef struct lanes {
    __m128i rk[PAS_LANES][15];    /* each lane's encryption round keys (secret) */
    __m128i pad[PAS_LANES];       /* each lane's padded final block (secret) */
    __m128i chain[PAS_LANES];     /* last ciphertext block (or IV) of each lane */
    const uint8_t *src[PAS_LANES];
    uint8_t *dst[PAS_LANES];
    size_t left[PAS_LANES];       /* blocks until the lane's next event */
    int in_pad[PAS_LANES];        /* 0: full blocks from the job's input; 1: the padded block */
    const pasarela_aes256_schedule *ks[PAS_LANES];
} lanes;

/* Runs `steps` blocks on each of lanes 0..L-1 (L is a constant after inlining). One register per
 * lane carries the chain: after the last round it is the ciphertext, which the next block starts
 * from. */
#define PAS_FOR_LANES(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

PAS_MANY_INLINE void kernel(lanes *st, int L, size_t steps)
{
    __m128i s0 = st->chain[0], s1 = st->chain[1], s2 = st->chain[2], s3 = st->chain[3];
    __m128i s4 = st->chain[4], s5 = st->chain[5], s6 = st->chain[6], s7 = st->chain[7];
    size_t off, end = 16 * steps;
    int r;

    for (off = 0; off < end; off += 16) {
#define PAS_START(j)                                                                              \
    if ((j) < L)                                                                                  \
        s##j = _mm_xor_si128(s##j, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)( \
                                                     st->src[j] + off)),                          \
                                                 st->rk[j][0]));
        PAS_FOR_LANES(PAS_START)
#undef PAS_START
        for (r = 1; r < 14; r++) {
#define PAS_ROUND(j)     \
    if ((j) < L)         \
        s##j = _mm_aesenc_si128(s##j, st->rk[j][r]);
            PAS_FOR_LANES(PAS_ROUND)
#undef PAS_ROUND
        }
#define PAS_LAST(j)                                                          \
    if ((j) < L) {                                                           \
        s##j = _mm_aesenclast_si128(s##j, st->rk[j][14]);                    \
        _mm_storeu_si128((__m128i *)(void *)(st->dst[j] + off), s##j);       \
    }
        PAS_FOR_LANES(PAS_LAST)
#undef PAS_LAST
    }
#define PAS_END(j)                   \
    if ((j) < L) {                   \
        st->chain[j] = s##j;         \
        st->src[j] += end;           \
        st->dst[j] += end;           \
        st->left[j] -= steps;        \
    }
    PAS_FOR_LANES(PAS_END)
#undef PAS_END
}

/* One function per lane count, so each has its registers. */
#define PAS_KERNEL_N(n) \
    static PAS_MANY_FN void kernel##n(lanes *st, size_t steps) { kernel(st, n, steps); }
PAS_KERNEL_N(1)
PAS_KERNEL_N(2)
PAS_KERNEL_N(3)
PAS_KERNEL_N(4)
PAS_KERNEL_N(5)
PAS_KERNEL_N(6)
PAS_KERNEL_N(7)
PAS_KERNEL_N(8)
#undef PAS_KERNEL_N

static PAS_MANY_FN void lane_assign(lanes *st, int j, const pasarela_cbc_job *job)
{
    int r;

    for (r = 0; r < 15; r++)
        st->rk[j][r] = _mm_loadu_si128((const __m128i *)(const void *)(job->ks->round_keys + 16 * r));
    /* Before any block is stored: with in == out the full blocks would not reach the tail anyway. */
    pad_block(job, (uint8_t *)(void *)&st->pad[j]);
    st->ks[j] = job->ks;
    st->chain[j] = _mm_loadu_si128((const __m128i *)(const void *)job->iv);
    st->src[j] = job->in;
    st->dst[j] = job->out;
    st->left[j] = job->len / 16;
    st->in_pad[j] = 0;
}

/* Lane `from` moves to lane `to` (its padded block with it). */
static PAS_MANY_FN void lane_move(lanes *st, int to, int from)
{
    int r;
    for (r = 0; r < 15; r++)
        st->rk[to][r] = st->rk[from][r];
    st->pad[to] = st->pad[from];
    st->chain[to] = st->chain[from];
    st->src[to] = st->in_pad[from] ? (const uint8_t *)(const void *)&st->pad[to] : st->src[from];
    st->dst[to] = st->dst[from];
    st->left[to] = st->left[from];
    st->in_pad[to] = st->in_pad[from];
    st->ks[to] = st->ks[from];
}

/* The last lane, alone, with the one-chain code (round keys in registers). */
static PAS_MANY_FN void lane_finish(lanes *st)
{
    uint8_t chain[16];
    _mm_storeu_si128((__m128i *)(void *)chain, st->chain[0]);
    if (!st->in_pad[0]) {
        pasarela_aes256_cbc_encrypt_blocks(PASARELA_CPU_AES_X86, st->ks[0], chain, st->src[0], st->left[0],
                                           st->dst[0]);
        st->dst[0] += 16 * st->left[0];
        st->left[0] = 1;
    }
    pasarela_aes256_cbc_encrypt_blocks(PASARELA_CPU_AES_X86, st->ks[0], chain, (const uint8_t *)(void *)&st->pad[0],
                                       st->left[0], st->dst[0]);
}

static PAS_MANY_FN void x86_many(const pasarela_cbc_job *jobs, size_t n)
{
    lanes st;
    size_t next = 0, steps;
    int L = 0, used, j;

    while (L < PAS_LANES && next < n)
        lane_assign(&st, L++, &jobs[next++]);
    used = L;
    while (L > 0) {
        if (L == 1 && next == n) {
            lane_finish(&st);
            break;
        }
        /* Events: a lane that has run out of full blocks goes on to its padded block; one that has
         * done that takes the next job, or is replaced by the last lane. */
        for (j = 0; j < L;) {
            if (st.left[j] > 0) {
                j++;
            } else if (!st.in_pad[j]) {
                st.in_pad[j] = 1;
                st.src[j] = (const uint8_t *)(const void *)&st.pad[j];
                st.left[j] = 1;
                j++;
            } else if (next < n) {
                lane_assign(&st, j, &jobs[next++]);
            } else {
                if (j != L - 1)
                    lane_move(&st, j, L - 1);
                L--;
            }
        }
        if (L == 0)
            break;
        steps = st.left[0];
        for (j = 1; j < L; j++)
            if (st.left[j] < steps)
                steps = st.left[j];
        switch (L) {
        case 1: kernel1(&st, steps); break;
        case 2: kernel2(&st, steps); break;
        case 3: kernel3(&st, steps); break;
        case 4: kernel4(&st, steps); break;
        case 5: kernel5(&st, steps); break;
        case 6: kernel6(&st, steps); break;
        case 7: kernel7(&st, steps); break;
        default: kernel8(&st, steps); break;
        }
    }
    /* The secrets: the round keys and padded blocks of the lanes used. */
    pasarela_wipe(st.rk, sizeof st.rk[0] * (size_t)used);
    pasarela_wipe(st.pad, sizeof st.pad[0] * (size_t)used);
}

/* Clears the vector registers that held round keys and AES states. */
#if defined(__GNUC__) || defined(__clang__)
static __attribute__((target("avx"))) void clear_ymm(void)
{
    _mm256_zeroall();
}
#endif

static void clear_vector_registers(unsigned cpu)
{
#if defined(__GNUC__) || defined(__clang__)
    if (cpu & PASARELA_CPU_AVX2) {
        clear_ymm();
        return;
    }
#if defined(__x86_64__)
    __asm__ __volatile__("pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2\n\t"
                         "pxor %%xmm3, %%xmm3\n\tpxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
                         "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\tpxor %%xmm8, %%xmm8\n\t"
                         "pxor %%xmm9, %%xmm9\n\tpxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
                         "pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\tpxor %%xmm14, %%xmm14\n\t"
                         "pxor %%xmm15, %%xmm15"
                         :
                         :
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                           "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
#else
    /* i386: only the eight registers (the CPU has SSE2 since it has AES-NI; the mnemonics need no
     * compiler flag, and nothing is live in them here). */
    __asm__ __volatile__("pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2\n\t"
                         "pxor %%xmm3, %%xmm3\n\tpxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
                         "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7"
                         :
                         :
                         : "memory");
#endif
#elif defined(_MSC_VER)
    if (cpu & PASARELA_CPU_AVX2)
        _mm256_zeroall();
#else
    (void)cpu;
#endif
}
#endif /* PAS_MANY_X86 */

void pasarela_aes256_cbc_encrypt_many(unsigned cpu, const pasarela_cbc_job *jobs, size_t n)
{
    size_t i;

    if (jobs == NULL || n == 0)
        return;
#if defined(PAS_MANY_X86)
    if ((cpu & PASARELA_CPU_AES_X86) && n > 1) {
        x86_many(jobs, n);
        clear_vector_registers(cpu);
        return;
    }
#endif
    for (i = 0; i < n; i++)
        one_job(cpu, &jobs[i]);
}
