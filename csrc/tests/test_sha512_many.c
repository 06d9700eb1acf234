/* test_sha512_many.c — pasarela_sha512_many (sha512_many.c) against the single-message SHA-512.
 *
 * Build and run from the repository root (no Makefile needed):
 *
 *   cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -Wconversion -Wshadow \
 *       -DPASARELA_VERSION='"0.0.0"' -Icsrc \
 *       csrc/util.c csrc/cpu.c csrc/sha512.c csrc/sha512_many.c csrc/tests/test_sha512_many.c \
 *       -o /tmp/test_sha512_many && /tmp/test_sha512_many
 *
 * (or csrc/[a-z]*.c in place of the four core files). With sanitizers: add -g
 * -fsanitize=address,undefined -fno-sanitize-recover=all. Under valgrind: build without sanitizers, then
 * valgrind --error-exitcode=1 /tmp/test_sha512_many (valgrind reports no AVX-512, so that level is
 * skipped there). Same with clang instead of gcc.
 *
 * Every check runs at each dispatch level this CPU has, forced through the cpu argument: AVX-512
 * (8 lanes), AVX2 only (4 lanes), and 0 (one message at a time, portable code). The reference is
 * pasarela_sha512_init/update/final with cpu = 0. Covered: FIPS 180-4 vectors ("abc", the 896-bit
 * message, the empty string), every length 0..700 (as one batch, and in batches of 1..9 shifted so
 * that each lane position sees every length), random mixes of lengths up to 5000 with n = 1..40,
 * mixes of one long message among short ones (the single-stream finish), NULL pointers for empty
 * messages, unaligned message pointers, and that bytes around the digests are left alone.
 *
 * Prints "N passed, N failed" as the last line; exits non-zero on any failure.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "helpers.h"

static int g_pass, g_fail;

static void check(int ok, const char *what, unsigned cpu)
{
    if (ok) {
        g_pass++;
    } else {
        g_fail++;
        printf("FAIL: %s (cpu %u)\n", what, cpu);
    }
}

static void reference(const uint8_t *msg, size_t len, uint8_t out[64])
{
    pasarela_sha512_ctx ctx;
    pasarela_sha512_init(&ctx, 0);
    pasarela_sha512_update(&ctx, msg, len);
    pasarela_sha512_final(&ctx, out);
}

#define MAX_N 720
#define POOL (1u << 20)

static uint8_t g_pool[POOL + 64];            /* message bytes (Base64-like text and random bytes) */
static const uint8_t *g_msgs[MAX_N];
static size_t g_lens[MAX_N];
static uint8_t g_out[64 * MAX_N + 128];      /* 64 guard bytes either side */
static uint8_t g_ref[64 * MAX_N];

/* Hashes g_msgs/g_lens[0..n) at cpu and compares with the reference; checks the guard bytes. */
static int run_batch(unsigned cpu, size_t n)
{
    size_t i;
    int ok = 1;

    memset(g_out, 0xa5, sizeof g_out);
    pasarela_sha512_many(cpu, g_msgs, g_lens, n, g_out + 64);
    for (i = 0; i < n; i++) {
        reference(g_msgs[i], g_lens[i], g_ref + 64 * i);
    }
    if (memcmp(g_out + 64, g_ref, 64 * n) != 0) {
        for (i = 0; i < n && ok; i++) {
            if (memcmp(g_out + 64 + 64 * i, g_ref + 64 * i, 64) != 0) {
                printf("  message %zu of %zu (length %zu) differs\n", i, n, g_lens[i]);
                ok = 0;
            }
        }
    }
    for (i = 0; i < 64; i++) {
        if (g_out[i] != 0xa5 || g_out[64 + 64 * n + i] != 0xa5) {
            printf("  guard bytes overwritten\n");
            ok = 0;
            break;
        }
    }
    return ok;
}

static void test_fips(unsigned cpu)
{
    static const char *const msg[3] = {
        "abc",
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
        "",
    };
    static const char *const hex[3] = {
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
        "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909",
        "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
    };
    const uint8_t *msgs[12];
    size_t lens[12], i;
    uint8_t out[64 * 12];
    char buf[129];
    int ok = 1;

    /* alone, then the three repeated four times in one batch */
    for (i = 0; i < 12; i++) {
        msgs[i] = (const uint8_t *)msg[i % 3];
        lens[i] = strlen(msg[i % 3]);
    }
    for (i = 0; i < 3; i++) {
        pasarela_sha512_many(cpu, msgs + i, lens + i, 1, out);
        to_hex(out, 64, buf);
        check(strcmp(buf, hex[i]) == 0, i == 0 ? "FIPS abc" : i == 1 ? "FIPS 896-bit" : "FIPS empty", cpu);
    }
    pasarela_sha512_many(cpu, msgs, lens, 12, out);
    for (i = 0; i < 12; i++) {
        to_hex(out + 64 * i, 64, buf);
        if (strcmp(buf, hex[i % 3]) != 0) {
            ok = 0;
        }
    }
    check(ok, "FIPS vectors in one batch of 12", cpu);
}

/* Every length 0..700: one batch of 701 messages, then batches of size 1..9 over the lengths,
 * rotated so that each length lands in each lane position. */
static void test_all_lengths(unsigned cpu)
{
    size_t i, bs, rot, ok;
    char what[64];

    for (i = 0; i <= 700; i++) {
        g_msgs[i] = g_pool + 3 * i; /* overlapping, unaligned */
        g_lens[i] = i;
    }
    check(run_batch(cpu, 701), "lengths 0..700 in one batch", cpu);
    for (bs = 1; bs <= 9; bs++) {
        ok = 1;
        for (rot = 0; rot < bs; rot++) {
            size_t start;
            for (start = 0; start <= 700; start += bs) {
                size_t m = 0;
                for (i = 0; i < bs; i++) {
                    size_t len = start + (i + rot) % bs;
                    if (len > 700) {
                        continue;
                    }
                    g_msgs[m] = g_pool + 7 * len + i;
                    g_lens[m] = len;
                    m++;
                }
                if (m > 0 && !run_batch(cpu, m)) {
                    ok = 0;
                }
            }
        }
        snprintf(what, sizeof what, "lengths 0..700 in batches of %zu", bs);
        check((int)ok, what, cpu);
    }
}

static void test_random_mixes(unsigned cpu)
{
    uint64_t s = UINT64_C(0x0123456789abcdef) ^ cpu;
    size_t n, round, i;
    int ok;
    char what[64];

    for (n = 1; n <= 40; n++) {
        ok = 1;
        for (round = 0; round < 6; round++) {
            /* round 0..2: uniform up to 5000; 3: similar lengths; 4: one long among short; 5: many empty */
            size_t base = (size_t)(rng_next(&s) % 4000);
            size_t longest = (size_t)(rng_next(&s) % n);
            for (i = 0; i < n; i++) {
                size_t len;
                switch (round) {
                case 3:
                    len = base + (size_t)(rng_next(&s) % 64);
                    break;
                case 4:
                    len = i == longest ? 4000 + (size_t)(rng_next(&s) % 1001) : (size_t)(rng_next(&s) % 300);
                    break;
                case 5:
                    len = (rng_next(&s) & 1) ? 0 : (size_t)(rng_next(&s) % 5001);
                    break;
                default:
                    len = (size_t)(rng_next(&s) % 5001);
                    break;
                }
                g_lens[i] = len;
                g_msgs[i] = len == 0 && (i & 1) ? NULL : g_pool + (size_t)(rng_next(&s) % (POOL - 5001));
            }
            if (!run_batch(cpu, n)) {
                ok = 0;
            }
        }
        snprintf(what, sizeof what, "random mixes, n = %zu", n);
        check(ok, what, cpu);
    }
}

/* Batches of identical-length messages (the common case): all lanes start and finish together. */
static void test_uniform(unsigned cpu)
{
    static const size_t lens[] = {111, 112, 127, 128, 239, 240, 255, 256, 440, 1400, 16384, 30000};
    static const size_t ns[] = {4, 8, 9, 16, 17, 64};
    size_t a, b, i;
    int ok = 1;

    for (a = 0; a < sizeof lens / sizeof lens[0]; a++) {
        for (b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            if (lens[a] * ns[b] > POOL) {
                continue;
            }
            for (i = 0; i < ns[b]; i++) {
                g_msgs[i] = g_pool + lens[a] * i;
                g_lens[i] = lens[a];
            }
            if (!run_batch(cpu, ns[b])) {
                printf("  length %zu, n %zu\n", lens[a], ns[b]);
                ok = 0;
            }
        }
    }
    check(ok, "uniform batches", cpu);
}

static void test_zero(unsigned cpu)
{
    uint8_t out[64];
    memset(out, 0x5a, sizeof out);
    pasarela_sha512_many(cpu, NULL, NULL, 0, out);
    check(out[0] == 0x5a && out[63] == 0x5a, "n = 0 writes nothing", cpu);
}

int main(void)
{
    unsigned features = pasarela_cpu_features();
    unsigned levels[3];
    const char *names[3];
    size_t nlevels = 0, i;
    uint64_t s = 42;
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    for (i = 0; i < POOL + 64; i++) { /* first half Base64 text, second half random bytes */
        uint64_t x = rng_next(&s);
        g_pool[i] = i < POOL / 2 ? (uint8_t)b64[x >> 58] : (uint8_t)(x >> 56);
    }
#ifdef PASARELA_CPU_AVX512
    if (features & PASARELA_CPU_AVX512) {
        levels[nlevels] = features & (PASARELA_CPU_AVX512 | PASARELA_CPU_AVX2);
        names[nlevels++] = "AVX-512 (8 lanes)";
    } else {
        printf("skipped: AVX-512 (not available)\n");
    }
#endif
    if (features & PASARELA_CPU_AVX2) {
        levels[nlevels] = PASARELA_CPU_AVX2;
        names[nlevels++] = "AVX2 (4 lanes)";
    } else {
        printf("skipped: AVX2 (not available)\n");
    }
    levels[nlevels] = 0;
    names[nlevels++] = "portable (one at a time)";

    for (i = 0; i < nlevels; i++) {
        int before = g_fail;
        test_zero(levels[i]);
        test_fips(levels[i]);
        test_all_lengths(levels[i]);
        test_random_mixes(levels[i]);
        test_uniform(levels[i]);
        printf("ran: %s, cpu = %u: %s\n", names[i], levels[i], g_fail == before ? "ok" : "FAILURES");
    }
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail == 0 ? 0 : 1;
}
