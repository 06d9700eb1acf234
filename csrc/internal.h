/* Declarations shared between the C files of pasarela; not part of the public API. */
#ifndef PASARELA_INTERNAL_H
#define PASARELA_INTERNAL_H

#include "pasarela.h"

#if defined(__GNUC__) || defined(__clang__)
#define PASARELA_INTERNAL __attribute__((visibility("hidden")))
#else
#define PASARELA_INTERNAL
#endif

/* util.c: a wipe the compiler cannot remove. */
PASARELA_INTERNAL void pasarela_wipe(void *p, size_t n);

/* base64.c: Base64 of public bytes with a table (pasarela_base64_encode is the constant-time one). */
PASARELA_INTERNAL size_t pasarela_base64_encode_public(const uint8_t *in, size_t n, char *out);

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
PASARELA_INTERNAL void pasarela_sha512_init(pasarela_sha512_ctx *ctx, unsigned cpu);
PASARELA_INTERNAL void pasarela_sha512_update(pasarela_sha512_ctx *ctx, const uint8_t *in, size_t n);
PASARELA_INTERNAL void pasarela_sha512_final(pasarela_sha512_ctx *ctx, uint8_t out[64]); /* wipes ctx */

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

/* json.c: pasarela_json_canonicalize that also reports whether the top-level object has a "key" member. */
PASARELA_INTERNAL int pasarela_json_canonicalize_object(const uint8_t *in, size_t n, unsigned flags, uint8_t *out,
                                                        size_t out_cap, size_t *out_len, void *scratch,
                                                        size_t scratch_cap, size_t *error_offset,
                                                        int *top_level_key);

/* envelope.c: the per-request secrets (spec 5.1 steps 3, 4, 6) and the signature (step 5). */
typedef struct pasarela_derived {
    char password[PASARELA_PASSWORD_HEX_LEN];
    char encoded_key[PASARELA_ENCODED_KEY_LEN];
    uint8_t aes_key[PASARELA_AES_KEY_LEN];
} pasarela_derived;
PASARELA_INTERNAL int pasarela_derive_secrets(const pasarela_credentials *c, uint64_t timestamp, pasarela_derived *d);
/* hex SHA-512 of Base64 of the canonical plaintext with ,"key":"<encodedKey>" spliced before its final brace */
PASARELA_INTERNAL void pasarela_sign(unsigned cpu, const uint8_t *plaintext, size_t n, const pasarela_derived *d,
                                     char signature_hex[PASARELA_SIGNATURE_HEX_LEN]);

#endif
