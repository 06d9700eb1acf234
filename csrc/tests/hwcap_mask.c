/*
 * hwcap_mask.c — test support for AArch64 Linux only: runs the drivers as on a core without the Crypto
 * Extensions. QEMU 7.2 (Debian 12) has no AArch64 CPU model without AES and no property to remove it, so
 * this stands in for the kernel's report instead: linked with -Wl,--wrap=getauxval, it clears the bits
 * of PASARELA_TEST_HWCAP_CLEAR (a number, e.g. 0x8 for HWCAP_AES) from getauxval(AT_HWCAP), the only
 * input csrc/cpu.c reads there. scripts/hardening also checks QEMU's instruction trace (-d in_asm) of such
 * a run for AES instructions: there must be none.
 */
#include <stdlib.h>
#include <sys/auxv.h>

unsigned long __real_getauxval(unsigned long type);
unsigned long __wrap_getauxval(unsigned long type);

unsigned long __wrap_getauxval(unsigned long type)
{
    unsigned long value = __real_getauxval(type);
    const char *clear = getenv("PASARELA_TEST_HWCAP_CLEAR");
    if (type == AT_HWCAP && clear != NULL)
        value &= ~strtoul(clear, NULL, 0);
    return value;
}
