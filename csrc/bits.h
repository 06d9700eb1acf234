/* Bit-level helpers of the scans of public text, and the vector instruction sets those scans use: shared by the
 * core (through internal.h) and the CPython entry points (csrc/cpython/json_bytes.h), which see nothing else of the
 * core but pasarela.h. No declarations, nothing to link: only macros and static inline functions. */
#ifndef PASARELA_BITS_H
#define PASARELA_BITS_H

#include <stdint.h>

/* The vector instruction sets of the scans of JSON text (json.c, json_checked.c, utf8.c, byte_classes.h and
 * cpython/json_bytes.h): SSE2 is part of x86-64 (and of the x86 targets MSVC builds with /arch:SSE2), NEON of
 * AArch64, so neither is checked at run time; x86-64 builds by GCC or Clang also have AVX2 and AVX-512 BW instances
 * (target attributes), which the cpu bits choose at run time. */
#if (defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)) && !defined(_M_ARM64EC)
#define PASARELA_SSE2 1
#elif defined(__aarch64__) || defined(_M_ARM64)
#define PASARELA_NEON 1
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PASARELA_X86_WIDE 1
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

/* The index of the lowest set bit of a mask that has one. */
static inline unsigned pasarela_lowest_bit(unsigned m) {
#if defined(_MSC_VER) && !defined(__clang__)
    unsigned long i;
    _BitScanForward(&i, m);
    return (unsigned)i;
#else
    return (unsigned)__builtin_ctz(m);
#endif
}
static inline unsigned pasarela_lowest_bit64(uint64_t m) {
#if defined(_MSC_VER) && !defined(__clang__)
    unsigned long i;
#if defined(_M_X64)
    _BitScanForward64(&i, m);
#else
    if (!_BitScanForward(&i, (unsigned long)m)) {
        _BitScanForward(&i, (unsigned long)(m >> 32));
        i += 32;
    }
#endif
    return (unsigned)i;
#else
    return (unsigned)__builtin_ctzll(m);
#endif
}

/* The value of the hex digit c (either case), or -1: for public text (JSON's \u escapes). Secret hex goes through
 * hex.c, in time that does not depend on the digits. */
static inline int pasarela_hex_digit(unsigned c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

/* Bit i of the result: the xor of bits 0..i of x (json.c and json_checked.c: where strings are, from the quotes of
 * a 64-byte block). */
static inline uint64_t pasarela_prefix_xor(uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

#endif
