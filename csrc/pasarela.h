/*
 * pasarela — signing and encryption core of the terminal request envelope.
 *
 * Contract (argon2 / libsodium style):
 *  - every exported symbol carries the pasarela_ prefix;
 *  - fallible functions return an int status from enum pasarela_status and write
 *    results through out-pointers into caller-owned buffers (no heap allocation);
 *  - no mutable global state: every function may run concurrently on any thread
 *    (cffi releases the GIL). CPU features are detected by pasarela_cpu_features()
 *    and passed back in by the caller;
 *  - secrets (password, AES key, key schedule, hash states) are wiped before return.
 */
#ifndef PASARELA_H
#define PASARELA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pasarela_status {
    PASARELA_OK = 0,
    PASARELA_E_INVALID_ARGUMENT = 1,  /* NULL pointer or inconsistent lengths */
    PASARELA_E_BUFFER_TOO_SMALL = 2,  /* an output buffer is smaller than the documented size */
    PASARELA_E_TIMESTAMP = 3,         /* timestamp is not 10 decimal digits of seconds */
    PASARELA_E_NO_HW_AES = 4,         /* CPU has neither AES-NI nor ARMv8 AES: use the reference path */
    PASARELA_E_JSON_SYNTAX = 5,       /* input is not JSON text */
    PASARELA_E_JSON_UNSUPPORTED = 6,  /* valid JSON the C path does not canonicalize (caller falls back) */
    PASARELA_E_JSON_NOT_OBJECT = 7,   /* payload is not a JSON object */
    PASARELA_E_JSON_UNSAFE_INTEGER = 8, /* integer literal outside +-(2^53-1) */
    PASARELA_E_KEY_MEMBER = 9,        /* payload already has a top-level "key" member */
    PASARELA_E_BAD_HEX = 10,          /* data is not <32 hex>:<hex>, or odd/invalid hex */
    PASARELA_E_BAD_LENGTH = 11,       /* ciphertext is empty or not a multiple of 16 bytes */
    PASARELA_E_BAD_PADDING = 12,      /* PKCS#7 padding check failed */
    PASARELA_E_SIGNATURE = 13,        /* signature does not match */
    PASARELA_E_IV_POOL_EMPTY = 14,    /* no IV given and fewer than 16 bytes left in ws->iv_pool: refill it */
    PASARELA_E_JSON_NOT_UTF8 = 15,    /* pasarela_open: the decrypted text is not UTF-8 (ws->error_offset: where) */
    PASARELA_E_TOO_LARGE = 16,        /* an input length whose buffer sizes would not fit in size_t */
    PASARELA_E_PROTO_MEMBER = 17,     /* pasarela_open: the payload has a top-level "__proto__" member */
    PASARELA_E_REQUEST_FORM = 18,     /* pasarela_open_request: a header or the body is not in the form seal writes,
                                         or the timestamp is outside the window (nothing was decrypted) */
    PASARELA_SIGNED_AS_SENT = 19      /* pasarela_open_request_as_sent: not a refusal, nor yet an acceptance: the
                                         signature signs the decrypted text as it was sent, whose canonical form
                                         is the caller's to confirm (see there) */
} pasarela_status;

/* Sizes. */
#define PASARELA_IV_LEN 16
#define PASARELA_IV_SEED_LEN 48   /* pasarela_iv_pool_fill: a 256-bit AES key and a 128-bit nonce */
#define PASARELA_AES_KEY_LEN 32
#define PASARELA_PASSWORD_HEX_LEN 32
#define PASARELA_SIGNATURE_HEX_LEN 128
#define PASARELA_FORMATTED_DATE_LEN 16          /* "YYYY:MM:DD:HH:mm" */
#define PASARELA_ENCODED_KEY_LEN 56             /* Base64(32-hex password + 10-digit timestamp) */
#define PASARELA_CIPHERTEXT_LEN(n) ((((size_t)(n)) / 16u + 1u) * 16u)   /* PKCS#7 always pads */
#define PASARELA_DATA_LEN(n) (2u * PASARELA_IV_LEN + 1u + 2u * PASARELA_CIPHERTEXT_LEN(n))
/* Signed string: the plaintext with ,"key":"<56>" spliced before its final brace. */
#define PASARELA_SIGNED_LEN(n) ((size_t)(n) + 9u + PASARELA_ENCODED_KEY_LEN)
/* JSON canonicalization: worst-case output (a 4-byte number token such as 1e20 can become
 * 21 bytes) and the scratch space used to reorder integer-like keys. */
#define PASARELA_JSON_OUT_MAX(n) (6u * (size_t)(n) + 32u)
#define PASARELA_JSON_SCRATCH_SIZE(n) (16u * (size_t)(n) + 256u)
/* Scratch a seal of an n-byte plaintext uses after canonicalization: the Base64 of the signed text,
 * then the ciphertext (16-byte aligned). */
#define PASARELA_SEAL_SCRATCH_SIZE(n) (4u * (((size_t)(n) + 9u + PASARELA_ENCODED_KEY_LEN + 2u) / 3u) + 16u + \
                                       PASARELA_CIPHERTEXT_LEN(n))
/* A workspace's scratch for JSON input of up to n bytes: enough for both. */
#define PASARELA_WORKSPACE_SCRATCH_SIZE(n) (PASARELA_JSON_SCRATCH_SIZE(n) > \
    PASARELA_SEAL_SCRATCH_SIZE(PASARELA_JSON_OUT_MAX(n)) ? PASARELA_JSON_SCRATCH_SIZE(n) : \
    PASARELA_SEAL_SCRATCH_SIZE(PASARELA_JSON_OUT_MAX(n)))

/* The longest input (JSON text, plaintext, ciphertext) the library takes: up to it every size above is
 * exact in size_t (the largest, PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(n)), is below 18 n + 320) and
 * the canonicalizer's 32-bit member and key counts cannot wrap; functions given a longer one return
 * PASARELA_E_TOO_LARGE (with a 32-bit size_t: above 128 MiB; with a 64-bit one: 4 GiB). Check an
 * untrusted length against it before using the macros, which do not. */
#define PASARELA_MAX_JSON_LEN ((SIZE_MAX - 1024u) / 32u < 0xFFFFFFFFu ? (SIZE_MAX - 1024u) / 32u : (size_t)0xFFFFFFFFu)

/* The size macros as functions, for bindings that cannot expand macros: 0 for a length above
 * PASARELA_MAX_JSON_LEN (pasarela_sealed_len: above PASARELA_JSON_OUT_MAX(PASARELA_MAX_JSON_LEN), the
 * longest canonical text), where the macros would wrap around. */
size_t pasarela_sealed_len(size_t plaintext_len);
size_t pasarela_json_out_max(size_t json_len);
size_t pasarela_json_scratch_size(size_t json_len);
size_t pasarela_workspace_scratch_size(size_t json_len);

/* Flags of pasarela_json_canonicalize. */
#define PASARELA_JSON_SHORTEST_DIGITS 1u
/* Skip the check for text that is already canonical (which then returns it as it is: with
 * PASARELA_JSON_SHORTEST_DIGITS the vector scan below, without it the checked one of json_checked.c) and always
 * take the token by token pass. Same results; for tests and benchmarks. */
#define PASARELA_JSON_NO_SHORTCUT 2u
/* The text is JSON.stringify's already, as pasarela's own writer makes it (csrc/cpython/stringify.c, which
 * declines what it cannot write exactly, and never writes a top-level "key" or "__proto__" member, a NaN's null
 * or a long integer): copied as it is, no facts. Only for that writer's text: other text would be sealed as it
 * is, and a server that canonicalizes it would not verify the signature. */
#define PASARELA_JSON_STRINGIFIED 4u
/* Facts pasarela_json_canonicalize reports about the text (bits of *facts). */
#define PASARELA_JSON_FACT_KEY 1u    /* an object at the top level with a "key" member */
#define PASARELA_JSON_FACT_NULL 2u   /* a null literal somewhere (orjson writes NaN and infinities as null) */
#define PASARELA_JSON_FACT_PROTO 4u  /* an object at the top level with a "__proto__" member (JSON.parse makes
                                        it an own property; whether a server's signed text keeps it depends on
                                        how the server adds key) */
#define PASARELA_JSON_FACT_LONG_INT 8u /* the canonical text has an integer literal of 17 digits or more (from a
                                          number written with a fraction or an exponent): JSON.parse reads it as a
                                          double, which a parser of exact integers may not */
/* Set in ws->json_facts by pasarela_open when it returns PASARELA_E_JSON_UNSUPPORTED for a text whose
 * padding was invalid: the caller's slower path does its work as for any text, then refuses (bad padding). */
#define PASARELA_OPEN_BAD_PADDING 4u

/* CPU feature bits returned by pasarela_cpu_features(). */
#define PASARELA_CPU_AES_X86 1u    /* AES-NI + SSE2 */
#define PASARELA_CPU_AES_ARM 2u    /* ARMv8 Crypto Extensions (AES) */
#define PASARELA_CPU_AES_ANY (PASARELA_CPU_AES_X86 | PASARELA_CPU_AES_ARM)
#define PASARELA_CPU_AVX2 4u        /* x86-64 AVX2 + BMI1 + BMI2 with OS-saved YMM state (SHA-512) */
#define PASARELA_CPU_AVX512 8u      /* x86-64 AVX-512 F+VL+BW with OS-saved ZMM/opmask state (SHA-512 multi-buffer) */
/* With PASARELA_CPU_AVX512: 512-bit vectors pay for short work too (Base64 of a request's signed text).
 * Not set on Intel CPUs, whose cores run slower for a while after 512-bit instructions (a lower clock, and the
 * upper lanes powered up again): a request's few 512-bit Base64 blocks made the whole request, its Python
 * included, about 10% slower there than AVX2's. The 8-lane SHA-512 of batches uses AVX-512 on any of them, and so
 * does the check of a client's text in an open (json_checked.c: compares only, measured faster whole on Intel too). */
#define PASARELA_CPU_AVX512_SHORT 16u
/* With PASARELA_CPU_AVX2: VAES, the AES rounds on 256-bit vectors (two blocks an instruction): CBC decryption of 16
 * blocks or more (a request's ciphertext) at twice AES-NI's rate. Encryption (a chain) gains nothing from it. */
#define PASARELA_CPU_VAES 32u
/* With PASARELA_CPU_AVX512 and PASARELA_CPU_AVX2: AVX-512 VBMI, on 256-bit vectors only (so not Intel's slower
 * AVX-512 clock): hex decoding reads 32 characters' values and validity from a 64-entry byte table in two registers
 * (vpermt2b), where AVX2 takes three pshufb and more: a 16 KiB ciphertext's hex in 0.87 against 1.18 us. */
#define PASARELA_CPU_AVX512_VBMI 64u
/* Every AVX-512 bit: what running this CPU as an AVX2 one clears (PASARELA_NO_AVX512=1). */
#define PASARELA_CPU_AVX512_ALL (PASARELA_CPU_AVX512 | PASARELA_CPU_AVX512_SHORT | PASARELA_CPU_AVX512_VBMI)

const char *pasarela_strerror(int status);
unsigned pasarela_cpu_features(void);
/* The package version this library was compiled for (checked at import). */
const char *pasarela_version(void);

/* ---- primitives (exposed for known-answer tests and the fallback path) ---- */
void pasarela_md5(const uint8_t *in, size_t n, uint8_t out[16]);
/* The portable code (seal and open hash with the credentials' cpu bits, through sha512.c's streaming API). */
void pasarela_sha512(const uint8_t *in, size_t n, uint8_t out[64]);
/* Standard alphabet, padded. Writes 4*ceil(n/3) chars; returns that count. No secret-indexed lookups. */
size_t pasarela_base64_encode(const uint8_t *in, size_t n, char *out);
/* Lowercase; writes 2n chars. No secret-indexed lookups. The portable code (seal and open use AVX2 when the
 * credentials' cpu bits have it: the same bytes). */
void pasarela_hex_encode(const uint8_t *in, size_t n, char *out);
/* Accepts upper- and lowercase; n must be even. Anything else: PASARELA_E_BAD_HEX and n / 2 zero bytes at out. */
int pasarela_hex_decode(const char *in, size_t n, uint8_t *out);
/* PKCS#7: out must hold PASARELA_CIPHERTEXT_LEN(n) bytes. */
int pasarela_aes256_cbc_encrypt(unsigned cpu, const uint8_t key[32], const uint8_t iv[16],
                                const uint8_t *in, size_t n, uint8_t *out, size_t out_cap, size_t *out_len);
/* n a non-zero multiple of 16; out must hold n bytes; *out_len excludes the padding. */
int pasarela_aes256_cbc_decrypt(unsigned cpu, const uint8_t key[32], const uint8_t iv[16],
                                const uint8_t *in, size_t n, uint8_t *out, size_t out_cap, size_t *out_len);
/* Constant-time equality: 1 when equal. */
int pasarela_ct_equal(const void *a, const void *b, size_t n);

/* ---- envelope derivations (section 5.1 of the spec) ---- */
int pasarela_formatted_date(uint64_t timestamp, char out[PASARELA_FORMATTED_DATE_LEN]);
/* password (32 hex), encodedKeyTimestamp (56 Base64 chars), aesKey (32 bytes). Any out may be NULL. */
int pasarela_derive(const uint8_t *business_code, size_t business_code_len,
                    const uint8_t *terminal_serial, size_t terminal_serial_len, uint64_t timestamp,
                    char password_hex[PASARELA_PASSWORD_HEX_LEN],
                    char encoded_key[PASARELA_ENCODED_KEY_LEN],
                    uint8_t aes_key[PASARELA_AES_KEY_LEN]);

/* ---- JSON (JSON.stringify form) ---- */
/* Rewrites JSON text into exactly what JSON.stringify(JSON.parse(text)) gives. With
 * PASARELA_JSON_SHORTEST_DIGITS the caller vouches that the text was written by a serializer that
 * writes shortest round-trip digits, strings escaped as JSON.stringify escapes them, and no duplicate
 * keys (orjson and JavaScript do): numbers are then only re-formatted and strings copied, and text that
 * needs neither (no number to re-format but the ".0" of an integral one, no whitespace, no integer-like
 * key, no "key" or "__proto__" member) is found so with a vector scan (on x86: SSE2 in this function,
 * AVX2 or AVX-512 BW in sealing where the CPU has them; NEON on AArch64; none elsewhere) and copied (without
 * those ".0"); on text that breaks the contract (not JSON) that scan may copy what the token by
 * token pass would refuse (PASARELA_JSON_NO_SHORTCUT skips it). Without it
 * everything is checked (a text that is its own canonical form, as JavaScript's clients write it, is found so
 * 64 bytes at a time, trusting nothing: on x86-64 with SSE2 here, AVX2 when pasarela_open_request opens a
 * request on a CPU that has it; a text it is not sure of, such as one with an escape, goes to the token
 * pass), and numbers with more than 15 significant digits or outside the normal double
 * range give PASARELA_E_JSON_UNSUPPORTED.
 * The result has numbers in Number.prototype.toString form, integer-like keys first in ascending
 * order, strings re-escaped. scratch must be aligned to 8 bytes. Integer literals beyond
 * +-(2^53-1) give PASARELA_E_JSON_UNSAFE_INTEGER; duplicate keys and nesting deeper than 1000 give
 * PASARELA_E_JSON_UNSUPPORTED. *error_offset (may be NULL) is the input offset of the offending
 * token; *facts (may be NULL) receives PASARELA_JSON_FACT_* bits. */
int pasarela_json_canonicalize(const uint8_t *in, size_t n, unsigned flags, uint8_t *out, size_t out_cap,
                               size_t *out_len, void *scratch, size_t scratch_cap, size_t *error_offset,
                               unsigned *facts);

/* The items of the JSON array text json ("[a,b,...]", as a serializer writes a list: whitespace is
 * left inside the items, which the canonicalizer skips) copied back to back into items (at least n
 * bytes), with their lengths in lens: returns how many. 0 when json is not such an array of 1 to
 * max_items non-empty items (a string not closed, a bracket not matched, anything after the final
 * ']'); the items themselves are checked by whoever reads them. Time linear in n. */
size_t pasarela_json_array_items(const uint8_t *json, size_t n, uint8_t *items, size_t *lens, size_t max_items);

/* ---- seal (client side) ---- */
/* A terminal's credentials and the CPU features to use (from pasarela_cpu_features()). The bytes
 * are UTF-8 and stay owned by the caller. id: 0, or a number no other credentials of the process
 * share (never reused, even after these are freed): it lets a workspace keep the keys derived from
 * these credentials for the current timestamp (see pasarela_workspace.keys). */
typedef struct pasarela_credentials {
    const uint8_t *business_code;
    size_t business_code_len;
    const uint8_t *terminal_serial;
    size_t terminal_serial_len;
    unsigned cpu;
    uint64_t id;
} pasarela_credentials;

/* A sealed request as written into ws->out: the plaintext (the canonical JSON that was encrypted and,
 * with the key, signed), then the 128-hex signature, then the POST body {"data":"<iv_hex>:<ct_hex>"}. */
#define PASARELA_SEALED_LEN(n) (PASARELA_SIGNATURE_HEX_LEN + 11u + PASARELA_DATA_LEN(n))  /* signature + body */
#define PASARELA_REQUEST_LEN(n) ((size_t)(n) + PASARELA_SEALED_LEN(n))                     /* plaintext + both */
#define PASARELA_BODY_DATA_OFFSET 9u   /* {"data":" */

/* Caller-owned buffers, reusable across calls (one workspace per thread, never shared). For JSON
 * input of up to n bytes: plaintext_cap >= PASARELA_JSON_OUT_MAX(n), scratch_cap >=
 * PASARELA_WORKSPACE_SCRATCH_SIZE(n) (8-byte aligned), out_cap >= PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(n)).
 * keys (optional, may be NULL): pasarela_key_cache_size() bytes, 8-byte aligned, zeroed before first use;
 * it keeps the secrets derived for the last (credentials id, timestamp) so consecutive requests of a
 * terminal in the same second skip the derivation (and in the same minute, the MD5): wipe it with
 * pasarela_workspace_wipe before freeing. iv_pool (optional): random bytes a seal without an explicit
 * IV takes 16 at a time from iv_pool_used on (the caller refills it, with pasarela_iv_pool_fill or from
 * the OS CSPRNG, and resets it in a forked child). */
typedef struct pasarela_workspace {
    uint8_t *plaintext;
    size_t plaintext_cap;
    void *scratch;
    size_t scratch_cap;
    char *out;
    size_t out_cap;
    void *keys;
    size_t keys_cap;
    const uint8_t *iv_pool;
    size_t iv_pool_len;
    size_t iv_pool_used;
    size_t plaintext_len;   /* results */
    size_t out_len;
    size_t error_offset;
    unsigned json_facts;
} pasarela_workspace;

size_t pasarela_key_cache_size(void);
/* Wipes the derived secrets cached in ws->keys and the scratch space. */
void pasarela_workspace_wipe(pasarela_workspace *ws);
/* Fills pool (len bytes, a positive multiple of 128) with AES-256 output keyed by seed: PASARELA_IV_SEED_LEN
 * bytes fresh from the OS CSPRNG for every fill (never reuse a seed: the same seed gives the same bytes).
 * Eight CBC chains over zero bytes under the seed's key, chain j from its nonce with the last byte XORed
 * with j, each ending in its PKCS#7 block (csrc/ivs.c says why this is as unpredictable as the seed). The
 * key schedule is wiped. PASARELA_E_NO_HW_AES without hardware AES (then fill the pool from the OS),
 * PASARELA_E_INVALID_ARGUMENT for a NULL pointer or another len. */
int pasarela_iv_pool_fill(unsigned cpu, const uint8_t seed[PASARELA_IV_SEED_LEN], uint8_t *pool, size_t len);

/* plaintext: canonical JSON object text (exactly what JSON.stringify writes). Writes the request
 * (PASARELA_REQUEST_LEN(plaintext_len) bytes, not NUL-terminated) to ws->out and sets ws->out_len and
 * ws->plaintext_len. iv: 16 bytes, or NULL for the next 16 bytes of ws->iv_pool. */
int pasarela_seal(const pasarela_credentials *credentials, pasarela_workspace *ws, uint64_t timestamp,
                  const uint8_t *plaintext, size_t plaintext_len, const uint8_t *iv);

/* pasarela_json_canonicalize(json) into the front of ws->out, then pasarela_seal of it. Refuses text
 * that is not an object (PASARELA_E_JSON_NOT_OBJECT) or has a top-level "key" member
 * (PASARELA_E_KEY_MEMBER); ws->json_facts tells whether the text had a null. */
int pasarela_seal_json(const pasarela_credentials *credentials, pasarela_workspace *ws, uint64_t timestamp,
                       const uint8_t *json, size_t json_len, unsigned json_flags, const uint8_t *iv);

/* Many requests in one call (the GIL is released once): item i seals json_lens[i] bytes of the
 * concatenated JSON texts with credentials[i] at timestamp, as pasarela_seal_json would, with the 16
 * bytes at ivs + 16 i, or (ivs NULL) the next 16 bytes of ws->iv_pool: it stops before an item when
 * the pool is empty (refill it and call again for the rest). The requests are written one after another to ws->out; statuses[i],
 * plaintext_lens[i] and out_lens[i] (the request's length; 0 on failure) tell where, facts[i] its
 * PASARELA_JSON_FACT_* bits. Items are sealed in groups of up to 16: their signed texts hashed side by
 * side (8 SHA-512 lanes with AVX-512, 4 with AVX2), their plaintexts encrypted as interleaved CBC chains,
 * one key derivation per (credentials, timestamp) (and with ws->keys, none while it holds them); the
 * group's texts and ciphertexts use ws->plaintext, so an item whose text and ciphertext would not fit
 * there gets PASARELA_E_BUFFER_TOO_SMALL (seal it alone). Stops before an item that might not fit in
 * ws->out and returns how many items it processed: call again with the rest (0 means the workspace is
 * too small for the next item). */
size_t pasarela_seal_json_batch(const pasarela_credentials *const *credentials, uint64_t timestamp,
                                const uint8_t *json, const size_t *json_lens, size_t n, unsigned json_flags,
                                const uint8_t *ivs, pasarela_workspace *ws, int *statuses, size_t *plaintext_lens,
                                size_t *out_lens, unsigned *facts);

/* pasarela_seal for many canonical plaintexts (each exactly what JSON.stringify writes, as pasarela_seal takes
 * it; plaintext_lens[i] bytes of the concatenated plaintexts), each request written to the caller's buffer
 * outs[i] of PASARELA_REQUEST_LEN(plaintext_lens[i]) bytes instead of ws->out: where the caller wants the
 * requests to end up (pasarela._fastcall: the bytes objects that hold them), so none is copied out of the
 * workspace. Otherwise as pasarela_seal_json_batch: the same requests, statuses, IVs (ivs, or the pool, stopping
 * before an item when it is empty) and groups, and it returns how many items it processed (0: the workspace's
 * scratch is too small for the next item, or its pool is empty). A request whose status is not PASARELA_OK
 * leaves outs[i] partly written or not at all; ws->out is not used. */
size_t pasarela_seal_batch(const pasarela_credentials *const *credentials, uint64_t timestamp,
                           const uint8_t *plaintexts, const size_t *plaintext_lens, size_t n, const uint8_t *ivs,
                           pasarela_workspace *ws, char *const *outs, int *statuses);

/* The first of n items of a batch (pasarela_seal_json_batch's statuses and facts) that was not sealed or
 * whose facts have a bit of facts_mask; n when every item was sealed and none has (the caller then takes
 * the batch's requests as they are, without reading its items one by one); 0 when an array is NULL. */
size_t pasarela_batch_first_exception(const int *statuses, const unsigned *facts, size_t n, unsigned facts_mask);

/* ---- open (terminal side) ---- */
/* Decrypts "<iv_hex>:<ct_hex>" with the aesKey of (credentials, timestamp) into out (at least
 * (data_len - 33) / 2 bytes); *out_len excludes the padding. */
int pasarela_decrypt_data(const pasarela_credentials *credentials, uint64_t timestamp, const char *data,
                          size_t data_len, uint8_t *out, size_t out_cap, size_t *out_len);

/* PASARELA_OK when signature_hex (128 lowercase hex chars) is the signature of canonical JSON object
 * text, else PASARELA_E_SIGNATURE. Compared in constant time. ws->scratch must hold
 * PASARELA_SEAL_SCRATCH_SIZE(canonical_len) bytes. */
int pasarela_verify(const pasarela_credentials *credentials, pasarela_workspace *ws, uint64_t timestamp,
                    const uint8_t *canonical, size_t canonical_len, const char *signature_hex);

/* What the JavaScript server does with a request: decrypts data into ws->out (ws->out_len bytes),
 * writes JSON.stringify(JSON.parse(plaintext)) to ws->plaintext (ws->plaintext_len bytes), and
 * verifies signature_hex against it. Buffers as for pasarela_seal_json with n = the ciphertext's
 * length ((data_len - 33) / 2). Unauthenticated CBC: the time taken after decryption does not depend
 * on whether the padding is valid (its length is found without branches, the text checked for UTF-8,
 * canonicalized, signed and the signature compared either way, the status chosen at the end).
 * PASARELA_E_JSON_UNSUPPORTED: the plaintext is in ws->out but its canonical form needs the
 * caller's slower path (then pasarela_verify), which must end in a bad-padding refusal when
 * ws->json_facts has PASARELA_OPEN_BAD_PADDING. PASARELA_E_JSON_NOT_UTF8: the plaintext is not UTF-8
 * (ws->error_offset: its first bad byte). Every other non-OK status is a refusal, and a refusal
 * leaves nothing of the decrypted text in ws->out. */
int pasarela_open(const pasarela_credentials *credentials, pasarela_workspace *ws, uint64_t timestamp,
                  const char *data, size_t data_len, const char *signature_hex);

/* pasarela_open of a POST request read from its two headers and its body, for the common case, in one
 * call: timestamp_text must be 10 ASCII digits within tolerance seconds of now (|timestamp - now| <=
 * tolerance, in doubles), authorization "Basic " and 128 ASCII characters, and the body {"data":"<data>"}.
 * Anything else returns PASARELA_E_REQUEST_FORM before any key is derived: the caller reads the request the
 * slower way, for the precise refusal. Otherwise as pasarela_open of data: data with anything but hex digits
 * and the colon (a JSON escape, a quote) is PASARELA_E_BAD_HEX, which the caller also reads the slower way,
 * as JSON. On PASARELA_OK ws->json_facts holds the canonicalizer's PASARELA_JSON_FACT_* bits of the text. */
int pasarela_open_request(const pasarela_credentials *credentials, pasarela_workspace *ws, const char *timestamp_text,
                          size_t timestamp_len, double now, double tolerance, const char *authorization,
                          size_t authorization_len, const char *body, size_t body_len);

/* pasarela_open_request for a caller that can tell, while it reads the text, whether the text is already its
 * own canonical form (what JavaScript's clients send): after decrypting, it first signs the decrypted text as it
 * was sent, its padding removed (invalid padding counting as none, as pasarela_open counts it), and compares.
 * When that signature matches and the padding is valid it returns PASARELA_SIGNED_AS_SENT, with the text in
 * ws->out (ws->out_len bytes; ws->plaintext_len is 0), without canonicalizing it: the request is genuine if, and
 * only if, that text is JSON.stringify(JSON.parse(text)), a JSON object with neither a top-level "key" nor a
 * top-level "__proto__" member (a text that matches as sent but is not canonical was signed by someone who
 * holds the key yet did not sign what the server checks: the server refuses it). The caller must then confirm
 * exactly that, or, whenever it cannot, call pasarela_open_request for the verdict. When the signature as sent
 * does not match, it goes on exactly as pasarela_open_request (same statuses and workspace): the cost of a
 * refusal is that of pasarela_open_request plus one SHA-512 of the text, whatever the text and its padding. */
int pasarela_open_request_as_sent(const pasarela_credentials *credentials, pasarela_workspace *ws,
                                  const char *timestamp_text, size_t timestamp_len, double now, double tolerance,
                                  const char *authorization, size_t authorization_len, const char *body,
                                  size_t body_len);

#ifdef __cplusplus
}
#endif
#endif /* PASARELA_H */
