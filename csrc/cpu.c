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

unsigned pasarela_cpu_features(void)
{
#if defined(PAS_CPU_X86)
    unsigned ecx, edx;
#if defined(_MSC_VER)
    int regs[4];
    __cpuid(regs, 0);
    if (regs[0] < 1)
        return 0;
    __cpuid(regs, 1);
    ecx = (unsigned)regs[2];
    edx = (unsigned)regs[3];
#else
    unsigned eax, ebx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    (void)eax;
    (void)ebx;
#endif
    if ((ecx & (1u << 25)) && (edx & (1u << 26)))
        return PASARELA_CPU_AES_X86;
    return 0;
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
