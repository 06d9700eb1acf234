/* Declarations shared between the C files of pasarela; not part of the public API. */
#ifndef PASARELA_INTERNAL_H
#define PASARELA_INTERNAL_H

#include "bits.h"
#include "pasarela.h"

/* PE/COFF (Windows) exports only what is marked dllexport: nothing to hide there, and mingw-w64's
 * gcc warns that the attribute is ignored. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32) && !defined(__CYGWIN__)
#define PASARELA_INTERNAL __attribute__((visibility("hidden")))
#else
#define PASARELA_INTERNAL
#endif

/* util.c: a wipe the compiler cannot remove. */
PASARELA_INTERNAL void pasarela_wipe(void *p, size_t n);

/* base64.c: Base64 of public bytes: AVX-512BW or AVX2 as cpu allows, else a table (pasarela_base64_encode
 * is the constant-time one, for secret-derived bytes). */
PASARELA_INTERNAL size_t pasarela_base64_encode_public(unsigned cpu, const uint8_t *in, size_t n, char *out);
/* base64.c: pasarela_base64_encode's output, in time that depends on n only, with AVX2 for the whole 3-byte groups
 * from 24 bytes on when cpu has PASARELA_CPU_AVX2 (x86-64): for secret-derived bytes (the key tail of a signed
 * text). */
PASARELA_INTERNAL size_t pasarela_base64_encode_secret(unsigned cpu, const uint8_t *in, size_t n, char *out);

/* hex.c: pasarela_hex_encode / pasarela_hex_decode with AVX2 when cpu has PASARELA_CPU_AVX2 (x86-64), else the
 * portable code; the same output and the same refusals either way, in time that depends on n only. */
PASARELA_INTERNAL void pasarela_hex_encode_cpu(unsigned cpu, const uint8_t *in, size_t n, char *out);
PASARELA_INTERNAL int pasarela_hex_decode_cpu(unsigned cpu, const char *in, size_t n, uint8_t *out);

/* json.c: pasarela_json_array_items a byte at a time (targets without SSE2 or NEON use it; elsewhere the fuzz
 * target and test_roundtrip hold the 64-bytes-at-a-time scan to it). */
PASARELA_INTERNAL size_t pasarela_json_array_items_portable(const uint8_t *json, size_t n, uint8_t *items,
                                                            size_t *lens, size_t max_items);

/* json_checked.c: 1 (and *facts, the token by token pass's) when in[0, n) is a JSON object that is exactly what
 * JSON.stringify(JSON.parse(in)) writes, with no top-level "key" or "__proto__" member, found 64 bytes at a time
 * (AVX2 when cpu has it, else SSE2; other targets always 0); 0 when it is not known to be (the token by token pass
 * decides). scratch: 8-byte aligned, PASARELA_JSON_SCRATCH_SIZE(n) bytes (less: 0). */
PASARELA_INTERNAL int pasarela_json_checked_canonical(unsigned cpu, const uint8_t *in, size_t n, void *scratch,
                                                      size_t scratch_cap, unsigned *facts);

/* json.c: pasarela_json_canonicalize with the CPU features of cpu for its check of text that is already
 * canonical (on x86 AVX-512 BW or AVX2 when cpu has them, else SSE2, which the public function uses; NEON on
 * AArch64). */
PASARELA_INTERNAL int pasarela_json_canonicalize_cpu(unsigned cpu, const uint8_t *in, size_t n, unsigned flags,
                                                     uint8_t *out, size_t out_cap, size_t *out_len, void *scratch,
                                                     size_t scratch_cap, size_t *error_offset, unsigned *facts);

/* md5.c: streaming MD5 (RFC 1321). */
typedef struct pasarela_md5_ctx {
    uint32_t state[4];
    uint64_t length;          /* bytes processed */
    uint8_t block[64];
    size_t used;              /* bytes pending in block */
} pasarela_md5_ctx;
PASARELA_INTERNAL void pasarela_md5_init(pasarela_md5_ctx *ctx);
PASARELA_INTERNAL void pasarela_md5_update(pasarela_md5_ctx *ctx, const uint8_t *in, size_t n);
PASARELA_INTERNAL void pasarela_md5_final(pasarela_md5_ctx *ctx, uint8_t out[16]); /* wipes ctx */

/* sha512.c: streaming SHA-512 (FIPS 180-4). */
typedef struct pasarela_sha512_ctx {
    uint64_t state[8];
    uint64_t length;          /* bytes processed (payloads < 2^61 bytes) */
    uint8_t block[128];
    size_t used;
    unsigned cpu;             /* pasarela_cpu_features() bits: selects the block function */
} pasarela_sha512_ctx;
PASARELA_INTERNAL extern const uint64_t pasarela_sha512_k[80]; /* the round constants */
PASARELA_INTERNAL void pasarela_sha512_init(pasarela_sha512_ctx *ctx, unsigned cpu);
PASARELA_INTERNAL void pasarela_sha512_update(pasarela_sha512_ctx *ctx, const uint8_t *in, size_t n);
PASARELA_INTERNAL void pasarela_sha512_final(pasarela_sha512_ctx *ctx, uint8_t out[64]); /* wipes ctx */
/* nblocks whole 128-byte blocks at p into state, with the block function cpu selects (no padding, no
 * length bookkeeping; the caller wipes state). */
PASARELA_INTERNAL void pasarela_sha512_blocks(unsigned cpu, uint64_t state[8], const uint8_t *p, size_t nblocks);
/* sha512_many.c: SHA-512 of n independent messages, digests + 64 * i receiving that of msgs[i] (lens[i]
 * bytes; msgs[i] may be NULL when lens[i] is 0). 8 messages side by side when cpu has PASARELA_CPU_AVX512,
 * 4 with PASARELA_CPU_AVX2, else one after another. Wipes its message-derived temporaries. */
PASARELA_INTERNAL void pasarela_sha512_many(unsigned cpu, const uint8_t *const *msgs, const size_t *lens, size_t n,
                                            uint8_t *digests);
/* Whether pasarela_sha512_many hashes these n messages side by side (else it hashes them one by one). */
PASARELA_INTERNAL int pasarela_sha512_many_side_by_side(unsigned cpu, const size_t *lens, size_t n);

/* aes.c: AES-256 with hardware instructions only. The key schedule is secret: wipe it. */
typedef struct pasarela_aes256_schedule {
    uint8_t round_keys[2 * 15 * 16];   /* encryption keys, then decryption keys (inverse-mixed) */
} pasarela_aes256_schedule;
/* Both return PASARELA_E_NO_HW_AES when cpu has no usable AES instructions. */
PASARELA_INTERNAL int pasarela_aes256_expand(unsigned cpu, const uint8_t key[32], pasarela_aes256_schedule *ks);
/* CBC over whole blocks; iv is updated to the last ciphertext block so calls can be chained. */
PASARELA_INTERNAL void pasarela_aes256_cbc_encrypt_blocks(unsigned cpu, const pasarela_aes256_schedule *ks,
                                                          uint8_t iv[16], const uint8_t *in, size_t nblocks,
                                                          uint8_t *out);
PASARELA_INTERNAL void pasarela_aes256_cbc_decrypt_blocks(unsigned cpu, const pasarela_aes256_schedule *ks,
                                                          uint8_t iv[16], const uint8_t *in, size_t nblocks,
                                                          uint8_t *out);

/* aes_many.c: several AES-256-CBC-PKCS#7 encryptions at once. One job: len bytes at in ->
 * PASARELA_CIPHERTEXT_LEN(len) bytes at out (the final block carries the padding, 1..16 bytes). */
typedef struct pasarela_cbc_job {
    const pasarela_aes256_schedule *ks;
    const uint8_t *iv;    /* 16 bytes */
    const uint8_t *in;
    size_t len;
    uint8_t *out;
} pasarela_cbc_job;
/* Runs n jobs, up to 8 chains interleaved with AES-NI on x86 (keys may differ per job; when a chain ends,
 * the next pending job takes its slot). Results identical to running them one by one (jobs must not
 * overlap each other; in == out within a job is fine). ARM/no-AES builds: one after another with
 * pasarela_aes256_cbc_encrypt_blocks. Wipes the padded last blocks and key registers. */
PASARELA_INTERNAL void pasarela_aes256_cbc_encrypt_many(unsigned cpu, const pasarela_cbc_job *jobs, size_t n);
/* sha512.c: digest = SHA-512(msg, len) while running job (one CBC-PKCS#7 encryption) interleaved with the
 * hash rounds, so the AES latency hides under the SHA-512 arithmetic (x86-64 with PASARELA_CPU_AVX2 and
 * PASARELA_CPU_AES_X86; otherwise the hash, then the job). Results identical to pasarela_sha512 + the
 * job alone. */
PASARELA_INTERNAL void pasarela_sha512_with_cbc(unsigned cpu, const uint8_t *msg, size_t len, uint8_t digest[64],
                                                const pasarela_cbc_job *job);

/* envelope.c: the per-request secrets (spec 5.1 steps 3, 4, 6) and the signature (step 5). */
typedef struct pasarela_derived {
    char password[PASARELA_PASSWORD_HEX_LEN];
    char encoded_key[PASARELA_ENCODED_KEY_LEN];
    uint8_t aes_key[PASARELA_AES_KEY_LEN];
} pasarela_derived;
PASARELA_INTERNAL int pasarela_derive_secrets(const pasarela_credentials *c, uint64_t timestamp, pasarela_derived *d);
/* The signed text ends in the secret ,"key":"<encodedKey>"} (PASARELA_KEY_TAIL_LEN bytes) after the
 * plaintext's brace-less head; a = (head length) % 3 of the head's bytes share the tail's first 3-byte
 * Base64 group, so the Base64 of the tail's rest (from byte 3 - a on) depends on the key and a only. */
#define PASARELA_KEY_TAIL_LEN (8u + PASARELA_ENCODED_KEY_LEN + 2u)
#define PASARELA_KEY_TAIL_BASE64_MAX (4u * ((PASARELA_KEY_TAIL_LEN - 1u + 2u) / 3u))
/* Everything a request needs from (credentials, timestamp). */
typedef struct pasarela_sealing_keys {
    pasarela_derived derived;
    pasarela_aes256_schedule schedule;
    /* key_tails[a] is the Base64 of the tail's rest for alignment a, made when first needed
     * (bit a of key_tails_ready; expanding the keys clears them). Secret: wiped with the keys. */
    unsigned key_tails_ready;
    char key_tails[3][PASARELA_KEY_TAIL_BASE64_MAX];
} pasarela_sealing_keys;
/* hex SHA-512 of Base64 of the canonical plaintext with ,"key":"<encodedKey>" spliced before its final
 * brace; scratch: PASARELA_SEAL_SCRATCH_SIZE(n) bytes (the Base64 text, wiped where secret). The key tail's
 * Base64 comes from keys->key_tails (made when first needed), as a seal's does: copied, not encoded, so the
 * secret part's work is the same whatever the text's length. */
PASARELA_INTERNAL void pasarela_sign(unsigned cpu, const uint8_t *plaintext, size_t n, pasarela_sealing_keys *keys,
                                     void *scratch, char signature_hex[PASARELA_SIGNATURE_HEX_LEN]);
/* *keys = the keys of (c, timestamp): ws's cache when it holds them (or can: c->id != 0 and ws->keys
 * set), else derived into *local, which the caller wipes when *keys == local. */
PASARELA_INTERNAL int pasarela_sealing_keys_for(const pasarela_credentials *c, pasarela_workspace *ws,
                                                uint64_t timestamp, pasarela_sealing_keys *local,
                                                pasarela_sealing_keys **keys);

#endif
