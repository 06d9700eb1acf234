/*
 * The receiving side of the envelope: decrypt the data of a request (or a response) and verify its
 * signature exactly as the JavaScript server does, JSON.stringify(JSON.parse(plaintext)) with the
 * key added, Base64, SHA-512, compared in constant time.
 */
#include <string.h>

#include "internal.h"

/* "<32 hex iv>:<hex ciphertext>" -> ciphertext decrypted into out (in place), padding removed. */
static int decrypt_data(unsigned cpu, const pasarela_aes256_schedule *ks, const char *data, size_t data_len,
                        uint8_t *out, size_t out_cap, size_t *out_len) {
    uint8_t iv[PASARELA_IV_LEN];
    const size_t iv_hex = 2 * PASARELA_IV_LEN;
    if (data_len < iv_hex + 1 || data[iv_hex] != ':') return PASARELA_E_BAD_HEX;
    size_t ct_hex = data_len - iv_hex - 1;
    if (ct_hex % 2) return PASARELA_E_BAD_HEX;
    size_t n = ct_hex / 2;
    if (n == 0 || n % 16) return PASARELA_E_BAD_LENGTH;
    if (out_cap < n) return PASARELA_E_BUFFER_TOO_SMALL;
    if (pasarela_hex_decode(data, iv_hex, iv) != PASARELA_OK) return PASARELA_E_BAD_HEX;
    if (pasarela_hex_decode(data + iv_hex + 1, ct_hex, out) != PASARELA_OK) return PASARELA_E_BAD_HEX;
    pasarela_aes256_cbc_decrypt_blocks(cpu, ks, iv, out, n / 16, out);
    /* PKCS#7, checked without a data-dependent early exit */
    uint8_t pad = out[n - 1];
    unsigned bad = (unsigned)(pad == 0) | (unsigned)(pad > 16);
    for (size_t i = 0; i < 16; i++) {
        unsigned in_pad = (unsigned)(i < pad);
        bad |= in_pad & (unsigned)(out[n - 1 - i] != pad);
    }
    if (bad) {
        pasarela_wipe(out, n);
        return PASARELA_E_BAD_PADDING;
    }
    *out_len = n - pad;
    return PASARELA_OK;
}

int pasarela_decrypt_data(const pasarela_credentials *c, uint64_t timestamp, const char *data, size_t data_len,
                          uint8_t *out, size_t out_cap, size_t *out_len) {
    pasarela_sealing_keys k;
    int rc;
    if (c == NULL || data == NULL || out == NULL || out_len == NULL) return PASARELA_E_INVALID_ARGUMENT;
    rc = pasarela_derive_secrets(c, timestamp, &k.derived);
    if (rc == PASARELA_OK) rc = pasarela_aes256_expand(c->cpu, k.derived.aes_key, &k.schedule);
    if (rc == PASARELA_OK) rc = decrypt_data(c->cpu, &k.schedule, data, data_len, out, out_cap, out_len);
    pasarela_wipe(&k, sizeof k);
    return rc;
}

static int signature_matches(unsigned cpu, const pasarela_derived *d, const uint8_t *canonical, size_t n,
                             void *scratch, const char *signature_hex) {
    char expected[PASARELA_SIGNATURE_HEX_LEN];
    pasarela_sign(cpu, canonical, n, d, scratch, expected);
    int equal = pasarela_ct_equal(expected, signature_hex, sizeof expected);
    return equal ? PASARELA_OK : PASARELA_E_SIGNATURE;
}

int pasarela_verify(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp,
                    const uint8_t *canonical, size_t n, const char *signature_hex) {
    pasarela_sealing_keys local;
    const pasarela_sealing_keys *keys;
    int rc;
    if (c == NULL || ws == NULL || ws->scratch == NULL || canonical == NULL || signature_hex == NULL)
        return PASARELA_E_INVALID_ARGUMENT;
    if (n < 2 || canonical[0] != '{' || canonical[n - 1] != '}') return PASARELA_E_JSON_NOT_OBJECT;
    if (ws->scratch_cap < PASARELA_SEAL_SCRATCH_SIZE(n)) return PASARELA_E_BUFFER_TOO_SMALL;
    rc = pasarela_sealing_keys_for(c, ws, timestamp, &local, &keys);
    if (rc == PASARELA_OK) rc = signature_matches(c->cpu, &keys->derived, canonical, n, ws->scratch, signature_hex);
    if (keys == &local) pasarela_wipe(&local, sizeof local);
    return rc;
}

int pasarela_open(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp, const char *data,
                  size_t data_len, const char *signature_hex) {
    pasarela_sealing_keys local;
    const pasarela_sealing_keys *keys;
    unsigned facts = 0;
    int rc;
    if (c == NULL || ws == NULL || ws->scratch == NULL || data == NULL || signature_hex == NULL)
        return PASARELA_E_INVALID_ARGUMENT;
    ws->out_len = 0;
    ws->plaintext_len = 0;
    rc = pasarela_sealing_keys_for(c, ws, timestamp, &local, &keys);
    if (rc == PASARELA_OK)
        rc = decrypt_data(c->cpu, &keys->schedule, data, data_len, (uint8_t *)ws->out, ws->out_cap, &ws->out_len);
    if (rc == PASARELA_OK)
        rc = pasarela_json_canonicalize((const uint8_t *)ws->out, ws->out_len, 0, ws->plaintext, ws->plaintext_cap,
                                        &ws->plaintext_len, ws->scratch, ws->scratch_cap, &ws->error_offset, &facts);
    if (rc == PASARELA_E_JSON_UNSAFE_INTEGER) rc = PASARELA_E_JSON_UNSUPPORTED; /* JSON.parse rounds it: fall back */
    if (rc == PASARELA_OK && (ws->plaintext_len < 2 || ws->plaintext[0] != '{')) rc = PASARELA_E_JSON_NOT_OBJECT;
    if (rc == PASARELA_OK && (facts & PASARELA_JSON_FACT_KEY)) rc = PASARELA_E_KEY_MEMBER;
    if (rc == PASARELA_OK && ws->scratch_cap < PASARELA_SEAL_SCRATCH_SIZE(ws->plaintext_len))
        rc = PASARELA_E_BUFFER_TOO_SMALL;
    if (rc == PASARELA_OK)
        rc = signature_matches(c->cpu, &keys->derived, ws->plaintext, ws->plaintext_len, ws->scratch, signature_hex);
    if (keys == &local) pasarela_wipe(&local, sizeof local);
    return rc;
}
