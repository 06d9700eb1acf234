/*
 * Tests for csrc/aes_many.c (pasarela_aes256_cbc_encrypt_many), the fused SHA-512 + CBC of
 * csrc/sha512.c (pasarela_sha512_with_cbc) and the IV pool's fill built on them (csrc/ivs.c,
 * pasarela_iv_pool_fill): every result is compared with the one-at-a-time primitives
 * (pasarela_aes256_cbc_encrypt_blocks over the full blocks + the padded block, and
 * pasarela_sha512_init/update/final), at every dispatch level the machine has (cpu masks).
 *
 * Build and run (from the repository root):
 *
 *   cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Wshadow -Werror -DPASARELA_VERSION='"0.0.0"' -Icsrc \
 *       csrc/tests/test_aes_many.c csrc/[a-z]*.c -o /tmp/test_aes_many && /tmp/test_aes_many
 *   (or only the files it needs: csrc/aes_many.c csrc/aes.c csrc/sha512.c csrc/cpu.c csrc/util.c)
 *   clang -std=c99 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -DPASARELA_VERSION='"0.0.0"' \
 *       -Icsrc csrc/tests/test_aes_many.c csrc/[a-z]*.c -o /tmp/tam_san && /tmp/tam_san
 *   gcc -std=c99 -O2 -g -DPASARELA_VERSION='"0.0.0"' -Icsrc csrc/tests/test_aes_many.c csrc/[a-z]*.c \
 *       -o /tmp/tam_vg && valgrind --error-exitcode=1 --leak-check=full /tmp/tam_vg
 *
 * "test_aes_many bench" also times (median of several runs, in ns per call):
 *   - n jobs one by one vs pasarela_aes256_cbc_encrypt_many, for n = 1, 2, 4, 8, 16 and job lengths
 *     64, 256, 1024, 4096, 16384;
 *   - pasarela_sha512 (init/update/final) then the job vs pasarela_sha512_with_cbc, for job length
 *     64, 256, 1024, 4096, 16384 with a message of 4/3 * (len + 75) bytes.
 * The last line is "N passed, N failed"; the exit status is non-zero on failure.
 */
#if defined(__unix__) || defined(__APPLE__)
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#include "check.h"
#include "sp800_38a.h"

/* The reference: the one-chain primitive over the full blocks, then the padded block. */
static void ref_job(unsigned cpu, const pasarela_cbc_job *job)
{
    uint8_t chain[16], last[16];
    size_t full = job->len / 16, rem = job->len % 16, i;

    memcpy(chain, job->iv, 16);
    if (rem)
        memcpy(last, job->in + 16 * full, rem);
    for (i = rem; i < 16; i++)
        last[i] = (uint8_t)(16 - rem);
    pasarela_aes256_cbc_encrypt_blocks(cpu, job->ks, chain, job->in, full, job->out);
    pasarela_aes256_cbc_encrypt_blocks(cpu, job->ks, chain, last, 1, job->out + 16 * full);
}

static void ref_sha512(unsigned cpu, const uint8_t *msg, size_t len, uint8_t digest[64])
{
    pasarela_sha512_ctx ctx;
    pasarela_sha512_init(&ctx, cpu);
    pasarela_sha512_update(&ctx, msg, len);
    pasarela_sha512_final(&ctx, digest);
}

/* NIST SP 800-38A F.2.5 CBC-AES256 (sp800_38a.h: four full blocks; PKCS#7 then adds a block of 16 x 0x10). */

/* FIPS 180-4 / NIST example: SHA-512("abc"). */
static const char *abc_digest = "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                                "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f";

static void test_kat(unsigned cpu)
{
    uint8_t key[32], iv[16], pt[64], ct[64], out[80], ref[80], digest[64], want[64];
    pasarela_aes256_schedule ks;
    pasarela_cbc_job job[3];
    int i;

    unhex(sp_key, key);
    unhex(sp_iv, iv);
    unhex(sp_pt, pt);
    unhex(sp_ct, ct);
    unhex(abc_digest, want);
    CHECK(pasarela_aes256_expand(cpu, key, &ks) == PASARELA_OK, "expand");
    job[0].ks = &ks;
    job[0].iv = iv;
    job[0].in = pt;
    job[0].len = 64;
    job[0].out = out;
    ref_job(cpu, &job[0]);
    memcpy(ref, out, 80);
    CHECK(memcmp(ref, ct, 64) == 0, "F.2.5 reference");

    memset(out, 0, sizeof out);
    pasarela_aes256_cbc_encrypt_many(cpu, job, 1);
    CHECK(memcmp(out, ct, 64) == 0 && memcmp(out, ref, 80) == 0, "F.2.5 many, cpu %u", cpu);
    /* in place */
    memcpy(out, pt, 64);
    job[0].in = out;
    pasarela_aes256_cbc_encrypt_many(cpu, job, 1);
    CHECK(memcmp(out, ref, 80) == 0, "F.2.5 many in place, cpu %u", cpu);
    job[0].in = pt;

    memset(out, 0, sizeof out);
    for (i = 0; i < 2; i++) {
        pasarela_sha512_with_cbc(cpu, (const uint8_t *)"abc", 3, digest, &job[0]);
        CHECK(memcmp(out, ct, 64) == 0 && memcmp(out, ref, 80) == 0, "F.2.5 fused, cpu %u", cpu);
        CHECK(memcmp(digest, want, 64) == 0, "SHA-512(abc) fused, cpu %u", cpu);
        memset(out, 0, sizeof out); /* then in place */
        memcpy(out, pt, 64);
        job[0].in = out;
    }
    pasarela_wipe(&ks, sizeof ks);
}

#define MAXLEN 5000
#define MAXJOBS 40

/* Every length 0..600 alone, each with a fresh key. */
static void test_lengths(unsigned cpu)
{
    static uint8_t in[MAXLEN], out[MAXLEN + 16], ref[MAXLEN + 16], digest[64], want[64];
    uint8_t key[32], iv[16];
    pasarela_aes256_schedule ks;
    pasarela_cbc_job job;
    size_t len, bad_many = 0, bad_fused = 0, bad_inplace = 0;

    for (len = 0; len <= 600; len++) {
        size_t clen = PASARELA_CIPHERTEXT_LEN(len), mlen = rng_below(3001);
        rng_fill(key, 32);
        rng_fill(iv, 16);
        rng_fill(in, MAXLEN);
        pasarela_aes256_expand(cpu, key, &ks);
        job.ks = &ks;
        job.iv = iv;
        job.in = in;
        job.len = len;
        job.out = ref;
        ref_job(cpu, &job);
        job.out = out;
        memset(out, 0xa5, sizeof out);
        pasarela_aes256_cbc_encrypt_many(cpu, &job, 1);
        bad_many += memcmp(out, ref, clen) != 0 || out[clen] != 0xa5;
        /* fused, with msg lengths 0..3000 (the message is the input buffer itself, then random) */
        memset(out, 0xa5, sizeof out);
        ref_sha512(cpu, in, len < mlen ? len : mlen, want);
        pasarela_sha512_with_cbc(cpu, in, len < mlen ? len : mlen, digest, &job);
        bad_fused += memcmp(out, ref, clen) != 0 || out[clen] != 0xa5 || memcmp(digest, want, 64) != 0;
        /* in place */
        memcpy(out, in, len);
        job.in = out;
        pasarela_aes256_cbc_encrypt_many(cpu, &job, 1);
        bad_inplace += memcmp(out, ref, clen) != 0;
        memcpy(out, in, len);
        pasarela_sha512_with_cbc(cpu, in, mlen, digest, &job);
        ref_sha512(cpu, in, mlen, want);
        bad_inplace += memcmp(out, ref, clen) != 0 || memcmp(digest, want, 64) != 0;
    }
    CHECK(bad_many == 0, "lengths 0..600: %zu mismatches (many), cpu %u", bad_many, cpu);
    CHECK(bad_fused == 0, "lengths 0..600: %zu mismatches (fused), cpu %u", bad_fused, cpu);
    CHECK(bad_inplace == 0, "lengths 0..600: %zu mismatches (in place), cpu %u", bad_inplace, cpu);
    pasarela_wipe(&ks, sizeof ks);
}

/* Random mixes of n = 1..40 jobs with their own keys, IVs and lengths (0..5000, often short). */
static void test_mixes(unsigned cpu, int rounds)
{
    static uint8_t in[MAXJOBS][MAXLEN], out[MAXJOBS][MAXLEN + 32], ref[MAXJOBS][MAXLEN + 32];
    static pasarela_aes256_schedule ks[MAXJOBS];
    static uint8_t iv[MAXJOBS][16];
    pasarela_cbc_job jobs[MAXJOBS], rjob;
    size_t n, i, bad = 0, bad_fused = 0;
    int r;

    for (r = 0; r < rounds; r++) {
        n = 1 + rng_below(MAXJOBS);
        for (i = 0; i < n; i++) {
            uint8_t key[32];
            size_t len;
            switch (rng_below(4)) {
            case 0: len = rng_below(17); break;
            case 1: len = rng_below(200); break;
            case 2: len = rng_below(1200); break;
            default: len = rng_below(MAXLEN + 1); break;
            }
            rng_fill(key, 32);
            rng_fill(iv[i], 16);
            rng_fill(in[i], len);
            pasarela_aes256_expand(cpu, key, &ks[i]);
            jobs[i].ks = &ks[i];
            jobs[i].iv = iv[i];
            jobs[i].len = len;
            rjob = jobs[i];
            rjob.in = in[i];
            rjob.out = ref[i];
            ref_job(cpu, &rjob);
            memset(out[i], 0x5a, MAXLEN + 32);
            if (rng_below(3) == 0) { /* in place */
                memcpy(out[i], in[i], len);
                jobs[i].in = out[i];
            } else {
                jobs[i].in = in[i];
            }
            jobs[i].out = out[i];
        }
        pasarela_aes256_cbc_encrypt_many(cpu, jobs, n);
        for (i = 0; i < n; i++) {
            size_t clen = PASARELA_CIPHERTEXT_LEN(jobs[i].len);
            bad += memcmp(out[i], ref[i], clen) != 0 || out[i][clen] != 0x5a;
        }
        /* the fused path with one of the jobs and a random message */
        {
            uint8_t digest[64], want[64];
            size_t k = rng_below(n), mlen = rng_below(3001), clen = PASARELA_CIPHERTEXT_LEN(jobs[k].len);
            const uint8_t *msg = in[(k + 1) % MAXJOBS];
            rng_fill(in[(k + 1) % MAXJOBS], MAXLEN);
            rjob = jobs[k];
            rjob.in = in[k];
            memset(out[k], 0x5a, MAXLEN + 32);
            pasarela_sha512_with_cbc(cpu, msg, mlen, digest, &rjob);
            ref_sha512(cpu, msg, mlen, want);
            bad_fused += memcmp(out[k], ref[k], clen) != 0 || out[k][clen] != 0x5a || memcmp(digest, want, 64) != 0;
        }
    }
    CHECK(bad == 0, "%d random mixes: %zu mismatched jobs, cpu %u", rounds, bad, cpu);
    CHECK(bad_fused == 0, "%d random fused: %zu mismatches, cpu %u", rounds, bad_fused, cpu);
    for (i = 0; i < MAXJOBS; i++)
        pasarela_wipe(&ks[i], sizeof ks[i]);
}

/* Long jobs and messages on both sides of the fused split (the AES side or the hash side ends first). */
static void test_fused_shapes(unsigned cpu)
{
    static uint8_t in[24576], msg[32768], out[24576 + 16], ref[24576 + 16];
    static const size_t jlens[] = {0, 15, 16, 64, 255, 256, 1024, 4095, 4096, 16384, 24576};
    static const size_t mlens[] = {0, 1, 111, 112, 127, 128, 129, 239, 240, 256, 440, 1470, 5000, 22000, 32768};
    uint8_t key[32], iv[16], digest[64], want[64];
    pasarela_aes256_schedule ks;
    pasarela_cbc_job job;
    size_t a, b, bad = 0;

    rng_fill(key, 32);
    rng_fill(iv, 16);
    rng_fill(in, sizeof in);
    rng_fill(msg, sizeof msg);
    pasarela_aes256_expand(cpu, key, &ks);
    for (a = 0; a < sizeof jlens / sizeof jlens[0]; a++) {
        job.ks = &ks;
        job.iv = iv;
        job.in = in;
        job.len = jlens[a];
        job.out = ref;
        ref_job(cpu, &job);
        job.out = out;
        for (b = 0; b < sizeof mlens / sizeof mlens[0]; b++) {
            memset(out, 0, sizeof out);
            pasarela_sha512_with_cbc(cpu, msg, mlens[b], digest, &job);
            ref_sha512(cpu, msg, mlens[b], want);
            bad += memcmp(out, ref, PASARELA_CIPHERTEXT_LEN(jlens[a])) != 0 || memcmp(digest, want, 64) != 0;
        }
    }
    CHECK(bad == 0, "fused shapes: %zu mismatches, cpu %u", bad, cpu);
    pasarela_wipe(&ks, sizeof ks);
}

/* ---------------------------------------------------------------- bench */
static double now_ns(void)
{
#if defined(CLOCK_MONOTONIC) && !defined(_WIN32) /* mingw-w64 declares it, only libwinpthread has it */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
#else
    return (double)clock() * 1e9 / (double)CLOCKS_PER_SEC;
#endif
}

#define BENCH_REPS 15

/* Fastest of BENCH_REPS runs of iters calls of each body, in ns per call; the runs of the two bodies
 * alternate so that a busy machine slows both alike. */
#define TIME2(ra, rb, iters, body_a, body_b)                                             \
    do {                                                                                 \
        int rep_;                                                                        \
        size_t it_;                                                                      \
        (ra) = (rb) = 1e300;                                                             \
        for (rep_ = 0; rep_ < BENCH_REPS; rep_++) {                                      \
            double t0_ = now_ns(), t1_, t2_;                                             \
            for (it_ = 0; it_ < (iters); it_++) {                                        \
                body_a;                                                                  \
            }                                                                            \
            t1_ = now_ns();                                                              \
            for (it_ = 0; it_ < (iters); it_++) {                                        \
                body_b;                                                                  \
            }                                                                            \
            t2_ = now_ns();                                                              \
            if ((t1_ - t0_) / (double)(iters) < (ra))                                    \
                (ra) = (t1_ - t0_) / (double)(iters);                                    \
            if ((t2_ - t1_) / (double)(iters) < (rb))                                    \
                (rb) = (t2_ - t1_) / (double)(iters);                                    \
        }                                                                                \
    } while (0)

/* Each timed call depends on the previous one's results (the next IVs are the XOR of the last ciphertext
 * blocks, and of the digest when there is one; the next message starts with the digest), as when a
 * server seals one request after another: otherwise the core would overlap independent calls and
 * one-chain CBC would look faster than its latency allows. */
static void link_batch(uint8_t iv[16], const pasarela_cbc_job *jobs, size_t n, const uint8_t *digest, uint8_t *msg)
{
    size_t i, k;
    for (i = 0; i < n; i++) {
        const uint8_t *lastblk = jobs[i].out + 16 * (jobs[i].len / 16);
        for (k = 0; k < 16; k++)
            iv[k] ^= lastblk[k];
    }
    if (digest != NULL) {
        for (k = 0; k < 16; k++)
            iv[k] ^= digest[k];
        memcpy(msg, iv, 16);
    }
}

static void bench(unsigned cpu)
{
    static uint8_t in[16][16384], out[16][16384 + 16], msg[24000];
    static pasarela_aes256_schedule ks[16];
    static const size_t lens[] = {64, 256, 1024, 4096, 16384};
    static const size_t ns[] = {1, 2, 4, 8, 16};
    uint8_t iv[16], digest[64];
    pasarela_cbc_job jobs[16];
    size_t a, b, i, iters;
    double t_seq, t_many, t_fused;

    for (i = 0; i < 16; i++) {
        uint8_t key[32];
        rng_fill(key, 32);
        pasarela_aes256_expand(cpu, key, &ks[i]);
        rng_fill(in[i], sizeof in[i]);
    }
    rng_fill(iv, 16);
    rng_fill(msg, sizeof msg);
    printf("cpu %u: n jobs of len bytes, one by one (pasarela_aes256_cbc_encrypt_blocks) vs encrypt_many, ns per batch\n",
           cpu);
    for (a = 0; a < sizeof lens / sizeof lens[0]; a++) {
        for (b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            size_t n = ns[b];
            for (i = 0; i < n; i++) {
                jobs[i].ks = &ks[i];
                jobs[i].iv = iv;
                jobs[i].in = in[i];
                jobs[i].len = lens[a];
                jobs[i].out = out[i];
            }
            iters = 2000000 / (lens[a] * n + 200) + 1;
            TIME2(t_seq, t_many, iters, for (i = 0; i < n; i++) ref_job(cpu, &jobs[i]);
                  link_batch(iv, jobs, n, NULL, NULL), pasarela_aes256_cbc_encrypt_many(cpu, jobs, n);
                  link_batch(iv, jobs, n, NULL, NULL));
            printf("  len %5zu n %2zu: seq %9.0f ns  many %9.0f ns  (%.2fx; many %.2f ns/block)\n", lens[a], n, t_seq,
                   t_many, t_seq / t_many, t_many / (double)(n * (lens[a] / 16 + 1)));
        }
    }
    printf("cpu %u: SHA-512 of a 4/3*(len+75)-byte message + one job of len bytes: sequential vs fused, ns\n", cpu);
    for (a = 0; a < sizeof lens / sizeof lens[0]; a++) {
        size_t mlen = 4 * (lens[a] + 75) / 3;
        double t_sha, t_aes;
        jobs[0].ks = &ks[0];
        jobs[0].iv = iv;
        jobs[0].in = in[0];
        jobs[0].len = lens[a];
        jobs[0].out = out[0];
        iters = 3000000 / (lens[a] + 300) + 1;
        TIME2(t_sha, t_aes, iters, ref_sha512(cpu, msg, mlen, digest); memcpy(msg, digest, 16),
              ref_job(cpu, &jobs[0]); link_batch(iv, jobs, 1, NULL, NULL));
        TIME2(t_seq, t_fused, iters, ref_sha512(cpu, msg, mlen, digest); ref_job(cpu, &jobs[0]);
              link_batch(iv, jobs, 1, digest, msg), pasarela_sha512_with_cbc(cpu, msg, mlen, digest, &jobs[0]);
              link_batch(iv, jobs, 1, digest, msg));
        printf("  len %5zu msg %5zu: sha %8.0f  cbc %8.0f  sha+cbc %8.0f  fused %8.0f ns  (%.2fx)\n", lens[a], mlen,
               t_sha, t_aes, t_seq, t_fused, t_seq / t_fused);
    }
}

/* pasarela_iv_pool_fill against its definition (pasarela.h): chain j is the CBC-PKCS#7 job over len / 8 - 16
 * zero bytes under seed[0..32), from seed[32..48) with its last byte XORed with j. Random seeds, every allowed
 * length up to 4 KiB; refused lengths write nothing. */
static void test_iv_pool_fill(unsigned cpu)
{
    static uint8_t pool[4096], want[4096], zeros[4096];
    uint8_t seed[PASARELA_IV_SEED_LEN], start[16];
    pasarela_aes256_schedule ks;
    pasarela_cbc_job job;
    size_t len, j;
    int round;

    for (round = 0; round < 4; round++) {
        for (len = 128; len <= sizeof pool; len += 128) {
            rng_fill(seed, sizeof seed);
            CHECK(pasarela_iv_pool_fill(cpu, seed, pool, len) == PASARELA_OK, "fill %zu", len);
            pasarela_aes256_expand(cpu, seed, &ks);
            for (j = 0; j < 8; j++) {
                memcpy(start, seed + 32, 16);
                start[15] ^= (uint8_t)j;
                job.ks = &ks;
                job.iv = start;
                job.in = zeros;
                job.len = len / 8 - 16;
                job.out = want + j * (len / 8);
                ref_job(cpu, &job);
            }
            CHECK(memcmp(pool, want, len) == 0, "fill %zu: the chains", len);
        }
    }
    memset(pool, 0x5a, sizeof pool);
    for (len = 0; len < 300; len++)
        if (len % 128 != 0 || len == 0)
            CHECK(pasarela_iv_pool_fill(cpu, seed, pool, len) == PASARELA_E_INVALID_ARGUMENT, "length %zu", len);
    CHECK(pasarela_iv_pool_fill(cpu, NULL, pool, 128) == PASARELA_E_INVALID_ARGUMENT, "NULL seed");
    CHECK(pasarela_iv_pool_fill(cpu, seed, NULL, 128) == PASARELA_E_INVALID_ARGUMENT, "NULL pool");
    CHECK(pool[0] == 0x5a && pool[sizeof pool - 1] == 0x5a, "refused: nothing written");
}

int main(int argc, char **argv)
{
    const unsigned all = pasarela_cpu_features(); /* once: CPUID can be slow */
    static const unsigned masks[] = {PASARELA_CPU_AES_X86 | PASARELA_CPU_AES_ARM | PASARELA_CPU_AVX2, /* all */
                                     PASARELA_CPU_AES_X86 | PASARELA_CPU_AES_ARM,                     /* no AVX2 */
                                     PASARELA_CPU_AVX2};                                              /* no AES */
    size_t m;

    printf("cpu features: %u\n", all);
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench(all);
        return 0;
    }
    for (m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        unsigned cpu = all & masks[m];
        if (m > 0 && cpu == (all & masks[m - 1]))
            continue;
        if (!(cpu & PASARELA_CPU_AES_ANY)) {
            /* Without hardware AES nothing is written; the hash still is right. */
            uint8_t in[40] = {1}, out[48], digest[64], want[64], iv[16] = {0};
            pasarela_aes256_schedule ks;
            pasarela_cbc_job job;
            memset(&ks, 0, sizeof ks);
            memset(out, 0x77, sizeof out);
            job.ks = &ks;
            job.iv = iv;
            job.in = in;
            job.len = sizeof in;
            job.out = out;
            pasarela_aes256_cbc_encrypt_many(cpu, &job, 1);
            CHECK(out[0] == 0x77 && out[47] == 0x77, "no AES: nothing written, cpu %u", cpu);
            pasarela_sha512_with_cbc(cpu, (const uint8_t *)"abc", 3, digest, &job);
            unhex(abc_digest, want);
            CHECK(memcmp(digest, want, 64) == 0, "no AES: digest, cpu %u", cpu);
            {
                uint8_t seed[PASARELA_IV_SEED_LEN] = {0}, pool[128];
                CHECK(pasarela_iv_pool_fill(cpu, seed, pool, 0) == PASARELA_E_INVALID_ARGUMENT,
                      "no AES: the length checked first");
                memset(pool, 0x77, sizeof pool);
                CHECK(pasarela_iv_pool_fill(cpu, seed, pool, sizeof pool) == PASARELA_E_NO_HW_AES &&
                          pool[0] == 0x77 && pool[127] == 0x77, "no AES: the fill refused, nothing written");
            }
            continue;
        }
        printf("cpu mask %u\n", cpu);
        test_kat(cpu);
        test_lengths(cpu);
        test_mixes(cpu, 150);
        test_fused_shapes(cpu);
        test_iv_pool_fill(cpu);
    }
    pasarela_aes256_cbc_encrypt_many(all, NULL, 0); /* n == 0: nothing */
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
