/*
 * test_wycheproof.c — Project Wycheproof's AES-CBC-PKCS5 vectors (tests/vectors/, copied unchanged)
 * against the C core's AES-256, so that every platform's AES path meets them, not only the one the
 * Python tests run on.
 *
 * Every AES-256 case: a valid one must encrypt to its ct and decrypt back to its msg; an invalid one
 * (bad padding or length) must be refused with nothing written. The 128- and 192-bit groups are counted
 * and left out (the core is AES-256 only). Without AES instructions every case must be refused with
 * PASARELA_E_NO_HW_AES (the Python reference then does the work).
 *
 * The line before the last is "output digest: <SHA-512 hex>" of every ciphertext and plaintext the core
 * wrote, in file order: scripts/hardening compares it across platforms (x86-64, AArch64, Windows).
 *
 * Build and run from the repository root:
 *
 *   cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -DPASARELA_VERSION='"0.0.0"' -Icsrc \
 *       csrc/tests/test_wycheproof.c csrc/[a-z]*.c -o /tmp/test_wycheproof && /tmp/test_wycheproof [FILE]
 *
 * FILE defaults to tests/vectors/wycheproof_aes_cbc_pkcs5_test.json. Prints "N passed, N failed" as the
 * last line; exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#include "check.h"

#define MAX_HEX 4096 /* the longest field of the file is far shorter */

/* The string value of "name" in the test case starting at p (before the next '}'), copied to out. */
static int field(const char *p, const char *name, char *out, size_t cap)
{
    char quoted[32];
    const char *end = strchr(p, '}'), *at, *value, *close;
    size_t n;
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    at = strstr(p, quoted);
    if (end == NULL || at == NULL || at > end)
        return 0;
    value = strchr(at + strlen(quoted), '"');
    close = value == NULL ? NULL : strchr(value + 1, '"');
    if (close == NULL || close > end)
        return 0;
    n = (size_t)(close - value - 1);
    if (n >= cap)
        return 0;
    memcpy(out, value + 1, n);
    out[n] = '\0';
    return 1;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long size;
    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = (char *)malloc((size_t)size + 1)) != NULL) {
        if (fread(text, 1, (size_t)size, f) == (size_t)size) {
            text[size] = '\0';
        } else {
            free(text);
            text = NULL;
        }
    }
    fclose(f);
    return text;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "tests/vectors/wycheproof_aes_cbc_pkcs5_test.json";
    unsigned cpu = pasarela_cpu_features();
    int has_aes = (cpu & PASARELA_CPU_AES_ANY) != 0;
    char *text = read_file(path), *p;
    static char key_hex[MAX_HEX], iv_hex[MAX_HEX], msg_hex[MAX_HEX], ct_hex[MAX_HEX], result[16], tc[16];
    static uint8_t key[32], iv[16], msg[MAX_HEX / 2], ct[MAX_HEX / 2], out[MAX_HEX / 2 + 16];
    pasarela_sha512_ctx digest_ctx;
    uint8_t digest[64];
    char digest_hex[129];
    int aes256 = 0, other = 0, valid = 0, invalid = 0;

    if (text == NULL) {
        printf("cannot read %s\n0 passed, 1 failed\n", path);
        return 1;
    }
    printf("cpu features: %u (%s)\n", cpu,
           (cpu & PASARELA_CPU_AES_X86) ? "AES-NI" : (cpu & PASARELA_CPU_AES_ARM) ? "ARMv8 AES" : "no hardware AES");
    pasarela_sha512_init(&digest_ctx, 0);
    for (p = strstr(text, "\"tcId\""); p != NULL; p = strstr(p + 1, "\"tcId\"")) {
        size_t key_len, msg_len, ct_len, len = 0;
        int rc, ok;
        snprintf(tc, sizeof tc, "%.10s", p + 6 + strspn(p + 6, " :"));
        tc[strspn(tc, "0123456789")] = '\0';
        ok = field(p, "key", key_hex, sizeof key_hex) && field(p, "iv", iv_hex, sizeof iv_hex) &&
             field(p, "msg", msg_hex, sizeof msg_hex) && field(p, "ct", ct_hex, sizeof ct_hex) &&
             field(p, "result", result, sizeof result) && strlen(iv_hex) == 32;
        CHECK(ok, "tcId %s: fields key, iv, msg, ct, result", tc);
        if (!ok)
            continue;
        key_len = strlen(key_hex) / 2;
        if (key_len != 32) {
            other++;
            continue;
        }
        aes256++;
        msg_len = strlen(msg_hex) / 2;
        ct_len = strlen(ct_hex) / 2;
        unhex(key_hex, key);
        unhex(iv_hex, iv);
        unhex(msg_hex, msg);
        unhex(ct_hex, ct);
        if (!has_aes) {
            CHECK(pasarela_aes256_cbc_encrypt(cpu, key, iv, msg, msg_len, out, sizeof out, &len) ==
                      PASARELA_E_NO_HW_AES && len == 0,
                  "tcId %s: encryption refused without AES", tc);
            rc = pasarela_aes256_cbc_decrypt(cpu, key, iv, ct, ct_len, out, sizeof out, &len);
            /* the length is checked first: a bad length is refused as such */
            CHECK((rc == PASARELA_E_NO_HW_AES || (rc == PASARELA_E_BAD_LENGTH && (ct_len == 0 || ct_len % 16))) &&
                      len == 0,
                  "tcId %s: decryption refused without AES (rc %d)", tc, rc);
            continue;
        }
        if (strcmp(result, "valid") == 0) {
            valid++;
            rc = pasarela_aes256_cbc_encrypt(cpu, key, iv, msg, msg_len, out, sizeof out, &len);
            CHECK(rc == PASARELA_OK && len == ct_len && memcmp(out, ct, ct_len) == 0, "tcId %s: encrypt (rc %d)", tc,
                  rc);
            pasarela_sha512_update(&digest_ctx, out, len);
            rc = pasarela_aes256_cbc_decrypt(cpu, key, iv, ct, ct_len, out, sizeof out, &len);
            CHECK(rc == PASARELA_OK && len == msg_len && memcmp(out, msg, msg_len) == 0, "tcId %s: decrypt (rc %d)",
                  tc, rc);
            pasarela_sha512_update(&digest_ctx, out, len);
        } else {
            invalid++;
            memset(out, 0xaa, sizeof out);
            len = 12345;
            rc = pasarela_aes256_cbc_decrypt(cpu, key, iv, ct, ct_len, out, sizeof out, &len);
            CHECK((rc == PASARELA_E_BAD_PADDING || rc == PASARELA_E_BAD_LENGTH) && len == 0,
                  "tcId %s: %s case refused (rc %d)", tc, result, rc);
            pasarela_sha512_update(&digest_ctx, out, ct_len); /* wiped: zeros (or untouched on a bad length) */
        }
    }
    pasarela_sha512_final(&digest_ctx, digest);
    pasarela_hex_encode(digest, sizeof digest, digest_hex);
    digest_hex[128] = '\0';
    CHECK(aes256 > 50 && other > 0, "the file holds AES-256 cases (%d) and others (%d)", aes256, other);
    if (has_aes)
        CHECK(valid > 0 && invalid > 0, "valid (%d) and invalid (%d) AES-256 cases", valid, invalid);
    printf("%d AES-256 cases (%d valid, %d invalid), %d of other key sizes left out\n", aes256, valid, invalid, other);
    printf("output digest: %s\n", has_aes ? digest_hex : "none (no AES instructions: every case refused)");
    printf("%d passed, %d failed\n", passed, failed);
    free(text);
    return failed ? 1 : 0;
}
