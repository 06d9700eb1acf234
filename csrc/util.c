/* util.c — secure wipe, constant-time comparison, status strings, version. */

/* Feature macros must precede every #include: they expose explicit_bzero (glibc >= 2.25,
 * under _DEFAULT_SOURCE) and memset_s (C11 Annex K, Apple) in <string.h>. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif
#ifndef __STDC_WANT_LIB_EXT1__
#define __STDC_WANT_LIB_EXT1__ 1
#endif

#include <string.h>

#include "internal.h"

#ifndef PASARELA_VERSION
#error "PASARELA_VERSION must be defined by the build"
#endif

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
#define PASARELA_HAVE_EXPLICIT_BZERO 1
#elif defined(__OpenBSD__)
#define PASARELA_HAVE_EXPLICIT_BZERO 1
#elif defined(__STDC_LIB_EXT1__) || defined(__APPLE__)
#define PASARELA_HAVE_MEMSET_S 1
#endif

#if !defined(PASARELA_HAVE_EXPLICIT_BZERO) && !defined(PASARELA_HAVE_MEMSET_S)
/* The compiler cannot assume this still points to memset when it is called, so it cannot drop
 * the call. const volatile: not mutable state. */
static void *(*const volatile pasarela_memset_fn)(void *, int, size_t) = memset;
#endif

void pasarela_wipe(void *p, size_t n)
{
    if (p == NULL || n == 0) {
        return;
    }
#if defined(PASARELA_HAVE_EXPLICIT_BZERO)
    explicit_bzero(p, n);
#elif defined(PASARELA_HAVE_MEMSET_S)
    (void)memset_s(p, (rsize_t)n, 0, (rsize_t)n);
#else
    pasarela_memset_fn(p, 0, n);
#endif
#if defined(__GNUC__) || defined(__clang__)
    /* Compiler barrier: the zeroed memory is considered read. */
    __asm__ __volatile__("" : : "r"(p) : "memory");
#endif
}

int pasarela_ct_equal(const void *a, const void *b, size_t n)
{
    const uint8_t *x = (const uint8_t *)a;
    const uint8_t *y = (const uint8_t *)b;
    uint64_t diff = 0;
    size_t i = 0;

    /* eight bytes at a time, every byte read whatever the differences: no early exit */
    for (; i + 8 <= n; i += 8) {
        uint64_t u, v;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        diff |= u ^ v;
#if defined(__GNUC__) || defined(__clang__)
        __asm__("" : "+r"(diff)); /* the compiler cannot know diff stays non-zero: no short circuit */
#endif
    }
    for (; i < n; i++) {
        diff |= (uint64_t)(x[i] ^ y[i]);
    }
    {
        volatile uint64_t sink = diff; /* and none after the loop either */
        diff = sink;
    }
    diff |= diff >> 32;
    diff |= diff >> 16;
    diff |= diff >> 8;
    /* ((diff & 0xFF) - 1) >> 8 has bit 0 set only when diff == 0. */
    return (int)((((uint32_t)(diff & 0xFFu)) - 1u) >> 8 & 1u);
}

const char *pasarela_strerror(int status)
{
    switch (status) {
    case PASARELA_OK:
        return "success";
    case PASARELA_E_INVALID_ARGUMENT:
        return "invalid argument (NULL pointer or inconsistent lengths)";
    case PASARELA_E_BUFFER_TOO_SMALL:
        return "output buffer too small";
    case PASARELA_E_TIMESTAMP:
        return "timestamp is not 10 decimal digits of seconds";
    case PASARELA_E_NO_HW_AES:
        return "no hardware AES on this CPU";
    case PASARELA_E_JSON_SYNTAX:
        return "input is not JSON text";
    case PASARELA_E_JSON_UNSUPPORTED:
        return "JSON not supported by the C canonicalizer";
    case PASARELA_E_JSON_NOT_OBJECT:
        return "payload is not a JSON object";
    case PASARELA_E_JSON_UNSAFE_INTEGER:
        return "integer literal outside the safe range +-(2^53-1)";
    case PASARELA_E_KEY_MEMBER:
        return "payload already has a top-level \"key\" member";
    case PASARELA_E_BAD_HEX:
        return "malformed hex data";
    case PASARELA_E_BAD_LENGTH:
        return "ciphertext is empty or not a multiple of 16 bytes";
    case PASARELA_E_BAD_PADDING:
        return "bad PKCS#7 padding";
    case PASARELA_E_SIGNATURE:
        return "signature does not match";
    case PASARELA_E_IV_POOL_EMPTY:
        return "no IV given and the workspace's IV pool is empty";
    case PASARELA_E_JSON_NOT_UTF8:
        return "decrypted text is not UTF-8";
    case PASARELA_E_TOO_LARGE:
        return "input too large: its buffer sizes would overflow size_t";
    case PASARELA_E_PROTO_MEMBER:
        return "payload has a top-level \"__proto__\" member";
    case PASARELA_E_REQUEST_FORM:
        return "request headers or body not in the form seal writes, or timestamp outside the window";
    case PASARELA_SIGNED_AS_SENT:
        return "signature matches the decrypted text as sent, whose canonical form the caller must confirm";
    default:
        return "unknown status";
    }
}

const char *pasarela_version(void)
{
    return PASARELA_VERSION;
}
