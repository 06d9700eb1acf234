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

/* password = MD5 hex of (businessCode + terminalSerial + formattedDate), right-padded with '0' to at
 * least 32 characters, counted as JavaScript's padEnd counts them: in UTF-16 code units. Depends on the
 * UTC minute of the timestamp only. */
static int derive_password(const uint8_t *business_code, size_t business_code_len, const uint8_t *terminal_serial,
                           size_t terminal_serial_len, uint64_t timestamp, char password[PASARELA_PASSWORD_HEX_LEN]) {
    static const uint8_t zeros[32] = {
        '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0',
        '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0'};
    char date[PASARELA_FORMATTED_DATE_LEN];
    uint8_t digest[16];
    pasarela_md5_ctx md5;
    int rc;
    if ((business_code == NULL && business_code_len > 0) || (terminal_serial == NULL && terminal_serial_len > 0))
        return PASARELA_E_INVALID_ARGUMENT;
    if ((rc = pasarela_formatted_date(timestamp, date)) != PASARELA_OK) return rc;
    size_t key_len = utf16_length(business_code, business_code_len) +
                     utf16_length(terminal_serial, terminal_serial_len) + sizeof date;
    pasarela_md5_init(&md5);
    pasarela_md5_update(&md5, business_code, business_code_len);
    pasarela_md5_update(&md5, terminal_serial, terminal_serial_len);
    pasarela_md5_update(&md5, (const uint8_t *)date, sizeof date);
    if (key_len < sizeof zeros) pasarela_md5_update(&md5, zeros, sizeof zeros - key_len);
    pasarela_md5_final(&md5, digest);
    pasarela_hex_encode(digest, sizeof digest, password);
    pasarela_wipe(digest, sizeof digest);
    return PASARELA_OK;
}

/* The values that depend on the second: d->password is set, timestamp valid. */
static void derive_from_password(uint64_t timestamp, pasarela_derived *d) {
    char ts[TIMESTAMP_DIGITS];
    uint8_t password_and_ts[PASARELA_PASSWORD_HEX_LEN + TIMESTAMP_DIGITS];
    put_decimal(timestamp, ts, TIMESTAMP_DIGITS);
    /* encodedKeyTimestamp = Base64(password + timestamp) */
    memcpy(password_and_ts, d->password, PASARELA_PASSWORD_HEX_LEN);
    memcpy(password_and_ts + PASARELA_PASSWORD_HEX_LEN, ts, TIMESTAMP_DIGITS);
    pasarela_base64_encode(password_and_ts, sizeof password_and_ts, d->encoded_key);
    /* aesKey = first 32 characters of (timestamp + "___" + password) */
    memcpy(d->aes_key, ts, TIMESTAMP_DIGITS);
    memcpy(d->aes_key + TIMESTAMP_DIGITS, "___", 3);
    memcpy(d->aes_key + TIMESTAMP_DIGITS + 3, d->password, PASARELA_AES_KEY_LEN - TIMESTAMP_DIGITS - 3);
    pasarela_wipe(password_and_ts, sizeof password_and_ts);
}

static int derive(const uint8_t *business_code, size_t business_code_len, const uint8_t *terminal_serial,
                  size_t terminal_serial_len, uint64_t timestamp, pasarela_derived *d) {
    int rc = derive_password(business_code, business_code_len, terminal_serial, terminal_serial_len, timestamp,
                             d->password);
    if (rc == PASARELA_OK) derive_from_password(timestamp, d);
    return rc;
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

/* ---- the keys of (credentials, timestamp), cached in the workspace ---- */

/* What ws->keys holds: the keys of the credentials with this id and cpu at this timestamp (id 0: none). */
typedef struct key_cache {
    uint64_t id;
    uint64_t timestamp;
    unsigned cpu;
    pasarela_sealing_keys keys;
} key_cache;

size_t pasarela_key_cache_size(void) { return sizeof(key_cache); }

void pasarela_workspace_wipe(pasarela_workspace *ws) {
    if (ws == NULL) return;
    if (ws->keys != NULL) pasarela_wipe(ws->keys, ws->keys_cap);
    if (ws->scratch != NULL) pasarela_wipe(ws->scratch, ws->scratch_cap);
}

static int expand_keys(const pasarela_credentials *c, uint64_t timestamp, int have_password,
                       pasarela_sealing_keys *k) {
    int rc = PASARELA_OK;
    k->key_tails_ready = 0;
    if (have_password)
        derive_from_password(timestamp, &k->derived);
    else
        rc = pasarela_derive_secrets(c, timestamp, &k->derived);
    if (rc == PASARELA_OK) rc = pasarela_aes256_expand(c->cpu, k->derived.aes_key, &k->schedule);
    if (rc != PASARELA_OK) pasarela_wipe(k, sizeof *k);
    return rc;
}

int pasarela_sealing_keys_for(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp,
                              pasarela_sealing_keys *local, pasarela_sealing_keys **keys) {
    key_cache *cache = NULL;
    int rc;
    *keys = local;
    if (timestamp < MIN_TIMESTAMP || timestamp > MAX_TIMESTAMP) return PASARELA_E_TIMESTAMP;
    if (c->id != 0 && ws->keys != NULL && ws->keys_cap >= sizeof(key_cache)) cache = (key_cache *)ws->keys;
    if (cache == NULL) {
        rc = expand_keys(c, timestamp, 0, local);
        *keys = local;
        return rc;
    }
    int same_terminal = cache->id == c->id && cache->cpu == c->cpu;
    if (same_terminal && cache->timestamp == timestamp) {
        *keys = &cache->keys;
        return PASARELA_OK;
    }
    /* the password depends on the minute only; a valid cached timestamp vouches for this one's range */
    int same_minute = same_terminal && timestamp / 60 == cache->timestamp / 60;
    cache->id = 0;
    rc = expand_keys(c, timestamp, same_minute, &cache->keys);
    if (rc == PASARELA_OK) {
        cache->id = c->id;
        cache->timestamp = timestamp;
        cache->cpu = c->cpu;
    }
    *keys = &cache->keys;
    return rc;
}

/* ---- sealing ---- */

static const uint8_t key_open[] = ",\"key\":\"";

/* The key tail of the signed text, ,"key":"<encodedKey>"} (without the comma when empty: "{}"), into
 * tail; returns its length. */
static size_t key_tail(const pasarela_derived *d, int empty, uint8_t *tail) {
    size_t t = sizeof key_open - 1 - (size_t)empty;
    memcpy(tail, key_open + empty, t);
    memcpy(tail + t, d->encoded_key, PASARELA_ENCODED_KEY_LEN);
    t += PASARELA_ENCODED_KEY_LEN;
    tail[t++] = '"';
    tail[t++] = '}';
    return t;
}

/* keys->key_tails[a] (a = 0..2), made now if it was not yet: the Base64 of the key tail
 * ,"key":"<encodedKey>"} from its byte 3 - a on, what follows the first group it shares with a bytes of
 * the plaintext. */
static const char *key_tail_base64(unsigned cpu, pasarela_sealing_keys *keys, size_t a) {
    if (!((keys->key_tails_ready >> a) & 1u)) {
        uint8_t tail[PASARELA_KEY_TAIL_LEN];
        size_t t = key_tail(&keys->derived, 0, tail);
        pasarela_base64_encode_secret(cpu, tail + (3 - a), t - (3 - a), keys->key_tails[a]);
        pasarela_wipe(tail, sizeof tail);
        keys->key_tails_ready |= 1u << a;
    }
    return keys->key_tails[a];
}

/* Base64 of the signed text (the plaintext with ,"key":"<encodedKey>" spliced before its final brace)
 * into text; returns its length. Characters from *secret_from on derive from the key: wipe them.
 * With keys (sealing), the Base64 of the key tail past its first group is keys->key_tails[a], made on
 * first use: the key is encoded once per (credentials, timestamp, alignment), not once per request.
 * Without (verifying), it is encoded each time, so that the work never depends on earlier requests. */
static size_t signed_base64(unsigned cpu, const uint8_t *plaintext, size_t n, const pasarela_derived *d,
                            pasarela_sealing_keys *keys, char *text, size_t *secret_from) {
    uint8_t tail[2 + PASARELA_KEY_TAIL_LEN];
    size_t head = n - 1, whole = head - head % 3, a = head - whole;
    int empty = n == 2; /* "{}": no comma before the key */
    size_t written = pasarela_base64_encode_public(cpu, plaintext, whole, text);
    *secret_from = written;
    memcpy(tail, plaintext + whole, a);
    if (keys == NULL || empty) {
        written += pasarela_base64_encode_secret(cpu, tail, a + key_tail(d, empty, tail + a), text + written);
        pasarela_wipe(tail, sizeof tail);
        return written;
    }
    /* the group the head's last a bytes share with the key tail's first 3 - a (,"k: public) */
    memcpy(tail + a, key_open, 3 - a);
    written += pasarela_base64_encode_public(cpu, tail, 3, text + written);
    size_t rest = PASARELA_KEY_TAIL_LEN - (3 - a), rest_len = 4 * ((rest + 2) / 3);
    memcpy(text + written, key_tail_base64(cpu, keys, a), rest_len);
    return written + rest_len;
}

void pasarela_sign(unsigned cpu, const uint8_t *plaintext, size_t n, pasarela_sealing_keys *keys, void *scratch,
                   char signature_hex[PASARELA_SIGNATURE_HEX_LEN]) {
    char *text = (char *)scratch;
    uint8_t digest[64];
    size_t secret_from, len = signed_base64(cpu, plaintext, n, &keys->derived, keys, text, &secret_from);
    pasarela_sha512_ctx sha;
    pasarela_sha512_init(&sha, cpu);
    pasarela_sha512_update(&sha, (const uint8_t *)text, len);
    pasarela_sha512_final(&sha, digest);
    pasarela_wipe(text + secret_from, len - secret_from);
    pasarela_hex_encode_cpu(cpu, digest, sizeof digest, signature_hex);
}

/* The signature (hex of digest) and the POST body {"data":"<iv_hex>:<ct_hex>"} of the request whose
 * plaintext has n bytes: PASARELA_SEALED_LEN(n) chars at out. */
static void write_signature_and_body(unsigned cpu, const uint8_t digest[64], const uint8_t iv[PASARELA_IV_LEN],
                                     const uint8_t *ciphertext, size_t n, char *out) {
    static const char body_open[] = "{\"data\":\"";
    size_t ciphertext_len = PASARELA_CIPHERTEXT_LEN(n);
    pasarela_hex_encode_cpu(cpu, digest, 64, out);
    char *data = out + PASARELA_SIGNATURE_HEX_LEN;
    memcpy(data, body_open, PASARELA_BODY_DATA_OFFSET);
    data += PASARELA_BODY_DATA_OFFSET;
    pasarela_hex_encode_cpu(cpu, iv, PASARELA_IV_LEN, data);
    data[2 * PASARELA_IV_LEN] = ':';
    data += 2 * PASARELA_IV_LEN + 1;
    pasarela_hex_encode_cpu(cpu, ciphertext, ciphertext_len, data);
    data[2 * ciphertext_len] = '"';
    data[2 * ciphertext_len + 1] = '}';
}

/* Writes the signature and the body (PASARELA_SEALED_LEN(n) chars) to out, using
 * PASARELA_SEAL_SCRATCH_SIZE(n) bytes of scratch: the signed text's Base64 is hashed while the plaintext
 * is encrypted. */
static void seal_with(unsigned cpu, pasarela_sealing_keys *k, const uint8_t *plaintext, size_t n,
                      const uint8_t iv[PASARELA_IV_LEN], void *scratch, char *out) {
    char *text = (char *)scratch;
    size_t secret_from, text_len = signed_base64(cpu, plaintext, n, &k->derived, k, text, &secret_from);
    uint8_t *ciphertext = (uint8_t *)scratch + (text_len + 15) / 16 * 16;
    uint8_t digest[64];
    pasarela_cbc_job job = {&k->schedule, iv, plaintext, n, ciphertext};
    pasarela_sha512_with_cbc(cpu, (const uint8_t *)text, text_len, digest, &job);
    pasarela_wipe(text + secret_from, text_len - secret_from);
    write_signature_and_body(cpu, digest, iv, ciphertext, n, out);
}

static int is_object_text(const uint8_t *p, size_t n) { return n >= 2 && p[0] == '{' && p[n - 1] == '}'; }

static int iv_pool_empty(const pasarela_workspace *ws) {
    return ws->iv_pool == NULL || ws->iv_pool_used > ws->iv_pool_len || ws->iv_pool_len - ws->iv_pool_used < PASARELA_IV_LEN;
}

/* The IV to use: iv, or the next 16 bytes of the workspace's pool (NULL when it is empty). */
static const uint8_t *next_iv(pasarela_workspace *ws, const uint8_t *iv) {
    if (iv != NULL) return iv;
    if (iv_pool_empty(ws)) return NULL;
    iv = ws->iv_pool + ws->iv_pool_used;
    ws->iv_pool_used += PASARELA_IV_LEN;
    return iv;
}

/* Seals the n-byte plaintext already at the front of out: the signature and body follow it. */
static int seal_in_place(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp, char *out,
                         size_t out_cap, size_t n, const uint8_t *iv) {
    pasarela_sealing_keys local;
    pasarela_sealing_keys *keys;
    if (out_cap < PASARELA_REQUEST_LEN(n) || ws->scratch_cap < PASARELA_SEAL_SCRATCH_SIZE(n))
        return PASARELA_E_BUFFER_TOO_SMALL;
    int rc = pasarela_sealing_keys_for(c, ws, timestamp, &local, &keys);
    if (rc == PASARELA_OK) {
        if ((iv = next_iv(ws, iv)) == NULL)
            rc = PASARELA_E_IV_POOL_EMPTY;
        else
            seal_with(c->cpu, keys, (const uint8_t *)out, n, iv, ws->scratch, out + n);
    }
    if (keys == &local) pasarela_wipe(&local, sizeof local);
    return rc;
}

int pasarela_seal(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp, const uint8_t *plaintext,
                  size_t plaintext_len, const uint8_t *iv) {
    if (c == NULL || ws == NULL || plaintext == NULL || ws->out == NULL || ws->scratch == NULL)
        return PASARELA_E_INVALID_ARGUMENT;
    ws->out_len = ws->plaintext_len = 0;
    if (plaintext_len > PASARELA_MAX_JSON_LEN) return PASARELA_E_TOO_LARGE;
    if (!is_object_text(plaintext, plaintext_len)) return PASARELA_E_JSON_NOT_OBJECT;
    if (ws->out_cap < PASARELA_REQUEST_LEN(plaintext_len)) return PASARELA_E_BUFFER_TOO_SMALL;
    memmove(ws->out, plaintext, plaintext_len);
    int rc = seal_in_place(c, ws, timestamp, ws->out, ws->out_cap, plaintext_len, iv);
    if (rc == PASARELA_OK) {
        ws->plaintext_len = plaintext_len;
        ws->out_len = PASARELA_REQUEST_LEN(plaintext_len);
    }
    return rc;
}

/* Canonical JSON object text of json into out (capacity at least PASARELA_JSON_OUT_MAX(json_len)), with the
 * CPU features of the credentials c. */
static int canonical_object(const pasarela_credentials *c, const uint8_t *json, size_t json_len, unsigned json_flags,
                            uint8_t *out, size_t out_cap, size_t *out_len, pasarela_workspace *ws, unsigned *facts) {
    int rc = pasarela_json_canonicalize_cpu(c->cpu, json, json_len, json_flags, out, out_cap, out_len, ws->scratch,
                                            ws->scratch_cap, &ws->error_offset, facts);
    if (rc != PASARELA_OK) return rc;
    if (!is_object_text(out, *out_len)) return PASARELA_E_JSON_NOT_OBJECT;
    return (*facts & PASARELA_JSON_FACT_KEY) ? PASARELA_E_KEY_MEMBER : PASARELA_OK;
}

int pasarela_seal_json(const pasarela_credentials *c, pasarela_workspace *ws, uint64_t timestamp, const uint8_t *json,
                       size_t json_len, unsigned json_flags, const uint8_t *iv) {
    size_t n = 0;
    if (c == NULL || ws == NULL || ws->out == NULL || ws->scratch == NULL) return PASARELA_E_INVALID_ARGUMENT;
    ws->out_len = ws->plaintext_len = 0;
    ws->json_facts = 0;
    int rc = canonical_object(c, json, json_len, json_flags, (uint8_t *)ws->out, ws->out_cap, &n, ws, &ws->json_facts);
    if (rc == PASARELA_OK) rc = seal_in_place(c, ws, timestamp, ws->out, ws->out_cap, n, iv);
    if (rc == PASARELA_OK) {
        ws->plaintext_len = n;
        ws->out_len = PASARELA_REQUEST_LEN(n);
    }
    return rc;
}

/* A batch is sealed in groups of up to GROUP_MAX requests: their signed texts hashed side by side
 * (pasarela_sha512_many) and their plaintexts encrypted side by side (pasarela_aes256_cbc_encrypt_many).
 * The texts and ciphertexts of a group live in ws->plaintext (unused by sealing otherwise). */
#define GROUP_MAX 16

typedef struct group {
    unsigned cpu;
    size_t count, keys_count, area_used;
    const uint8_t *texts[GROUP_MAX];
    size_t text_lens[GROUP_MAX], secret_from[GROUP_MAX], plaintext_lens[GROUP_MAX];
    char *outs[GROUP_MAX];
    pasarela_cbc_job jobs[GROUP_MAX];
    uint8_t digests[GROUP_MAX][64];
    /* the distinct keys of the group's requests, in order (keys_count of them) */
    pasarela_sealing_keys keys[GROUP_MAX];
    uint64_t keys_id[GROUP_MAX], keys_timestamp[GROUP_MAX];
} group;

/* Hashes and encrypts the group's requests, writes their signatures and bodies, empties the group.
 * Requests too few (or too unequal) to hash side by side take the single seal's path instead, each
 * hashed with its CBC chain interleaved: a lone chain of aes_many would hide none of its latency. */
static void seal_group(group *g) {
    if (g->count == 0) return;
    if (pasarela_sha512_many_side_by_side(g->cpu, g->text_lens, g->count)) {
        pasarela_sha512_many(g->cpu, g->texts, g->text_lens, g->count, &g->digests[0][0]);
        pasarela_aes256_cbc_encrypt_many(g->cpu, g->jobs, g->count);
    } else {
        for (size_t i = 0; i < g->count; i++)
            pasarela_sha512_with_cbc(g->cpu, g->texts[i], g->text_lens[i], g->digests[i], &g->jobs[i]);
    }
    for (size_t i = 0; i < g->count; i++) {
        pasarela_wipe((uint8_t *)(uintptr_t)g->texts[i] + g->secret_from[i], g->text_lens[i] - g->secret_from[i]);
        write_signature_and_body(g->cpu, g->digests[i], g->jobs[i].iv, g->jobs[i].out, g->plaintext_lens[i],
                                 g->outs[i] + g->plaintext_lens[i]);
    }
    pasarela_wipe(g->keys, sizeof g->keys[0] * g->keys_count);
    g->count = g->keys_count = g->area_used = 0;
}

/* Adds the request whose n-byte plaintext is at out to the group (sealing the group first when it is
 * full, or has no room for it, or uses other CPU features). One whose text and ciphertext would not fit
 * in ws->plaintext at all is sealed alone, with ws->scratch (which the caller made large enough). */
static int group_add(group *g, pasarela_workspace *ws, const pasarela_credentials *c, uint64_t timestamp,
                     char *out, size_t n, const uint8_t *iv) {
    size_t need = (PASARELA_SEAL_SCRATCH_SIZE(n) + 15) / 16 * 16; /* the next item's text starts 16-aligned */
    if (need > ws->plaintext_cap) return seal_in_place(c, ws, timestamp, out, PASARELA_REQUEST_LEN(n), n, iv);
    if (g->count == GROUP_MAX || ws->plaintext_cap - g->area_used < need || (g->count > 0 && g->cpu != c->cpu))
        seal_group(g);
    g->cpu = c->cpu;
    size_t k = g->keys_count;
    if (k == 0 || c->id == 0 || g->keys_id[k - 1] != c->id || g->keys_timestamp[k - 1] != timestamp) {
        pasarela_sealing_keys local;
        pasarela_sealing_keys *keys;
        int rc = pasarela_sealing_keys_for(c, ws, timestamp, &local, &keys);
        if (rc == PASARELA_OK) {
            /* made in ws's cache, this item's key tail serves the groups and calls that follow */
            (void)key_tail_base64(c->cpu, keys, (n - 1) % 3);
            memcpy(&g->keys[k], keys, sizeof *keys);
            g->keys_id[k] = c->id;
            g->keys_timestamp[k] = timestamp;
            g->keys_count = ++k;
        }
        if (keys == &local) pasarela_wipe(&local, sizeof local);
        if (rc != PASARELA_OK) return rc;
    }
    size_t i = g->count++;
    char *text = (char *)ws->plaintext + g->area_used;
    g->text_lens[i] = signed_base64(c->cpu, (const uint8_t *)out, n, &g->keys[k - 1].derived, &g->keys[k - 1], text,
                                    &g->secret_from[i]);
    g->texts[i] = (const uint8_t *)text;
    g->outs[i] = out;
    g->plaintext_lens[i] = n;
    pasarela_cbc_job job = {&g->keys[k - 1].schedule, iv, (const uint8_t *)out,
                            n, (uint8_t *)text + (g->text_lens[i] + 15) / 16 * 16};
    g->jobs[i] = job;
    g->area_used += need;
    return PASARELA_OK;
}

/* The plaintext of a request sealed into its own buffer: text, canonical already (as pasarela_seal takes it),
 * copied to out as it is. */
static int copy_object(const uint8_t *text, size_t len, char *out, size_t *plaintext_len) {
    if (out == NULL) return PASARELA_E_INVALID_ARGUMENT;
    if (!is_object_text(text, len)) return PASARELA_E_JSON_NOT_OBJECT;
    memcpy(out, text, len);
    *plaintext_len = len;
    return PASARELA_OK;
}

/* What pasarela_seal_json_batch (outs NULL: the requests back to back in ws->out) and pasarela_seal_batch (outs:
 * request i at outs[i], its text canonical already) do. plaintext_lens, out_lens and facts may be NULL when outs
 * is not (their values follow from json_lens). */
static size_t seal_items(const pasarela_credentials *const *credentials, uint64_t timestamp, const uint8_t *json,
                         const size_t *json_lens, size_t n, unsigned json_flags, const uint8_t *ivs,
                         pasarela_workspace *ws, char *const *outs, int *statuses, size_t *plaintext_lens,
                         size_t *out_lens, unsigned *facts) {
    group g;
    size_t out_used = 0, done = 0, offset = 0; /* json + offset: the next item's text (formed only when read) */
    g.count = g.keys_count = g.area_used = 0;
    for (; done < n; done++) {
        size_t len = json_lens[done];
        if (len > PASARELA_MAX_JSON_LEN) { /* its sizes would wrap around: refused, the rest goes on */
            statuses[done] = PASARELA_E_TOO_LARGE;
            if (plaintext_lens != NULL) plaintext_lens[done] = out_lens[done] = 0;
            if (facts != NULL) facts[done] = 0;
            offset += len;
            continue;
        }
        /* stop where the next item might not fit: the caller calls again for the rest. The canonicalizer
         * needs room for its worst case (6x); the request then takes what its plaintext needs. An item sealed
         * into its own buffer has room for its request, its text being its plaintext. */
        size_t plaintext_max = PASARELA_JSON_OUT_MAX(len), room = ws->out_cap - out_used;
        if ((outs == NULL && room < plaintext_max) || ws->scratch_cap < PASARELA_WORKSPACE_SCRATCH_SIZE(len) ||
            (ivs == NULL && iv_pool_empty(ws)))
            break;
        const pasarela_credentials *c = credentials[done];
        char *out = outs != NULL ? outs[done] : ws->out + out_used;
        size_t plaintext_len = 0;
        unsigned item_facts = 0;
        int rc = c == NULL      ? PASARELA_E_INVALID_ARGUMENT
                 : outs != NULL ? copy_object(json + offset, len, out, &plaintext_len)
                                : canonical_object(c, json + offset, len, json_flags, (uint8_t *)out, plaintext_max,
                                                   &plaintext_len, ws, &item_facts);
        if (rc == PASARELA_OK && outs == NULL && room < PASARELA_REQUEST_LEN(plaintext_len))
            break; /* its canonical form grew */
        /* every item processed takes the next IV, sealed or not (the pool was checked above) */
        const uint8_t *iv = ivs != NULL ? ivs + PASARELA_IV_LEN * done : next_iv(ws, NULL);
        if (facts != NULL) facts[done] = item_facts;
        if (rc == PASARELA_OK) rc = group_add(&g, ws, c, timestamp, out, plaintext_len, iv);
        if (plaintext_lens != NULL) plaintext_lens[done] = out_lens[done] = 0;
        if (rc == PASARELA_OK && outs == NULL) {
            plaintext_lens[done] = plaintext_len;
            out_lens[done] = PASARELA_REQUEST_LEN(plaintext_len);
            out_used += out_lens[done];
        }
        statuses[done] = rc;
        offset += len;
    }
    seal_group(&g);
    return done;
}

size_t pasarela_seal_json_batch(const pasarela_credentials *const *credentials, uint64_t timestamp,
                                const uint8_t *json, const size_t *json_lens, size_t n, unsigned json_flags,
                                const uint8_t *ivs, pasarela_workspace *ws, int *statuses, size_t *plaintext_lens,
                                size_t *out_lens, unsigned *facts) {
    if (credentials == NULL || json_lens == NULL || ws == NULL ||
        ws->out == NULL || ws->scratch == NULL || ws->plaintext == NULL || statuses == NULL ||
        plaintext_lens == NULL || out_lens == NULL || facts == NULL || (json == NULL && n > 0))
        return 0;
    return seal_items(credentials, timestamp, json, json_lens, n, json_flags, ivs, ws, NULL, statuses, plaintext_lens,
                      out_lens, facts);
}

size_t pasarela_seal_batch(const pasarela_credentials *const *credentials, uint64_t timestamp,
                           const uint8_t *plaintexts, const size_t *plaintext_lens, size_t n, const uint8_t *ivs,
                           pasarela_workspace *ws, char *const *outs, int *statuses) {
    if (credentials == NULL || plaintext_lens == NULL || ws == NULL || ws->scratch == NULL ||
        ws->plaintext == NULL || outs == NULL || statuses == NULL || (plaintexts == NULL && n > 0))
        return 0;
    return seal_items(credentials, timestamp, plaintexts, plaintext_lens, n, PASARELA_JSON_STRINGIFIED, ivs, ws, outs,
                      statuses, NULL, NULL, NULL);
}

size_t pasarela_batch_first_exception(const int *statuses, const unsigned *facts, size_t n, unsigned facts_mask) {
    if (statuses == NULL || facts == NULL) return 0;
    for (size_t i = 0; i < n; i++)
        if (statuses[i] != PASARELA_OK || (facts[i] & facts_mask) != 0) return i;
    return n;
}

size_t pasarela_sealed_len(size_t plaintext_len) {
    /* a plaintext may be the canonical text of the longest JSON input, longer than that input */
    return plaintext_len > PASARELA_JSON_OUT_MAX(PASARELA_MAX_JSON_LEN) ? 0 : PASARELA_SEALED_LEN(plaintext_len);
}
size_t pasarela_json_out_max(size_t json_len) {
    return json_len > PASARELA_MAX_JSON_LEN ? 0 : PASARELA_JSON_OUT_MAX(json_len);
}
size_t pasarela_json_scratch_size(size_t json_len) {
    return json_len > PASARELA_MAX_JSON_LEN ? 0 : PASARELA_JSON_SCRATCH_SIZE(json_len);
}
size_t pasarela_workspace_scratch_size(size_t json_len) {
    return json_len > PASARELA_MAX_JSON_LEN ? 0 : PASARELA_WORKSPACE_SCRATCH_SIZE(json_len);
}
