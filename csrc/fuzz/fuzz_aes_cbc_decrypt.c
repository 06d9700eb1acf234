/*
 * Fuzz target: pasarela_aes256_cbc_decrypt with arbitrary key, IV, ciphertext and padding.
 *
 * Input: key[32] iv[16] selector, then the ciphertext. Selector bit 0: pass cpu = 0 (no AES
 * instructions: PASARELA_E_NO_HW_AES); bit 1: an output buffer one byte short.
 * Oracles: the length rules; the raw CBC decryption of the same blocks (internal block function)
 * decides whether the PKCS#7 padding is valid; a success re-encrypts to the same ciphertext.
 */
#include "fuzz.h"

static int pkcs7_valid(const uint8_t *plain, size_t n)
{
    uint8_t p = plain[n - 1];
    if (p == 0 || p > 16)
        return 0;
    for (size_t i = 1; i <= p; i++)
        if (plain[n - i] != p)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    uint8_t key[32], iv[16];
    fuzz_fill(&r, key, sizeof key);
    fuzz_fill(&r, iv, sizeof iv);
    uint8_t selector = fuzz_u8(&r);
    unsigned cpu = (selector & 1) ? 0u : fuzz_cpu();
    size_t n = r.size;
    uint8_t *ciphertext = fuzz_copy(r.data, n);
    size_t out_cap = (selector & 2) && n > 0 ? n - 1 : n;
    uint8_t *out = (uint8_t *)fuzz_alloc(out_cap);
    size_t out_len = 12345;

    int rc = pasarela_aes256_cbc_decrypt(cpu, key, iv, ciphertext, n, out, out_cap, &out_len);
    if (rc != PASARELA_OK)
        FUZZ_CHECK(out_len == 0);
    if (n == 0 || n % 16 != 0) {
        FUZZ_CHECK(rc == PASARELA_E_BAD_LENGTH);
    } else if (out_cap < n) {
        FUZZ_CHECK(rc == PASARELA_E_BUFFER_TOO_SMALL);
    } else if (!(cpu & PASARELA_CPU_AES_ANY)) {
        FUZZ_CHECK(rc == PASARELA_E_NO_HW_AES);
    } else {
        pasarela_aes256_schedule ks;
        uint8_t chain[16];
        uint8_t *plain = (uint8_t *)fuzz_alloc(n);
        FUZZ_CHECK(pasarela_aes256_expand(cpu, key, &ks) == PASARELA_OK);
        memcpy(chain, iv, sizeof chain);
        pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain, ciphertext, n / 16, plain);
        if (pkcs7_valid(plain, n)) {
            FUZZ_CHECK(rc == PASARELA_OK);
            FUZZ_CHECK(out_len == n - plain[n - 1]);
            FUZZ_CHECK(memcmp(out, plain, out_len) == 0);
            uint8_t *again = (uint8_t *)fuzz_alloc(n);
            size_t again_len = 0;
            FUZZ_CHECK(pasarela_aes256_cbc_encrypt(cpu, key, iv, out, out_len, again, n, &again_len) == PASARELA_OK);
            FUZZ_CHECK(again_len == n && memcmp(again, ciphertext, n) == 0);
            free(again);
        } else {
            FUZZ_CHECK(rc == PASARELA_E_BAD_PADDING);
            for (size_t i = 0; i < n; i++) /* nothing of a refused plaintext is left behind */
                FUZZ_CHECK(out[i] == 0);
        }
        free(plain);
    }
    free(out);
    free(ciphertext);
    return 0;
}
