/*
 * Fuzz target: pasarela_hex_decode (the IV and ciphertext of an incoming "data" field).
 * Input: the text to decode. Oracle: a plain decoder written here.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = (char *)fuzz_copy(data, size);
    uint8_t *out = (uint8_t *)fuzz_alloc(size / 2);
    int valid = size % 2 == 0;
    for (size_t i = 0; i < size && valid; i++)
        valid = nibble(data[i]) >= 0;

    int rc = pasarela_hex_decode(text, size, out);
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
    free(text);
    return 0;
}
