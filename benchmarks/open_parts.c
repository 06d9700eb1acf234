/* open_parts.c — where the C time of Terminal.open_bytes goes (pasarela_open_request, which it calls), each part
 * timed alone beside the whole call and beside pasarela_seal_json, for the JSON texts of the files given (issue 42,
 * goal 2: open_bytes against seal).
 *
 *   cc -std=c99 -O3 -DPASARELA_VERSION='"0.0.0"' -Icsrc benchmarks/open_parts.c csrc/[a-z]*.c -o /tmp/open_parts
 *   python3 benchmarks/payloads.py /tmp            # items-heavy: /tmp/payload-64.json ... /tmp/payload-16384.json
 *   python3 benchmarks/payloads.py /tmp string-heavy   # /tmp/payload-string-heavy-64.json ...
 *   /tmp/open_parts [--rounds N] [--no-avx512] /tmp/payload-1024.json /tmp/payload-string-heavy-1024.json ...
 *
 * Parts of the open (in its order): the hex decoding of the ciphertext, AES-256-CBC decryption, the canonicalizer
 * (flags 0: the text as a client sent it, with this CPU's features as pasarela_open_request runs it: the check of
 * json_checked.c, then the token pass where it is not sure), the signature (pasarela_sign: the Base64 of the signed
 * text, SHA-512, hex), and its two halves alone, the Base64 and the SHA-512; then the UTF-8 pass, which runs only on a refused text.
 * Of the seal: pasarela_sha512_with_cbc (SHA-512 of the same Base64 length with the AES-256-CBC encryption
 * interleaved) and the hex encoding of the ciphertext. "Base64, then SHA-512" times the two in a row: on Intel CPUs,
 * whose AVX-512 instructions lower the core's clock for a while, more than the two apart when the Base64 ran on
 * 512-bit vectors (the C core now takes AVX2's there: PASARELA_CPU_AVX512_SHORT, pasarela.h). --no-avx512 runs the
 * parts as on a CPU without AVX-512. Each round times every (file, part) for about 5 ms, alternating; the table gives the
 * fastest round (this machine is shared: the least disturbed), in ns per call. Keys are derived once.
 */
#define _POSIX_C_SOURCE 199309L
#include <string.h>

#include "internal.h"
#include "utf8.h"

#define HARNESS_NAME "open_parts"
#include "c_harness.h"

#define TIMESTAMP 1763812800u
#define TIMESTAMP_TEXT "1763812800"

enum { SEAL, OPEN, HEX_DECODE, AES_DECRYPT, CANONICALIZE, SIGN, BASE64, SHA512, BASE64_SHA512, UTF8, SHA512_CBC,
       HEX_ENCODE, PARTS };
static const char *const part_names[PARTS] = {
    "pasarela_seal_json (SHORTEST_DIGITS)", "pasarela_open_request (whole)", "  hex decode of the ciphertext",
    "  AES-256-CBC decrypt", "  canonicalize (flags 0)", "  sign: Base64 + SHA-512 + hex", "    Base64 alone",
    "    SHA-512 alone", "    Base64, then SHA-512", "  UTF-8 pass (refusals only)", "seal: SHA-512 with AES-CBC",
    "seal: hex encode of the ciphertext"};

typedef struct request {
    uint8_t *json, *plaintext, *base64, *ciphertext; /* json: the file's text (harness_args) */
    char *body, authorization[6 + PASARELA_SIGNATURE_HEX_LEN], *hex;
    size_t json_len, body_len, ciphertext_len, base64_len;
} request;

typedef struct bench {
    pasarela_credentials credentials;
    pasarela_workspace ws;
    pasarela_sealing_keys keys;
    uint8_t iv[16];
    void *scratch;
    size_t scratch_cap;
    unsigned sink;
} bench;

/* The request seal makes of the text, and the buffers the parts work in. */
static void make_request(bench *b, request *r) {
    size_t n = r->json_len;
    if (pasarela_seal_json(&b->credentials, &b->ws, TIMESTAMP, r->json, n, PASARELA_JSON_SHORTEST_DIGITS, b->iv) !=
        PASARELA_OK)
        fail("pasarela_seal_json refused a text");
    const char *sealed = b->ws.out + b->ws.plaintext_len; /* the signature, then the body */
    memcpy(r->authorization, "Basic ", 6);
    memcpy(r->authorization + 6, sealed, PASARELA_SIGNATURE_HEX_LEN);
    r->body_len = b->ws.out_len - b->ws.plaintext_len - PASARELA_SIGNATURE_HEX_LEN;
    r->body = (char *)must_alloc(r->body_len);
    memcpy(r->body, sealed + PASARELA_SIGNATURE_HEX_LEN, r->body_len);
    r->ciphertext_len = PASARELA_CIPHERTEXT_LEN(n);
    r->ciphertext = (uint8_t *)must_alloc(r->ciphertext_len);
    r->plaintext = (uint8_t *)must_alloc(PASARELA_JSON_OUT_MAX(n));
    r->hex = (char *)must_alloc(2 * r->ciphertext_len);
    r->base64 = (uint8_t *)must_alloc(4 * (n + 66) / 3 + 8);
    r->base64_len = pasarela_base64_encode_public(b->credentials.cpu, r->json, n + 66, (char *)r->base64);
    if (pasarela_open_request(&b->credentials, &b->ws, TIMESTAMP_TEXT, 10, TIMESTAMP, 300, r->authorization,
                              sizeof r->authorization, r->body, r->body_len) != PASARELA_OK)
        fail("pasarela_open_request refused the request seal made");
}

static void sha512_of(bench *b, const request *r) {
    uint8_t digest[64];
    pasarela_sha512_ctx sha;
    pasarela_sha512_init(&sha, b->credentials.cpu);
    pasarela_sha512_update(&sha, r->base64, r->base64_len);
    pasarela_sha512_final(&sha, digest);
    b->sink += digest[0];
}

static void run_part(bench *b, const request *r, int part) {
    unsigned cpu = b->credentials.cpu;
    size_t out_len, error_offset;
    unsigned facts;
    uint8_t iv[16] = {0};
    char signature[PASARELA_SIGNATURE_HEX_LEN];
    const char *ciphertext_hex = r->body + PASARELA_BODY_DATA_OFFSET + 2 * PASARELA_IV_LEN + 1;
    switch (part) {
    case SEAL:
        b->sink += (unsigned)pasarela_seal_json(&b->credentials, &b->ws, TIMESTAMP, r->json, r->json_len,
                                                PASARELA_JSON_SHORTEST_DIGITS, b->iv);
        break;
    case OPEN:
        b->sink += (unsigned)pasarela_open_request(&b->credentials, &b->ws, TIMESTAMP_TEXT, 10, TIMESTAMP, 300,
                                                   r->authorization, sizeof r->authorization, r->body, r->body_len);
        break;
    case HEX_DECODE:
        b->sink += (unsigned)pasarela_hex_decode_cpu(cpu, ciphertext_hex, 2 * r->ciphertext_len, r->ciphertext);
        break;
    case AES_DECRYPT:
        pasarela_aes256_cbc_decrypt_blocks(cpu, &b->keys.schedule, iv, r->ciphertext, r->ciphertext_len / 16,
                                           r->plaintext);
        break;
    case CANONICALIZE:
        b->sink += (unsigned)pasarela_json_canonicalize_cpu(cpu, r->json, r->json_len, 0, r->plaintext,
                                                            PASARELA_JSON_OUT_MAX(r->json_len), &out_len, b->scratch,
                                                            b->scratch_cap, &error_offset, &facts);
        break;
    case SIGN:
        pasarela_sign(cpu, r->json, r->json_len, &b->keys, b->scratch, signature);
        b->sink += (unsigned char)signature[0];
        break;
    case BASE64:
        b->sink += (unsigned)pasarela_base64_encode_public(cpu, r->json, r->json_len + 66, (char *)r->base64);
        break;
    case SHA512:
        sha512_of(b, r);
        break;
    case BASE64_SHA512:
        b->sink += (unsigned)pasarela_base64_encode_public(cpu, r->json, r->json_len + 66, (char *)r->base64);
        sha512_of(b, r);
        break;
    case UTF8:
        b->sink += (unsigned)pasarela_utf8_invalid_at(r->json, r->json_len);
        break;
    case SHA512_CBC: {
        uint8_t digest[64];
        pasarela_cbc_job job = {&b->keys.schedule, b->iv, r->json, r->json_len, r->ciphertext};
        pasarela_sha512_with_cbc(cpu, r->base64, r->base64_len, digest, &job);
        b->sink += digest[0];
        break;
    }
    default:
        pasarela_hex_encode_cpu(cpu, r->ciphertext, r->ciphertext_len, r->hex);
        break;
    }
}

HARNESS_TIME_PART(bench, request)

int main(int argc, char **argv) {
    static harness_file files[HARNESS_MAX_FILES];
    static request requests[HARNESS_MAX_FILES];
    static double best[HARNESS_MAX_FILES * PARTS];
    int rounds, no_avx512 = 0;
    int nfiles = harness_args(argc, argv, "usage: open_parts [--rounds N] [--no-avx512] FILE.json...", "--no-avx512",
                              &no_avx512, &rounds, files);
    size_t json_max = 0;
    bench *b = (bench *)must_alloc(sizeof *b);
    for (int f = 0; f < nfiles; f++) {
        requests[f].json = files[f].json;
        requests[f].json_len = files[f].len;
        if (files[f].len > json_max) json_max = files[f].len;
    }
    b->credentials.business_code = (const uint8_t *)"bc-bench";
    b->credentials.business_code_len = 8;
    b->credentials.terminal_serial = (const uint8_t *)"SN-BENCH-0001";
    b->credentials.terminal_serial_len = 13;
    b->credentials.cpu =
        pasarela_cpu_features() & (no_avx512 ? ~(unsigned)PASARELA_CPU_AVX512_ALL : ~0u);
    b->credentials.id = 1;
    json_max = PASARELA_CIPHERTEXT_LEN(json_max); /* what an open sizes its buffers by */
    b->ws.plaintext_cap = PASARELA_JSON_OUT_MAX(json_max);
    b->ws.plaintext = (uint8_t *)must_alloc(b->ws.plaintext_cap);
    b->ws.scratch_cap = b->scratch_cap = PASARELA_WORKSPACE_SCRATCH_SIZE(json_max);
    b->ws.scratch = must_alloc(b->ws.scratch_cap);
    b->scratch = must_alloc(b->scratch_cap);
    b->ws.out_cap = PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(json_max));
    b->ws.out = (char *)must_alloc(b->ws.out_cap);
    b->ws.keys_cap = pasarela_key_cache_size();
    b->ws.keys = must_alloc(b->ws.keys_cap);
    if (pasarela_derive_secrets(&b->credentials, TIMESTAMP, &b->keys.derived) != PASARELA_OK ||
        pasarela_aes256_expand(b->credentials.cpu, b->keys.derived.aes_key, &b->keys.schedule) != PASARELA_OK)
        fail("no keys (a CPU without AES instructions?)");
    for (int f = 0; f < nfiles; f++) make_request(b, &requests[f]);
    harness_timed timed = {b, requests};
    harness_fastest(rounds, nfiles, PARTS, harness_time_one, &timed, best);
    harness_table(rounds, no_avx512 ? " (--no-avx512)" : "", files, nfiles, part_names, PARTS, best);
    return b->sink == 0x7fffffffu; /* the results used, so that no part is optimized away */
}
