/*
 * The receiving side of the envelope: decrypt the data of a request (or a response) and verify its
 * signature exactly as the JavaScript server does, JSON.stringify(JSON.parse(plaintext)) with the
 * key added, Base64, SHA-512, compared in constant time.
 */
#include <string.h>

#include "internal.h"
#include "utf8.h"

/* "<32 hex iv>:<hex ciphertext>" -> ciphertext decrypted into out (in place), padding included; *n its length. */
static int decrypt_blocks(unsigned cpu, const pasarela_aes256_schedule *ks, const char *data, size_t data_len,
                          uint8_t *out, size_t out_cap, size_t *n) {
    uint8_t iv[PASARELA_IV_LEN];
    const size_t iv_hex = 2 * PASARELA_IV_LEN;
    if (data_len < iv_hex + 1 || data[iv_hex] != ':') return PASARELA_E_BAD_HEX;
    size_t ct_hex = data_len - iv_hex - 1;
    if (ct_hex % 2) return PASARELA_E_BAD_HEX;
    *n = ct_hex / 2;
    if (*n == 0 || *n % 16) return PASARELA_E_BAD_LENGTH;
    if (out_cap < *n) return PASARELA_E_BUFFER_TOO_SMALL;
    if (pasarela_hex_decode_cpu(cpu, data, iv_hex, iv) != PASARELA_OK) return PASARELA_E_BAD_HEX;
    if (pasarela_hex_decode_cpu(cpu, data + iv_hex + 1, ct_hex, out) != PASARELA_OK) return PASARELA_E_BAD_HEX;
    pasarela_aes256_cbc_decrypt_blocks(cpu, ks, iv, out, *n / 16, out);
    return PASARELA_OK;
}

/* All ones when a < b, else 0, without a branch (a, b < 2^31). */
static uint32_t ct_less_mask(uint32_t a, uint32_t b) { return (uint32_t)0 - ((a - b) >> 31); }

/* The PKCS#7 padding length of the decrypted blocks (n a non-zero multiple of 16), or 0 with *bad all
 * ones when the padding is invalid: every one of the last 16 bytes is read and no branch depends on them. */
static size_t padding_length(const uint8_t *buf, size_t n, uint32_t *bad) {
    uint32_t pad = buf[n - 1];
    uint32_t invalid = ct_less_mask(pad, 1) | ct_less_mask(16, pad);
    for (uint32_t i = 0; i < 16; i++) {
        uint32_t diff = (uint32_t)buf[n - 1 - i] ^ pad;
        invalid |= ct_less_mask(i, pad) & ct_less_mask(0, diff); /* inside the padding and not equal to it */
    }
    *bad = invalid;
    return (size_t)(pad & ~invalid);
}

static int decrypt_data(unsigned cpu, const pasarela_aes256_schedule *ks, const char *data, size_t data_len,
                        uint8_t *out, size_t out_cap, size_t *out_len) {
    size_t n = 0;
    uint32_t bad;
    int rc = decrypt_blocks(cpu, ks, data, data_len, out, out_cap, &n);
    if (rc != PASARELA_OK) return rc;
    size_t pad = padding_length(out, n, &bad);
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

static int signature_matches(unsigned cpu, pasarela_sealing_keys *keys, const uint8_t *canonical, size_t n,
                             void *scratch, const char *signature_hex) {
    char expected[PASARELA_SIGNATURE_HEX_LEN];
    pasarela_sign(cpu, canonical, n, keys, scratch, expected);
    int equal = pasarela_ct_equal(expected, signature_hex, sizeof expected);
    pasarela_wipe(expected, sizeof expected); /* the signature of a text the caller may not have sent */
    return equal ? PASARELA_OK : PASARELA_E_SIGNATURE;
}

int pasarela_verify(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp,
                    const uint8_t *canonical, size_t n, const char *signature_hex) {
    pasarela_sealing_keys local;
    pasarela_sealing_keys *keys;
    int rc;
    if (c == NULL || ws == NULL || ws->scratch == NULL || canonical == NULL || signature_hex == NULL)
        return PASARELA_E_INVALID_ARGUMENT;
    if (n > PASARELA_MAX_JSON_LEN) return PASARELA_E_TOO_LARGE;
    if (n < 2 || canonical[0] != '{' || canonical[n - 1] != '}') return PASARELA_E_JSON_NOT_OBJECT;
    if (ws->scratch_cap < PASARELA_SEAL_SCRATCH_SIZE(n)) return PASARELA_E_BUFFER_TOO_SMALL;
    rc = pasarela_sealing_keys_for(c, ws, timestamp, &local, &keys);
    if (rc == PASARELA_OK) rc = signature_matches(c->cpu, keys, canonical, n, ws->scratch, signature_hex);
    if (keys == &local) pasarela_wipe(&local, sizeof local);
    return rc;
}

/* The JavaScript server's steps after decryption, on the n decrypted bytes at ws->out (padding included):
 * the same work whatever the padding (its length computed without branches; invalid padding counts as
 * none), so that the time of a refusal does not tell an attacker whether the padding was valid (a CBC
 * padding oracle): the text is canonicalized (and, refused, checked for UTF-8), the canonical text (or, when
 * the text is refused, all n bytes) signed, the signature compared in constant time, and only then is the
 * status chosen. */
static int open_decrypted(unsigned cpu, pasarela_sealing_keys *keys, pasarela_workspace *ws, size_t n,
                          const char *signature_hex) {
    const uint8_t *text = (const uint8_t *)ws->out;
    uint32_t bad_padding;
    size_t text_len = n - padding_length(text, n, &bad_padding);
    unsigned facts = 0;
    /* A text the canonicalizer accepts is UTF-8 (it checks every byte of its strings; anything else it reads is
     * ASCII): the UTF-8 pass, whose refusal comes first, runs only on a text it refused. */
    int json_rc = pasarela_json_canonicalize_cpu(cpu, text, text_len, 0, ws->plaintext, ws->plaintext_cap,
                                                 &ws->plaintext_len, ws->scratch, ws->scratch_cap, &ws->error_offset,
                                                 &facts);
    if (json_rc != PASARELA_OK) {
        size_t invalid_at = pasarela_utf8_invalid_at(text, text_len);
        if (invalid_at < text_len) {
            json_rc = PASARELA_E_JSON_NOT_UTF8;
            ws->error_offset = invalid_at;
        }
    }
    if (json_rc == PASARELA_E_JSON_UNSAFE_INTEGER) json_rc = PASARELA_E_JSON_UNSUPPORTED; /* JSON.parse rounds it */
    if (json_rc == PASARELA_OK && (ws->plaintext_len < 2 || ws->plaintext[0] != '{')) json_rc = PASARELA_E_JSON_NOT_OBJECT;
    if (json_rc == PASARELA_OK && (facts & PASARELA_JSON_FACT_KEY)) json_rc = PASARELA_E_KEY_MEMBER;
    if (json_rc == PASARELA_OK && (facts & PASARELA_JSON_FACT_PROTO)) json_rc = PASARELA_E_PROTO_MEMBER;
    int signature_rc = json_rc == PASARELA_OK
        ? signature_matches(cpu, keys, ws->plaintext, ws->plaintext_len, ws->scratch, signature_hex)
        : signature_matches(cpu, keys, text, n, ws->scratch, signature_hex);
    int rc;
    if (json_rc == PASARELA_E_JSON_UNSUPPORTED) { /* the caller's slower path does the rest, padding or not */
        rc = json_rc;
        ws->json_facts = PASARELA_OPEN_BAD_PADDING & bad_padding;
    } else { /* the padding's verdict taken by a mask, not a branch: the same instructions either way */
        uint32_t refusal = (uint32_t)(json_rc != PASARELA_OK ? json_rc : signature_rc);
        rc = (int)(((uint32_t)PASARELA_E_BAD_PADDING & bad_padding) | (refusal & ~bad_padding));
    }
    if (rc == PASARELA_OK) ws->json_facts = facts;
    if (rc == PASARELA_OK || rc == PASARELA_E_JSON_UNSUPPORTED) {
        ws->out_len = text_len;
    } else { /* every refusal: nothing of the decrypted text stays */
        pasarela_wipe(ws->out, n);
        ws->plaintext_len = 0;
    }
    return rc;
}

/* The SHA-512 blocks pasarela_sign hashes for a text of len bytes: the Base64 of the signed text, then SHA-512's
 * padding (a byte 0x80 and the 16-byte length). */
static size_t signing_blocks(size_t len) { return (4 * ((PASARELA_SIGNED_LEN(len) + 2) / 3) + 17 + 127) / 128; }

/* k blocks of SHA-512 over zeros, the result dropped: the work of blocks a shorter text did not need. */
static void hash_zero_blocks(unsigned cpu, size_t k) {
    static const uint8_t zeros[128];
    uint64_t state[8] = {0};
    for (size_t i = 0; i < k; i++) pasarela_sha512_blocks(cpu, state, zeros, 1);
    pasarela_wipe(state, sizeof state);
}

/* pasarela_open_request_as_sent's first step, on the n decrypted bytes at ws->out: whether signature_hex signs the
 * text as it was sent, its padding removed by open_decrypted's rule (found without branches, invalid padding
 * counting as none; a text too short to be "{}" is signed whole, as open_decrypted signs a refused one). The same
 * work whatever the bytes: a valid padding shortens the text signed, and the SHA-512 blocks that saves are hashed
 * anyway (a block more or less would time the padding's validity: a CBC padding oracle); only the verdict, which
 * needs the key, decides what follows. */
static int signed_as_sent(unsigned cpu, pasarela_sealing_keys *keys, pasarela_workspace *ws, size_t n,
                          const char *signature_hex) {
    const uint8_t *text = (const uint8_t *)ws->out;
    uint32_t bad_padding;
    size_t text_len = n - padding_length(text, n, &bad_padding);
    size_t too_short = (size_t)0 - (size_t)(text_len < 2); /* all ones when it is */
    size_t signed_len = (text_len & ~too_short) | (n & too_short);
    int matches = signature_matches(cpu, keys, text, signed_len, ws->scratch, signature_hex) == PASARELA_OK;
    hash_zero_blocks(cpu, signing_blocks(n) - signing_blocks(signed_len));
    if (!matches || bad_padding || too_short) return 0;
    ws->out_len = text_len;
    return 1;
}

/* pasarela_open, or with as_sent pasarela_open_request_as_sent's verdict on data. */
static int open_data(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp, const char *data,
                     size_t data_len, const char *signature_hex, int as_sent) {
    pasarela_sealing_keys local;
    pasarela_sealing_keys *keys;
    size_t n = 0;
    int rc;
    if (c == NULL || ws == NULL || ws->scratch == NULL || data == NULL || signature_hex == NULL)
        return PASARELA_E_INVALID_ARGUMENT;
    ws->out_len = 0;
    ws->plaintext_len = 0;
    ws->error_offset = 0;
    ws->json_facts = 0;
    /* buffers for all the decrypted bytes, whatever the padding turns out to be */
    size_t ct = data_len > 2 * PASARELA_IV_LEN + 1 ? (data_len - 2 * PASARELA_IV_LEN - 1) / 2 : 0;
    if (ct > PASARELA_MAX_JSON_LEN) return PASARELA_E_TOO_LARGE;
    rc = pasarela_sealing_keys_for(c, ws, timestamp, &local, &keys); /* first: a CPU without AES says so */
    if (rc == PASARELA_OK &&
        (ws->plaintext_cap < PASARELA_JSON_OUT_MAX(ct) || ws->scratch_cap < PASARELA_WORKSPACE_SCRATCH_SIZE(ct)))
        rc = PASARELA_E_BUFFER_TOO_SMALL;
    if (rc == PASARELA_OK) rc = decrypt_blocks(c->cpu, &keys->schedule, data, data_len, (uint8_t *)ws->out, ws->out_cap, &n);
    if (rc == PASARELA_OK && as_sent && signed_as_sent(c->cpu, keys, ws, n, signature_hex))
        rc = PASARELA_SIGNED_AS_SENT;
    else if (rc == PASARELA_OK)
        rc = open_decrypted(c->cpu, keys, ws, n, signature_hex);
    if (keys == &local) pasarela_wipe(&local, sizeof local);
    return rc;
}

int pasarela_open(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp, const char *data,
                  size_t data_len, const char *signature_hex) {
    return open_data(c, ws, timestamp, data, data_len, signature_hex, 0);
}

/* (a signature's hex is read 8 bytes at a time: open_request) */
typedef char pasarela_signature_in_words[PASARELA_SIGNATURE_HEX_LEN % 8 == 0 ? 1 : -1];

/* The 10-digit timestamp of timestamp_text when it is within tolerance seconds of now, else 0. */
static uint64_t timestamp_in_window(const char *text, size_t len, double now, double tolerance) {
    uint64_t t = 0;
    if (text == NULL || len != 10) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)text[i] - '0';
        if (d > 9) return 0;
        t = t * 10 + d;
    }
    double skew = (double)t - now; /* exact: t < 2^53, as Python's int - float */
    return skew <= tolerance && -skew <= tolerance ? t : 0; /* a NaN now or tolerance: 0 */
}

/* pasarela_open_request, or with as_sent pasarela_open_request_as_sent. */
static int open_request(const pasarela_credentials *c, pasarela_workspace *ws, const char *timestamp_text,
                        size_t timestamp_len, double now, double tolerance, const char *authorization,
                        size_t authorization_len, const char *body, size_t body_len, int as_sent) {
    static const char basic[] = "Basic ", body_open[] = "{\"data\":\"", body_close[] = "\"}";
    const size_t basic_len = sizeof basic - 1, open_len = sizeof body_open - 1, close_len = sizeof body_close - 1;
    if (ws == NULL) return PASARELA_E_INVALID_ARGUMENT;
    ws->out_len = ws->plaintext_len = ws->error_offset = 0;
    ws->json_facts = 0;
    uint64_t timestamp = timestamp_in_window(timestamp_text, timestamp_len, now, tolerance);
    if (timestamp == 0 || authorization == NULL || authorization_len != basic_len + PASARELA_SIGNATURE_HEX_LEN ||
        memcmp(authorization, basic, basic_len) != 0 || body == NULL || body_len < open_len + close_len ||
        memcmp(body, body_open, open_len) != 0 || memcmp(body + body_len - close_len, body_close, close_len) != 0)
        return PASARELA_E_REQUEST_FORM;
    /* the signature's bytes ASCII: 8 at a time (every request's 128 are tested) */
    uint64_t high = 0, word;
    for (size_t i = 0; i < PASARELA_SIGNATURE_HEX_LEN; i += 8) {
        memcpy(&word, authorization + basic_len + i, 8);
        high |= word;
    }
    if (high & UINT64_C(0x8080808080808080)) return PASARELA_E_REQUEST_FORM;
    return open_data(c, ws, timestamp, body + open_len, body_len - open_len - close_len, authorization + basic_len,
                     as_sent);
}

int pasarela_open_request(const pasarela_credentials *c, pasarela_workspace *ws, const char *timestamp_text,
                          size_t timestamp_len, double now, double tolerance, const char *authorization,
                          size_t authorization_len, const char *body, size_t body_len) {
    return open_request(c, ws, timestamp_text, timestamp_len, now, tolerance, authorization, authorization_len, body,
                        body_len, 0);
}

int pasarela_open_request_as_sent(const pasarela_credentials *c, pasarela_workspace *ws, const char *timestamp_text,
                                  size_t timestamp_len, double now, double tolerance, const char *authorization,
                                  size_t authorization_len, const char *body, size_t body_len) {
    return open_request(c, ws, timestamp_text, timestamp_len, now, tolerance, authorization, authorization_len, body,
                        body_len, 1);
}
