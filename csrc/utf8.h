/* UTF-8 well-formedness (Unicode 3.9, table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), which
 * json.c's string scans, json_checked.c's check and open.c's refusal ask. Not part of the public API. */
#ifndef PASARELA_UTF8_H
#define PASARELA_UTF8_H

#include "internal.h"

/* Length of the well-formed UTF-8 sequence at in[0..avail) (avail >= 1), or 0 when it is not one. Inline: json.c
 * calls it on every non-ASCII character of a string it copies. */
static inline size_t pasarela_utf8_sequence(const uint8_t *in, size_t avail) {
    uint8_t c = in[0];
    if (c >= 0xC2 && c <= 0xDF) return (avail >= 2 && (in[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (avail < 3 || (in[1] & 0xC0) != 0x80 || (in[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && in[1] < 0xA0) return 0;
        if (c == 0xED && in[1] >= 0xA0) return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (avail < 4 || (in[1] & 0xC0) != 0x80 || (in[2] & 0xC0) != 0x80 || (in[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && in[1] < 0x90) return 0;
        if (c == 0xF4 && in[1] >= 0x90) return 0;
        return 4;
    }
    return 0;
}

/* utf8.c: offset of the first byte of in[0..n) that does not start a well-formed UTF-8 sequence, or n. */
PASARELA_INTERNAL size_t pasarela_utf8_invalid_at(const uint8_t *in, size_t n);

#endif
