/*
 * test_roundtrip.c — seal round trips of the C core: known answers, then randomized requests.
 *
 * Known answers: sealed requests computed by pasarela.reference (plain Python: hashlib, base64,
 * cryptography), compared byte for byte. Random round trips (splitmix64, seeded): random
 * credentials (ASCII and multi-byte UTF-8), timestamps, IVs and plaintexts of 2..800 bytes are
 * sealed; the body must decrypt to the plaintext and the signature must equal the one recomputed
 * in one piece (csrc/tests/seal_check.h); sealing is deterministic (same IV: same bytes; another
 * IV: same signature, another body; the portable SHA-512 gives the same bytes as AVX2); and
 * pasarela_seal_json of random JSON text with whitespace seals what pasarela_json_canonicalize
 * writes, and the trusted mode gives that canonical text back from itself and from it with ".0" after
 * its integers (with and without the check for text that is already canonical); an array of three copies of
 * it splits into them (pasarela_json_array_items, as its byte scan). Error paths: no AES instructions, bad timestamps, a buffer one byte short.
 *
 * The line before the last is "output digest: <SHA-512 hex>" of every request sealed from random input
 * (the same for a seed on every platform: scripts/hardening compares x86-64, AArch64 and Windows).
 * Without AES instructions (an AArch64 core without the Crypto Extensions) the driver checks instead
 * that every sealing and opening entry point refuses with PASARELA_E_NO_HW_AES, and prints no digest.
 *
 * Build and run from the repository root (scripts/hardening does, with sanitizers and valgrind):
 *
 *   cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -DPASARELA_VERSION='"0.0.0"' -Icsrc \
 *       csrc/tests/test_roundtrip.c csrc/[a-z]*.c -o /tmp/test_roundtrip && /tmp/test_roundtrip [SEED [ROUNDS]]
 *
 * Prints "N passed, N failed" as the last line; exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "seal_check.h"

static long g_pass, g_fail;
static pasarela_sha512_ctx g_outputs; /* digest of every request sealed from random input */

static void check(int ok, const char *what, unsigned long long round)
{
    if (ok) {
        g_pass++;
    } else {
        g_fail++;
        printf("FAIL: %s (round %llu)\n", what, round);
    }
}

/* ---- known answers ---- */

typedef struct known_answer {
    const char *business_code;
    const char *terminal_serial;
    uint64_t timestamp;
    const char *iv_hex;
    const char *plaintext;
    const char *signature;
    const char *body;
} known_answer;

static const known_answer KNOWN_ANSWERS[] = {
    {
        "demo-business-code",
        "DEMO-0001",
        UINT64_C(1700000000),
        "000102030405060708090a0b0c0d0e0f",
        "{\"amount\":100,\"currency\":\"COP\"}",
        "2959b46b60da0c576878df68803514372e3634c46b76d79fabe233ea104b5be1798397dcc84540437b3998e93ce7a26c"
        "510e81038897a6490c1e2097577c7a8d",
        "{\"data\":\"000102030405060708090a0b0c0d0e0f:c51548a3153f167d59a02dc7b490c99d599e9122001a118e7c7"
        "a223601286d97\"}",
    },
    {
        "c\xc3\xb3" "digo-\xc3\xb1",
        "SN-\xf0\x9f\x98\x80",
        UINT64_C(1000000000),
        "ffeeddccbbaa99887766554433221100",
        "{}",
        "a1dabaab31d2c3302010598617ef61673dc507353babc552b7b23e00bf781903a53e2839652157ae9fecb8346f1af7cf"
        "cc6b452f4ae1ebab2bf751ca41567c04",
        "{\"data\":\"ffeeddccbbaa99887766554433221100:8d906effd0d1da257ee897d61be987be\"}",
    },
    {
        "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
        "S",
        UINT64_C(9999999999),
        "00000000000000000000000000000000",
        "{\"items\":[{\"price\":0.5,\"name\":\"item 0 \xe2\x82\xac\"},{\"price\":1.5,\"name\":\"item 1 "
        "\xe2\x82\xac\"},{\"price\":2.5,\"name\":\"item 2 \xe2\x82\xac\"},{\"price\":3.5,\"name\":\"item "
        "3 \xe2\x82\xac\"},{\"price\":4.5,\"name\":\"item 4 \xe2\x82\xac\"},{\"price\":5.5,\"name\":\"ite"
        "m 5 \xe2\x82\xac\"},{\"price\":6.5,\"name\":\"item 6 \xe2\x82\xac\"},{\"price\":7.5,\"name\":\"i"
        "tem 7 \xe2\x82\xac\"},{\"price\":8.5,\"name\":\"item 8 \xe2\x82\xac\"},{\"price\":9.5,\"name\":"
        "\"item 9 \xe2\x82\xac\"},{\"price\":10.5,\"name\":\"item 10 \xe2\x82\xac\"},{\"price\":11.5,\"na"
        "me\":\"item 11 \xe2\x82\xac\"}]}",
        "3c4be71a73c5112ebb29739bca28f46da4ffd4ce6fd00fbea5b77b0bb6000c8682a3f9701905a110076bc3d8da775562"
        "d828f1ebb82a0c3684f03f2de566e0e8",
        "{\"data\":\"00000000000000000000000000000000:4ce2e5f41a5c1b232db74e9a50094b94ac1ad8f636749e25dcf"
        "34ecfec1b621ca9963b7ea312629156cbb6b2f0761e830238dc5a6e9c98b8907df23afa0ea99c71879490b336dbbee92"
        "b1a4ecf5f1075ddd16b794186d8c182c4a88d84d4dfc1967669373d6865dcd9da72afa18048cfa2470cea9f2626b6ca8"
        "f7201ca01c2e15e947adb9845218ac524380858706472c872b056cea22c033a2a52b8647581dcaaa9a4e8ab8daeff2ff"
        "e511601ec08e063d0b89a7b1409e35f0fd2cda63791a7724414456c5faf5ff515b1d2f6aeb5bc51329fb1e72a11b73ec"
        "919e7b528bd56dfd1ba6a9a85c9036533a93c53457cea5acc7d522069780a4bee160b62130002b162f63793590e6b25e"
        "00e7ac37b20bcb504761477eabfd889a0ce1542391e6b882a200cfac9e5c59db1e19898beec15b5177a0bbd52bcb3091"
        "8c67dea67b6fa04b41eee1550b9ff01dd7e86c708bb9bf9322923ab7b2e382bd1c3a9706f71e094499cdb370a46a1e60"
        "2c7480c5e78bb96248e749d506b03da33554d31a96dba16a2c11a319913917d2ddee01e7ebb41ed2dbcd236e9c5a6de5"
        "c5206530d2f563d3f034b9c0977f4154c363d96669bc9\"}",
    },
};

static void test_known_answers(unsigned cpu)
{
    for (size_t k = 0; k < sizeof KNOWN_ANSWERS / sizeof KNOWN_ANSWERS[0]; k++) {
        const known_answer *v = &KNOWN_ANSWERS[k];
        pasarela_credentials c = {(const uint8_t *)v->business_code, strlen(v->business_code),
                                  (const uint8_t *)v->terminal_serial, strlen(v->terminal_serial), cpu, 0};
        uint8_t iv[16];
        size_t n = strlen(v->plaintext), cap = PASARELA_SEALED_LEN(n), len = 0;
        char *out = (char *)malloc(cap);
        check(out != NULL && pasarela_hex_decode(v->iv_hex, 32, iv) == PASARELA_OK &&
                  seal_check_seal(&c, v->timestamp, (const uint8_t *)v->plaintext, n, iv, out, cap, &len) ==
                      PASARELA_OK &&
                  len == cap && memcmp(out, v->signature, 128) == 0 &&
                  memcmp(out + 128, v->body, len - 128) == 0 && strlen(v->body) == len - 128,
              "known answer", (unsigned long long)k);
        free(out);
    }
}

/* ---- random round trips ---- */

static uint64_t g_state;

static uint64_t next_random(void) /* splitmix64 */
{
    uint64_t z = (g_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static size_t below(size_t n) { return (size_t)(next_random() % n); }

static void random_bytes(uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)next_random();
}

/* Random UTF-8 text of up to max bytes: ASCII, 2-, 3- and 4-byte sequences (JavaScript counts the
 * last as two UTF-16 units when it pads the password). */
static size_t random_text(uint8_t *out, size_t max)
{
    static const char *const pieces[] = {"a", "Z", "7", "-", " ", "\xc3\xb1", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    size_t n = 0, want = below(max + 1);
    while (n < want) {
        const char *p = pieces[below(sizeof pieces / sizeof pieces[0])];
        size_t k = strlen(p);
        if (n + k > max)
            break;
        memcpy(out + n, p, k);
        n += k;
    }
    return n;
}

/* Object text {...} of exactly n >= 2 bytes: arbitrary bytes inside (pasarela_seal encrypts and
 * signs whatever object text it is given; it checks only the braces). */
static void random_object_bytes(uint8_t *out, size_t n)
{
    out[0] = '{';
    random_bytes(out + 1, n - 2);
    out[n - 1] = '}';
}

typedef struct text {
    char *p;
    size_t len, cap;
} text;

static void put(text *t, const char *s)
{
    size_t k = strlen(s);
    if (t->len + k <= t->cap) {
        memcpy(t->p + t->len, s, k);
        t->len += k;
    }
}

static void put_ws(text *t)
{
    static const char *const ws[] = {"", "", "", " ", "\n", "\t ", "\r\n  "};
    put(t, ws[below(sizeof ws / sizeof ws[0])]);
}

/* Random JSON with whitespace: objects with plain and integer-like keys, arrays, numbers,
 * strings with escapes, literals. Keys within one object are distinct (numbered). */
static void random_json(text *t, int depth, int is_top)
{
    static const char *const scalars[] = {"0", "-0", "100.0", "1e21", "1.5e-7", "0.000001", "-12.25", "true",
                                          "false", "null", "\"\"", "\"plain\"", "\"\\u00e9\\n\\\"q\\\"\"",
                                          "\"\\ud83d\\ude00\"", "\"\xe2\x82\xac\"", "9007199254740991"};
    char key[32];
    size_t members, kind = is_top ? 0 : depth < 4 ? below(3) : 1; /* 0 object, 1 scalar, 2 array */
    put_ws(t);
    if (kind == 0) {
        put(t, "{");
        members = below(6);
        for (size_t i = 0; i < members; i++) {
            if (i)
                put(t, ",");
            put_ws(t);
            if (below(3) == 0)
                snprintf(key, sizeof key, "\"%zu\"", below(50) * 1000 + i); /* integer-like: sorted first */
            else
                snprintf(key, sizeof key, "\"k%zu_%zu\"", i, below(1000));
            put(t, key);
            put_ws(t);
            put(t, ":");
            random_json(t, depth + 1, 0);
        }
        put_ws(t);
        put(t, "}");
    } else if (kind == 1) {
        put(t, scalars[below(sizeof scalars / sizeof scalars[0])]);
    } else {
        put(t, "[");
        members = below(5);
        for (size_t i = 0; i < members; i++) {
            if (i)
                put(t, ",");
            random_json(t, depth + 1, 0);
        }
        put(t, "]");
    }
    put_ws(t);
}

/* The sealed request out (signature and body, len chars) of the n-byte plaintext, opened by
 * pasarela_open_request_as_sent: the plaintext was signed as it is, so it is signed as sent, and the text comes
 * back whole; pasarela_open_request answers anything but that status (it signs the canonical form, which for
 * these random texts is rarely the text, or refuses them as JSON). */
static void check_opened_as_sent(const pasarela_credentials *c, uint64_t timestamp, const uint8_t *plaintext,
                                 size_t n, const char *out, size_t len, unsigned long long round)
{
    char timestamp_text[10], authorization[6 + PASARELA_SIGNATURE_HEX_LEN];
    uint64_t t = timestamp;
    for (int i = 9; i >= 0; i--, t /= 10) timestamp_text[i] = (char)('0' + t % 10);
    memcpy(authorization, "Basic ", 6);
    memcpy(authorization + 6, out, PASARELA_SIGNATURE_HEX_LEN);
    const char *body = out + PASARELA_SIGNATURE_HEX_LEN;
    size_t body_len = len - PASARELA_SIGNATURE_HEX_LEN, ct = PASARELA_CIPHERTEXT_LEN(n);
    pasarela_workspace ws;
    memset(&ws, 0, sizeof ws);
    ws.plaintext_cap = PASARELA_JSON_OUT_MAX(ct);
    ws.scratch_cap = PASARELA_WORKSPACE_SCRATCH_SIZE(ct);
    ws.out_cap = ct;
    ws.plaintext = (uint8_t *)malloc(ws.plaintext_cap);
    ws.scratch = malloc(ws.scratch_cap);
    ws.out = (char *)malloc(ws.out_cap);
    if (ws.plaintext == NULL || ws.scratch == NULL || ws.out == NULL) {
        check(0, "malloc", round);
    } else {
        int rc = pasarela_open_request_as_sent(c, &ws, timestamp_text, 10, (double)timestamp, 300.0, authorization,
                                               sizeof authorization, body, body_len);
        check(rc == PASARELA_SIGNED_AS_SENT && ws.out_len == n && memcmp(ws.out, plaintext, n) == 0 &&
                  ws.plaintext_len == 0,
              "open_request_as_sent: signed as sent, the text whole", round);
        rc = pasarela_open_request(c, &ws, timestamp_text, 10, (double)timestamp, 300.0, authorization,
                                   sizeof authorization, body, body_len);
        check(rc != PASARELA_SIGNED_AS_SENT && (rc != PASARELA_OK || (ws.plaintext_len == n &&
                                                                     memcmp(ws.plaintext, plaintext, n) == 0)),
              "open_request: the canonical form's verdict", round);
        /* a byte of the signature that is not ASCII, anywhere in it: not the form seal writes */
        authorization[6 + below(PASARELA_SIGNATURE_HEX_LEN)] = (char)(0x80 + below(0x80));
        check(pasarela_open_request(c, &ws, timestamp_text, 10, (double)timestamp, 300.0, authorization,
                                    sizeof authorization, body, body_len) == PASARELA_E_REQUEST_FORM &&
                  pasarela_open_request_as_sent(c, &ws, timestamp_text, 10, (double)timestamp, 300.0, authorization,
                                                sizeof authorization, body, body_len) == PASARELA_E_REQUEST_FORM,
              "open_request: a signature byte that is not ASCII", round);
    }
    free(ws.out);
    free(ws.scratch);
    free(ws.plaintext);
}

static void test_seal_round_trip(unsigned cpu, unsigned long long round)
{
    uint8_t business_code[48], terminal_serial[48], iv[16], other_iv[16];
    pasarela_credentials c = {business_code, random_text(business_code, sizeof business_code), terminal_serial,
                              random_text(terminal_serial, sizeof terminal_serial), cpu, 0};
    uint64_t timestamp = UINT64_C(1000000000) + next_random() % UINT64_C(9000000000);
    size_t n = 2 + below(800), cap = PASARELA_SEALED_LEN(n), len = 0, again_len = 0;
    uint8_t *plaintext = (uint8_t *)malloc(n);
    char *out = (char *)malloc(cap), *again = (char *)malloc(cap);
    if (plaintext == NULL || out == NULL || again == NULL) {
        check(0, "malloc", round);
        return;
    }
    random_object_bytes(plaintext, n);
    random_bytes(iv, sizeof iv);
    memcpy(other_iv, iv, sizeof iv);
    other_iv[below(16)] ^= (uint8_t)(1u << below(8));

    check(seal_check_seal(&c, timestamp, plaintext, n, iv, out, cap, &len) == PASARELA_OK && len == cap, "seal",
          round);
    pasarela_sha512_update(&g_outputs, (const uint8_t *)out, len);
    check(seal_check_lower_hex(out, 128), "signature is lowercase hex", round);
    check(seal_check_body(&c, timestamp, iv, plaintext, n, out + 128), "body decrypts to the plaintext", round);
    check(seal_check_signature(&c, timestamp, plaintext, n, out), "signature recomputed in one piece", round);
    check_opened_as_sent(&c, timestamp, plaintext, n, out, len, round);

    check(seal_check_seal(&c, timestamp, plaintext, n, iv, again, cap, &again_len) == PASARELA_OK &&
              again_len == len && memcmp(again, out, len) == 0,
          "same IV: same bytes", round);
    check(seal_check_seal(&c, timestamp, plaintext, n, other_iv, again, cap, &again_len) == PASARELA_OK &&
              memcmp(again, out, 128) == 0 && memcmp(again + 128, out + 128, len - 128) != 0,
          "another IV: same signature, another body", round);
#ifdef PASARELA_CPU_AVX2
    if (cpu & PASARELA_CPU_AVX2) {
        pasarela_credentials portable = c;
        portable.cpu &= ~PASARELA_CPU_AVX2;
        check(seal_check_seal(&portable, timestamp, plaintext, n, iv, again, cap, &again_len) == PASARELA_OK &&
                  memcmp(again, out, len) == 0,
              "portable SHA-512: same bytes", round);
    }
#endif
    check(seal_check_seal(&c, timestamp, plaintext, n, iv, again, cap - 1, &again_len) == PASARELA_E_BUFFER_TOO_SMALL,
          "buffer one byte short", round);
    check(seal_check_seal(&c, timestamp * 1000, plaintext, n, iv, again, cap, &again_len) == PASARELA_E_TIMESTAMP,
          "millisecond timestamp refused", round);
    c.cpu = 0;
    check(seal_check_seal(&c, timestamp, plaintext, n, iv, again, cap, &again_len) == PASARELA_E_NO_HW_AES,
          "no AES instructions: refused", round);
    free(again);
    free(out);
    free(plaintext);
}

/* canonical text (n bytes) rewritten into out (room for 2 n + 2 bytes): with point_zeros, ".0" after every
 * integer of at most 15 digits outside strings, as orjson writes integral floats (the trusted mode makes them
 * integers again); with key_prefix, an 'i' before the first digit of every integer-like key, which gives
 * canonical text again (its other keys start with a letter: no duplicates; all keys in the order written). */
static size_t rewritten(const uint8_t *in, size_t n, int point_zeros, int key_prefix, uint8_t *out)
{
    size_t len = 0, i = 0;
    while (i < n) {
        if (in[i] == '"') { /* the string, whole (a backslash takes the next byte along) */
            size_t end = i + 1;
            while (end < n && in[end] != '"') end += in[end] == '\\' && end + 1 < n ? 2 : 1;
            end = end < n ? end + 1 : n;
            out[len++] = '"';
            if (key_prefix && end < n && in[end] == ':' && i + 1 < end && in[i + 1] >= '0' && in[i + 1] <= '9')
                out[len++] = 'i';
            memcpy(out + len, in + i + 1, end - i - 1);
            len += end - i - 1;
            i = end;
        } else if (in[i] == '-' || (in[i] >= '0' && in[i] <= '9')) {
            size_t start = i, digits = 0;
            int plain = 1; /* digits only, after an optional minus */
            for (; i < n && strchr("-+.eE0123456789", in[i]) != NULL; i++) {
                if (in[i] >= '0' && in[i] <= '9') digits++;
                else if (i != start) plain = 0;
            }
            memcpy(out + len, in + start, i - start);
            len += i - start;
            if (point_zeros && plain && digits <= 15) {
                memcpy(out + len, ".0", 2);
                len += 2;
            }
        } else {
            out[len++] = in[i++];
        }
    }
    return len;
}

/* The trusted mode (PASARELA_JSON_SHORTEST_DIGITS) gives canonical text back as it is, and gives it back from
 * that text with ".0" after its integers, with and without the check for text that is already canonical, in
 * pasarela_json_canonicalize (SSE2 on x86) and in pasarela_seal_json (the instance cpu selects). The random
 * texts have integer-like keys, which the check leaves to the token pass: the same again without them. */
static void test_trusted_forms(const pasarela_credentials *c, const uint8_t *json, size_t json_len,
                               unsigned long long round)
{
    size_t forms_cap = 2 * json_len + 2, cap = PASARELA_JSON_OUT_MAX(forms_cap);
    size_t scratch_cap = PASARELA_JSON_SCRATCH_SIZE(forms_cap);
    uint8_t *canonical = (uint8_t *)malloc(forms_cap), *zeros = (uint8_t *)malloc(forms_cap);
    uint8_t *out = (uint8_t *)malloc(cap), iv[16] = {0};
    void *scratch = malloc(scratch_cap);
    pasarela_workspace ws;
    memset(&ws, 0, sizeof ws);
    ws.plaintext_cap = cap;
    ws.scratch_cap = PASARELA_WORKSPACE_SCRATCH_SIZE(forms_cap);
    ws.out_cap = PASARELA_REQUEST_LEN(cap);
    ws.plaintext = (uint8_t *)malloc(ws.plaintext_cap);
    ws.scratch = malloc(ws.scratch_cap);
    ws.out = (char *)malloc(ws.out_cap);
    if (canonical == NULL || zeros == NULL || out == NULL || scratch == NULL || ws.plaintext == NULL ||
        ws.scratch == NULL || ws.out == NULL) {
        check(0, "malloc", round);
    } else {
        static const unsigned flags[2] = {PASARELA_JSON_SHORTEST_DIGITS,
                                          PASARELA_JSON_SHORTEST_DIGITS | PASARELA_JSON_NO_SHORTCUT};
        for (int key_prefix = 0; key_prefix < 2; key_prefix++) {
            size_t n = rewritten(json, json_len, 0, key_prefix, canonical);
            const uint8_t *forms[2] = {canonical, zeros};
            size_t lens[2] = {n, rewritten(json, json_len, 1, key_prefix, zeros)};
            for (int f = 0; f < 2; f++) {
                for (int k = 0; k < 2; k++) {
                    size_t len = 0;
                    check(pasarela_json_canonicalize(forms[f], lens[f], flags[k], out, cap, &len, scratch,
                                                     scratch_cap, NULL, NULL) == PASARELA_OK &&
                              len == n && memcmp(out, canonical, n) == 0,
                          f == 0 ? "trusted mode: canonical text as it is" : "trusted mode: .0 of integers dropped",
                          round);
                }
                check(pasarela_seal_json(c, &ws, 1700000000, forms[f], lens[f], PASARELA_JSON_SHORTEST_DIGITS,
                                         iv) == PASARELA_OK &&
                          ws.plaintext_len == n && memcmp(ws.out, canonical, n) == 0,
                      "seal_json, trusted mode: the canonical text", round);
            }
        }
    }
    free(ws.out);
    free(ws.scratch);
    free(ws.plaintext);
    free(scratch);
    free(out);
    free(zeros);
    free(canonical);
}

/* The array of three copies of canonical text (n bytes) splits into those three, as the byte scan splits it. */
static void test_array_split(const uint8_t *canonical, size_t n, unsigned long long round)
{
    size_t array_len = 3 * n + 4, lens[4], portable_lens[4];
    uint8_t *array = (uint8_t *)malloc(array_len), *items = (uint8_t *)malloc(array_len);
    uint8_t *portable_items = (uint8_t *)malloc(array_len);
    if (array == NULL || items == NULL || portable_items == NULL) {
        check(0, "malloc", round);
    } else {
        array[0] = '[';
        for (int i = 0; i < 3; i++) {
            memcpy(array + 1 + i * (n + 1), canonical, n);
            array[(i + 1) * (n + 1)] = i < 2 ? ',' : ']';
        }
        size_t count = pasarela_json_array_items(array, array_len, items, lens, 4);
        check(count == 3 && lens[0] == n && lens[1] == n && lens[2] == n && memcmp(items, canonical, n) == 0 &&
                  memcmp(items + n, canonical, n) == 0 && memcmp(items + 2 * n, canonical, n) == 0,
              "array split: three copies", round);
        check(pasarela_json_array_items_portable(array, array_len, portable_items, portable_lens, 4) == count &&
                  memcmp(portable_items, items, 3 * n) == 0,
              "array split: as the byte scan", round);
        check(pasarela_json_array_items(array, array_len, items, lens, 2) == 0, "array split: one item too many",
              round);
    }
    free(portable_items);
    free(items);
    free(array);
}

static void test_seal_json_round_trip(unsigned cpu, unsigned long long round)
{
    static const uint8_t business_code[] = "demo-business-code", terminal_serial[] = "DEMO-0001";
    pasarela_credentials c = {business_code, sizeof business_code - 1, terminal_serial, sizeof terminal_serial - 1,
                              cpu, 1};
    char json[4096];
    text t = {json, 0, sizeof json};
    uint8_t iv[16];
    pasarela_workspace ws;
    size_t len = 0;
    random_json(&t, 0, 1);
    random_bytes(iv, sizeof iv);
    memset(&ws, 0, sizeof ws);
    ws.plaintext_cap = PASARELA_JSON_OUT_MAX(t.len);
    ws.scratch_cap = PASARELA_WORKSPACE_SCRATCH_SIZE(t.len);
    ws.out_cap = PASARELA_REQUEST_LEN(ws.plaintext_cap);
    ws.plaintext = (uint8_t *)malloc(ws.plaintext_cap);
    ws.scratch = malloc(ws.scratch_cap);
    ws.out = (char *)malloc(ws.out_cap);
    uint8_t *canonical = (uint8_t *)malloc(ws.plaintext_cap);
    char *out = (char *)malloc(ws.out_cap);
    if (ws.plaintext == NULL || ws.scratch == NULL || ws.out == NULL || canonical == NULL || out == NULL) {
        check(0, "malloc", round);
        return;
    }
    int rc = pasarela_seal_json(&c, &ws, 1700000000, (const uint8_t *)json, t.len, 0, iv);
    check(rc == PASARELA_OK, "seal_json of random JSON", round);
    if (rc == PASARELA_OK) {
        pasarela_sha512_update(&g_outputs, (const uint8_t *)ws.out, ws.out_len);
        check(pasarela_json_canonicalize((const uint8_t *)json, t.len, 0, canonical, ws.plaintext_cap, &len,
                                         ws.scratch, ws.scratch_cap, NULL, NULL) == PASARELA_OK &&
                  len == ws.plaintext_len && memcmp(canonical, ws.out, len) == 0 &&
                  ws.out_len == PASARELA_REQUEST_LEN(len),
              "seal_json seals the canonical text, at the front of its output", round);
        check(seal_check_seal(&c, 1700000000, canonical, len, iv, out, ws.out_cap, &len) == PASARELA_OK &&
                  len == ws.out_len - ws.plaintext_len && memcmp(out, ws.out + ws.plaintext_len, len) == 0,
              "seal_json == seal(canonical text)", round);
        check(seal_check_body(&c, 1700000000, iv, canonical, ws.plaintext_len, ws.out + ws.plaintext_len + 128),
              "seal_json body decrypts to the canonical text", round);
        test_trusted_forms(&c, canonical, ws.plaintext_len, round);
        test_array_split(canonical, ws.plaintext_len, round);
    }
    free(out);
    free(canonical);
    free(ws.out);
    free(ws.scratch);
    free(ws.plaintext);
}

/* Without AES instructions: sealing (one text, JSON, a batch) and opening refuse, writing nothing. */
static void test_refusals(unsigned cpu, unsigned long long round)
{
    static const uint8_t business_code[] = "demo-business-code", terminal_serial[] = "DEMO-0001";
    const pasarela_credentials c = {business_code, sizeof business_code - 1, terminal_serial,
                                    sizeof terminal_serial - 1, cpu, 0};
    const pasarela_credentials *const batch_credentials[1] = {&c};
    char json[4096], data[33 + 64], signature[PASARELA_SIGNATURE_HEX_LEN];
    text t = {json, 0, sizeof json};
    uint8_t iv[16], ct[32];
    size_t n = 2 + below(800), len = 0, plaintext_len = 0, out_len = 0;
    int status = PASARELA_OK;
    unsigned facts = 0;
    uint8_t *plaintext = (uint8_t *)malloc(n);
    char *out = (char *)malloc(PASARELA_REQUEST_LEN(n)); /* the signature and body of a seal, or a whole request */
    pasarela_workspace ws;
    random_json(&t, 0, 1);
    random_bytes(iv, sizeof iv);
    random_bytes(ct, sizeof ct);
    memset(&ws, 0, sizeof ws);
    ws.plaintext_cap = PASARELA_JSON_OUT_MAX(t.len) + 64;
    ws.scratch_cap = PASARELA_WORKSPACE_SCRATCH_SIZE(t.len + 64 > n ? t.len + 64 : n); /* the JSON, or plaintext */
    ws.out_cap = PASARELA_REQUEST_LEN(ws.plaintext_cap);
    ws.plaintext = (uint8_t *)malloc(ws.plaintext_cap);
    ws.scratch = malloc(ws.scratch_cap);
    ws.out = (char *)malloc(ws.out_cap);
    if (plaintext == NULL || out == NULL || ws.plaintext == NULL || ws.scratch == NULL || ws.out == NULL) {
        check(0, "malloc", round);
    } else {
        random_object_bytes(plaintext, n);
        check(seal_check_seal(&c, 1700000000, plaintext, n, iv, out, PASARELA_SEALED_LEN(n), &len) ==
                  PASARELA_E_NO_HW_AES && len == 0,
              "no AES: seal refused", round);
        check(pasarela_seal_json(&c, &ws, 1700000000, (const uint8_t *)json, t.len, 0, iv) == PASARELA_E_NO_HW_AES,
              "no AES: seal_json refused", round);
        check(pasarela_seal_json_batch(batch_credentials, 1700000000, (const uint8_t *)json, &t.len, 1, 0, iv, &ws,
                                       &status, &plaintext_len, &out_len, &facts) <= 1 &&
                  status == PASARELA_E_NO_HW_AES && out_len == 0,
              "no AES: seal_json_batch refused", round);
        char *const outs[1] = {out};
        status = PASARELA_OK;
        check(pasarela_seal_batch(batch_credentials, 1700000000, plaintext, &n, 1, iv, &ws, outs, &status) == 1 &&
                  status == PASARELA_E_NO_HW_AES,
              "no AES: seal_batch refused", round);
        pasarela_hex_encode(iv, sizeof iv, data);
        data[32] = ':';
        pasarela_hex_encode(ct, sizeof ct, data + 33);
        memset(signature, '0', sizeof signature);
        check(pasarela_open(&c, &ws, 1700000000, data, sizeof data, signature) == PASARELA_E_NO_HW_AES,
              "no AES: open refused", round);
    }
    free(ws.out);
    free(ws.scratch);
    free(ws.plaintext);
    free(out);
    free(plaintext);
}

int main(int argc, char **argv)
{
    unsigned long long seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    unsigned long long rounds = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000;
    unsigned cpu = pasarela_cpu_features();
    g_state = seed;
    if (!(cpu & PASARELA_CPU_AES_ANY)) {
        for (unsigned long long round = 0; round < rounds; round++)
            test_refusals(cpu, round);
        printf("seed %llu, %llu rounds, cpu features 0x%x: no AES instructions, every entry point refused\n", seed,
               rounds, cpu);
        printf("output digest: none (no AES instructions: the Python reference seals)\n");
        printf("%ld passed, %ld failed\n", g_pass, g_fail);
        return g_fail != 0;
    }
    pasarela_sha512_init(&g_outputs, 0);
    test_known_answers(cpu);
#ifdef PASARELA_CPU_AVX2
    test_known_answers(cpu & ~PASARELA_CPU_AVX2);
#endif
    for (unsigned long long round = 0; round < rounds; round++) {
        test_seal_round_trip(cpu, round);
        test_seal_json_round_trip(cpu, round);
    }
    printf("seed %llu, %llu rounds, cpu features 0x%x\n", seed, rounds, cpu);
    {
        uint8_t digest[64];
        char hex[129];
        pasarela_sha512_final(&g_outputs, digest);
        pasarela_hex_encode(digest, sizeof digest, hex);
        hex[128] = '\0';
        printf("output digest: %s\n", hex);
    }
    printf("%ld passed, %ld failed\n", g_pass, g_fail);
    return g_fail != 0;
}
