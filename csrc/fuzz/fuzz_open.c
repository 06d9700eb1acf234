/*
 * Fuzz target: pasarela_open, the receiving side (the "data" string, the signature header and the
 * decrypted plaintext are all untrusted), with pasarela_decrypt_data and pasarela_verify.
 *
 * In raw mode pasarela_open_request must also answer what pasarela_open answers for the same request given
 * as headers and a body.
 * Input: selector, timestamp (8 bytes), iv[16], business code and terminal serial (one length byte
 * each), then the rest. Selector bit 0 chooses the mode, bit 1 folds the timestamp into the valid
 * range, bit 2 corrupts the signature (sealed mode), bit 3 signs the plaintext as sent (sealed mode: a holder of the
 * key signing a text that need not be canonical, which only pasarela_open_request_as_sent takes as signed).
 *  - raw mode (bit 0 set): the rest is the 128-char signature then the data string, as received;
 *    only documented statuses, an OK must also pass pasarela_verify, pasarela_decrypt_data must
 *    agree with the decryption inside pasarela_open, and pasarela_verify takes arbitrary text.
 *  - sealed mode: the rest is a plaintext, encrypted here under the request's key, so the
 *    canonicalizer sees arbitrary decrypted bytes; the signature is the right one for its
 *    canonical form (or one character off with bit 2). The status must be what canonicalizing the
 *    plaintext predicts, and an OK must give back the canonical text and the plaintext.
 * In both modes pasarela_open_request_as_sent answers PASARELA_SIGNED_AS_SENT exactly for a text signed as sent,
 * and otherwise what pasarela_open_request answers, with the same workspace.
 * In both modes a refusal leaves ws->out wiped, a text that is not UTF-8 (checked here by an independent
 * decoder) is refused as such at its first bad byte, and a bad padding is refused as such, also after
 * the slower path when the text needs it (PASARELA_OPEN_BAD_PADDING).
 * Buffers are exact: out as large as the ciphertext, plaintext and scratch as documented for it.
 */
#include "fuzz.h"
#include "../tests/seal_check.h"

static const int RAW_STATUSES[] = {PASARELA_OK, PASARELA_E_TIMESTAMP, PASARELA_E_BAD_HEX, PASARELA_E_BAD_LENGTH,
                                   PASARELA_E_BAD_PADDING, PASARELA_E_JSON_SYNTAX, PASARELA_E_JSON_UNSUPPORTED,
                                   PASARELA_E_JSON_NOT_OBJECT, PASARELA_E_KEY_MEMBER, PASARELA_E_SIGNATURE,
                                   PASARELA_E_JSON_NOT_UTF8, PASARELA_E_PROTO_MEMBER};

/* Offset of the first ill-formed UTF-8 sequence in p[0..n), or n: decoded code point by code point
 * (an implementation independent of json.c's). */
static size_t first_bad_utf8(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp = p[i], min;
        size_t len;
        if (cp < 0x80) { i++; continue; }
        if ((cp & 0xE0) == 0xC0) { len = 2; min = 0x80; cp &= 0x1F; }
        else if ((cp & 0xF0) == 0xE0) { len = 3; min = 0x800; cp &= 0x0F; }
        else if ((cp & 0xF8) == 0xF0) { len = 4; min = 0x10000; cp &= 0x07; }
        else return i;
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (p[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += len;
    }
    return n;
}

/* A refusal leaves nothing of the decrypted text in ws->out. */
static int refusal(int rc) { return rc != PASARELA_OK && rc != PASARELA_E_JSON_UNSUPPORTED; }

typedef struct request {
    char *data;
    size_t data_len;
    char *signature; /* PASARELA_SIGNATURE_HEX_LEN chars, no NUL */
} request;

static int open_request(const pasarela_credentials *c, uint64_t timestamp, const request *q,
                        pasarela_workspace *ws)
{
    size_t ct = q->data_len > 33 ? (q->data_len - 33) / 2 : 0;
    fuzz_workspace_alloc(ws, PASARELA_JSON_OUT_MAX(ct), PASARELA_WORKSPACE_SCRATCH_SIZE(ct), ct);
    int rc = pasarela_open(c, ws, timestamp, q->data, q->data_len, q->signature);
    if (rc != PASARELA_OK)
        FUZZ_CHECK(ws->plaintext_len == 0 || rc == PASARELA_E_SIGNATURE || rc == PASARELA_E_JSON_NOT_OBJECT ||
                   rc == PASARELA_E_KEY_MEMBER);
    return rc;
}

/* A request as pasarela_open_request reads it: the timestamp's 10 digits, "Basic <signature>" and the body. */
typedef struct post {
    char timestamp[10];
    char *authorization;
    char *body;
    size_t body_len;
} post;

static post post_of(const request *q, uint64_t timestamp)
{
    post p;
    uint64_t t = timestamp;
    for (int i = 9; i >= 0; i--, t /= 10) p.timestamp[i] = (char)('0' + t % 10);
    p.authorization = (char *)fuzz_alloc(6 + PASARELA_SIGNATURE_HEX_LEN);
    memcpy(p.authorization, "Basic ", 6);
    memcpy(p.authorization + 6, q->signature, PASARELA_SIGNATURE_HEX_LEN);
    p.body_len = q->data_len + 11;
    p.body = (char *)fuzz_alloc(p.body_len);
    memcpy(p.body, "{\"data\":\"", 9);
    memcpy(p.body + 9, q->data, q->data_len);
    memcpy(p.body + 9 + q->data_len, "\"}", 2);
    return p;
}

static void post_free(post *p)
{
    free(p->body);
    free(p->authorization);
}

typedef int (*open_request_fn)(const pasarela_credentials *, pasarela_workspace *, const char *, size_t, double,
                               double, const char *, size_t, const char *, size_t);

static int open_post(open_request_fn open, const pasarela_credentials *c, pasarela_workspace *ws, const post *p,
                     double now)
{
    return open(c, ws, p->timestamp, 10, now, 300.0, p->authorization, 6 + PASARELA_SIGNATURE_HEX_LEN, p->body,
                p->body_len);
}

/* pasarela_open_request_as_sent of the request: PASARELA_SIGNED_AS_SENT exactly when the signature signs the text
 * as sent (signed_as_sent: 1 or 0, or -1 when the caller cannot tell), with that text, which pasarela_verify then
 * accepts as it is, and which is the canonical text when pasarela_open_request accepted the request (rc, its
 * workspace ws); otherwise exactly what pasarela_open_request answered: the same status, the same texts. */
static void check_as_sent(const pasarela_credentials *c, uint64_t timestamp, const request *q, const post *p,
                          const pasarela_workspace *ws, int rc, int signed_as_sent)
{
    pasarela_workspace as_ws;
    fuzz_workspace_alloc(&as_ws, ws->plaintext_cap, ws->scratch_cap, ws->out_cap);
    int as_rc = open_post(pasarela_open_request_as_sent, c, &as_ws, p, (double)timestamp);
    FUZZ_CHECK(signed_as_sent < 0 || (as_rc == PASARELA_SIGNED_AS_SENT) == signed_as_sent);
    if (as_rc == PASARELA_SIGNED_AS_SENT) {
        FUZZ_CHECK(as_ws.plaintext_len == 0 && as_ws.out_len >= 2);
        if (rc == PASARELA_OK)
            FUZZ_CHECK(ws->plaintext_len == as_ws.out_len && memcmp(ws->plaintext, as_ws.out, as_ws.out_len) == 0);
        pasarela_workspace verify_ws;
        fuzz_workspace_alloc(&verify_ws, 1, PASARELA_SEAL_SCRATCH_SIZE(as_ws.out_len), 1);
        FUZZ_CHECK(pasarela_verify(c, &verify_ws, timestamp, (const uint8_t *)as_ws.out, as_ws.out_len,
                                   q->signature) == PASARELA_OK);
        fuzz_workspace_free(&verify_ws);
    } else {
        FUZZ_CHECK(as_rc == rc && as_ws.out_len == ws->out_len && as_ws.plaintext_len == ws->plaintext_len &&
                   as_ws.json_facts == ws->json_facts);
        FUZZ_CHECK(memcmp(as_ws.out, ws->out, ws->out_len) == 0 &&
                   memcmp(as_ws.plaintext, ws->plaintext, ws->plaintext_len) == 0);
        int decrypted = rc != PASARELA_E_TIMESTAMP && rc != PASARELA_E_BAD_HEX && rc != PASARELA_E_BAD_LENGTH &&
                        rc != PASARELA_E_REQUEST_FORM && rc != PASARELA_E_NO_HW_AES;
        if (refusal(rc) && decrypted) /* out is exactly as large as the ciphertext: all of it was wiped */
            for (size_t i = 0; i < as_ws.out_cap; i++) FUZZ_CHECK(as_ws.out[i] == 0);
    }
    fuzz_workspace_free(&as_ws);
}

static void raw_mode(const pasarela_credentials *c, uint64_t timestamp, fuzz_reader *r)
{
    request q;
    pasarela_workspace ws;
    q.signature = (char *)fuzz_alloc(PASARELA_SIGNATURE_HEX_LEN);
    fuzz_fill(r, (uint8_t *)q.signature, PASARELA_SIGNATURE_HEX_LEN);
    q.data_len = r->size;
    q.data = (char *)fuzz_copy(r->data, r->size);
    int rc = open_request(c, timestamp, &q, &ws);
    int known = 0;
    for (size_t i = 0; i < sizeof RAW_STATUSES / sizeof RAW_STATUSES[0]; i++)
        known |= rc == RAW_STATUSES[i];
    FUZZ_CHECK(known);
    if (rc == PASARELA_E_TIMESTAMP)
        FUZZ_CHECK(!fuzz_timestamp_valid(timestamp));
    if (rc == PASARELA_OK)
        FUZZ_CHECK(pasarela_verify(c, &ws, timestamp, ws.plaintext, ws.plaintext_len, q.signature) == PASARELA_OK);

    /* pasarela_open_request on the same request, as headers and a body, answers what pasarela_open answered */
    if (fuzz_timestamp_valid(timestamp)) {
        post p = post_of(&q, timestamp);
        pasarela_workspace post_ws;
        fuzz_workspace_alloc(&post_ws, ws.plaintext_cap, ws.scratch_cap, ws.out_cap);
        int post_rc = open_post(pasarela_open_request, c, &post_ws, &p, (double)timestamp);
        check_as_sent(c, timestamp, &q, &p, &post_ws, post_rc, -1);
        int non_ascii = 0;
        for (size_t i = 0; i < PASARELA_SIGNATURE_HEX_LEN; i++) non_ascii |= (unsigned char)q.signature[i] >= 0x80;
        if (non_ascii) {
            FUZZ_CHECK(post_rc == PASARELA_E_REQUEST_FORM);
        } else {
            FUZZ_CHECK(post_rc == rc);
            if (rc == PASARELA_OK)
                FUZZ_CHECK(post_ws.plaintext_len == ws.plaintext_len &&
                           memcmp(post_ws.plaintext, ws.plaintext, ws.plaintext_len) == 0);
        }
        /* a timestamp outside the window is left to the caller, before any key is derived */
        FUZZ_CHECK(open_post(pasarela_open_request, c, &post_ws, &p, (double)timestamp + 301.0) ==
                   PASARELA_E_REQUEST_FORM);
        FUZZ_CHECK(open_post(pasarela_open_request_as_sent, c, &post_ws, &p, (double)timestamp + 301.0) ==
                   PASARELA_E_REQUEST_FORM);
        fuzz_workspace_free(&post_ws);
        post_free(&p);
    }

    /* pasarela_decrypt_data on the same data agrees with the decryption inside pasarela_open */
    size_t ct = ws.out_cap, decrypted_len = 0;
    uint8_t *decrypted = (uint8_t *)fuzz_alloc(ct);
    int decrypt_rc = pasarela_decrypt_data(c, timestamp, q.data, q.data_len, decrypted, ct, &decrypted_len);
    if (rc == PASARELA_E_TIMESTAMP || rc == PASARELA_E_BAD_HEX || rc == PASARELA_E_BAD_LENGTH ||
        rc == PASARELA_E_BAD_PADDING) {
        FUZZ_CHECK(decrypt_rc == rc);
    } else if (rc == PASARELA_E_JSON_UNSUPPORTED && (ws.json_facts & PASARELA_OPEN_BAD_PADDING)) {
        FUZZ_CHECK(decrypt_rc == PASARELA_E_BAD_PADDING); /* the padding is decided after the slower path */
    } else {
        FUZZ_CHECK(decrypt_rc == PASARELA_OK);
        if (refusal(rc)) {
            FUZZ_CHECK(ws.out_len == 0);
            for (size_t i = 0; i < ct; i++) FUZZ_CHECK(ws.out[i] == 0);
        } else {
            FUZZ_CHECK(decrypted_len == ws.out_len && memcmp(decrypted, ws.out, decrypted_len) == 0);
        }
        size_t bad_at = first_bad_utf8(decrypted, decrypted_len);
        FUZZ_CHECK((rc == PASARELA_E_JSON_NOT_UTF8) == (bad_at < decrypted_len));
        if (rc == PASARELA_E_JSON_NOT_UTF8) FUZZ_CHECK(ws.error_offset == bad_at);
    }
    free(decrypted);

    /* pasarela_verify (the fallback path's check) on arbitrary text and signature */
    pasarela_workspace verify_ws;
    fuzz_workspace_alloc(&verify_ws, 1, PASARELA_SEAL_SCRATCH_SIZE(q.data_len), 1);
    int verify_rc = pasarela_verify(c, &verify_ws, timestamp, (const uint8_t *)q.data, q.data_len, q.signature);
    FUZZ_CHECK(verify_rc == PASARELA_OK || verify_rc == PASARELA_E_SIGNATURE ||
               verify_rc == PASARELA_E_JSON_NOT_OBJECT || verify_rc == PASARELA_E_TIMESTAMP);
    fuzz_workspace_free(&verify_ws);
    fuzz_workspace_free(&ws);
    free(q.data);
    free(q.signature);
}

/* What pasarela_open must answer for a correctly encrypted plaintext, from canonicalizing it here. */
typedef struct expectation {
    int rc;
    uint8_t *canonical;
    size_t canonical_len;
    size_t bad_utf8_at;
    unsigned facts; /* the canonicalizer's, which pasarela_open reports with an OK */
} expectation;

static expectation expect(const uint8_t *plaintext, size_t n)
{
    expectation e;
    void *scratch = fuzz_alloc(PASARELA_JSON_SCRATCH_SIZE(n));
    unsigned facts = 0;
    e.canonical = (uint8_t *)fuzz_alloc(PASARELA_JSON_OUT_MAX(n));
    e.bad_utf8_at = first_bad_utf8(plaintext, n);
    e.rc = pasarela_json_canonicalize(plaintext, n, 0, e.canonical, PASARELA_JSON_OUT_MAX(n), &e.canonical_len,
                                      scratch, PASARELA_JSON_SCRATCH_SIZE(n), NULL, &facts);
    if (e.rc == PASARELA_E_JSON_UNSAFE_INTEGER)
        e.rc = PASARELA_E_JSON_UNSUPPORTED; /* JSON.parse would round it: the caller's slower path */
    if (e.rc == PASARELA_OK && (e.canonical_len < 2 || e.canonical[0] != '{'))
        e.rc = PASARELA_E_JSON_NOT_OBJECT;
    if (e.rc == PASARELA_OK && (facts & PASARELA_JSON_FACT_KEY))
        e.rc = PASARELA_E_KEY_MEMBER;
    if (e.rc == PASARELA_OK && (facts & PASARELA_JSON_FACT_PROTO))
        e.rc = PASARELA_E_PROTO_MEMBER;
    if (e.bad_utf8_at < n) e.rc = PASARELA_E_JSON_NOT_UTF8; /* refused before it is parsed */
    e.facts = facts;
    free(scratch);
    return e;
}

static void sealed_mode(const pasarela_credentials *c, uint64_t timestamp, const uint8_t iv[16], int corrupt,
                        int sign_as_sent, fuzz_reader *r)
{
    size_t n = r->size, ct_len = PASARELA_CIPHERTEXT_LEN(n), ct_written = 0;
    uint8_t *plaintext = fuzz_copy(r->data, n);
    uint8_t *ciphertext = (uint8_t *)fuzz_alloc(ct_len);
    uint8_t aes_key[32];
    request q;
    pasarela_workspace ws;
    if (pasarela_derive(c->business_code, c->business_code_len, c->terminal_serial, c->terminal_serial_len,
                        timestamp, NULL, NULL, aes_key) != PASARELA_OK) {
        FUZZ_CHECK(!fuzz_timestamp_valid(timestamp));
        memset(aes_key, 0, sizeof aes_key);
    }
    FUZZ_CHECK(pasarela_aes256_cbc_encrypt(c->cpu, aes_key, iv, plaintext, n, ciphertext, ct_len, &ct_written) ==
               PASARELA_OK && ct_written == ct_len);
    q.data_len = 33 + 2 * ct_len;
    q.data = (char *)fuzz_alloc(q.data_len);
    pasarela_hex_encode(iv, 16, q.data);
    q.data[32] = ':';
    pasarela_hex_encode(ciphertext, ct_len, q.data + 33);
    q.signature = (char *)fuzz_alloc(PASARELA_SIGNATURE_HEX_LEN);
    memset(q.signature, '0', PASARELA_SIGNATURE_HEX_LEN);

    expectation e = expect(plaintext, n);
    int canonical = e.rc == PASARELA_OK && e.canonical_len == n && memcmp(e.canonical, plaintext, n) == 0;
    int object_text = n >= 2 && plaintext[0] == '{' && plaintext[n - 1] == '}';
    /* the signature the client would send; or (sign_as_sent) one a holder of the key made over the text as sent,
     * whatever it is, which is genuine only when the text is canonical */
    const uint8_t *signed_text = sign_as_sent ? plaintext : e.canonical;
    size_t signed_len = sign_as_sent ? n : e.canonical_len;
    int signs = fuzz_timestamp_valid(timestamp) && (sign_as_sent ? object_text : e.rc == PASARELA_OK);
    if (signs) {
        char *sealed = (char *)fuzz_alloc(PASARELA_SEALED_LEN(signed_len));
        size_t sealed_len = 0;
        FUZZ_CHECK(seal_check_seal(c, timestamp, signed_text, signed_len, iv, sealed, PASARELA_SEALED_LEN(signed_len),
                                   &sealed_len) == PASARELA_OK);
        memcpy(q.signature, sealed, PASARELA_SIGNATURE_HEX_LEN);
        free(sealed);
        if (corrupt)
            q.signature[n % PASARELA_SIGNATURE_HEX_LEN] ^= 1; /* '0'<->'1', 'a'<->'`', ...: always different */
        if (e.rc == PASARELA_OK && (corrupt || (sign_as_sent && !canonical)))
            e.rc = PASARELA_E_SIGNATURE;
    } else if (e.rc == PASARELA_OK) { /* to be signed as sent, but not an object's text: unsigned */
        e.rc = PASARELA_E_SIGNATURE;
    }

    int rc = open_request(c, timestamp, &q, &ws);
    if (!fuzz_timestamp_valid(timestamp)) {
        FUZZ_CHECK(rc == PASARELA_E_TIMESTAMP);
    } else {
        FUZZ_CHECK(rc == e.rc);
        if (rc == PASARELA_OK)
            FUZZ_CHECK(ws.plaintext_len == e.canonical_len && memcmp(ws.plaintext, e.canonical, e.canonical_len) == 0);
        if (rc == PASARELA_OK || rc == PASARELA_E_JSON_UNSUPPORTED)
            FUZZ_CHECK(ws.out_len == n && memcmp(ws.out, plaintext, n) == 0 &&
                       ws.json_facts == (rc == PASARELA_OK ? e.facts : 0u));
        else
            FUZZ_CHECK(ws.out_len == 0 && ws.plaintext_len == 0);
        if (rc == PASARELA_E_JSON_NOT_UTF8) FUZZ_CHECK(ws.error_offset == e.bad_utf8_at);
        uint8_t *decrypted = (uint8_t *)fuzz_alloc(ct_len);
        size_t decrypted_len = 0;
        FUZZ_CHECK(pasarela_decrypt_data(c, timestamp, q.data, q.data_len, decrypted, ct_len, &decrypted_len) ==
                   PASARELA_OK && decrypted_len == n && memcmp(decrypted, plaintext, n) == 0);
        free(decrypted);
        post p = post_of(&q, timestamp);
        check_as_sent(c, timestamp, &q, &p, &ws, rc, signs && !corrupt && (sign_as_sent || canonical));
        post_free(&p);
    }
    fuzz_workspace_free(&ws);
    free(e.canonical);
    free(q.signature);
    free(q.data);
    free(ciphertext);
    free(plaintext);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    uint8_t selector = fuzz_u8(&r);
    uint64_t timestamp = fuzz_timestamp(&r, selector & 2);
    uint8_t iv[16];
    fuzz_fill(&r, iv, sizeof iv);
    pasarela_credentials c = fuzz_credentials(&r, fuzz_cpu());
    if (selector & 1)
        raw_mode(&c, timestamp, &r);
    else
        sealed_mode(&c, timestamp, iv, selector & 4, selector & 8, &r);
    fuzz_credentials_free(&c);
    return 0;
}
