/*
 * Independent checks of one sealed request, shared by test_roundtrip.c and the seal fuzz target.
 *
 * Each returns 1 when the sealed output is right and 0 otherwise. They recompute the envelope
 * from the public primitives in one piece (no streaming): decrypting the body with the key from
 * pasarela_derive must give the plaintext back, and the signature must be the SHA-512 hex of the
 * Base64 of the plaintext with ,"key":"<encodedKey>" spliced before its final brace.
 */
#ifndef PASARELA_SEAL_CHECK_H
#define PASARELA_SEAL_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "pasarela.h"

static inline int seal_check_lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* pasarela_seal into a workspace of its own (with a key cache when c has an id), the signature and body
 * (cap bytes at most: PASARELA_SEALED_LEN(n) needed) copied to out. Also checks that the request starts
 * with the plaintext; returns -1 when it does not. */
static inline int seal_check_seal(const pasarela_credentials *c, uint64_t timestamp, const uint8_t *plaintext,
                                  size_t n, const uint8_t iv[16], char *out, size_t cap, size_t *len)
{
    pasarela_workspace ws;
    memset(&ws, 0, sizeof ws);
    ws.out_cap = n + cap;
    ws.scratch_cap = PASARELA_SEAL_SCRATCH_SIZE(n);
    ws.keys_cap = pasarela_key_cache_size();
    ws.out = (char *)malloc(ws.out_cap + 1);
    ws.scratch = malloc(ws.scratch_cap);
    ws.keys = calloc(1, ws.keys_cap);
    int rc = ws.out == NULL || ws.scratch == NULL || ws.keys == NULL ? PASARELA_E_INVALID_ARGUMENT
                                                                      : pasarela_seal(c, &ws, timestamp, plaintext, n, iv);
    if (rc == PASARELA_OK) {
        if (ws.out_len != PASARELA_REQUEST_LEN(n) || ws.plaintext_len != n || memcmp(ws.out, plaintext, n) != 0) {
            rc = -1;
        } else {
            *len = PASARELA_SEALED_LEN(n);
            memcpy(out, ws.out + n, *len);
        }
    }
    if (ws.keys != NULL) pasarela_workspace_wipe(&ws);
    free(ws.keys);
    free(ws.scratch);
    free(ws.out);
    return rc;
}

/* body: {"data":"<hex iv>:<hex ciphertext>"}, PASARELA_SEALED_LEN(n) - 128 bytes. */
static inline int seal_check_body(const pasarela_credentials *c, uint64_t timestamp, const uint8_t iv[16],
                                  const uint8_t *plaintext, size_t n, const char *body)
{
    size_t ct_len = PASARELA_CIPHERTEXT_LEN(n);
    const char *data = body + PASARELA_BODY_DATA_OFFSET;
    uint8_t got_iv[16], aes_key[32];
    size_t decrypted_len = 0;
    int ok = memcmp(body, "{\"data\":\"", PASARELA_BODY_DATA_OFFSET) == 0 && seal_check_lower_hex(data, 32) &&
             data[32] == ':' && seal_check_lower_hex(data + 33, 2 * ct_len) && data[33 + 2 * ct_len] == '"' &&
             data[34 + 2 * ct_len] == '}' && pasarela_hex_decode(data, 32, got_iv) == PASARELA_OK &&
             memcmp(got_iv, iv, 16) == 0;
    if (!ok)
        return 0;
    uint8_t *ciphertext = (uint8_t *)malloc(ct_len);
    uint8_t *decrypted = (uint8_t *)malloc(ct_len);
    ok = ciphertext != NULL && decrypted != NULL &&
         pasarela_hex_decode(data + 33, 2 * ct_len, ciphertext) == PASARELA_OK &&
         pasarela_derive(c->business_code, c->business_code_len, c->terminal_serial, c->terminal_serial_len,
                         timestamp, NULL, NULL, aes_key) == PASARELA_OK &&
         pasarela_aes256_cbc_decrypt(c->cpu, aes_key, iv, ciphertext, ct_len, decrypted, ct_len, &decrypted_len) ==
             PASARELA_OK &&
         decrypted_len == n && memcmp(decrypted, plaintext, n) == 0;
    free(decrypted);
    free(ciphertext);
    return ok;
}

/* signature: the first 128 characters of a sealed output. */
static inline int seal_check_signature(const pasarela_credentials *c, uint64_t timestamp, const uint8_t *plaintext,
                                       size_t n, const char *signature)
{
    char encoded_key[PASARELA_ENCODED_KEY_LEN];
    size_t signed_len = PASARELA_SIGNED_LEN(n) - (n == 2); /* "{}": no comma before the key */
    uint8_t *signed_text = (uint8_t *)malloc(signed_len);
    char *base64 = (char *)malloc((signed_len + 2) / 3 * 4);
    uint8_t digest[64];
    char hex[PASARELA_SIGNATURE_HEX_LEN];
    size_t at = n - 1;
    int ok = signed_text != NULL && base64 != NULL && n >= 2 &&
             pasarela_derive(c->business_code, c->business_code_len, c->terminal_serial, c->terminal_serial_len,
                             timestamp, NULL, encoded_key, NULL) == PASARELA_OK;
    if (ok) {
        memcpy(signed_text, plaintext, at);
        if (n > 2)
            signed_text[at++] = ',';
        memcpy(signed_text + at, "\"key\":\"", 7);
        at += 7;
        memcpy(signed_text + at, encoded_key, sizeof encoded_key);
        at += sizeof encoded_key;
        memcpy(signed_text + at, "\"}", 2);
        size_t base64_len = pasarela_base64_encode(signed_text, signed_len, base64);
        pasarela_sha512((const uint8_t *)base64, base64_len, digest);
        pasarela_hex_encode(digest, sizeof digest, hex);
        ok = at + 2 == signed_len && memcmp(hex, signature, sizeof hex) == 0;
    }
    free(base64);
    free(signed_text);
    return ok;
}

#endif
