/* test_sizes.c — the size computations at the edge of size_t (issue 11, item 4).
 *
 * The size functions (pasarela_json_out_max, pasarela_json_scratch_size, pasarela_workspace_scratch_size,
 * pasarela_sealed_len) are compared with the exact values computed in a wider type for lengths up to
 * PASARELA_MAX_JSON_LEN, and must return 0 above it (where the macros would wrap around); every entry
 * point given a length above it returns PASARELA_E_TOO_LARGE before touching a byte (the buffers given
 * are tiny: reading or writing past them is what ASan and valgrind report). scripts/hardening runs it
 * like the other drivers, and also built with -m32, where size_t has 32 bits and a 306,783,400-byte
 * object once made PASARELA_JSON_SCRATCH_SIZE wrap.
 *
 *   gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -DPASARELA_VERSION='"0.0.0"' -Icsrc \
 *       csrc/tests/test_sizes.c csrc/[a-z]*.c -o /tmp/test_sizes && /tmp/test_sizes
 *
 * Prints "N passed, N failed" as the last line; exits non-zero on any failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "pasarela.h"

#if SIZE_MAX <= UINT32_MAX
typedef uint64_t wide; /* exact for every 32-bit length times 32 */
#define WIDE_BITS 64
#else
__extension__ typedef unsigned __int128 wide;
#define WIDE_BITS 128
#endif

static wide ciphertext_len(wide n) { return (n / 16 + 1) * 16; }
static wide out_max(wide n) { return 6 * n + 32; }
static wide json_scratch(wide n) { return 16 * n + 256; }
static wide sealed_len(wide n) { return PASARELA_SIGNATURE_HEX_LEN + 11 + 2 * PASARELA_IV_LEN + 1 + 2 * ciphertext_len(n); }
static wide seal_scratch(wide n) { return 4 * ((n + 9 + PASARELA_ENCODED_KEY_LEN + 2) / 3) + 16 + ciphertext_len(n); }
static wide workspace_scratch(wide n) {
    wide a = json_scratch(n), b = seal_scratch(out_max(n));
    return a > b ? a : b;
}

static int fits(wide v) { return v <= (wide)SIZE_MAX; }

static void check_sizes(size_t n) {
    /* a plaintext (canonical text) may be up to out_max of the longest input */
    if ((wide)n > out_max(PASARELA_MAX_JSON_LEN))
        CHECK(pasarela_sealed_len(n) == 0, "sealed_len(%zu) is not 0", n);
    else
        CHECK(fits(sealed_len(n)) && (wide)pasarela_sealed_len(n) == sealed_len(n), "sealed_len(%zu)", n);
    if (n > PASARELA_MAX_JSON_LEN) {
        CHECK(pasarela_json_out_max(n) == 0, "json_out_max(%zu) is not 0", n);
        CHECK(pasarela_json_scratch_size(n) == 0, "json_scratch_size(%zu) is not 0", n);
        CHECK(pasarela_workspace_scratch_size(n) == 0, "workspace_scratch_size(%zu) is not 0", n);
        return;
    }
    /* every buffer a workspace for n bytes needs, up to the request of the largest canonical text */
    wide request = out_max(n) + sealed_len(out_max(n));
    CHECK(fits(request) && fits(workspace_scratch(n)) && fits(json_scratch(n)), "sizes of %zu do not fit", n);
    CHECK((wide)pasarela_json_out_max(n) == out_max(n), "json_out_max(%zu)", n);
    CHECK((wide)pasarela_json_scratch_size(n) == json_scratch(n), "json_scratch_size(%zu)", n);
    CHECK((wide)pasarela_workspace_scratch_size(n) == workspace_scratch(n), "workspace_scratch_size(%zu)", n);
    CHECK((wide)pasarela_sealed_len(pasarela_json_out_max(n)) == sealed_len(out_max(n)), "sealed_len(out_max(%zu))", n);
    /* the canonicalizer's member records, n / 4 + 4 of them, fit in its scratch and in 32 bits */
    CHECK((wide)(n / 4 + 4) * 32 <= json_scratch(n) && n / 4 + 4 <= UINT32_MAX, "member records of %zu", n);
}

/* Every entry point refuses a length above PASARELA_MAX_JSON_LEN without reading or writing a byte. */
static void check_entry_points(size_t n) {
    static const uint8_t key[] = "business", serial[] = "serial";
    uint64_t scratch[8];
    uint8_t in[4] = "{}", plaintext[8];
    char out[8], signature[PASARELA_SIGNATURE_HEX_LEN];
    size_t out_len = 1, error_offset = 1, plaintext_len = 0, request_len = 0, len = n;
    unsigned facts = 0;
    int status = -1;
    pasarela_credentials c = {key, sizeof key - 1, serial, sizeof serial - 1, 0, 0};
    pasarela_workspace ws;
    memset(&ws, 0, sizeof ws);
    memset(signature, '0', sizeof signature);
    ws.plaintext = plaintext;
    ws.plaintext_cap = SIZE_MAX; /* capacities that pass every check of a wrapped size */
    ws.scratch = scratch;
    ws.scratch_cap = SIZE_MAX;
    ws.out = out;
    ws.out_cap = SIZE_MAX;
    CHECK(pasarela_json_canonicalize(in, n, 0, plaintext, SIZE_MAX, &out_len, scratch, SIZE_MAX, &error_offset,
                                     &facts) == PASARELA_E_TOO_LARGE, "json_canonicalize(%zu)", n);
    CHECK(pasarela_seal_json(&c, &ws, 1700000000u, in, n, 0, (const uint8_t *)"0123456789abcdef") ==
          PASARELA_E_TOO_LARGE, "seal_json(%zu)", n);
    CHECK(pasarela_seal(&c, &ws, 1700000000u, in, n, (const uint8_t *)"0123456789abcdef") == PASARELA_E_TOO_LARGE,
          "seal(%zu)", n);
    CHECK(pasarela_verify(&c, &ws, 1700000000u, in, n, signature) == PASARELA_E_TOO_LARGE, "verify(%zu)", n);
    /* a data string whose ciphertext would be too large (hex: twice as long, plus the IV and the colon) */
    size_t data_len = n <= (SIZE_MAX - 33) / 2 ? 33 + 2 * n : SIZE_MAX;
    CHECK(pasarela_open(&c, &ws, 1700000000u, (const char *)in, data_len, signature) == PASARELA_E_TOO_LARGE,
          "open(%zu)", data_len);
    const pasarela_credentials *cs[1] = {&c};
    CHECK(pasarela_seal_json_batch(cs, 1700000000u, in, &len, 1, 0, (const uint8_t *)"0123456789abcdef", &ws,
                                   &status, &plaintext_len, &request_len, &facts) == 1 &&
          status == PASARELA_E_TOO_LARGE && request_len == 0, "seal_json_batch(%zu)", n);
    /* no buffer is given for an item too large: the core refuses it before it would read outs[0] */
    char *const outs[1] = {NULL};
    status = PASARELA_OK;
    CHECK(pasarela_seal_batch(cs, 1700000000u, in, &len, 1, (const uint8_t *)"0123456789abcdef", &ws, outs,
                              &status) == 1 &&
          status == PASARELA_E_TOO_LARGE, "seal_batch(%zu)", n);
}

int main(void) {
    const size_t max = PASARELA_MAX_JSON_LEN;
    const size_t lengths[] = {0, 1, 2, 15, 16, 17, 4096, 306783400u, /* the object the issue overflowed with */
                              (size_t)UINT32_MAX / 16, (size_t)UINT32_MAX / 6, max - 1, max, max + 1, max + 2,
                              SIZE_MAX / 32, SIZE_MAX / 18, SIZE_MAX / 16, SIZE_MAX / 6, SIZE_MAX / 2,
                              SIZE_MAX - 1024, SIZE_MAX - 33, SIZE_MAX - 1, SIZE_MAX};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        check_sizes(lengths[i]);
        if (lengths[i] > max) check_entry_points(lengths[i]);
    }
    for (size_t k = 0; k < 64; k++) { /* both sides of the limit */
        check_sizes(max - k);
        check_sizes(max + 1 + k);
        check_entry_points(max + 1 + k);
        check_sizes(PASARELA_JSON_OUT_MAX(max) - k); /* sealed_len's own limit */
        check_sizes(PASARELA_JSON_OUT_MAX(max) + 1 + k);
    }
    CHECK(max >= (SIZE_MAX <= UINT32_MAX ? (size_t)100000000u : (size_t)UINT32_MAX),
          "PASARELA_MAX_JSON_LEN is %zu", max);
    printf("size_t of %u bits, PASARELA_MAX_JSON_LEN %zu, checked against %u-bit arithmetic\n",
           (unsigned)(sizeof(size_t) * 8), max, (unsigned)WIDE_BITS);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
