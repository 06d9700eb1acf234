/*
 * Fuzz target: pasarela_seal_json with arbitrary JSON, credentials and timestamps.
 *
 * Input: selector, timestamp (8 bytes), iv[16], business code and terminal serial (one length byte
 * each), then the JSON text. Selector bit 0: PASARELA_JSON_SHORTEST_DIGITS; bit 1: fold the
 * timestamp into the valid 10-digit range; bit 2: also seal with the portable SHA-512 (cpu without
 * AVX2) and compare.
 * Checks on success: the plaintext is what pasarela_json_canonicalize gives; the body is
 * {"data":"<hex iv>:<hex ciphertext>"} and decrypts (with the key from pasarela_derive) to the
 * plaintext; the signature is SHA-512 of the Base64 of the signed string, computed here in one
 * piece; pasarela_seal into an exact-size buffer writes the same bytes.
 */
#include "fuzz.h"
#include "../tests/seal_check.h"

static void check_plaintext(const pasarela_workspace *ws, const uint8_t *json, size_t json_len, unsigned flags)
{
    uint8_t *out = (uint8_t *)fuzz_alloc(PASARELA_JSON_OUT_MAX(json_len));
    void *scratch = fuzz_alloc(PASARELA_JSON_SCRATCH_SIZE(json_len));
    size_t len = 0;
    unsigned facts = 99;
    FUZZ_CHECK(pasarela_json_canonicalize(json, json_len, flags, out, PASARELA_JSON_OUT_MAX(json_len), &len,
                                          scratch, PASARELA_JSON_SCRATCH_SIZE(json_len), NULL,
                                          &facts) == PASARELA_OK);
    FUZZ_CHECK(!(facts & PASARELA_JSON_FACT_KEY) && facts == ws->json_facts);
    if (facts & PASARELA_JSON_FACT_NULL) { /* a null literal is in the output (outside or not of strings) */
        int seen = 0;
        for (size_t i = 0; i + 4 <= len && !seen; i++) seen = memcmp(out + i, "null", 4) == 0;
        FUZZ_CHECK(seen);
    }
    FUZZ_CHECK(len == ws->plaintext_len && memcmp(out, ws->out, len) == 0);
    FUZZ_CHECK(len >= 2 && out[0] == '{' && out[len - 1] == '}');
    free(scratch);
    free(out);
}

static void check_seal_again(const pasarela_credentials *c, uint64_t timestamp, const uint8_t iv[16],
                             const pasarela_workspace *ws)
{
    size_t cap = PASARELA_SEALED_LEN(ws->plaintext_len), len = 0;
    char *out = (char *)fuzz_alloc(cap);
    uint8_t *plaintext = fuzz_copy((const uint8_t *)ws->out, ws->plaintext_len);
    FUZZ_CHECK(seal_check_seal(c, timestamp, plaintext, ws->plaintext_len, iv, out, cap, &len) == PASARELA_OK);
    FUZZ_CHECK(len == cap && memcmp(out, ws->out + ws->plaintext_len, len) == 0);
    free(plaintext);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    fuzz_seal_head head = fuzz_seal_start(&r);
    uint8_t iv[16];
    fuzz_fill(&r, iv, sizeof iv);
    pasarela_credentials c = fuzz_credentials(&r, fuzz_cpu());
    size_t n = r.size;
    uint8_t *json = fuzz_copy(r.data, n);
    pasarela_workspace ws;
    fuzz_workspace_alloc(&ws, PASARELA_JSON_OUT_MAX(n), PASARELA_WORKSPACE_SCRATCH_SIZE(n),
                         PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(n)));

    int rc = pasarela_seal_json(&c, &ws, head.timestamp, json, n, head.flags, iv);
    FUZZ_CHECK(rc == PASARELA_OK || rc == PASARELA_E_JSON_SYNTAX || rc == PASARELA_E_JSON_UNSUPPORTED ||
               rc == PASARELA_E_JSON_UNSAFE_INTEGER || rc == PASARELA_E_JSON_NOT_OBJECT ||
               rc == PASARELA_E_KEY_MEMBER || rc == PASARELA_E_TIMESTAMP);
    if (rc == PASARELA_E_TIMESTAMP)
        FUZZ_CHECK(!fuzz_timestamp_valid(head.timestamp));
    if (rc == PASARELA_OK) {
        FUZZ_CHECK(fuzz_timestamp_valid(head.timestamp));
        FUZZ_CHECK(ws.out_len == PASARELA_REQUEST_LEN(ws.plaintext_len));
        check_plaintext(&ws, json, n, head.flags);
        FUZZ_CHECK(seal_check_body(&c, head.timestamp, iv, (const uint8_t *)ws.out, ws.plaintext_len,
                                   ws.out + ws.plaintext_len + PASARELA_SIGNATURE_HEX_LEN));
        FUZZ_CHECK(seal_check_signature(&c, head.timestamp, (const uint8_t *)ws.out, ws.plaintext_len,
                                        ws.out + ws.plaintext_len));
        check_seal_again(&c, head.timestamp, iv, &ws);
#ifdef PASARELA_CPU_AVX2
        if ((head.selector & 4) && (c.cpu & PASARELA_CPU_AVX2)) {
            c.cpu &= ~PASARELA_CPU_AVX2;
            check_seal_again(&c, head.timestamp, iv, &ws);
        }
#endif
    }
    fuzz_workspace_free(&ws);
    free(json);
    fuzz_credentials_free(&c);
    return 0;
}
