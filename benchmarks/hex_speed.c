/* hex_speed.c — the C core's hex encoding and decoding, portable code against AVX2, in ns per KiB of bytes.
 *
 *   cc -std=c99 -O3 -DPASARELA_VERSION='"0.0.0"' -Icsrc benchmarks/hex_speed.c csrc/[a-z]*.c -o /tmp/hex_speed \
 *       && /tmp/hex_speed [rounds]
 *
 * Each round times every (size, direction, code) once, the codes alternating, for about 10 ms each; the table
 * gives medians over the rounds and the ratio portable / AVX2 taken within each round (median). On a CPU
 * without AVX2 it times the portable code alone. Sizes are in bytes (decoding reads twice as many digits).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define MAX_ROUNDS 51

static const size_t sizes[] = {16, 64, 256, 1024, 16384, 1u << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns per KiB of bytes for one direction at one cpu level, over about 10 ms of calls. */
static double time_one(unsigned cpu, int decode, const uint8_t *bytes, char *text, uint8_t *back, size_t n)
{
    size_t reps = (size_t)(1u << 22) / (n + 64) + 1, i, done = 0;
    double start = now_ns(), elapsed;
    do {
        for (i = 0; i < reps; i++) {
            if (decode) {
                if (pasarela_hex_decode_cpu(cpu, text, 2 * n, back) != PASARELA_OK)
                    abort();
            } else {
                pasarela_hex_encode_cpu(cpu, bytes, n, text);
            }
        }
        done += reps;
        elapsed = now_ns() - start;
    } while (elapsed < 1e7);
    return elapsed / (double)done * 1024.0 / (double)n;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    static double ns[NSIZES][2][2][MAX_ROUNDS], ratio[NSIZES][2][MAX_ROUNDS]; /* [size][decode][level][round] */
    const unsigned levels[2] = {0, PASARELA_CPU_AVX2};
    int rounds = argc > 1 ? atoi(argv[1]) : 7, nlevels = (pasarela_cpu_features() & PASARELA_CPU_AVX2) ? 2 : 1;
    size_t max = sizes[NSIZES - 1], s, i;
    uint8_t *bytes = (uint8_t *)malloc(max), *back = (uint8_t *)malloc(max);
    char *text = (char *)malloc(2 * max);
    int r, d, l;

    if (rounds < 1 || rounds > MAX_ROUNDS || bytes == NULL || back == NULL || text == NULL) {
        fprintf(stderr, "usage: hex_speed [rounds, 1..%d]\n", MAX_ROUNDS);
        return 2;
    }
    for (i = 0; i < max; i++)
        bytes[i] = (uint8_t)(i * 131u + (i >> 7));
    for (r = 0; r < rounds; r++) {
        for (s = 0; s < NSIZES; s++) {
            pasarela_hex_encode_cpu(0, bytes, sizes[s], text); /* the digits to decode, in mixed case */
            for (i = 0; i < 2 * sizes[s]; i += 3)
                if (text[i] >= 'a')
                    text[i] = (char)(text[i] - 32);
            for (d = 0; d < 2; d++) {
                for (l = 0; l < nlevels; l++) { /* the order alternates between rounds */
                    int level = (l + r) % nlevels;
                    ns[s][d][level][r] = time_one(levels[level], d, bytes, text, back, sizes[s]);
                }
                ratio[s][d][r] = nlevels > 1 ? ns[s][d][0][r] / ns[s][d][1][r] : 1.0;
            }
        }
    }
    printf("| bytes | direction | portable ns/KiB | AVX2 ns/KiB | portable / AVX2 |\n|---:|---|---:|---:|---:|\n");
    for (s = 0; s < NSIZES; s++) {
        for (d = 0; d < 2; d++) {
            double portable = median(ns[s][d][0], rounds);
            if (nlevels > 1)
                printf("| %u | %s | %.0f | %.0f | %.1fx |\n", (unsigned)sizes[s], d ? "decode" : "encode", portable,
                       median(ns[s][d][1], rounds), median(ratio[s][d], rounds));
            else
                printf("| %u | %s | %.0f | (no AVX2) | |\n", (unsigned)sizes[s], d ? "decode" : "encode", portable);
        }
    }
    printf("(medians over %d interleaved rounds)\n", rounds);
    free(bytes);
    free(back);
    free(text);
    return 0;
}
