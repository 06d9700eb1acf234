/*
 * The terminal request envelope (spec section 5.1): derivations from the credentials and the
 * timestamp, the signature over Base64 of the plaintext with the key spliced in, and the
 * AES-256-CBC encryption of the same plaintext bytes.
 */
#include <string.h>

#include "internal.h"

#define TIMESTAMP_DIGITS 10
#define MIN_TIMESTAMP UINT64_C(1000000000)
#define MAX_TIMESTAMP UINT64_C(9999999999)


static void put_decimal(uint64_t v, char *out, size_t digits) {
    for (size_t i = digits; i-- > 0;) {
        out[i] = (char)('0' + (v % 10));
        v /= 10;
    }
}

int pasarela_formatted_date(uint64_t timestamp, char out[PASARELA_FORMATTED_DATE_LEN]) {
    if (out == NULL) return PASARELA_E_INVALID_ARGUMENT;
    if (timestamp < MIN_TIMESTAMP || timestamp > MAX_TIMESTAMP) return PASARELA_E_TIMESTAMP;
    /* Civil date from days since 1970-01-01 (H. Hinnant's algorithm): no time-zone or libc calls. */
    uint64_t days = timestamp / 86400, secs = timestamp % 86400;
    uint64_t z = days + 719468;
    uint64_t era = z / 146097;
    uint64_t doe = z - era * 146097;
    uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    uint64_t mp = (5 * doy + 2) / 153;
    uint64_t day = doy - (153 * mp + 2) / 5 + 1;
    uint64_t month = mp < 10 ? mp + 3 : mp - 9;
    uint64_t year = yoe + era * 400 + (month <= 2);
    put_decimal(year, out, 4);
    out[4] = ':';
    put_decimal(month, out + 5, 2);
    out[7] = ':';
    put_decimal(day, out + 8, 2);
    out[10] = ':';
    put_decimal(secs / 3600, out + 11, 2);
    out[13] = ':';
    put_decimal((secs / 60) % 60, out + 14, 2);
    return PASARELA_OK;
}

/* Length in UTF-16 code units of UTF-8 text: one per lead byte, two for a 4-byte sequence. */
static size_t utf16_length(const uint8_t *utf8, size_t n) {
    size_t units = 0;
    for (size_t i = 0; i < n; i++) units += (size_t)((utf8[i] & 0xC0) != 0x80) + (size_t)(utf8[i] >= 0xF0);
    return units;
}

static int derive(const uint8_t *business_code, size_t business_code_len, const uint8_t *terminal_serial,
                  size_t terminal_serial_len, uint64_t timestamp, pasarela_derived *d) {
    static const uint8_t zeros[32] = {
        '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0',
        '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0'};
    char date[PASARELA_FORMATTED_DATE_LEN];
    char ts[TIMESTAMP_DIGITS];
    uint8_t digest[16];
    uint8_t password_and_ts[PASARELA_PASSWORD_HEX_LEN + TIMESTAMP_DIGITS];
    pasarela_md5_ctx md5;
    int rc;
    if ((business_code == NULL && business_code_len > 0) || (terminal_serial == NULL && terminal_serial_len > 0))
        return PASARELA_E_INVALID_ARGUMENT;
    if ((rc = pasarela_formatted_date(timestamp, date)) != PASARELA_OK) return rc;
    put_decimal(timestamp, ts, TIMESTAMP_DIGITS);

    /* password = MD5 hex of (businessCode + terminalSerial + formattedDate), right-padded with '0' to at
     * least 32 characters, counted as JavaScript's padEnd counts them: in UTF-16 code units */
    size_t key_len = utf16_length(business_code, business_code_len) +
                     utf16_length(terminal_serial, terminal_serial_len) + sizeof date;
    pasarela_md5_init(&md5);
    pasarela_md5_update(&md5, business_code, business_code_len);
    pasarela_md5_update(&md5, terminal_serial, terminal_serial_len);
    pasarela_md5_update(&md5, (const uint8_t *)date, sizeof date);
    if (key_len < sizeof zeros) pasarela_md5_update(&md5, zeros, sizeof zeros - key_len);
    pasarela_md5_final(&md5, digest);
    pasarela_hex_encode(digest, sizeof digest, d->password);

    /* encodedKeyTimestamp = Base64(password + timestamp) */
    memcpy(password_and_ts, d->password, PASARELA_PASSWORD_HEX_LEN);
    memcpy(password_and_ts + PASARELA_PASSWORD_HEX_LEN, ts, TIMESTAMP_DIGITS);
    pasarela_base64_encode(password_and_ts, sizeof password_and_ts, d->encoded_key);

    /* aesKey = first 32 characters of (timestamp + "___" + password) */
    memcpy(d->aes_key, ts, TIMESTAMP_DIGITS);
    memcpy(d->aes_key + TIMESTAMP_DIGITS, "___", 3);
    memcpy(d->aes_key + TIMESTAMP_DIGITS + 3, d->password, PASARELA_AES_KEY_LEN - TIMESTAMP_DIGITS - 3);

    pasarela_wipe(digest, sizeof digest);
    pasarela_wipe(password_and_ts, sizeof password_and_ts);
    return PASARELA_OK;
}

int pasarela_derive_secrets(const pasarela_credentials *c, uint64_t timestamp, pasarela_derived *d) {
    return derive(c->business_code, c->business_code_len, c->terminal_serial, c->terminal_serial_len, timestamp, d);
}

int pasarela_derive(const uint8_t *business_code, size_t business_code_len, const uint8_t *terminal_serial,
                    size_t terminal_serial_len, uint64_t timestamp, char password_hex[PASARELA_PASSWORD_HEX_LEN],
                    char encoded_key[PASARELA_ENCODED_KEY_LEN], uint8_t aes_key[PASARELA_AES_KEY_LEN]) {
    pasarela_derived d;
    int rc = derive(business_code, business_code_len, terminal_serial, terminal_serial_len, timestamp, &d);
    if (rc == PASARELA_OK) {
        if (password_hex) memcpy(password_hex, d.password, sizeof d.password);
        if (encoded_key) memcpy(encoded_key, d.encoded_key, sizeof d.encoded_key);
        if (aes_key) memcpy(aes_key, d.aes_key, sizeof d.aes_key);
    }
    pasarela_wipe(&d, sizeof d);
    return rc;
}

/* SHA-512 over the Base64 text of a byte stream fed in pieces, without materializing the text. */
typedef struct base64_sha512 {
    pasarela_sha512_ctx sha;
    uint8_t carry[3];
    size_t carry_len;
    char text[1024];
} base64_sha512;

typedef size_t (*base64_encoder)(const uint8_t *in, size_t n, char *out);

/* encode: pasarela_base64_encode for secret-derived bytes, pasarela_base64_encode_public otherwise
 * (a group that straddles two pieces always takes the constant-time encoder). */
static void b64sha_update(base64_sha512 *h, const uint8_t *in, size_t n, base64_encoder encode) {
    while (h->carry_len > 0 && h->carry_len < 3 && n > 0) {
        h->carry[h->carry_len++] = *in++;
        n--;
    }
    if (h->carry_len == 3) {
        pasarela_base64_encode(h->carry, 3, h->text);
        pasarela_sha512_update(&h->sha, (const uint8_t *)h->text, 4);
        h->carry_len = 0;
    }
    while (n >= 3) {
        size_t chunk = n - n % 3;
        if (chunk > sizeof h->text / 4 * 3) chunk = sizeof h->text / 4 * 3;
        size_t written = encode(in, chunk, h->text);
        pasarela_sha512_update(&h->sha, (const uint8_t *)h->text, written);
        in += chunk;
        n -= chunk;
    }
    memcpy(h->carry + h->carry_len, in, n);
    h->carry_len += n;
}

static void b64sha_final(base64_sha512 *h, uint8_t digest[64]) {
    if (h->carry_len > 0) {
        size_t written = pasarela_base64_encode(h->carry, h->carry_len, h->text);
        pasarela_sha512_update(&h->sha, (const uint8_t *)h->text, written);
    }
    pasarela_sha512_final(&h->sha, digest);
    pasarela_wipe(h, sizeof *h);
}

/* signature = hex(SHA-512(Base64(plaintext with ,"key":"<encodedKey>" spliced before its final brace))) */
void pasarela_sign(unsigned cpu, const uint8_t *plaintext, size_t n, const pasarela_derived *d,
                   char signature_hex[PASARELA_SIGNATURE_HEX_LEN]) {
    static const uint8_t key_open[] = ",\"key\":\"";
    static const uint8_t key_close[] = "\"}";
    base64_sha512 h;
    uint8_t digest[64];
    int empty = n == 2; /* "{}": no comma before the key */
    pasarela_sha512_init(&h.sha, cpu);
    h.carry_len = 0;
    b64sha_update(&h, plaintext, n - 1, pasarela_base64_encode_public);
    b64sha_update(&h, key_open + empty, sizeof key_open - 1 - (size_t)empty, pasarela_base64_encode_public);
    b64sha_update(&h, (const uint8_t *)d->encoded_key, sizeof d->encoded_key, pasarela_base64_encode);
    b64sha_update(&h, key_close, sizeof key_close - 1, pasarela_base64_encode_public);
    b64sha_final(&h, digest);
    pasarela_hex_encode(digest, sizeof digest, signature_hex);
}

/* Everything a seal needs from (credentials, timestamp): derived once, reused by a batch. */
typedef struct sealing_keys {
    pasarela_derived derived;
    pasarela_aes256_schedule schedule;
} sealing_keys;

static int prepare_keys(const pasarela_credentials *c, uint64_t timestamp, sealing_keys *k) {
    int rc = pasarela_derive_secrets(c, timestamp, &k->derived);
    if (rc == PASARELA_OK) rc = pasarela_aes256_expand(c->cpu, k->derived.aes_key, &k->schedule);
    return rc;
}

/* data = hex(iv) ":" hex(AES-256-CBC-PKCS7(aesKey, iv, plaintext)) */
static void encrypt_to_hex(unsigned cpu, const pasarela_aes256_schedule *ks, const uint8_t *plaintext, size_t n,
                           const uint8_t iv[PASARELA_IV_LEN], char *data) {
    uint8_t chain[PASARELA_IV_LEN];
    uint8_t block[256];
    pasarela_hex_encode(iv, PASARELA_IV_LEN, data);
    data[2 * PASARELA_IV_LEN] = ':';
    data += 2 * PASARELA_IV_LEN + 1;
    memcpy(chain, iv, sizeof chain);
    size_t whole = n - n % 16;
    for (size_t done = 0; done < whole;) {
        size_t chunk = whole - done < sizeof block ? whole - done : sizeof block;
        pasarela_aes256_cbc_encrypt_blocks(cpu, ks, chain, plaintext + done, chunk / 16, block);
        pasarela_hex_encode(block, chunk, data);
        data += 2 * chunk;
        done += chunk;
    }
    /* the last block carries the PKCS#7 padding: 1..16 bytes of value pad */
    uint8_t pad = (uint8_t)(16 - n % 16);
    memcpy(block, plaintext + whole, n % 16);
    memset(block + n % 16, pad, pad);
    pasarela_aes256_cbc_encrypt_blocks(cpu, ks, chain, block, 1, block);
    pasarela_hex_encode(block, 16, data);
    pasarela_wipe(block, sizeof block);
}

/* Writes the signature and the POST body {"data":"<iv_hex>:<ct_hex>"}: PASARELA_SEALED_LEN(n) chars. */
static void seal_with(unsigned cpu, const sealing_keys *k, const uint8_t *plaintext, size_t n,
                      const uint8_t iv[PASARELA_IV_LEN], char *out) {
    static const char body_open[] = "{\"data\":\"";
    char *body = out + PASARELA_SIGNATURE_HEX_LEN;
    size_t end = PASARELA_BODY_DATA_OFFSET + PASARELA_DATA_LEN(n);
    memcpy(body, body_open, PASARELA_BODY_DATA_OFFSET);
    encrypt_to_hex(cpu, &k->schedule, plaintext, n, iv, body + PASARELA_BODY_DATA_OFFSET);
    body[end] = '"';
    body[end + 1] = '}';
    pasarela_sign(cpu, plaintext, n, &k->derived, out);
}

static int is_object_text(const uint8_t *p, size_t n) { return n >= 2 && p[0] == '{' && p[n - 1] == '}'; }

int pasarela_seal(const pasarela_credentials *c, uint64_t timestamp, const uint8_t *plaintext, size_t plaintext_len,
                  const uint8_t iv[PASARELA_IV_LEN], char *out, size_t out_cap, size_t *out_len) {
    sealing_keys keys;
    int rc;
    if (c == NULL || plaintext == NULL || iv == NULL || out == NULL || out_len == NULL)
        return PASARELA_E_INVALID_ARGUMENT;
    if (!is_object_text(plaintext, plaintext_len)) return PASARELA_E_JSON_NOT_OBJECT;
    if (out_cap < PASARELA_SEALED_LEN(plaintext_len)) return PASARELA_E_BUFFER_TOO_SMALL;
    rc = prepare_keys(c, timestamp, &keys);
    if (rc == PASARELA_OK) {
        seal_with(c->cpu, &keys, plaintext, plaintext_len, iv, out);
        *out_len = PASARELA_SEALED_LEN(plaintext_len);
    }
    pasarela_wipe(&keys, sizeof keys);
    return rc;
}

/* Canonical JSON object text of json into plaintext (capacity PASARELA_JSON_OUT_MAX(json_len)). */
static int canonical_object(const uint8_t *json, size_t json_len, unsigned json_flags, uint8_t *plaintext,
                            size_t plaintext_cap, size_t *plaintext_len, void *scratch, size_t scratch_cap,
                            size_t *error_offset) {
    int top_level_key = 0;
    int rc = pasarela_json_canonicalize(json, json_len, json_flags, plaintext, plaintext_cap, plaintext_len, scratch,
                                        scratch_cap, error_offset, &top_level_key);
    if (rc != PASARELA_OK) return rc;
    if (!is_object_text(plaintext, *plaintext_len)) return PASARELA_E_JSON_NOT_OBJECT;
    return top_level_key ? PASARELA_E_KEY_MEMBER : PASARELA_OK;
}

int pasarela_seal_json(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp, const uint8_t *json,
                       size_t json_len, unsigned json_flags, const uint8_t iv[PASARELA_IV_LEN]) {
    if (ws == NULL) return PASARELA_E_INVALID_ARGUMENT;
    int rc = canonical_object(json, json_len, json_flags, ws->plaintext, ws->plaintext_cap, &ws->plaintext_len,
                              ws->scratch, ws->scratch_cap, &ws->error_offset);
    if (rc != PASARELA_OK) return rc;
    return pasarela_seal(c, timestamp, ws->plaintext, ws->plaintext_len, iv, ws->out, ws->out_cap, &ws->out_len);
}

size_t pasarela_seal_json_batch(const pasarela_credentials *const *credentials, const uint64_t *timestamps,
                                const uint8_t *json, const size_t *json_lens, size_t n, unsigned json_flags,
                                const uint8_t *ivs, pasarela_workspace *ws, int *statuses, size_t *plaintext_lens,
                                size_t *out_lens) {
    sealing_keys keys;
    const pasarela_credentials *keys_for = NULL; /* keys hold the secrets of (keys_for, keys_timestamp) */
    uint64_t keys_timestamp = 0;
    size_t plaintext_used = 0, out_used = 0, done = 0;
    if (credentials == NULL || timestamps == NULL || json_lens == NULL || ivs == NULL || ws == NULL ||
        statuses == NULL || plaintext_lens == NULL || out_lens == NULL || (json == NULL && n > 0))
        return 0;
    for (; done < n; done++) {
        size_t len = json_lens[done];
        size_t plaintext_max = PASARELA_JSON_OUT_MAX(len);
        /* stop where the next item might not fit: the caller calls again for the rest */
        if (ws->plaintext_cap - plaintext_used < plaintext_max ||
            ws->out_cap - out_used < PASARELA_SEALED_LEN(plaintext_max) || ws->scratch_cap < PASARELA_JSON_SCRATCH_SIZE(len))
            break;
        const pasarela_credentials *c = credentials[done];
        uint8_t *plaintext = ws->plaintext + plaintext_used;
        size_t plaintext_len = 0;
        int rc = c == NULL ? PASARELA_E_INVALID_ARGUMENT
                           : canonical_object(json, len, json_flags, plaintext, plaintext_max, &plaintext_len,
                                              ws->scratch, ws->scratch_cap, &ws->error_offset);
        if (rc == PASARELA_OK && (c != keys_for || timestamps[done] != keys_timestamp)) {
            keys_for = NULL;
            rc = prepare_keys(c, timestamps[done], &keys);
            if (rc == PASARELA_OK) {
                keys_for = c;
                keys_timestamp = timestamps[done];
            }
        }
        if (rc == PASARELA_OK) {
            seal_with(c->cpu, &keys, plaintext, plaintext_len, ivs + PASARELA_IV_LEN * done, ws->out + out_used);
            plaintext_lens[done] = plaintext_len;
            out_lens[done] = PASARELA_SEALED_LEN(plaintext_len);
            plaintext_used += plaintext_len;
            out_used += out_lens[done];
        } else {
            plaintext_lens[done] = out_lens[done] = 0;
        }
        statuses[done] = rc;
        json += len;
    }
    pasarela_wipe(&keys, sizeof keys);
    return done;
}

size_t pasarela_sealed_len(size_t plaintext_len) { return PASARELA_SEALED_LEN(plaintext_len); }
size_t pasarela_json_out_max(size_t json_len) { return PASARELA_JSON_OUT_MAX(json_len); }
size_t pasarela_json_scratch_size(size_t json_len) { return PASARELA_JSON_SCRATCH_SIZE(json_len); }
