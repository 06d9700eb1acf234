/* test_primitives.c — known-answer and consistency tests for md5.c, sha512.c (+ cpu.c), base64.c, hex.c, util.c.
 *
 * Build and run from the repository root (no Makefile needed):
 *
 *   gcc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -Wconversion -Wshadow \
 *       -DPASARELA_VERSION='"0.0.0"' -Icsrc \
 *       csrc/md5.c csrc/sha512.c csrc/cpu.c csrc/base64.c csrc/hex.c csrc/util.c csrc/tests/test_primitives.c \
 *       -o /tmp/test_primitives && /tmp/test_primitives
 *
 * With sanitizers: add -g -fsanitize=address,undefined -fno-sanitize-recover=all.
 * Under valgrind: build without sanitizers, then valgrind --error-exitcode=1 /tmp/test_primitives
 * Same with clang instead of gcc.
 *
 * SHA-512 is tested on every block function this CPU can run: the portable one (cpu = 0) and,
 * when pasarela_cpu_features() reports PASARELA_CPU_AVX2, the AVX2/BMI2 one.
 *
 * Hex is tested the same way: the portable code (cpu = 0) and, with PASARELA_CPU_AVX2, the AVX2 code.
 *
 * Prints "N passed, N failed" as the last line; exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "helpers.h"

static int g_pass, g_fail;

static void check(int ok, const char *what)
{
    if (ok) {
        g_pass++;
    } else {
        g_fail++;
        printf("FAIL: %s\n", what);
    }
}

static void check_digest(const uint8_t *d, size_t n, const char *expect_hex, const char *what)
{
    char buf[129];
    to_hex(d, n, buf);
    if (strcmp(buf, expect_hex) != 0) {
        printf("  got    %s\n  expect %s\n", buf, expect_hex);
    }
    check(strcmp(buf, expect_hex) == 0, what);
}

static void rng_fill(uint64_t *s, uint8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)(rng_next(s) >> 56);
    }
}

/* ---------------------------------------------------------------- MD5 */
static void test_md5(void)
{
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    size_t i;
    uint8_t d[16];

    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        pasarela_md5((const uint8_t *)v[i].msg, strlen(v[i].msg), d);
        check_digest(d, 16, v[i].hex, "md5 RFC 1321 A.5");
    }
    pasarela_md5(NULL, 0, d);
    check_digest(d, 16, v[0].hex, "md5 NULL,0");
}

/* ---------------------------------------------------------------- SHA-512 */
/* The sets of feature bits to run SHA-512 with: the portable code, and what the CPU offers. */
static unsigned g_sha_cpus[2];
static size_t g_sha_ncpus;

/* One-shot SHA-512 on the block function selected by cpu. */
static void sha512_cpu(unsigned cpu, const uint8_t *in, size_t n, uint8_t out[64])
{
    pasarela_sha512_ctx ctx;
    pasarela_sha512_init(&ctx, cpu);
    pasarela_sha512_update(&ctx, in, n);
    pasarela_sha512_final(&ctx, out);
}

static void test_sha512(unsigned cpu)
{
    static const char *abc_hex =
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
        "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f";
    static const char *two_block =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
        "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    static const char *two_block_hex =
        "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
        "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909";
    static const char *empty_hex =
        "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
        "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e";
    static const char *million_a_hex =
        "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
        "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b";
    static uint8_t chunk[1000];
    uint8_t d[64];
    pasarela_sha512_ctx ctx;
    size_t done, step;
    static const size_t steps[] = {1, 3, 7, 127, 129, 255, 997, 13, 128, 256, 1};
    size_t si = 0;

    sha512_cpu(cpu, (const uint8_t *)"abc", 3, d);
    check_digest(d, 64, abc_hex, "sha512 abc");
    sha512_cpu(cpu, (const uint8_t *)two_block, strlen(two_block), d);
    check_digest(d, 64, two_block_hex, "sha512 896-bit message");
    sha512_cpu(cpu, (const uint8_t *)"", 0, d);
    check_digest(d, 64, empty_hex, "sha512 empty");
    sha512_cpu(cpu, NULL, 0, d);
    check_digest(d, 64, empty_hex, "sha512 NULL,0");

    /* one million 'a', in updates of odd sizes */
    memset(chunk, 'a', sizeof chunk);
    pasarela_sha512_init(&ctx, cpu);
    for (done = 0; done < 1000000u; done += step) {
        step = steps[si++ % (sizeof steps / sizeof steps[0])];
        if (step > 1000000u - done) {
            step = 1000000u - done;
        }
        pasarela_sha512_update(&ctx, chunk, step);
    }
    pasarela_sha512_final(&ctx, d);
    check_digest(d, 64, million_a_hex, "sha512 one million a (streaming)");
    {
        static const uint8_t zero[sizeof ctx] = {0};
        check(memcmp(&ctx, zero, sizeof ctx) == 0, "sha512 final wipes ctx");
    }

    /* padding boundaries: lengths 111, 112, 127, 128 and 239 hashed both ways */
    {
        static const size_t lens[] = {111, 112, 113, 127, 128, 129, 239, 240, 255, 256};
        uint8_t buf[256], d2[64];
        size_t i, j;
        memset(buf, 'a', sizeof buf);
        for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            sha512_cpu(cpu, buf, lens[i], d);
            pasarela_sha512_init(&ctx, cpu);
            for (j = 0; j < lens[i]; j++) {
                pasarela_sha512_update(&ctx, buf + j, 1);
            }
            pasarela_sha512_final(&ctx, d2);
            check(memcmp(d, d2, 64) == 0, "sha512 byte-at-a-time vs one-shot at padding boundary");
        }
        /* SHA-512 of 112 'a' and 128 'a' against known values (from hashlib) */
        sha512_cpu(cpu, buf, 112, d);
        check_digest(d, 64,
                     "c01d080efd492776a1c43bd23dd99d0a2e626d481e16782e75d54c2503b5dc32"
                     "bd05f0f1ba33e568b88fd2d970929b719ecbb152f58f130a407c8830604b70ca",
                     "sha512 112 a");
        sha512_cpu(cpu, buf, 128, d);
        check_digest(d, 64,
                     "b73d1929aa615934e61a871596b3f3b33359f42b8175602e89f7e06e5f658a24"
                     "3667807ed300314b95cacdd579f3e33abdfbe351909519a846d465c59582f321",
                     "sha512 128 a");
    }
}

static void test_md5_wipe(void)
{
    pasarela_md5_ctx ctx;
    uint8_t d[16];
    static const uint8_t zero[sizeof(pasarela_md5_ctx)] = {0};
    pasarela_md5_init(&ctx);
    pasarela_md5_update(&ctx, (const uint8_t *)"abc", 3);
    pasarela_md5_final(&ctx, d);
    check_digest(d, 16, "900150983cd24fb0d6963f7d28e17f72", "md5 streaming abc");
    check(memcmp(&ctx, zero, sizeof ctx) == 0, "md5 final wipes ctx");
}

/* streaming with random splits == one-shot */
static void test_streaming_random(void)
{
    static uint8_t buf[5000];
    uint64_t s = UINT64_C(0x9E3779B97F4A7C15);
    int iter;
    int md5_ok = 1, sha_ok = 1;

    rng_fill(&s, buf, sizeof buf);
    for (iter = 0; iter < 300; iter++) {
        size_t n = (size_t)(rng_next(&s) % (sizeof buf + 1));
        unsigned cpu = g_sha_cpus[(size_t)iter % g_sha_ncpus];
        uint8_t d1[64], d2[64], m1[16], m2[16];
        pasarela_sha512_ctx sc;
        pasarela_md5_ctx mc;
        size_t off = 0;

        pasarela_sha512(buf, n, d1);
        pasarela_md5(buf, n, m1);
        pasarela_sha512_init(&sc, cpu);
        pasarela_md5_init(&mc);
        while (off < n) {
            uint64_t r = rng_next(&s);
            /* mostly small pieces, sometimes big ones, sometimes empty updates */
            size_t piece = (r & 3) == 0 ? (size_t)((r >> 8) % 600) : (size_t)((r >> 8) % 40);
            if (piece > n - off) {
                piece = n - off;
            }
            pasarela_sha512_update(&sc, buf + off, piece);
            pasarela_md5_update(&mc, buf + off, piece);
            off += piece;
        }
        pasarela_sha512_final(&sc, d2);
        pasarela_md5_final(&mc, m2);
        if (memcmp(d1, d2, 64) != 0) {
            sha_ok = 0;
        }
        if (memcmp(m1, m2, 16) != 0) {
            md5_ok = 0;
        }
    }
    check(sha_ok, "sha512 streaming random splits == one-shot");
    check(md5_ok, "md5 streaming random splits == one-shot");
}

/* SHA-512 of data fed as pieces of the given sizes, cycled (a size of 0 is an empty update). */
static void sha512_pieces(unsigned cpu, const uint8_t *in, size_t n, const size_t *sizes, size_t nsizes,
                          uint8_t out[64])
{
    pasarela_sha512_ctx ctx;
    size_t off = 0, k = 0;
    pasarela_sha512_init(&ctx, cpu);
    while (off < n) {
        size_t piece = sizes[k++ % nsizes];
        if (piece > n - off) {
            piece = n - off;
        }
        pasarela_sha512_update(&ctx, in + off, piece);
        off += piece;
    }
    pasarela_sha512_final(&ctx, out);
}

/* Every SHA-512 block function against known answers and against each other: lengths that end
 * on and around block and pair boundaries, up to 16 KiB in one update, and random lengths
 * 0..2000 with random splits (the multi-block code paths depend on how many blocks one update
 * call carries: 1, 2, odd, even, many). */
static void test_sha512_paths(void)
{
    static const struct {
        size_t n;
        const char *hex;
    } kat[] = {
        {129, "3b4b9bd80fbe01c18522b33a74ecd25ce0927d56641198145cc9ce00bb9f1ce0"
              "9c7fbfb33a10a2d8e7dca80599a2f2eaa37694d8141cd91fc275e392edbfee2f"},
        {256, "bcc898e92ab47027e2566b566891899ab4c609d8c93fbc04737972465bcb2a11"
              "76f04afbf54aa34ea61cc2a58174ea4e1da54d7307853dc7112daed156f598b1"},
        {384, "14bbefb83e3ae69104ff1c5397304c2332517f27d17d08d325fb5765f830aa0b"
              "f83bec062ae1046243ebe3b33f4517d11904c92e0db2499b234aa3833c4c017c"},
        {640, "63b6432970be2409dc5e4d4d14de51bbe3242092edded8d849f216344af7c94b"
              "1d2e488d63462f31f12303641b0778e5ef0de65d3a28c4934776cd57abe665a9"},
        {1023, "f43e1e731788c9ea65d763a4ba49ed056d2502ccb381dd218f9244030238a50c"
               "2ade385e3de9848acb8319329c40cc8be27cccc3471cb6616054c9f297987ba8"},
        {2000, "e6ecd2551015b7ab0b008c1acb7f824bf69bd046c7029f48e21f2dd80694f0b4"
               "1da03afdc4f4f2c89a4a25c2db631515f87e9e3f32da580f2153106a27767f17"},
        {16384, "d123406726a9db166102bf898706abef38df8887810e463ccfcc8a8ceba93b73"
                "75255cc5e55af4c1e416f542cffa30c38727797c63a3326460147b8bbee48e9b"},
    };
    static const size_t split_a[] = {16384};               /* everything in one call */
    static const size_t split_b[] = {1, 127, 256, 0, 384}; /* partial block, then 2 and 3 blocks */
    static const size_t split_c[] = {128, 640, 5, 1024};   /* 1, 5, partial, 8 blocks */
    static const size_t *const splits[] = {split_a, split_b, split_c};
    static const size_t nsplits[] = {1, 5, 4};
    static uint8_t buf[16384];
    uint64_t s = UINT64_C(0x0123456789ABCDEF);
    size_t i, j, c;
    int kat_ok = 1, cross_ok = 1, iter;
    char what[96];

    for (i = 0; i < sizeof buf; i++) {
        buf[i] = (uint8_t)((i * i * 31u + i * 7u + 3u) & 0xffu);
    }
    for (c = 0; c < g_sha_ncpus; c++) {
        for (i = 0; i < sizeof kat / sizeof kat[0]; i++) {
            for (j = 0; j < sizeof splits / sizeof splits[0]; j++) {
                uint8_t d[64];
                char hex[129];
                sha512_pieces(g_sha_cpus[c], buf, kat[i].n, splits[j], nsplits[j], d);
                to_hex(d, 64, hex);
                if (strcmp(hex, kat[i].hex) != 0) {
                    kat_ok = 0;
                    printf("  cpu %u, %u bytes, split %u: got %s\n", g_sha_cpus[c], (unsigned)kat[i].n,
                           (unsigned)j, hex);
                }
            }
        }
    }
    snprintf(what, sizeof what, "sha512 known answers 129..16384 bytes, 3 splits, %u block function(s)",
             (unsigned)g_sha_ncpus);
    check(kat_ok, what);

    /* random lengths 0..2000 and random splits: every block function == the portable one-shot */
    rng_fill(&s, buf, sizeof buf);
    for (iter = 0; iter < 1500; iter++) {
        size_t n = (size_t)(rng_next(&s) % 2001u);
        size_t off = (size_t)(rng_next(&s) % 64u); /* unaligned input too */
        uint8_t ref[64];
        sha512_cpu(0, buf + off, n, ref);
        for (c = 0; c < g_sha_ncpus; c++) {
            uint8_t d[64];
            size_t sizes[3];
            sizes[0] = (size_t)(rng_next(&s) % 700u);
            sizes[1] = (size_t)(rng_next(&s) % 300u);
            sizes[2] = (size_t)(rng_next(&s) % 2100u) + 1u;
            sha512_cpu(g_sha_cpus[c], buf + off, n, d);
            if (memcmp(d, ref, 64) != 0) {
                cross_ok = 0;
                printf("  cpu %u, one-shot of %u bytes differs from the portable code\n", g_sha_cpus[c],
                       (unsigned)n);
            }
            sha512_pieces(g_sha_cpus[c], buf + off, n, sizes, 3, d);
            if (memcmp(d, ref, 64) != 0) {
                cross_ok = 0;
                printf("  cpu %u, %u bytes in pieces of %u/%u/%u differs from the portable code\n",
                       g_sha_cpus[c], (unsigned)n, (unsigned)sizes[0], (unsigned)sizes[1], (unsigned)sizes[2]);
            }
        }
    }
    check(cross_ok, "sha512 random lengths 0..2000, random splits: all block functions agree");
}

/* ---------------------------------------------------------------- Base64 */
/* test-side reference encoder with a plain table */
static size_t ref_b64(const uint8_t *in, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i, o = 0;
    for (i = 0; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8) | in[i + 2];
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = a[(v >> 6) & 63];
        out[o++] = a[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8);
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = a[(v >> 6) & 63];
        out[o++] = '=';
    }
    return o;
}

static void test_base64(void)
{
    static const char *vin[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *vout[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    char out[64];
    size_t i, n;

    for (i = 0; i < 7; i++) {
        memset(out, '#', sizeof out);
        n = pasarela_base64_encode((const uint8_t *)vin[i], strlen(vin[i]), out);
        check(n == strlen(vout[i]) && memcmp(out, vout[i], n) == 0 && out[n] == '#', "base64 RFC 4648 section 10");
    }
    {
        /* every 6-bit value, and random inputs of every length 0..300 against the reference */
        uint8_t all[48];
        static uint8_t buf[300];
        static char o1[404], o2[404];
        uint64_t s = 12345;
        int ok = 1;
        for (i = 0; i < 48; i += 3) { /* 16 groups of 3 bytes encode values 4g..4g+3 */
            uint32_t v = (uint32_t)(4 * (i / 3));
            uint32_t x = (v << 18) | ((v + 1) << 12) | ((v + 2) << 6) | (v + 3);
            all[i] = (uint8_t)(x >> 16);
            all[i + 1] = (uint8_t)(x >> 8);
            all[i + 2] = (uint8_t)x;
        }
        n = pasarela_base64_encode(all, 48, o1);
        check(n == 64 && memcmp(o1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 64) == 0,
              "base64 full alphabet");
        rng_fill(&s, buf, sizeof buf);
        for (i = 0; i <= sizeof buf; i++) {
            size_t n1, n2;
            memset(o1, '#', sizeof o1);
            n1 = pasarela_base64_encode(buf, i, o1);
            n2 = ref_b64(buf, i, o2);
            if (n1 != n2 || n1 != 4 * ((i + 2) / 3) || memcmp(o1, o2, n1) != 0 || o1[n1] != '#') {
                ok = 0;
            }
        }
        check(ok, "base64 random inputs vs reference (lengths 0..300)");
    }
}

/* pasarela_base64_encode_public and pasarela_base64_encode_secret at one cpu level on the n bytes at src: the input
 * copied to the very end of a malloc'd block (so ASan catches any read past it), each output into a block with one
 * guard byte after 4*ceil(n/3) chars; 1 when both match pasarela_base64_encode byte for byte. */
static int b64_encoders_match(unsigned cpu, const uint8_t *src, size_t n)
{
    size_t len = 4 * ((n + 2) / 3), got, got_secret, want;
    uint8_t *block = (uint8_t *)malloc(n + 1);
    char *o1 = (char *)malloc(len + 1), *o2 = (char *)malloc(len + 1), *o3 = (char *)malloc(len + 1);
    int ok;
    if (block == NULL || o1 == NULL || o2 == NULL || o3 == NULL) {
        free(block);
        free(o1);
        free(o2);
        free(o3);
        return 0;
    }
    if (n > 0)
        memcpy(block + 1, src, n);
    memset(o1, '#', len + 1);
    memset(o3, '#', len + 1);
    got = pasarela_base64_encode_public(cpu, block + 1, n, o1);
    got_secret = pasarela_base64_encode_secret(cpu, block + 1, n, o3);
    want = pasarela_base64_encode(block + 1, n, o2);
    ok = got == len && want == len && got_secret == len && memcmp(o1, o2, len) == 0 && memcmp(o3, o2, len) == 0 &&
         o1[len] == '#' && o3[len] == '#';
    free(block);
    free(o1);
    free(o2);
    free(o3);
    return ok;
}

static void test_base64_public(void)
{
    static const char *vin[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *vout[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    unsigned features = pasarela_cpu_features(), cpus[3];
    size_t ncpus = 0, c, i, n;
    uint64_t s = 20240611;
    uint8_t *buf = (uint8_t *)malloc(5000);
    char what[96];

    if (buf == NULL) {
        check(0, "base64 public: malloc");
        return;
    }
    /* every level this machine can run: the AVX-512 path (taken where short work is worth 512-bit vectors, not on
     * Intel: pasarela.h; run here on any AVX-512 CPU), AVX2 only, table only */
    if (features & PASARELA_CPU_AVX512)
        cpus[ncpus++] = (features & (PASARELA_CPU_AVX512 | PASARELA_CPU_AVX2)) | PASARELA_CPU_AVX512_SHORT;
    if (features & PASARELA_CPU_AVX2)
        cpus[ncpus++] = PASARELA_CPU_AVX2;
    cpus[ncpus++] = 0;
    for (c = 0; c < ncpus; c++) {
        int vec_ok = 1, small_ok = 1, rand_ok = 1, alpha_ok = 1;
        for (i = 0; i < 7; i++) {
            size_t len = strlen(vin[i]), olen = strlen(vout[i]);
            uint8_t *block = (uint8_t *)malloc(len + 1);
            char *out = (char *)malloc(olen + 1);
            if (block == NULL || out == NULL) {
                vec_ok = 0;
            } else {
                memcpy(block + 1, vin[i], len);
                memset(out, '#', olen + 1);
                n = pasarela_base64_encode_public(cpus[c], block + 1, len, out);
                vec_ok &= n == olen && memcmp(out, vout[i], olen) == 0 && out[olen] == '#';
            }
            free(block);
            free(out);
        }
        for (i = 0; i < 64 * 3; i += 3) { /* the full alphabet, 4 times over, through every path */
            uint32_t v = (uint32_t)(4 * (i / 3) % 64);
            uint32_t x = (v << 18) | ((v + 1) << 12) | ((v + 2) << 6) | (v + 3);
            buf[i] = (uint8_t)(x >> 16);
            buf[i + 1] = (uint8_t)(x >> 8);
            buf[i + 2] = (uint8_t)x;
        }
        for (n = 0; n <= 192; n += 3) {
            alpha_ok &= b64_encoders_match(cpus[c], buf, n);
        }
        for (n = 0; n <= 300; n++) {
            rng_fill(&s, buf, n);
            small_ok &= b64_encoders_match(cpus[c], buf, n);
        }
        for (i = 0; i < 300; i++) {
            n = (size_t)(rng_next(&s) % 5001);
            rng_fill(&s, buf, n);
            rand_ok &= b64_encoders_match(cpus[c], buf, n);
        }
        sprintf(what, "base64 public, cpu %u: RFC 4648 section 10", cpus[c]);
        check(vec_ok, what);
        sprintf(what, "base64 public and secret, cpu %u: full alphabet", cpus[c]);
        check(alpha_ok, what);
        sprintf(what, "base64 public and secret, cpu %u: random, every length 0..300", cpus[c]);
        check(small_ok, what);
        sprintf(what, "base64 public and secret, cpu %u: random lengths up to 5000", cpus[c]);
        check(rand_ok, what);
    }
    printf("base64 public encoder levels under test: %u (cpu bits:", (unsigned)ncpus);
    for (c = 0; c < ncpus; c++)
        printf(" %u", cpus[c]);
    printf(")\n");
    free(buf);
}

/* ---------------------------------------------------------------- hex */
static void test_hex(void)
{
    static uint8_t buf[257], back[257];
    static char enc[515];
    uint64_t s = 777;
    size_t i;
    int ok = 1;
    uint8_t out[8];

    rng_fill(&s, buf, sizeof buf);
    for (i = 0; i <= sizeof buf; i++) {
        char ref[515];
        memset(enc, '#', sizeof enc);
        pasarela_hex_encode(buf, i, enc);
        to_hex(buf, i, ref);
        if (memcmp(enc, ref, 2 * i) != 0 || enc[2 * i] != '#') {
            ok = 0;
        }
        memset(back, 0xAA, sizeof back);
        if (pasarela_hex_decode(enc, 2 * i, back) != PASARELA_OK || memcmp(back, buf, i) != 0) {
            ok = 0;
        }
    }
    check(ok, "hex encode vs reference and round trip (0..257 bytes)");
    {
        uint8_t all[256];
        char e[512];
        for (i = 0; i < 256; i++) {
            all[i] = (uint8_t)i;
        }
        pasarela_hex_encode(all, 256, e);
        check(memcmp(e, "00010203", 8) == 0 && memcmp(e + 2 * 0x9a, "9a9b", 4) == 0 && memcmp(e + 508, "feff", 4) == 0,
              "hex encode all byte values");
        ok = pasarela_hex_decode(e, 512, back) == PASARELA_OK && memcmp(back, all, 256) == 0;
        check(ok, "hex decode all byte values");
    }
    check(pasarela_hex_decode("DEADbeef09AF", 12, out) == PASARELA_OK && out[0] == 0xde && out[1] == 0xad &&
              out[2] == 0xbe && out[3] == 0xef && out[4] == 0x09 && out[5] == 0xaf,
          "hex decode mixed case");
    check(pasarela_hex_decode("abc", 3, out) == PASARELA_E_BAD_HEX, "hex decode odd length");
    check(pasarela_hex_decode("a", 1, out) == PASARELA_E_BAD_HEX, "hex decode length 1");
    check(pasarela_hex_decode("", 0, out) == PASARELA_OK, "hex decode empty");
    check(pasarela_hex_decode(NULL, 0, NULL) == PASARELA_OK, "hex decode NULL,0");
    check(pasarela_hex_decode(NULL, 2, out) == PASARELA_E_INVALID_ARGUMENT, "hex decode NULL in");
    check(pasarela_hex_decode("00", 2, NULL) == PASARELA_E_INVALID_ARGUMENT, "hex decode NULL out");
    {
        /* every byte value in either position: valid iff in [0-9a-fA-F] */
        int c, pos, good = 1;
        for (c = 0; c < 256; c++) {
            int valid = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
            for (pos = 0; pos < 4; pos++) {
                char in[4] = {'1', '2', '3', '4'};
                int rc;
                in[pos] = (char)c;
                memset(out, 0x55, sizeof out);
                rc = pasarela_hex_decode(in, 4, out);
                if (valid ? rc != PASARELA_OK : (rc != PASARELA_E_BAD_HEX || out[0] != 0 || out[1] != 0)) {
                    good = 0;
                    printf("  hex char %d at %d: rc %d\n", c, pos, rc);
                }
            }
        }
        check(good, "hex decode rejects every invalid char (and zeroes output)");
    }
    check(pasarela_hex_decode("0g", 2, out) == PASARELA_E_BAD_HEX, "hex decode 'g'");
    check(pasarela_hex_decode("G0", 2, out) == PASARELA_E_BAD_HEX, "hex decode 'G'");
    check(pasarela_hex_decode("0 ", 2, out) == PASARELA_E_BAD_HEX, "hex decode space");
    check(pasarela_hex_decode("/0", 2, out) == PASARELA_E_BAD_HEX, "hex decode '/'");
    check(pasarela_hex_decode(":0", 2, out) == PASARELA_E_BAD_HEX, "hex decode ':'");
    check(pasarela_hex_decode("@0", 2, out) == PASARELA_E_BAD_HEX, "hex decode '@'");
    check(pasarela_hex_decode("`0", 2, out) == PASARELA_E_BAD_HEX, "hex decode backtick");
    check(pasarela_hex_decode("0\0", 2, out) == PASARELA_E_BAD_HEX, "hex decode NUL");
    check(pasarela_hex_decode("00\xc1\xa1", 4, out) == PASARELA_E_BAD_HEX, "hex decode high bytes");
}

/* ---------------------------------------------------------------- hex, every code path */

/* Reference value of one hex digit (its place in the digits, modulo 16), or -1. */
static int ref_nibble(int c)
{
    static const char digits[] = "0123456789abcdef0123456789ABCDEF";
    const char *at = c != 0 ? strchr(digits, c) : NULL;
    return at != NULL ? (int)((at - digits) & 15) : -1;
}

/* The n bytes at src through pasarela_hex_encode_cpu and back through pasarela_hex_decode_cpu at one cpu level,
 * each input at the very end of a malloc'd block and each output in a block with one guard byte after it (ASan
 * catches reads past the input, the guard writes past the output): 1 when the text is the reference's and
 * portable's (to_hex, cpu 0) and decoding it, in lowercase and with each letter's case drawn from *s, gives src. */
static int hex_level_matches(unsigned cpu, const uint8_t *src, size_t n, uint64_t *s)
{
    uint8_t *in = (uint8_t *)malloc(n + 1), *back = (uint8_t *)malloc(n + 1);
    char *text = (char *)malloc(2 * n + 1), *portable = (char *)malloc(2 * n + 1), *mixed = (char *)malloc(2 * n + 1);
    char *ref = (char *)malloc(2 * n + 1);
    size_t i;
    int ok;
    if (in == NULL || back == NULL || text == NULL || portable == NULL || mixed == NULL || ref == NULL) {
        ok = 0;
        goto done;
    }
    if (n > 0)
        memcpy(in + 1, src, n);
    memset(text, '#', 2 * n + 1);
    pasarela_hex_encode_cpu(cpu, in + 1, n, text);
    pasarela_hex_encode_cpu(0, in + 1, n, portable);
    to_hex(src, n, ref);
    ok = memcmp(text, ref, 2 * n) == 0 && memcmp(text, portable, 2 * n) == 0 && text[2 * n] == '#';
    /* the text to decode at the very end of its block too */
    memcpy(mixed + 1, text, 2 * n);
    memset(back, 0xA5, n + 1);
    ok &= pasarela_hex_decode_cpu(cpu, mixed + 1, 2 * n, back) == PASARELA_OK && memcmp(back, src, n) == 0 &&
          back[n] == 0xA5;
    for (i = 0; i < 2 * n; i++) {
        char c = text[i];
        mixed[1 + i] = (c >= 'a' && c <= 'f' && (rng_next(s) & 1u)) ? (char)(c - 'a' + 'A') : c;
    }
    memset(back, 0xA5, n + 1);
    ok &= pasarela_hex_decode_cpu(cpu, mixed + 1, 2 * n, back) == PASARELA_OK && memcmp(back, src, n) == 0 &&
          back[n] == 0xA5;
done:
    free(in);
    free(back);
    free(text);
    free(portable);
    free(mixed);
    free(ref);
    return ok;
}

/* Every byte value at every position of a mixed-case text of len digits, decoded at one cpu level: a hex digit
 * must decode to the reference bytes, anything else must be refused with the whole output zeroed (and nothing
 * written past it). Returns how many (position, byte) pairs went wrong. */
static unsigned hex_level_refusals(unsigned cpu, size_t len, uint64_t *s)
{
    char *text = (char *)malloc(len);
    uint8_t *out = (uint8_t *)malloc(len / 2 + 1), *want = (uint8_t *)malloc(len / 2);
    static const char digits[] = "0123456789abcdefABCDEF";
    unsigned wrong = 0;
    size_t pos, i;
    int c;
    if (text == NULL || out == NULL || want == NULL) {
        free(text);
        free(out);
        free(want);
        return 1;
    }
    for (i = 0; i < len; i++)
        text[i] = digits[rng_next(s) % 22u];
    for (pos = 0; pos < len; pos++) {
        char saved = text[pos];
        for (c = 0; c < 256; c++) {
            int rc, good = 1;
            text[pos] = (char)c;
            memset(out, 0x55, len / 2 + 1);
            rc = pasarela_hex_decode_cpu(cpu, text, len, out);
            if (ref_nibble(c) >= 0) {
                for (i = 0; i < len / 2; i++)
                    want[i] = (uint8_t)(ref_nibble((uint8_t)text[2 * i]) << 4 | ref_nibble((uint8_t)text[2 * i + 1]));
                good = rc == PASARELA_OK && memcmp(out, want, len / 2) == 0;
            } else {
                good = rc == PASARELA_E_BAD_HEX;
                for (i = 0; i < len / 2; i++)
                    good &= out[i] == 0;
            }
            good &= out[len / 2] == 0x55;
            if (!good && wrong++ < 5)
                printf("  cpu %u, %u digits: byte %d at %u: rc %d\n", cpu, (unsigned)len, c, (unsigned)pos, rc);
        }
        text[pos] = saved;
    }
    free(text);
    free(out);
    free(want);
    return wrong;
}

/* pasarela_hex_encode_cpu / pasarela_hex_decode_cpu at every level this machine runs (AVX2 when it has it, and
 * the portable code), against an independent reference and against each other. */
static void test_hex_levels(void)
{
    unsigned levels[3];
    size_t nlevels = 0, l, n, k;
    uint64_t s = 20261123;
    uint8_t src[300];
    char what[112];

    unsigned vbmi = PASARELA_CPU_AVX512_VBMI | PASARELA_CPU_AVX2;
    if ((pasarela_cpu_features() & vbmi) == vbmi)
        levels[nlevels++] = vbmi;
    if (pasarela_cpu_features() & PASARELA_CPU_AVX2)
        levels[nlevels++] = PASARELA_CPU_AVX2;
    levels[nlevels++] = 0;
    for (l = 0; l < nlevels; l++) {
        unsigned cpu = levels[l];
        int ok = 1;
        uint8_t out[4] = {1, 2, 3, 4};
        /* every length through the 64-digit, 32-digit, 8-digit and 2-digit steps, several contents each */
        for (n = 0; n <= sizeof src; n++) {
            for (k = 0; k < 4; k++) {
                rng_fill(&s, src, n);
                if (k == 1)
                    memset(src, 0x00, n);
                if (k == 2)
                    memset(src, 0xFF, n);
                ok &= hex_level_matches(cpu, src, n, &s);
            }
        }
        sprintf(what, "hex cpu %u: encode = reference = portable, decode (lower and mixed case), lengths 0..300", cpu);
        check(ok, what);
        /* 170 digits: two 64-digit steps, the 32-digit one, an 8-digit SWAR word and a last pair */
        sprintf(what, "hex cpu %u: every byte value at every position of 170 digits: refused (zeroed) or decoded", cpu);
        check(hex_level_refusals(cpu, 170, &s) == 0, what);
        sprintf(what, "hex cpu %u: every byte value at every position of 64 digits", cpu);
        check(hex_level_refusals(cpu, 64, &s) == 0, what);
        sprintf(what, "hex cpu %u: odd length, NULL, empty", cpu);
        check(pasarela_hex_decode_cpu(cpu, "0123456789abcdef0123456789abcdef0", 33, out) == PASARELA_E_BAD_HEX &&
                  pasarela_hex_decode_cpu(cpu, NULL, 64, out) == PASARELA_E_INVALID_ARGUMENT &&
                  pasarela_hex_decode_cpu(cpu, NULL, 0, NULL) == PASARELA_OK && out[0] == 1 && out[3] == 4,
              what);
    }
    printf("hex levels under test: %u (cpu bits:%s%s 0)\n", (unsigned)nlevels, nlevels > 2 ? " 68" : "",
           nlevels > 1 ? " 4" : "");
}

/* ---------------------------------------------------------------- util */
static void test_util(void)
{
    uint8_t a[64], b[64];
    size_t i;
    int ok = 1;
    int st;

    for (i = 0; i < 64; i++) {
        a[i] = b[i] = (uint8_t)(i * 7);
    }
    check(pasarela_ct_equal(a, b, 64) == 1, "ct_equal equal");
    check(pasarela_ct_equal(a, b, 0) == 1, "ct_equal empty");
    for (i = 0; i < 64; i++) {
        int bit;
        for (bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            if (pasarela_ct_equal(a, b, 64) != 0) {
                ok = 0;
            }
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    check(ok, "ct_equal detects every single-bit difference");
    b[63] ^= 0xFF;
    check(pasarela_ct_equal(a, b, 63) == 1 && pasarela_ct_equal(a, b, 64) == 0, "ct_equal respects n");

    pasarela_wipe(a, sizeof a);
    ok = 1;
    for (i = 0; i < 64; i++) {
        if (a[i] != 0) {
            ok = 0;
        }
    }
    check(ok, "wipe zeroes");
    pasarela_wipe(NULL, 0);

    ok = 1;
    for (st = PASARELA_OK; st <= PASARELA_SIGNED_AS_SENT; st++) {
        const char *m = pasarela_strerror(st);
        if (m == NULL || strcmp(m, "unknown status") == 0 || m[0] == '\0') {
            ok = 0;
        }
    }
    check(ok, "strerror covers every status");
    check(strcmp(pasarela_strerror(-1), "unknown status") == 0 &&
              strcmp(pasarela_strerror(PASARELA_SIGNED_AS_SENT + 1), "unknown status") == 0,
          "strerror unknown");
    check(strcmp(pasarela_version(), "0.0.0") == 0, "version");
}

int main(void)
{
    size_t i;

    test_md5();
    test_md5_wipe();
    g_sha_cpus[0] = 0;
    g_sha_ncpus = 1;
    if (pasarela_cpu_features() & PASARELA_CPU_AVX2) {
        g_sha_cpus[g_sha_ncpus++] = PASARELA_CPU_AVX2;
    }
    printf("sha512 block functions under test: portable%s\n", g_sha_ncpus > 1 ? ", AVX2+BMI2" : "");
    for (i = 0; i < g_sha_ncpus; i++) {
        test_sha512(g_sha_cpus[i]);
    }
    test_sha512_paths();
    test_streaming_random();
    test_base64();
    test_base64_public();
    test_hex();
    test_hex_levels();
    test_util();
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail == 0 ? 0 : 1;
}
