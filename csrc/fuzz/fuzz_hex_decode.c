/*
 * Fuzz target: pasarela_hex_decode_cpu (the IV and ciphertext of an incoming "data" field), on the portable
 * code and, when this CPU has them, on the AVX2 code and on the AVX-512 VBMI one. Input: the text to decode.
 * Oracle: a plain decoder written here. The input is also encoded as bytes on both paths: the same text, which
 * decodes back.
 */
#include "fuzz.h"

static int nibble(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static void check_decode(unsigned cpu, const char *text, const uint8_t *data, size_t size, int valid)
{
    uint8_t *out = (uint8_t *)fuzz_alloc(size / 2);
    int rc = pasarela_hex_decode_cpu(cpu, text, size, out);
    if (valid) {
        FUZZ_CHECK(rc == PASARELA_OK);
        for (size_t i = 0; i < size / 2; i++)
            FUZZ_CHECK(out[i] == (uint8_t)(nibble(data[2 * i]) << 4 | nibble(data[2 * i + 1])));
    } else {
        FUZZ_CHECK(rc == PASARELA_E_BAD_HEX);
        if (size % 2 == 0) /* documented: no partial output on failure */
            for (size_t i = 0; i < size / 2; i++)
                FUZZ_CHECK(out[i] == 0);
    }
    free(out);
}

static void check_encode(unsigned cpu, const uint8_t *bytes, size_t size, const char *portable)
{
    char *text = (char *)fuzz_alloc(2 * size);
    uint8_t *back = (uint8_t *)fuzz_alloc(size);
    pasarela_hex_encode_cpu(cpu, bytes, size, text);
    FUZZ_CHECK(size == 0 || memcmp(text, portable, 2 * size) == 0);
    FUZZ_CHECK(pasarela_hex_decode_cpu(cpu, text, 2 * size, back) == PASARELA_OK);
    FUZZ_CHECK(size == 0 || memcmp(back, bytes, size) == 0);
    free(back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned avx2 = fuzz_cpu() & PASARELA_CPU_AVX2;
    unsigned vbmi = fuzz_cpu() & (PASARELA_CPU_AVX512_VBMI | PASARELA_CPU_AVX2);
    char *text = (char *)fuzz_copy(data, size);
    int valid = size % 2 == 0;
    for (size_t i = 0; i < size && valid; i++)
        valid = nibble(data[i]) >= 0;

    check_decode(0, text, data, size, valid);
    if (avx2)
        check_decode(avx2, text, data, size, valid);
    if (vbmi == (PASARELA_CPU_AVX512_VBMI | PASARELA_CPU_AVX2))
        check_decode(vbmi, text, data, size, valid);

    char *portable = (char *)fuzz_alloc(2 * size);
    pasarela_hex_encode_cpu(0, data, size, portable);
    for (size_t i = 0; i < size; i++)
        FUZZ_CHECK(portable[2 * i] == "0123456789abcdef"[data[i] >> 4] &&
                   portable[2 * i + 1] == "0123456789abcdef"[data[i] & 15]);
    check_encode(0, data, size, portable);
    if (avx2)
        check_encode(avx2, data, size, portable);
    free(portable);
    free(text);
    return 0;
}
