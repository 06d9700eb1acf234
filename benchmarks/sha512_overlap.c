/* sha512_overlap.c — whether the rest of an open's C work hides in the gaps of its SHA-512, as seal's CBC encryption
 * does (issue 42, goal 2: the least time Terminal.open_bytes can take against seal's).
 *
 *   cc -std=c99 -O3 -DPASARELA_VERSION='"0.0.0"' -Icsrc benchmarks/sha512_overlap.c \
 *      $(ls csrc/[a-z]*.c | grep -v -e /sha512.c -e /json_checked.c) -o /tmp/sha512_overlap
 *   python3 benchmarks/payloads.py /tmp            # items-heavy: /tmp/payload-64.json ... /tmp/payload-16384.json
 *   /tmp/sha512_overlap [--rounds N] /tmp/payload-1024.json /tmp/payload-16384.json ...
 *
 * Both calls hash the same Base64 text, so open_bytes can come below 0.8x seal's time only where the work seal does
 * not (the decryption, the check that the text is its own canonical form) costs less than seal's own work beside that
 * hash. seal hides its CBC encryption in the hash: a chain of dependent aesenc waits on its latency, and the hash's
 * scalar rounds leave the AES unit idle (sha512.c, pasarela_sha512_with_cbc: ten hook points a 128-byte block). Here
 * the same hook points run open's other work instead, in a third instance of sha512_avx2_blocks.h (this file
 * includes sha512.c and json_checked.c, hence the two left out of the build above):
 *   - the canonical check of json_checked.c (AVX2), one 64-byte block a hook;
 *   - AES-256-CBC decryption with AES-NI, 8 blocks in flight, written out at the hook as seal's encryption is;
 *     alone, pasarela_aes256_cbc_decrypt_blocks with AES-NI (8 in flight too; open itself uses VAES, faster);
 * each spread over the hash's blocks as the CBC encryption is (at most PAS_CBC_MAX hooks a block), the rest after
 * it. For each file it times the SHA-512 of the signed text's Base64 (the JSON text and 66 bytes after it, as
 * open_parts.c does), each part alone, and the hash with that part at its hooks; "hidden" is the share of the part's
 * time alone that the interleaved run saved (negative: the two together took longer than one after the other). Each
 * interleaved run must give the hash's digest and the part's own result (the check's verdict, the plaintext), or the
 * program stops. Fastest of N rounds (this machine is shared), about 5 ms each (part, file), alternating.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>

#include "sha512.c"
#include "json_checked.c"

#define HARNESS_NAME "sha512_overlap"
#include "c_harness.h"

#if !defined(PAS_SHA512_AVX2)
int main(void) {
    fprintf(stderr, "sha512_overlap: needs x86-64 with GCC or clang (the AVX2 SHA-512 and check)\n");
    return 2;
}
#else

#define DECRYPT_UNIT 8u /* AES blocks a hook: the AES-NI pipeline's width */

typedef struct overlap overlap;
struct overlap {
    void (*step)(overlap *); /* one unit of the work (check_step or decrypt_step): what runs after the hash */
    size_t left, sha_left;   /* units left; hash blocks left */
    /* the check */
    checked_scan scan;
    const uint8_t *text;
    size_t n, base;
    key_entry *keys;
    uint32_t *table;
    int ok;
    uint8_t is_object[JSON_CHECKED_MAX_DEPTH];
    uint32_t object_keys[JSON_CHECKED_MAX_DEPTH];
    /* the decryption */
    const pasarela_aes256_schedule *ks;
    uint8_t iv[16];
    const uint8_t *ciphertext;
    uint8_t *plaintext;
    size_t blocks;
};

/* One 64-byte block of json_checked.c's check (its CHECKED_TEXT loop, a block at a time). */
static __attribute__((noinline, target("avx2,bmi,bmi2"))) void check_step(overlap *o) {
    size_t base = o->base;
    o->base += 64;
    o->left--;
    if (!o->ok) return;
    if (o->scan.in_string != 0 && base - o->scan.last_open_quote > 32 && o->n - base >= 64 &&
        plain_avx2(o->text + base)) {
        plain_block(&o->scan);
        return;
    }
    pasarela_classes m;
    pasarela_classes_avx2(o->text + base, o->n - base, &m);
    if (!checked_block(&o->scan, o->text, o->n, base, &m, o->is_object, o->object_keys, o->keys, o->table)) o->ok = 0;
}

/* The check's verdict once every block is done (CHECKED_TEXT's end). */
static int check_verdict(overlap *o) {
    if (!o->ok || o->scan.in_string != 0 || o->scan.depth != 0) return 0;
    return !o->scan.utf8 || pasarela_utf8_invalid_at(o->text, o->n) == o->n;
}

static void check_begin(overlap *o, const uint8_t *text, size_t n, void *scratch) {
    memset(&o->scan, 0, sizeof o->scan);
    o->step = check_step;
    o->text = text;
    o->n = n;
    o->base = 0;
    o->ok = 1;
    o->keys = (key_entry *)scratch;
    o->table = (uint32_t *)(void *)(o->keys + n / 3 + 2);
    o->left = (n + 63) / 64;
}

/* DECRYPT_UNIT blocks (fewer at the end) of the CBC decryption, written out at the hook as the CBC encryption's
 * blocks are (PAS_CBC_BLOCK: the round keys memory operands, no call that would spill the hash's vector registers). */
static inline __attribute__((always_inline)) PAS_AVX2_AES_FN void decrypt_unit(overlap *o) {
    const uint8_t *dk = o->ks->round_keys + 15 * 16;
    size_t k = o->blocks < DECRYPT_UNIT ? o->blocks : DECRYPT_UNIT, i;
    __m128i b[DECRYPT_UNIT], c[DECRYPT_UNIT];
    for (i = 0; i < DECRYPT_UNIT; i++) {
        c[i] = _mm_loadu_si128((const __m128i *)(const void *)(o->ciphertext + 16 * (i < k ? i : 0)));
        b[i] = _mm_xor_si128(c[i], _mm_loadu_si128((const __m128i *)(const void *)dk));
    }
    for (int r = 1; r < 14; r++) {
        __m128i rk = _mm_loadu_si128((const __m128i *)(const void *)(dk + 16 * r));
        for (i = 0; i < DECRYPT_UNIT; i++) b[i] = _mm_aesdec_si128(b[i], rk);
    }
    __m128i last = _mm_loadu_si128((const __m128i *)(const void *)(dk + 16 * 14));
    __m128i prev = _mm_loadu_si128((const __m128i *)(const void *)o->iv);
    for (i = 0; i < k; i++) {
        __m128i p = _mm_xor_si128(_mm_aesdeclast_si128(b[i], last), prev);
        _mm_storeu_si128((__m128i *)(void *)(o->plaintext + 16 * i), p);
        prev = c[i];
    }
    _mm_storeu_si128((__m128i *)(void *)o->iv, prev);
    o->ciphertext += 16 * k;
    o->plaintext += 16 * k;
    o->blocks -= k;
    o->left--;
}

static __attribute__((noinline)) PAS_AVX2_AES_FN void decrypt_step(overlap *o) { decrypt_unit(o); }

static void decrypt_begin(overlap *o, const pasarela_aes256_schedule *ks, const uint8_t iv[16],
                          const uint8_t *ciphertext, size_t blocks, uint8_t *plaintext) {
    o->step = decrypt_step;
    o->ks = ks;
    memcpy(o->iv, iv, 16);
    o->ciphertext = ciphertext;
    o->plaintext = plaintext;
    o->blocks = blocks;
    o->left = (blocks + DECRYPT_UNIT - 1) / DECRYPT_UNIT;
}

/* This hash block's hooks: the units left spread over the hash blocks left, as cbc_take_quota spreads AES blocks. */
static inline unsigned overlap_take_quota(overlap *o) {
    size_t q = o->sha_left > 0 ? (o->left + o->sha_left - 1) / o->sha_left : 0;
    if (q > PAS_CBC_MAX) q = PAS_CBC_MAX;
    if (o->sha_left > 0) o->sha_left--;
    return pas_cbc_hooks[q];
}

/* sha512_avx2_blocks.h twice more: the check called at the hooks (written out there, it measured no faster), and
 * the decryption written out at them (one instance for both, choosing at each hook, added 2.3-2.7 times the
 * decryption's own time to the hash's, against 0.3-0.6 times so). unit(ov) at a hook whose bit the quota set. */
#define OVERLAP_AT(bit, unit)      \
    do {                           \
        if (m & (bit)) unit(ov);   \
    } while (0)
#define OVERLAP_NEXT(n) \
    do {                \
        m >>= (n);      \
    } while (0)
#define PAS_BLK_NAME(n) n##_check
#define PAS_BLK_FN PAS_AVX2_FN
#define PAS_BLK_PARAM , overlap *ov
#define PAS_BLK_ARG , ov
#define PAS_BLK_BEGIN unsigned m = overlap_take_quota(ov);
#define PAS_BLK_HOOK(bit) OVERLAP_AT(bit, check_step)
#define PAS_BLK_NEXT(n) OVERLAP_NEXT(n)
#define PAS_BLK_END
#define PAS_BLK_DONE _mm256_zeroall()
#include "sha512_avx2_blocks.h"

#define PAS_BLK_NAME(n) n##_decrypt
#define PAS_BLK_FN PAS_AVX2_AES_FN
#define PAS_BLK_PARAM , overlap *ov
#define PAS_BLK_ARG , ov
#define PAS_BLK_BEGIN unsigned m = overlap_take_quota(ov);
#define PAS_BLK_HOOK(bit) OVERLAP_AT(bit, decrypt_unit)
#define PAS_BLK_NEXT(n) OVERLAP_NEXT(n)
#define PAS_BLK_END
#define PAS_BLK_DONE _mm256_zeroall()
#include "sha512_avx2_blocks.h"

/* SHA-512 of msg with o's work at its hooks (and what is left of it after). */
static void sha512_overlapped(const uint8_t *msg, size_t len, uint8_t digest[64], overlap *o) {
    uint64_t state[8] = {UINT64_C(0x6a09e667f3bcc908), UINT64_C(0xbb67ae8584caa73b), UINT64_C(0x3c6ef372fe94f82b),
                         UINT64_C(0xa54ff53a5f1d36f1), UINT64_C(0x510e527fade682d1), UINT64_C(0x9b05688c2b3e6c1f),
                         UINT64_C(0x1f83d9abfb41bd6b), UINT64_C(0x5be0cd19137e2179)};
    uint8_t tail[256];
    size_t full = len / 128u, rem = len % 128u, ntail = rem + 17u > 128u ? 2u : 1u;
    if (rem > 0) memcpy(tail, msg + 128u * full, rem);
    tail[rem] = 0x80;
    memset(tail + rem + 1, 0, 128u * ntail - 16u - rem - 1u);
    store64_be(tail + 128u * ntail - 16u, (uint64_t)len >> 61);
    store64_be(tail + 128u * ntail - 8u, (uint64_t)len << 3);
    o->sha_left = full + ntail;
    if (o->step == check_step) {
        if (full > 0) sha512_blocks_avx2_check(state, msg, msg + 128, full, o);
        sha512_blocks_avx2_check(state, tail, tail + 128, ntail, o);
    } else {
        if (full > 0) sha512_blocks_avx2_decrypt(state, msg, msg + 128, full, o);
        sha512_blocks_avx2_decrypt(state, tail, tail + 128, ntail, o);
    }
    while (o->left > 0) o->step(o);
    for (int i = 0; i < 8; i++) store64_be(digest + 8 * i, state[i]);
}

enum { SHA, CHECK, SHA_CHECK, DECRYPT, SHA_DECRYPT, PARTS };
static const char *const part_names[PARTS] = {"SHA-512 of the signed text's Base64", "canonical check alone",
                                              "SHA-512 with the check at its hooks", "AES-256-CBC decrypt alone",
                                              "SHA-512 with the decryption at its hooks"};

typedef struct request {
    uint8_t *json, *base64, *ciphertext, *plaintext; /* json: the file's text (harness_args) */
    size_t json_len, base64_len, blocks;
    uint8_t digest[64];
    int verdict;
} request;

typedef struct bench {
    unsigned cpu;
    pasarela_aes256_schedule ks;
    uint8_t iv[16];
    void *scratch;
    overlap o;
    unsigned sink;
} bench;

static void run_part(bench *b, const request *r, int part) {
    uint8_t digest[64], iv[16];
    pasarela_sha512_ctx sha;
    unsigned facts = 0;
    switch (part) {
    case SHA:
        pasarela_sha512_init(&sha, b->cpu);
        pasarela_sha512_update(&sha, r->base64, r->base64_len);
        pasarela_sha512_final(&sha, digest);
        b->sink += digest[0];
        break;
    case CHECK:
        b->sink += (unsigned)pasarela_json_checked_canonical(b->cpu, r->json, r->json_len, b->scratch,
                                                             PASARELA_WORKSPACE_SCRATCH_SIZE(r->json_len), &facts);
        break;
    case SHA_CHECK:
        check_begin(&b->o, r->json, r->json_len, b->scratch);
        sha512_overlapped(r->base64, r->base64_len, digest, &b->o);
        if (check_verdict(&b->o) != r->verdict || memcmp(digest, r->digest, 64) != 0)
            fail("the hash with the check at its hooks gave another result");
        break;
    case DECRYPT:
        memcpy(iv, b->iv, 16);
        pasarela_aes256_cbc_decrypt_blocks(PASARELA_CPU_AES_X86, &b->ks, iv, r->ciphertext, r->blocks, r->plaintext);
        b->sink += r->plaintext[0];
        break;
    default:
        decrypt_begin(&b->o, &b->ks, b->iv, r->ciphertext, r->blocks, r->plaintext);
        sha512_overlapped(r->base64, r->base64_len, digest, &b->o);
        if (memcmp(digest, r->digest, 64) != 0 || memcmp(r->plaintext, r->json, r->json_len) != 0)
            fail("the hash with the decryption at its hooks gave another result");
        break;
    }
}

HARNESS_TIME_PART(bench, request)

int main(int argc, char **argv) {
    static harness_file files[HARNESS_MAX_FILES];
    static request requests[HARNESS_MAX_FILES];
    static double best[HARNESS_MAX_FILES * PARTS];
    static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
    int rounds;
    int nfiles =
        harness_args(argc, argv, "usage: sha512_overlap [--rounds N] FILE.json...", NULL, NULL, &rounds, files);
    size_t json_max = 0;
    bench *b = (bench *)must_alloc(sizeof *b);
    for (int f = 0; f < nfiles; f++) {
        requests[f].json = files[f].json;
        requests[f].json_len = files[f].len;
        if (files[f].len > json_max) json_max = files[f].len;
    }
    b->cpu = pasarela_cpu_features();
    if (!(b->cpu & PASARELA_CPU_AVX2) || !(b->cpu & PASARELA_CPU_AES_X86)) fail("needs AVX2 and AES-NI");
    if (pasarela_aes256_expand(b->cpu, key, &b->ks) != PASARELA_OK) fail("no AES key schedule");
    b->scratch = must_alloc(PASARELA_WORKSPACE_SCRATCH_SIZE(json_max));
    for (int f = 0; f < nfiles; f++) {
        request *r = &requests[f];
        unsigned facts = 0;
        uint8_t iv[16] = {0};
        pasarela_sha512_ctx sha;
        r->base64 = (uint8_t *)must_alloc(4 * (r->json_len + 66) / 3 + 8);
        r->base64_len = pasarela_base64_encode_public(b->cpu, r->json, r->json_len + 66, (char *)r->base64);
        pasarela_sha512_init(&sha, b->cpu);
        pasarela_sha512_update(&sha, r->base64, r->base64_len);
        pasarela_sha512_final(&sha, r->digest);
        r->verdict = pasarela_json_checked_canonical(b->cpu, r->json, r->json_len, b->scratch,
                                                     PASARELA_WORKSPACE_SCRATCH_SIZE(r->json_len), &facts);
        if (!r->verdict) fail("the check declines a file's text (not a canonical JSON object?)");
        /* the text's whole blocks and its last bytes zero-padded: the ciphertext to decrypt */
        r->blocks = (r->json_len + 15) / 16;
        r->plaintext = (uint8_t *)must_alloc(16 * r->blocks);
        memcpy(r->plaintext, r->json, r->json_len);
        r->ciphertext = (uint8_t *)must_alloc(16 * r->blocks);
        pasarela_aes256_cbc_encrypt_blocks(b->cpu, &b->ks, iv, r->plaintext, r->blocks, r->ciphertext);
        for (int part = 0; part < PARTS; part++) run_part(b, r, part); /* each interleaved run checked before timing */
    }
    harness_timed timed = {b, requests};
    harness_fastest(rounds, nfiles, PARTS, harness_time_one, &timed, best);
    harness_table(rounds, "", files, nfiles, part_names, PARTS, best);
    for (int part = CHECK; part < PARTS; part += 2) {
        printf("| %s: hidden |", part == CHECK ? "the check" : "the decryption");
        for (int f = 0; f < nfiles; f++) {
            const double *row = best + f * PARTS;
            printf(" %.0f%% |", 100.0 * (row[SHA] + row[part] - row[part + 1]) / row[part]);
        }
        printf("\n");
    }
    return b->sink == 0x7fffffffu; /* the results used, so that no part is optimized away */
}
#endif
