/*
 * Scaffolding shared by the AES test drivers (test_aes.c, test_aes_many.c): pass/fail counters with
 * the CHECK macro, hex literals, and a seeded splitmix64 generator (deterministic runs).
 */
#ifndef PASARELA_TEST_CHECK_H
#define PASARELA_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                                          \
    do {                                                          \
        if (cond) {                                               \
            passed++;                                             \
        } else {                                                  \
            failed++;                                             \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                  \
            printf("\n");                                         \
        }                                                         \
    } while (0)

static inline void unhex(const char *s, uint8_t *out)
{
    size_t i, n = strlen(s) / 2;
    for (i = 0; i < n; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

static inline uint64_t rng64(void)
{ /* splitmix64 */
    static uint64_t state = 0x9e3779b97f4a7c15u;
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static inline size_t rng_below(size_t n)
{
    return (size_t)(rng64() % (uint64_t)n);
}

static inline void rng_fill(uint8_t *p, size_t n)
{
    while (n--)
        *p++ = (uint8_t)(rng64() >> 24);
}

#endif
