/* Run-time CPU feature detection. No state: the answer is recomputed on every call. */
#include "pasarela.h"

#if (defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)) && !defined(_M_ARM64EC)
#define PAS_CPU_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#elif defined(__aarch64__) || defined(_M_ARM64)
#define PAS_CPU_ARM 1
#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#ifndef PF_ARM_V8_CRYPTO_INSTRUCTIONS_AVAILABLE
#define PF_ARM_V8_CRYPTO_INSTRUCTIONS_AVAILABLE 30
#endif
#elif defined(__APPLE__)
/* Every Apple arm64 core (A7 and later, M1 and later) has the AES instructions. */
#elif defined(__linux__)
#include <sys/auxv.h>
#define PAS_CPU_GETAUXVAL 1
#elif defined(__FreeBSD__)
#include <sys/auxv.h>
#define PAS_CPU_ELF_AUX_INFO 1
#endif
#if (defined(PAS_CPU_GETAUXVAL) || defined(PAS_CPU_ELF_AUX_INFO)) && !defined(HWCAP_AES)
#define HWCAP_AES (1UL << 3)
#endif
#endif

#if defined(PAS_CPU_X86)
/* XCR0 (XGETBV with ECX = 0): which register states the OS saves on context switches. Only
 * called once CPUID reports OSXSAVE, so the instruction exists and is enabled. */
static unsigned long long pas_xgetbv0(void)
{
#if defined(_MSC_VER)
    return (unsigned long long)_xgetbv(0);
#else
    unsigned lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    return ((unsigned long long)hi << 32) | lo;
#endif
}
#endif

#if defined(PAS_CPU_X86)
/* Whether CPUID leaf 0's vendor (EBX, EDX, ECX) is "GenuineIntel". */
static unsigned pas_cpu_is_intel(unsigned ebx, unsigned edx, unsigned ecx)
{
    return ebx == 0x756e6547u && edx == 0x49656e69u && ecx == 0x6c65746eu; /* "Genu" "ineI" "ntel" */
}
#endif

unsigned pasarela_cpu_features(void)
{
#if defined(PAS_CPU_X86)
    unsigned ecx, edx, ebx7 = 0, ecx7 = 0, max_leaf, features = 0, intel;
#if defined(_MSC_VER)
    int regs[4];
    __cpuid(regs, 0);
    if (regs[0] < 1)
        return 0;
    max_leaf = (unsigned)regs[0];
    intel = pas_cpu_is_intel((unsigned)regs[1], (unsigned)regs[3], (unsigned)regs[2]);
    __cpuid(regs, 1);
    ecx = (unsigned)regs[2];
    edx = (unsigned)regs[3];
    if (max_leaf >= 7) {
        __cpuidex(regs, 7, 0);
        ebx7 = (unsigned)regs[1];
        ecx7 = (unsigned)regs[2];
    }
#else
    unsigned eax, ebx;
    max_leaf = (unsigned)__get_cpuid_max(0, NULL);
    if (max_leaf < 1)
        return 0;
    __cpuid(0, eax, ebx, ecx, edx);
    intel = pas_cpu_is_intel(ebx, edx, ecx);
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    if (max_leaf >= 7) {
        unsigned eax7, edx7;
        __cpuid_count(7, 0, eax7, ebx7, ecx7, edx7);
        (void)eax7;
        (void)edx7;
    }
    (void)eax;
    (void)ebx;
#endif
    if ((ecx & (1u << 25)) && (edx & (1u << 26)))
        features |= PASARELA_CPU_AES_X86;
    /* AVX2 (leaf 7 EBX bit 5), BMI1 (bit 3), BMI2 (bit 8), and an OS that saves XMM and YMM
     * state: OSXSAVE (leaf 1 ECX bit 27), AVX (bit 28), XCR0 bits 1 and 2. */
    if ((ecx & (1u << 27)) && (ecx & (1u << 28)) && (ebx7 & (1u << 5)) && (ebx7 & (1u << 3)) &&
        (ebx7 & (1u << 8)) && (pas_xgetbv0() & 6u) == 6u)
        features |= PASARELA_CPU_AVX2;
    /* AVX-512 F (leaf 7 EBX bit 16), BW (bit 30), VL (bit 31), and an OS that saves the opmask and
     * ZMM state too: XCR0 bits 1, 2 (XMM, YMM), 5, 6, 7 (opmask, ZMM0-15 upper halves, ZMM16-31). */
    if ((ecx & (1u << 27)) && (ecx & (1u << 28)) && (ebx7 & (1u << 16)) && (ebx7 & (1u << 30)) &&
        (ebx7 & (1u << 31)) && (pas_xgetbv0() & 0xe6u) == 0xe6u)
        features |= PASARELA_CPU_AVX512;
    /* VAES (leaf 7 ECX bit 9) on 256-bit vectors: the YMM state AVX2 already asks the OS for */
    if ((features & PASARELA_CPU_AVX2) && (features & PASARELA_CPU_AES_X86) && (ecx7 & (1u << 9)))
        features |= PASARELA_CPU_VAES;
    if ((features & PASARELA_CPU_AVX512) && !intel)
        features |= PASARELA_CPU_AVX512_SHORT;
    /* AVX-512 VBMI (leaf 7 ECX bit 1), used on 256-bit vectors: the state AVX-512 already asks the OS for */
    if ((features & PASARELA_CPU_AVX512) && (features & PASARELA_CPU_AVX2) && (ecx7 & (1u << 1)))
        features |= PASARELA_CPU_AVX512_VBMI;
    return features;
#elif defined(PAS_CPU_ARM)
#if defined(_WIN32)
    return IsProcessorFeaturePresent(PF_ARM_V8_CRYPTO_INSTRUCTIONS_AVAILABLE) ? PASARELA_CPU_AES_ARM : 0;
#elif defined(__APPLE__)
    return PASARELA_CPU_AES_ARM;
#elif defined(PAS_CPU_GETAUXVAL)
    return (getauxval(AT_HWCAP) & HWCAP_AES) ? PASARELA_CPU_AES_ARM : 0;
#elif defined(PAS_CPU_ELF_AUX_INFO)
    {
        unsigned long hwcap = 0;
        if (elf_aux_info(AT_HWCAP, &hwcap, (int)sizeof hwcap) != 0)
            return 0;
        return (hwcap & HWCAP_AES) ? PASARELA_CPU_AES_ARM : 0;
    }
#else
    return 0;
#endif
#else
    return 0;
#endif
}
