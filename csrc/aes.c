/*
 * AES-256 (FIPS 197) in CBC mode with PKCS#7 padding, using hardware instructions only:
 * AES-NI on x86 / x86-64 and the ARMv8 Cryptography Extensions on AArch64. There is no
 * table-based software AES here: without hardware AES every entry point reports
 * PASARELA_E_NO_HW_AES and the caller uses its reference path.
 *
 * Round-key layout (pasarela_aes256_schedule.round_keys), identical on both architectures:
 *   ek[0..14]  encryption round keys in FIPS 197 byte order;
 *   dk[0..14]  decryption keys for the equivalent inverse cipher:
 *              dk[0] = ek[14], dk[i] = InvMixColumns(ek[14 - i]) for i = 1..13, dk[14] = ek[0].
 *
 * The x86 code is compiled only on x86 and the ARM code only on AArch64; each function carries
 * a target attribute on gcc/clang so no -maes / -march flag is needed for this file.
 */
#include "internal.h"

#include <string.h>

#if (defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)) && !defined(_M_ARM64EC)
#define PAS_AES_X86 1
#elif defined(__aarch64__) || defined(_M_ARM64)
#define PAS_AES_ARM 1
#endif

#define PAS_RK(ks, i) ((ks)->round_keys + 16 * (i))
#define PAS_DK(ks, i) ((ks)->round_keys + 16 * (15 + (i)))

/* ======================================================================= x86: AES-NI */
#if defined(PAS_AES_X86)
#include <emmintrin.h>
#include <wmmintrin.h>

#if defined(__GNUC__) || defined(__clang__)
#define PAS_X86 __attribute__((target("aes,sse2")))
#else
#define PAS_X86
#endif

#define PAS_LD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define PAS_ST(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))

/* k ^ (k << 32) ^ (k << 64) ^ (k << 96), then ^ t: the word recurrence of the key expansion. */
#define PAS_X86_MIX(k, t)                                  \
    do {                                                   \
        (k) = _mm_xor_si128((k), _mm_slli_si128((k), 4));  \
        (k) = _mm_xor_si128((k), _mm_slli_si128((k), 4));  \
        (k) = _mm_xor_si128((k), _mm_slli_si128((k), 4));  \
        (k) = _mm_xor_si128((k), (t));                     \
    } while (0)

/* a = next even round key (RotWord + SubWord + Rcon of b's last word), b = next odd round key
 * (SubWord of the new a's last word). */
#define PAS_X86_STEP(i, rcon)                                                      \
    do {                                                                           \
        t = _mm_shuffle_epi32(_mm_aeskeygenassist_si128(b, (rcon)), 0xff);         \
        PAS_X86_MIX(a, t);                                                         \
        PAS_ST(PAS_RK(ks, 2 * (i)), a);                                            \
        if ((i) < 7) {                                                             \
            t = _mm_shuffle_epi32(_mm_aeskeygenassist_si128(a, 0x00), 0xaa);       \
            PAS_X86_MIX(b, t);                                                     \
            PAS_ST(PAS_RK(ks, 2 * (i) + 1), b);                                    \
        }                                                                          \
    } while (0)

static PAS_X86 void x86_expand(const uint8_t key[32], pasarela_aes256_schedule *ks)
{
    __m128i a = PAS_LD(key), b = PAS_LD(key + 16), t;
    int i;
    PAS_ST(PAS_RK(ks, 0), a);
    PAS_ST(PAS_RK(ks, 1), b);
    PAS_X86_STEP(1, 0x01);
    PAS_X86_STEP(2, 0x02);
    PAS_X86_STEP(3, 0x04);
    PAS_X86_STEP(4, 0x08);
    PAS_X86_STEP(5, 0x10);
    PAS_X86_STEP(6, 0x20);
    PAS_X86_STEP(7, 0x40);
    PAS_ST(PAS_DK(ks, 0), PAS_LD(PAS_RK(ks, 14)));
    for (i = 1; i < 14; i++)
        PAS_ST(PAS_DK(ks, i), _mm_aesimc_si128(PAS_LD(PAS_RK(ks, 14 - i))));
    PAS_ST(PAS_DK(ks, 14), PAS_LD(PAS_RK(ks, 0)));
}

/* CBC encryption is serial: keep all 15 round keys in registers. The last round is done twice
 * in parallel: once with ek[14] (the ciphertext block to store) and once with
 * ek[14] ^ ek[0] ^ next plaintext (the next block's state after its first AddRoundKey), which
 * keeps the XORs off the dependency chain. */
static PAS_X86 void x86_cbc_encrypt(const pasarela_aes256_schedule *ks, uint8_t iv[16], const uint8_t *in,
                                    size_t nblocks, uint8_t *out)
{
    const __m128i k0 = PAS_LD(PAS_RK(ks, 0)), k1 = PAS_LD(PAS_RK(ks, 1)), k2 = PAS_LD(PAS_RK(ks, 2));
    const __m128i k3 = PAS_LD(PAS_RK(ks, 3)), k4 = PAS_LD(PAS_RK(ks, 4)), k5 = PAS_LD(PAS_RK(ks, 5));
    const __m128i k6 = PAS_LD(PAS_RK(ks, 6)), k7 = PAS_LD(PAS_RK(ks, 7)), k8 = PAS_LD(PAS_RK(ks, 8));
    const __m128i k9 = PAS_LD(PAS_RK(ks, 9)), k10 = PAS_LD(PAS_RK(ks, 10)), k11 = PAS_LD(PAS_RK(ks, 11));
    const __m128i k12 = PAS_LD(PAS_RK(ks, 12)), k13 = PAS_LD(PAS_RK(ks, 13)), k14 = PAS_LD(PAS_RK(ks, 14));
    const __m128i k14_0 = _mm_xor_si128(k14, k0);
    __m128i s, c = PAS_LD(iv);

    if (nblocks == 0)
        return;
    s = _mm_xor_si128(c, _mm_xor_si128(PAS_LD(in), k0));
    for (;;) {
        s = _mm_aesenc_si128(s, k1);
        s = _mm_aesenc_si128(s, k2);
        s = _mm_aesenc_si128(s, k3);
        s = _mm_aesenc_si128(s, k4);
        s = _mm_aesenc_si128(s, k5);
        s = _mm_aesenc_si128(s, k6);
        s = _mm_aesenc_si128(s, k7);
        s = _mm_aesenc_si128(s, k8);
        s = _mm_aesenc_si128(s, k9);
        s = _mm_aesenc_si128(s, k10);
        s = _mm_aesenc_si128(s, k11);
        s = _mm_aesenc_si128(s, k12);
        s = _mm_aesenc_si128(s, k13);
        c = _mm_aesenclast_si128(s, k14);
        if (--nblocks == 0) {
            PAS_ST(out, c);
            break;
        }
        /* Load the next plaintext before storing: in == out is allowed. */
        s = _mm_aesenclast_si128(s, _mm_xor_si128(k14_0, PAS_LD(in + 16)));
        PAS_ST(out, c);
        in += 16;
        out += 16;
    }
    PAS_ST(iv, c);
}

#define PAS_X86_DEC8(k)                  \
    do {                                 \
        b0 = _mm_aesdec_si128(b0, (k));  \
        b1 = _mm_aesdec_si128(b1, (k));  \
        b2 = _mm_aesdec_si128(b2, (k));  \
        b3 = _mm_aesdec_si128(b3, (k));  \
        b4 = _mm_aesdec_si128(b4, (k));  \
        b5 = _mm_aesdec_si128(b5, (k));  \
        b6 = _mm_aesdec_si128(b6, (k));  \
        b7 = _mm_aesdec_si128(b7, (k));  \
    } while (0)

/* CBC decryption is parallel: 8 blocks in flight. All ciphertext blocks of a group are loaded
 * before any plaintext is stored, so in == out works. */
static PAS_X86 void x86_cbc_decrypt(const pasarela_aes256_schedule *ks, uint8_t iv[16], const uint8_t *in,
                                    size_t nblocks, uint8_t *out)
{
    const __m128i d0 = PAS_LD(PAS_DK(ks, 0)), d14 = PAS_LD(PAS_DK(ks, 14));
    __m128i prev = PAS_LD(iv);
    int r;

    while (nblocks >= 8) {
        const __m128i c0 = PAS_LD(in), c1 = PAS_LD(in + 16), c2 = PAS_LD(in + 32), c3 = PAS_LD(in + 48);
        const __m128i c4 = PAS_LD(in + 64), c5 = PAS_LD(in + 80), c6 = PAS_LD(in + 96), c7 = PAS_LD(in + 112);
        __m128i b0 = _mm_xor_si128(c0, d0), b1 = _mm_xor_si128(c1, d0);
        __m128i b2 = _mm_xor_si128(c2, d0), b3 = _mm_xor_si128(c3, d0);
        __m128i b4 = _mm_xor_si128(c4, d0), b5 = _mm_xor_si128(c5, d0);
        __m128i b6 = _mm_xor_si128(c6, d0), b7 = _mm_xor_si128(c7, d0);
        for (r = 1; r < 14; r++) {
            const __m128i k = PAS_LD(PAS_DK(ks, r));
            PAS_X86_DEC8(k);
        }
        b0 = _mm_xor_si128(_mm_aesdeclast_si128(b0, d14), prev);
        b1 = _mm_xor_si128(_mm_aesdeclast_si128(b1, d14), c0);
        b2 = _mm_xor_si128(_mm_aesdeclast_si128(b2, d14), c1);
        b3 = _mm_xor_si128(_mm_aesdeclast_si128(b3, d14), c2);
        b4 = _mm_xor_si128(_mm_aesdeclast_si128(b4, d14), c3);
        b5 = _mm_xor_si128(_mm_aesdeclast_si128(b5, d14), c4);
        b6 = _mm_xor_si128(_mm_aesdeclast_si128(b6, d14), c5);
        b7 = _mm_xor_si128(_mm_aesdeclast_si128(b7, d14), c6);
        prev = c7;
        PAS_ST(out, b0);
        PAS_ST(out + 16, b1);
        PAS_ST(out + 32, b2);
        PAS_ST(out + 48, b3);
        PAS_ST(out + 64, b4);
        PAS_ST(out + 80, b5);
        PAS_ST(out + 96, b6);
        PAS_ST(out + 112, b7);
        in += 128;
        out += 128;
        nblocks -= 8;
    }
    while (nblocks > 0) {
        const __m128i c = PAS_LD(in);
        __m128i b = _mm_xor_si128(c, d0);
        for (r = 1; r < 14; r++)
            b = _mm_aesdec_si128(b, PAS_LD(PAS_DK(ks, r)));
        b = _mm_xor_si128(_mm_aesdeclast_si128(b, d14), prev);
        prev = c;
        PAS_ST(out, b);
        in += 16;
        out += 16;
        nblocks--;
    }
    PAS_ST(iv, prev);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PAS_AES_VAES 1
#include <immintrin.h>

/* CBC decryption with VAES (PASARELA_CPU_VAES): two blocks a 256-bit instruction, 16 in flight; the rest (fewer
 * than 16 blocks) by x86_cbc_decrypt. As there, a group's ciphertext is read before its plaintext is stored, and
 * the last ciphertext block kept, so in == out works. The key schedule stays in memory (each round key broadcast
 * to both lanes as it is used) and the registers are cleared on return: they held plaintext and round keys. */
static __attribute__((target("vaes,avx2,aes"))) void x86_cbc_decrypt_vaes(const pasarela_aes256_schedule *ks,
                                                                         uint8_t iv[16], const uint8_t *in,
                                                                         size_t nblocks, uint8_t *out)
{
    __m128i prev = PAS_LD(iv);
    int j, r;

    while (nblocks >= 16) {
        __m256i b[8], x[8];
        __m256i k = _mm256_broadcastsi128_si256(PAS_LD(PAS_DK(ks, 0)));
        for (j = 0; j < 8; j++)
            b[j] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(in + 32 * j)), k);
        for (r = 1; r < 14; r++) {
            k = _mm256_broadcastsi128_si256(PAS_LD(PAS_DK(ks, r)));
            for (j = 0; j < 8; j++)
                b[j] = _mm256_aesdec_epi128(b[j], k);
        }
        k = _mm256_broadcastsi128_si256(PAS_LD(PAS_DK(ks, 14)));
        /* each pair of plaintext blocks is xored with the ciphertext blocks before them */
        x[0] = _mm256_inserti128_si256(_mm256_castsi128_si256(prev), PAS_LD(in), 1);
        for (j = 1; j < 8; j++)
            x[j] = _mm256_loadu_si256((const __m256i *)(const void *)(in + 32 * j - 16));
        prev = PAS_LD(in + 240);
        for (j = 0; j < 8; j++)
            _mm256_storeu_si256((__m256i *)(void *)(out + 32 * j), _mm256_xor_si256(_mm256_aesdeclast_epi128(b[j], k),
                                                                                 x[j]));
        in += 256;
        out += 256;
        nblocks -= 16;
    }
    PAS_ST(iv, prev);
    _mm256_zeroall();
    if (nblocks > 0)
        x86_cbc_decrypt(ks, iv, in, nblocks, out);
}
#endif
#endif /* PAS_AES_X86 */

/* ======================================================================= AArch64: ARMv8 CE */
#if defined(PAS_AES_ARM)
#if defined(__clang__) && !defined(__ARM_FEATURE_AES)
/* Older clang (<= 15) declares the AES intrinsics in <arm_neon.h> only when __ARM_FEATURE_AES
 * is defined; the functions below carry target("aes"), so the intrinsics are legal there. */
#define __ARM_FEATURE_AES 1
#endif
#include <arm_neon.h>

#if defined(__clang__)
#define PAS_ARM __attribute__((target("aes")))
#elif defined(__GNUC__)
#define PAS_ARM __attribute__((target("+crypto")))
#else
#define PAS_ARM
#endif

/* k ^ (k << 32) ^ (k << 64) ^ (k << 96) (in byte-lane order, endian-neutral). */
static PAS_ARM uint8x16_t arm_mix(uint8x16_t k)
{
    const uint8x16_t z = vdupq_n_u8(0);
    k = veorq_u8(k, vextq_u8(z, k, 12));
    k = veorq_u8(k, vextq_u8(z, k, 12));
    k = veorq_u8(k, vextq_u8(z, k, 12));
    return k;
}

/* SubWord of a word broadcast into all four columns, so ShiftRows is the identity and
 * AESE with a zero round key is exactly SubBytes: no S-box table. idx picks (and rotates) the
 * last word of v. */
static PAS_ARM uint8x16_t arm_subword(uint8x16_t v, uint8x16_t idx)
{
    return vaeseq_u8(vqtbl1q_u8(v, idx), vdupq_n_u8(0));
}

static PAS_ARM void arm_expand(const uint8_t key[32], pasarela_aes256_schedule *ks)
{
    static const uint8_t rot_idx[16] = {13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15, 12};
    static const uint8_t bc_idx[16] = {12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15};
    static const uint8_t rc_mask[16] = {0xff, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0};
    const uint8x16_t rot = vld1q_u8(rot_idx), bc = vld1q_u8(bc_idx), mask = vld1q_u8(rc_mask);
    uint8x16_t a = vld1q_u8(key), b = vld1q_u8(key + 16), t;
    uint8_t rc = 1;
    int i;

    vst1q_u8(PAS_RK(ks, 0), a);
    vst1q_u8(PAS_RK(ks, 1), b);
    for (i = 1; i <= 7; i++) {
        t = veorq_u8(arm_subword(b, rot), vandq_u8(vdupq_n_u8(rc), mask));
        a = veorq_u8(arm_mix(a), t);
        vst1q_u8(PAS_RK(ks, 2 * i), a);
        if (i < 7) {
            b = veorq_u8(arm_mix(b), arm_subword(a, bc));
            vst1q_u8(PAS_RK(ks, 2 * i + 1), b);
        }
        rc = (uint8_t)(rc << 1);
    }
    vst1q_u8(PAS_DK(ks, 0), vld1q_u8(PAS_RK(ks, 14)));
    for (i = 1; i < 14; i++)
        vst1q_u8(PAS_DK(ks, i), vaesimcq_u8(vld1q_u8(PAS_RK(ks, 14 - i))));
    vst1q_u8(PAS_DK(ks, 14), vld1q_u8(PAS_RK(ks, 0)));
}

/* AESE+AESMC pairs are fused by most cores when adjacent. */
#define PAS_ARM_ER(s, k) (s) = vaesmcq_u8(vaeseq_u8((s), (k)))
#define PAS_ARM_DR(s, k) (s) = vaesimcq_u8(vaesdq_u8((s), (k)))

static PAS_ARM void arm_cbc_encrypt(const pasarela_aes256_schedule *ks, uint8_t iv[16], const uint8_t *in,
                                    size_t nblocks, uint8_t *out)
{
    const uint8x16_t k0 = vld1q_u8(PAS_RK(ks, 0)), k1 = vld1q_u8(PAS_RK(ks, 1)), k2 = vld1q_u8(PAS_RK(ks, 2));
    const uint8x16_t k3 = vld1q_u8(PAS_RK(ks, 3)), k4 = vld1q_u8(PAS_RK(ks, 4)), k5 = vld1q_u8(PAS_RK(ks, 5));
    const uint8x16_t k6 = vld1q_u8(PAS_RK(ks, 6)), k7 = vld1q_u8(PAS_RK(ks, 7)), k8 = vld1q_u8(PAS_RK(ks, 8));
    const uint8x16_t k9 = vld1q_u8(PAS_RK(ks, 9)), k10 = vld1q_u8(PAS_RK(ks, 10));
    const uint8x16_t k11 = vld1q_u8(PAS_RK(ks, 11)), k12 = vld1q_u8(PAS_RK(ks, 12));
    const uint8x16_t k13 = vld1q_u8(PAS_RK(ks, 13)), k14 = vld1q_u8(PAS_RK(ks, 14));
    uint8x16_t c = vld1q_u8(iv);

    while (nblocks > 0) {
        uint8x16_t s = veorq_u8(c, vld1q_u8(in));
        PAS_ARM_ER(s, k0);
        PAS_ARM_ER(s, k1);
        PAS_ARM_ER(s, k2);
        PAS_ARM_ER(s, k3);
        PAS_ARM_ER(s, k4);
        PAS_ARM_ER(s, k5);
        PAS_ARM_ER(s, k6);
        PAS_ARM_ER(s, k7);
        PAS_ARM_ER(s, k8);
        PAS_ARM_ER(s, k9);
        PAS_ARM_ER(s, k10);
        PAS_ARM_ER(s, k11);
        PAS_ARM_ER(s, k12);
        c = veorq_u8(vaeseq_u8(s, k13), k14);
        vst1q_u8(out, c);
        in += 16;
        out += 16;
        nblocks--;
    }
    vst1q_u8(iv, c);
}

#define PAS_ARM_DEC8(k)      \
    do {                     \
        PAS_ARM_DR(b0, (k)); \
        PAS_ARM_DR(b1, (k)); \
        PAS_ARM_DR(b2, (k)); \
        PAS_ARM_DR(b3, (k)); \
        PAS_ARM_DR(b4, (k)); \
        PAS_ARM_DR(b5, (k)); \
        PAS_ARM_DR(b6, (k)); \
        PAS_ARM_DR(b7, (k)); \
    } while (0)

static PAS_ARM void arm_cbc_decrypt(const pasarela_aes256_schedule *ks, uint8_t iv[16], const uint8_t *in,
                                    size_t nblocks, uint8_t *out)
{
    const uint8x16_t d13 = vld1q_u8(PAS_DK(ks, 13)), d14 = vld1q_u8(PAS_DK(ks, 14));
    uint8x16_t prev = vld1q_u8(iv);
    int r;

    while (nblocks >= 8) {
        const uint8x16_t c0 = vld1q_u8(in), c1 = vld1q_u8(in + 16), c2 = vld1q_u8(in + 32);
        const uint8x16_t c3 = vld1q_u8(in + 48), c4 = vld1q_u8(in + 64), c5 = vld1q_u8(in + 80);
        const uint8x16_t c6 = vld1q_u8(in + 96), c7 = vld1q_u8(in + 112);
        uint8x16_t b0 = c0, b1 = c1, b2 = c2, b3 = c3, b4 = c4, b5 = c5, b6 = c6, b7 = c7;
        for (r = 0; r < 13; r++) {
            const uint8x16_t k = vld1q_u8(PAS_DK(ks, r));
            PAS_ARM_DEC8(k);
        }
        b0 = veorq_u8(veorq_u8(vaesdq_u8(b0, d13), d14), prev);
        b1 = veorq_u8(veorq_u8(vaesdq_u8(b1, d13), d14), c0);
        b2 = veorq_u8(veorq_u8(vaesdq_u8(b2, d13), d14), c1);
        b3 = veorq_u8(veorq_u8(vaesdq_u8(b3, d13), d14), c2);
        b4 = veorq_u8(veorq_u8(vaesdq_u8(b4, d13), d14), c3);
        b5 = veorq_u8(veorq_u8(vaesdq_u8(b5, d13), d14), c4);
        b6 = veorq_u8(veorq_u8(vaesdq_u8(b6, d13), d14), c5);
        b7 = veorq_u8(veorq_u8(vaesdq_u8(b7, d13), d14), c6);
        prev = c7;
        vst1q_u8(out, b0);
        vst1q_u8(out + 16, b1);
        vst1q_u8(out + 32, b2);
        vst1q_u8(out + 48, b3);
        vst1q_u8(out + 64, b4);
        vst1q_u8(out + 80, b5);
        vst1q_u8(out + 96, b6);
        vst1q_u8(out + 112, b7);
        in += 128;
        out += 128;
        nblocks -= 8;
    }
    while (nblocks > 0) {
        const uint8x16_t c = vld1q_u8(in);
        uint8x16_t b = c;
        for (r = 0; r < 13; r++)
            PAS_ARM_DR(b, vld1q_u8(PAS_DK(ks, r)));
        b = veorq_u8(veorq_u8(vaesdq_u8(b, d13), d14), prev);
        prev = c;
        vst1q_u8(out, b);
        in += 16;
        out += 16;
        nblocks--;
    }
    vst1q_u8(iv, prev);
}
#endif /* PAS_AES_ARM */

/* ======================================================================= dispatch */
int pasarela_aes256_expand(unsigned cpu, const uint8_t key[32], pasarela_aes256_schedule *ks)
{
    if (key == NULL || ks == NULL)
        return PASARELA_E_INVALID_ARGUMENT;
#if defined(PAS_AES_X86)
    if (cpu & PASARELA_CPU_AES_X86) {
        x86_expand(key, ks);
        return PASARELA_OK;
    }
#endif
#if defined(PAS_AES_ARM)
    if (cpu & PASARELA_CPU_AES_ARM) {
        arm_expand(key, ks);
        return PASARELA_OK;
    }
#endif
    (void)cpu;
    return PASARELA_E_NO_HW_AES;
}

/* Without usable AES instructions these do nothing: pasarela_aes256_expand has already
 * reported PASARELA_E_NO_HW_AES for the same cpu value. */
void pasarela_aes256_cbc_encrypt_blocks(unsigned cpu, const pasarela_aes256_schedule *ks, uint8_t iv[16],
                                        const uint8_t *in, size_t nblocks, uint8_t *out)
{
    if (nblocks == 0 || ks == NULL || iv == NULL || in == NULL || out == NULL)
        return;
#if defined(PAS_AES_X86)
    if (cpu & PASARELA_CPU_AES_X86) {
        x86_cbc_encrypt(ks, iv, in, nblocks, out);
        return;
    }
#endif
#if defined(PAS_AES_ARM)
    if (cpu & PASARELA_CPU_AES_ARM) {
        arm_cbc_encrypt(ks, iv, in, nblocks, out);
        return;
    }
#endif
    (void)cpu;
}

void pasarela_aes256_cbc_decrypt_blocks(unsigned cpu, const pasarela_aes256_schedule *ks, uint8_t iv[16],
                                        const uint8_t *in, size_t nblocks, uint8_t *out)
{
    if (nblocks == 0 || ks == NULL || iv == NULL || in == NULL || out == NULL)
        return;
#if defined(PAS_AES_X86)
    if (cpu & PASARELA_CPU_AES_X86) {
#if defined(PAS_AES_VAES)
        if ((cpu & PASARELA_CPU_VAES) && nblocks >= 16) {
            x86_cbc_decrypt_vaes(ks, iv, in, nblocks, out);
            return;
        }
#endif
        x86_cbc_decrypt(ks, iv, in, nblocks, out);
        return;
    }
#endif
#if defined(PAS_AES_ARM)
    if (cpu & PASARELA_CPU_AES_ARM) {
        arm_cbc_decrypt(ks, iv, in, nblocks, out);
        return;
    }
#endif
    (void)cpu;
}

/* ======================================================================= public API */
int pasarela_aes256_cbc_encrypt(unsigned cpu, const uint8_t key[32], const uint8_t iv[16], const uint8_t *in,
                                size_t n, uint8_t *out, size_t out_cap, size_t *out_len)
{
    pasarela_aes256_schedule ks;
    uint8_t chain[16], last[16];
    size_t full, rem, i;
    int rc;

    if (out_len != NULL)
        *out_len = 0;
    if (key == NULL || iv == NULL || out == NULL || out_len == NULL || (in == NULL && n > 0))
        return PASARELA_E_INVALID_ARGUMENT;
    full = n / 16;
    rem = n % 16;
    /* PASARELA_CIPHERTEXT_LEN(n) = (full + 1) * 16 must not overflow. */
    if (full >= ((size_t)-1) / 16 || out_cap < (full + 1) * 16)
        return PASARELA_E_BUFFER_TOO_SMALL;
    rc = pasarela_aes256_expand(cpu, key, &ks);
    if (rc != PASARELA_OK)
        return rc;

    memcpy(chain, iv, 16);
    /* Whole blocks first (in == out is fine), then the padded tail from a stack copy. */
    pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, chain, in, full, out);
    if (rem > 0)
        memcpy(last, in + full * 16, rem);
    for (i = rem; i < 16; i++)
        last[i] = (uint8_t)(16 - rem);
    pasarela_aes256_cbc_encrypt_blocks(cpu, &ks, chain, last, 1, out + full * 16);
    *out_len = (full + 1) * 16;

    pasarela_wipe(&ks, sizeof ks);
    pasarela_wipe(last, sizeof last);
    pasarela_wipe(chain, sizeof chain);
    return PASARELA_OK;
}

int pasarela_aes256_cbc_decrypt(unsigned cpu, const uint8_t key[32], const uint8_t iv[16], const uint8_t *in,
                                size_t n, uint8_t *out, size_t out_cap, size_t *out_len)
{
    pasarela_aes256_schedule ks;
    uint8_t chain[16];
    uint32_t p, bad, diff = 0;
    size_t i;
    int rc;

    if (out_len != NULL)
        *out_len = 0;
    if (key == NULL || iv == NULL || out == NULL || out_len == NULL || (in == NULL && n > 0))
        return PASARELA_E_INVALID_ARGUMENT;
    if (n == 0 || n % 16 != 0)
        return PASARELA_E_BAD_LENGTH;
    if (out_cap < n)
        return PASARELA_E_BUFFER_TOO_SMALL;
    rc = pasarela_aes256_expand(cpu, key, &ks);
    if (rc != PASARELA_OK)
        return rc;

    memcpy(chain, iv, 16);
    pasarela_aes256_cbc_decrypt_blocks(cpu, &ks, chain, in, n / 16, out);
    pasarela_wipe(&ks, sizeof ks);
    pasarela_wipe(chain, sizeof chain);

    /* PKCS#7 check without secret-dependent branches: p in 1..16 and the last p bytes equal p. */
    p = out[n - 1];
    bad = ((p - 1u) >> 31) | ((16u - p) >> 31); /* p == 0, p > 16 */
    for (i = 1; i <= 16; i++) {
        uint32_t in_pad = 0u - (((uint32_t)i - 1u - p) >> 31); /* all ones when i <= p */
        diff |= ((uint32_t)out[n - i] ^ p) & in_pad;
    }
    bad |= (0u - diff) >> 31;
    if (bad) {
        pasarela_wipe(out, n);
        return PASARELA_E_BAD_PADDING;
    }
    *out_len = n - p;
    return PASARELA_OK;
}
