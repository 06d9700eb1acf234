/*
 * Known-answer and property tests for csrc/aes.c and csrc/cpu.c.
 *
 * Build and run (from the repository root):
 *
 *   gcc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -Wshadow -DPASARELA_VERSION='"0.0.0"' \
 *       -Icsrc csrc/tests/test_aes.c csrc/aes.c csrc/cpu.c csrc/util.c -o /tmp/test_aes && /tmp/test_aes
 *   clang -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -Wshadow -DPASARELA_VERSION='"0.0.0"' \
 *       -Icsrc csrc/tests/test_aes.c csrc/aes.c csrc/cpu.c csrc/util.c -o /tmp/test_aes_clang && /tmp/test_aes_clang
 *   gcc -std=c99 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -DPASARELA_VERSION='"0.0.0"' \
 *       -Icsrc csrc/tests/test_aes.c csrc/aes.c csrc/cpu.c csrc/util.c -o /tmp/test_aes_san && /tmp/test_aes_san
 *   gcc -std=c99 -O2 -g -DPASARELA_VERSION='"0.0.0"' -Icsrc csrc/tests/test_aes.c csrc/aes.c csrc/cpu.c \
 *       csrc/util.c -o /tmp/test_aes_vg && valgrind --error-exitcode=1 --leak-check=full /tmp/test_aes_vg
 *
 * AArch64 path, for real, under user-mode QEMU (scripts/hardening aarch64 does it with clang; Debian:
 * apt-get install gcc-aarch64-linux-gnu qemu-user, or for clang only libc6-dev-arm64-cross
 * libgcc-12-dev-arm64-cross binutils-aarch64-linux-gnu qemu-user, which gcc-multilib does not conflict with):
 *
 *   aarch64-linux-gnu-gcc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -Wshadow -static \
 *       -DPASARELA_VERSION='"0.0.0"' -Icsrc csrc/tests/test_aes.c csrc/aes.c csrc/cpu.c csrc/util.c \
 *       -o /tmp/test_aes_a64 && qemu-aarch64 -cpu max /tmp/test_aes_a64
 *   clang --target=aarch64-linux-gnu -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -Wshadow -static \
 *       -DPASARELA_VERSION='"0.0.0"' -Icsrc csrc/tests/test_aes.c csrc/aes.c csrc/cpu.c csrc/util.c \
 *       -o /tmp/test_aes_a64c && qemu-aarch64 -cpu max /tmp/test_aes_a64c
 *   qemu-aarch64 -cpu cortex-a53 /tmp/test_aes_a64   (likewise a35/a57/a72/a76/neoverse-n1/a64fx: all have AES;
 *                                                     QEMU 7.2 has no AES-less model: scripts/hardening links
 *                                                     csrc/tests/hwcap_mask.c to clear HWCAP_AES instead)
 *
 * 32-bit x86 (apt-get install gcc-multilib; on Debian 12 it conflicts with gcc-aarch64-linux-gnu and removes it), baseline without SSE so only the target attributes enable it:
 *
 *   gcc -m32 -march=i686 -mno-sse -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -Wshadow \
 *       -DPASARELA_VERSION='"0.0.0"' -Icsrc csrc/tests/test_aes.c csrc/aes.c csrc/cpu.c csrc/util.c \
 *       -o /tmp/test_aes32 && /tmp/test_aes32
 *
 * Without util.c, add -DPASARELA_TEST_WIPE_STANDIN to use the stand-in wipe below.
 * "test_aes bench" also prints the throughput of 16 KiB CBC encryption and decryption.
 * The last line is "N passed, N failed"; the exit status is non-zero on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#ifdef PASARELA_TEST_WIPE_STANDIN
void pasarela_wipe(void *p, size_t n)
{
    volatile unsigned char *q = (volatile unsigned char *)p;
    while (n--)
        *q++ = 0;
}
#endif

#include "check.h"
#include "sp800_38a.h"

static int all_zero(const uint8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* NIST SP 800-38A F.2.5 / F.2.6 CBC-AES256: sp800_38a.h. */

static void test_kat(unsigned cpu)
{
    uint8_t key[32], iv[16], pt[64], ct[64], buf[96], chain[16];
    pasarela_aes256_schedule ks;
    size_t len = 0;
    int i;

    unhex(sp_key, key);
    unhex(sp_iv, iv);
    unhex(sp_pt, pt);
    unhex(sp_ct, ct);
    CHECK(pasarela_aes256_expand(cpu, key, &ks) == PASARELA_OK, "expand");

    /* F.2.5 encrypt, 4 blocks in one call, then chained one block at a time. */
    memcpy(chain, iv, 16);
    pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, chain, pt, 4, buf);
    CHECK(memcmp(buf, ct, 64) == 0, "F.2.5 encrypt");
    CHECK(memcmp(chain, ct + 48, 16) == 0, "F.2.5 chained iv");
    memcpy(chain, iv, 16);
    for (i = 0; i < 4; i++)
        pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, chain, pt + 16 * i, 1, buf + 16 * i);
    CHECK(memcmp(buf, ct, 64) == 0, "F.2.5 encrypt, chained calls");
    /* in-place */
    memcpy(buf, pt, 64);
    memcpy(chain, iv, 16);
    pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, chain, buf, 4, buf);
    CHECK(memcmp(buf, ct, 64) == 0, "F.2.5 encrypt in place");

    /* F.2.6 decrypt */
    memcpy(chain, iv, 16);
    pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain, ct, 4, buf);
    CHECK(memcmp(buf, pt, 64) == 0, "F.2.6 decrypt");
    CHECK(memcmp(chain, ct + 48, 16) == 0, "F.2.6 chained iv");
    memcpy(buf, ct, 64);
    memcpy(chain, iv, 16);
    pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain, buf, 4, buf);
    CHECK(memcmp(buf, pt, 64) == 0, "F.2.6 decrypt in place");
    memcpy(chain, iv, 16);
    for (i = 0; i < 4; i++)
        pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain, ct + 16 * i, 1, buf + 16 * i);
    CHECK(memcmp(buf, pt, 64) == 0, "F.2.6 decrypt, chained calls");

    /* Public API: the 64-byte plaintext gets a full block of padding. */
    CHECK(pasarela_aes256_cbc_encrypt(cpu, key, iv, pt, 64, buf, sizeof buf, &len) == PASARELA_OK, "enc");
    CHECK(len == 80 && memcmp(buf, ct, 64) == 0, "public encrypt prefix, len %u", (unsigned)len);
    {
        uint8_t out[80];
        CHECK(pasarela_aes256_cbc_decrypt(cpu, key, iv, buf, 80, out, sizeof out, &len) == PASARELA_OK, "dec");
        CHECK(len == 64 && memcmp(out, pt, 64) == 0, "public decrypt");
    }
    pasarela_wipe(&ks, sizeof ks);
}

/* FIPS-197 C.3: AES-256 single block = CBC with a zero IV. */
static void test_fips197(unsigned cpu)
{
    uint8_t key[32], iv[16] = {0}, pt[16], ct[16], buf[16];
    pasarela_aes256_schedule ks;

    unhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", key);
    unhex("00112233445566778899aabbccddeeff", pt);
    unhex("8ea2b7ca516745bfeafc49904b496089", ct);
    CHECK(pasarela_aes256_expand(cpu, key, &ks) == PASARELA_OK, "expand");
    /* FIPS-197 A.3: first and last expanded words. */
    {
        uint8_t w56[16];
        unhex("24fc79ccbf0979e9371ac23c6d68de36", w56);
        CHECK(memcmp(ks.round_keys + 16 * 14, w56, 16) == 0, "round key 14");
        CHECK(memcmp(ks.round_keys + 16 * 15, w56, 16) == 0, "decryption key 0 = ek[14]");
        CHECK(memcmp(ks.round_keys + 16 * 29, key, 16) == 0, "decryption key 14 = ek[0]");
    }
    pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, iv, pt, 1, buf);
    CHECK(memcmp(buf, ct, 16) == 0, "C.3 encrypt");
    memset(iv, 0, 16);
    pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, iv, ct, 1, buf);
    CHECK(memcmp(buf, pt, 16) == 0, "C.3 decrypt");
    pasarela_wipe(&ks, sizeof ks);
}

/* The 8-way decryption path against the single-block path (checked by the KATs above), for
 * every block count 1..40 and both in-place and separate buffers. Also checks encryption
 * chained one block at a time equals one call. */
static void test_pipeline(unsigned cpu)
{
    uint8_t key[32], iv[16], chain[16], chain2[16];
    uint8_t ct[640], a[640], b[640];
    pasarela_aes256_schedule ks;
    size_t nb, i;

    rng_fill(key, 32);
    rng_fill(iv, 16);
    CHECK(pasarela_aes256_expand(cpu, key, &ks) == PASARELA_OK, "expand");
    for (nb = 1; nb <= 40; nb++) {
        rng_fill(ct, 16 * nb);
        memcpy(chain, iv, 16);
        pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain, ct, nb, a);
        memcpy(chain2, iv, 16);
        for (i = 0; i < nb; i++)
            pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain2, ct + 16 * i, 1, b + 16 * i);
        CHECK(memcmp(a, b, 16 * nb) == 0 && memcmp(chain, chain2, 16) == 0, "decrypt %u blocks", (unsigned)nb);
        memcpy(b, ct, 16 * nb);
        memcpy(chain2, iv, 16);
        pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain2, b, nb, b);
        CHECK(memcmp(a, b, 16 * nb) == 0 && memcmp(chain, chain2, 16) == 0, "in-place decrypt %u", (unsigned)nb);

        /* encrypt back: one call, and block by block */
        memcpy(chain, iv, 16);
        pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, chain, a, nb, b);
        CHECK(memcmp(b, ct, 16 * nb) == 0 && memcmp(chain, ct + 16 * (nb - 1), 16) == 0, "encrypt %u",
              (unsigned)nb);
        memcpy(chain, iv, 16);
        for (i = 0; i < nb; i++)
            pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, chain, a + 16 * i, 1, b + 16 * i);
        CHECK(memcmp(b, ct, 16 * nb) == 0, "block-by-block encrypt %u", (unsigned)nb);
    }
    pasarela_wipe(&ks, sizeof ks);
}

static void test_roundtrip(unsigned cpu)
{
    uint8_t key[32], iv[16], pt[400], ct[416], back[416];
    size_t n, len, clen, i;
    int ok_all = 1;

    for (n = 0; n <= 400; n++) {
        int rc_e, rc_d, ok;
        rng_fill(key, 32);
        rng_fill(iv, 16);
        rng_fill(pt, n);
        clen = 12345;
        rc_e = pasarela_aes256_cbc_encrypt(cpu, key, iv, n ? pt : NULL, n, ct, PASARELA_CIPHERTEXT_LEN(n), &clen);
        ok = rc_e == PASARELA_OK && clen == PASARELA_CIPHERTEXT_LEN(n);
        /* the padding is visible after a raw decryption */
        if (ok) {
            pasarela_aes256_schedule ks;
            uint8_t chain[16];
            size_t pad = clen - n;
            pasarela_aes256_expand(cpu, key, &ks);
            memcpy(chain, iv, 16);
            pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain, ct, clen / 16, back);
            pasarela_wipe(&ks, sizeof ks);
            ok = pad >= 1 && pad <= 16 && memcmp(back, pt, n) == 0;
            for (i = n; i < clen; i++)
                ok &= back[i] == pad;
        }
        len = 12345;
        rc_d = pasarela_aes256_cbc_decrypt(cpu, key, iv, ct, clen, back, clen, &len);
        ok = ok && rc_d == PASARELA_OK && len == n && memcmp(back, pt, n) == 0;
        /* in place, both directions */
        if (ok) {
            memcpy(back, pt, n);
            ok = pasarela_aes256_cbc_encrypt(cpu, key, iv, back, n, back, sizeof back, &len) == PASARELA_OK &&
                 len == clen && memcmp(back, ct, clen) == 0 &&
                 pasarela_aes256_cbc_decrypt(cpu, key, iv, back, clen, back, clen, &len) == PASARELA_OK &&
                 len == n && memcmp(back, pt, n) == 0;
        }
        if (n <= 80 || !ok)
            CHECK(ok, "round trip n=%u (rc %d/%d)", (unsigned)n, rc_e, rc_d);
        ok_all &= ok;
    }
    CHECK(ok_all, "round trips 0..400");
}

/* Encrypt a raw final block (no padding added) and check that decryption rejects it. */
static void bad_padding_case(unsigned cpu, const uint8_t last[16], int nblocks, int expect_ok, size_t expect_len,
                             const char *what)
{
    uint8_t key[32], iv[16], chain[16], pt[48], ct[48], out[48];
    pasarela_aes256_schedule ks;
    size_t len = 999;
    int rc;

    rng_fill(key, 32);
    rng_fill(iv, 16);
    rng_fill(pt, sizeof pt);
    memcpy(pt + 16 * (nblocks - 1), last, 16);
    pasarela_aes256_expand(cpu, key, &ks);
    memcpy(chain, iv, 16);
    pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, chain, pt, (size_t)nblocks, ct);
    pasarela_wipe(&ks, sizeof ks);
    memset(out, 0xaa, sizeof out);
    rc = pasarela_aes256_cbc_decrypt(cpu, key, iv, ct, 16 * (size_t)nblocks, out, sizeof out, &len);
    if (expect_ok) {
        CHECK(rc == PASARELA_OK && len == expect_len, "%s: rc %d len %u", what, rc, (unsigned)len);
        CHECK(memcmp(out, pt, expect_len) == 0, "%s: plaintext", what);
    } else {
        CHECK(rc == PASARELA_E_BAD_PADDING, "%s: rc %d", what, rc);
        CHECK(len == 0, "%s: out_len %u", what, (unsigned)len);
        CHECK(all_zero(out, 16 * (size_t)nblocks), "%s: output wiped", what);
        CHECK(out[16 * nblocks] == 0xaa, "%s: wrote past n", what);
    }
}

static void test_padding(unsigned cpu)
{
    uint8_t last[16];
    int p, j, nb;

    for (nb = 1; nb <= 2; nb++) {
        memset(last, 0x41, 16);
        last[15] = 0;
        bad_padding_case(cpu, last, nb, 0, 0, "p=0");
        last[15] = 17;
        bad_padding_case(cpu, last, nb, 0, 0, "p=17");
        last[15] = 255;
        bad_padding_case(cpu, last, nb, 0, 0, "p=255");
        memset(last, 17, 16);
        bad_padding_case(cpu, last, nb, 0, 0, "sixteen 17s");
        memset(last, 0, 16);
        bad_padding_case(cpu, last, nb, 0, 0, "all zero");
        for (p = 1; p <= 16; p++) {
            memset(last, 0x41, 16);
            memset(last + 16 - p, p, (size_t)p);
            bad_padding_case(cpu, last, nb, 1, (size_t)(16 * nb - p), "valid padding");
            /* corrupt each padding byte in turn (not the last, which defines p) */
            for (j = 16 - p; j < 15; j++) {
                memset(last, 0x41, 16);
                memset(last + 16 - p, p, (size_t)p);
                last[j] ^= 0x01;
                bad_padding_case(cpu, last, nb, 0, 0, "inconsistent padding byte");
                last[j] = (uint8_t)(p ^ 0x80);
                bad_padding_case(cpu, last, nb, 0, 0, "inconsistent padding byte (high bit)");
            }
            /* the byte just before the padding may be anything, including p-1 or p+1 */
            if (p < 16) {
                memset(last, 0x41, 16);
                memset(last + 16 - p, p, (size_t)p);
                last[15 - p] = (uint8_t)(p + 1);
                bad_padding_case(cpu, last, nb, 1, (size_t)(16 * nb - p), "byte before padding is p+1");
            }
        }
    }
}

static void test_errors(unsigned cpu)
{
    uint8_t key[32] = {1}, iv[16] = {2}, buf[64] = {0}, out[64];
    pasarela_aes256_schedule ks;
    size_t len, n;

    /* bad lengths */
    CHECK(pasarela_aes256_cbc_decrypt(cpu, key, iv, buf, 0, out, sizeof out, &len) == PASARELA_E_BAD_LENGTH, "n=0");
    CHECK(pasarela_aes256_cbc_decrypt(cpu, key, iv, NULL, 0, out, sizeof out, &len) == PASARELA_E_BAD_LENGTH,
          "n=0, in NULL");
    for (n = 1; n < 64; n++)
        if (n % 16)
            CHECK(pasarela_aes256_cbc_decrypt(cpu, key, iv, buf, n, out, sizeof out, &len) == PASARELA_E_BAD_LENGTH,
                  "n=%u", (unsigned)n);
    /* buffer too small */
    CHECK(pasarela_aes256_cbc_decrypt(cpu, key, iv, buf, 32, out, 31, &len) == PASARELA_E_BUFFER_TOO_SMALL, "dec cap");
    for (n = 0; n <= 47; n++) {
        len = 7;
        CHECK(pasarela_aes256_cbc_encrypt(cpu, key, iv, buf, n, out, PASARELA_CIPHERTEXT_LEN(n) - 1, &len) ==
                      PASARELA_E_BUFFER_TOO_SMALL && len == 0,
              "enc cap n=%u", (unsigned)n);
    }
    CHECK(pasarela_aes256_cbc_encrypt(cpu, key, iv, buf, (size_t)-1, out, (size_t)-1, &len) ==
              PASARELA_E_BUFFER_TOO_SMALL,
          "enc n=SIZE_MAX");
    CHECK(pasarela_aes256_cbc_encrypt(cpu, key, iv, buf, 16, out, 32, &len) == PASARELA_OK && len == 32, "exact cap");
    /* NULL pointers, each way (decryption takes whole blocks) */
    for (int decrypt = 0; decrypt < 2; decrypt++) {
        int (*cbc)(unsigned, const uint8_t *, const uint8_t *, const uint8_t *, size_t, uint8_t *, size_t, size_t *) =
            decrypt ? pasarela_aes256_cbc_decrypt : pasarela_aes256_cbc_encrypt;
        size_t length = decrypt ? 16 : 1; /* decryption: a whole block */
        const char *way = decrypt ? "dec" : "enc";
        CHECK(cbc(cpu, NULL, iv, buf, length, out, 64, &len) == PASARELA_E_INVALID_ARGUMENT, "%s key", way);
        CHECK(cbc(cpu, key, NULL, buf, length, out, 64, &len) == PASARELA_E_INVALID_ARGUMENT, "%s iv", way);
        CHECK(cbc(cpu, key, iv, NULL, length, out, 64, &len) == PASARELA_E_INVALID_ARGUMENT, "%s in", way);
        CHECK(cbc(cpu, key, iv, buf, length, NULL, 64, &len) == PASARELA_E_INVALID_ARGUMENT, "%s out", way);
        CHECK(cbc(cpu, key, iv, buf, length, out, 64, NULL) == PASARELA_E_INVALID_ARGUMENT, "%s len", way);
    }
    CHECK(pasarela_aes256_cbc_encrypt(cpu, key, iv, NULL, 0, out, 64, &len) == PASARELA_OK && len == 16, "in NULL n 0");
    CHECK(pasarela_aes256_expand(cpu, NULL, &ks) == PASARELA_E_INVALID_ARGUMENT, "expand key");
    CHECK(pasarela_aes256_expand(cpu, key, NULL) == PASARELA_E_INVALID_ARGUMENT, "expand ks");
    /* no hardware AES */
    CHECK(pasarela_aes256_expand(0, key, &ks) == PASARELA_E_NO_HW_AES, "expand cpu=0");
    CHECK(pasarela_aes256_cbc_encrypt(0, key, iv, buf, 16, out, 64, &len) == PASARELA_E_NO_HW_AES, "enc cpu=0");
    CHECK(pasarela_aes256_cbc_decrypt(0, key, iv, buf, 16, out, 64, &len) == PASARELA_E_NO_HW_AES, "dec cpu=0");
    /* the other architecture's bit is not usable here */
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
    CHECK(pasarela_aes256_expand(PASARELA_CPU_AES_ARM, key, &ks) == PASARELA_E_NO_HW_AES, "ARM bit on x86");
#elif defined(__aarch64__) || defined(_M_ARM64)
    CHECK(pasarela_aes256_expand(PASARELA_CPU_AES_X86, key, &ks) == PASARELA_E_NO_HW_AES, "x86 bit on ARM");
#endif
}

static double now_seconds(void)
{
    return (double)clock() / (double)CLOCKS_PER_SEC;
}

static void bench(unsigned cpu)
{
    static uint8_t in[16384], out[16384 + 16];
    uint8_t key[32], iv[16];
    size_t len, iters, i;
    double t0, dt;

    rng_fill(key, 32);
    rng_fill(iv, 16);
    rng_fill(in, sizeof in);
    for (iters = 1000;; iters *= 2) {
        t0 = now_seconds();
        for (i = 0; i < iters; i++)
            pasarela_aes256_cbc_encrypt(cpu, key, iv, in, sizeof in - 16, out, sizeof out, &len);
        dt = now_seconds() - t0;
        if (dt > 1.0)
            break;
    }
    printf("encrypt 16 KiB (16368 B + pad): %.3f ns/byte, %.0f MB/s\n", dt * 1e9 / ((double)iters * 16384.0),
           (double)iters * 16384.0 / dt / 1e6);
    for (iters = 1000;; iters *= 2) {
        t0 = now_seconds();
        for (i = 0; i < iters; i++)
            pasarela_aes256_cbc_decrypt(cpu, key, iv, out, sizeof in, in, sizeof in, &len);
        dt = now_seconds() - t0;
        if (dt > 1.0)
            break;
    }
    printf("decrypt 16 KiB: %.3f ns/byte, %.0f MB/s\n", dt * 1e9 / ((double)iters * 16384.0),
           (double)iters * 16384.0 / dt / 1e6);
}

int main(int argc, char **argv)
{
    unsigned cpu = pasarela_cpu_features();

    printf("cpu features: %u (%s)\n", cpu,
           (cpu & PASARELA_CPU_AES_X86) ? "AES-NI" : (cpu & PASARELA_CPU_AES_ARM) ? "ARMv8 AES" : "no hardware AES");
    CHECK((cpu & ~(PASARELA_CPU_AES_ANY | PASARELA_CPU_AVX2 | PASARELA_CPU_AVX512 | PASARELA_CPU_AVX512_SHORT |
                   PASARELA_CPU_VAES | PASARELA_CPU_AVX512_VBMI)) == 0,
          "unknown feature bits %u", cpu);
    CHECK(!(cpu & PASARELA_CPU_AVX512_VBMI) || ((cpu & PASARELA_CPU_AVX512) && (cpu & PASARELA_CPU_AVX2)),
          "AVX512_VBMI without AVX512 and AVX2: %u", cpu);
    CHECK(!(cpu & PASARELA_CPU_VAES) || ((cpu & PASARELA_CPU_AVX2) && (cpu & PASARELA_CPU_AES_X86)),
          "VAES without AVX2 and AES-NI: %u", cpu);
    CHECK(!(cpu & PASARELA_CPU_AVX512_SHORT) || (cpu & PASARELA_CPU_AVX512), "AVX512_SHORT without AVX512: %u", cpu);
    CHECK(pasarela_cpu_features() == cpu, "stable");
    if (cpu & PASARELA_CPU_AES_ANY) {
        test_kat(cpu);
        test_fips197(cpu);
        test_pipeline(cpu);
        test_roundtrip(cpu);
        test_padding(cpu);
        test_errors(cpu);
        if (argc > 1 && strcmp(argv[1], "bench") == 0)
            bench(cpu);
    } else {
        uint8_t key[32] = {0}, iv[16] = {0}, buf[32] = {0};
        pasarela_aes256_schedule ks;
        size_t len;
        printf("no hardware AES: checking that every entry point refuses\n");
        CHECK(pasarela_aes256_expand(cpu, key, &ks) == PASARELA_E_NO_HW_AES, "expand");
        CHECK(pasarela_aes256_cbc_encrypt(cpu, key, iv, buf, 1, buf, sizeof buf, &len) == PASARELA_E_NO_HW_AES, "enc");
        CHECK(pasarela_aes256_cbc_decrypt(cpu, key, iv, buf, 16, buf, sizeof buf, &len) == PASARELA_E_NO_HW_AES,
              "dec");
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
