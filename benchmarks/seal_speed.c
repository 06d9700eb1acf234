/* seal_speed.c — the C core's sealing alone, no Python: one request (pasarela_seal_json) and a batch of 256
 * (pasarela_seal_json_batch), in ns per request and against the primitives' floor, for the JSON texts of the
 * files given.
 *
 *   cc -std=c99 -O3 -DPASARELA_VERSION='"0.0.0"' -Icsrc benchmarks/seal_speed.c csrc/[a-z]*.c -lcrypto \
 *       -o /tmp/seal_speed
 *   python3 benchmarks/payloads.py /tmp            # writes /tmp/payload-64.json ... /tmp/payload-16384.json
 *   /tmp/seal_speed [--rounds N] /tmp/payload-64.json /tmp/payload-256.json /tmp/payload-1024.json
 *
 * The floor is report.py's, timed here with the same OpenSSL calls `openssl speed -evp` makes (EVP_Digest for
 * MD5 of the key and SHA-512 of the Base64 of the signed text, EVP_EncryptUpdate for AES-256-CBC of the padded
 * plaintext). Each round times every (file, call) once, for about 20 ms each, alternating, the floor with them;
 * the table gives medians over the rounds, and the ratios taken within each round (median). What the Python
 * layer adds on top (orjson, the call, the Sealed objects) is the difference from `seal` and `seal_many` in
 * benchmarks/where_time_goes.py and gate.py. IVs are fixed (the Python layer takes them from a pool it fills
 * with getrandom: not timed here); the keys are derived once and cached in the workspace, as for a terminal
 * sealing many requests in one second.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "pasarela.h"

#define MAX_ROUNDS 51
#define MAX_FILES 16
#define BATCH 256
#define TIMESTAMP 1763812800u
#define BUSINESS_CODE "bc-bench"
#define TERMINAL_SERIAL "SN-BENCH-0001"

typedef struct bench {
    pasarela_credentials credentials;
    const pasarela_credentials *batch_credentials[BATCH];
    pasarela_workspace ws;
    uint8_t ivs[16 * BATCH];
    int statuses[BATCH];
    size_t plaintext_lens[BATCH], out_lens[BATCH], json_lens[BATCH];
    unsigned facts[BATCH];
} bench;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *must_alloc(size_t n)
{
    void *p = calloc(1, n);
    if (p == NULL) {
        fprintf(stderr, "seal_speed: out of memory\n");
        exit(1);
    }
    return p;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long size;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "seal_speed: cannot read %s\n", path);
        exit(1);
    }
    data = (uint8_t *)must_alloc((size_t)size);
    if (fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "seal_speed: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    *len = (size_t)size;
    return data;
}

/* A workspace for JSON texts of up to json_max bytes, a batch of them sealed in one call or a few. */
static void bench_init(bench *b, size_t json_max)
{
    size_t i;
    memset(b, 0, sizeof *b);
    b->credentials.business_code = (const uint8_t *)BUSINESS_CODE;
    b->credentials.business_code_len = sizeof BUSINESS_CODE - 1;
    b->credentials.terminal_serial = (const uint8_t *)TERMINAL_SERIAL;
    b->credentials.terminal_serial_len = sizeof TERMINAL_SERIAL - 1;
    b->credentials.cpu = pasarela_cpu_features();
    b->credentials.id = 1;
    for (i = 0; i < BATCH; i++)
        b->batch_credentials[i] = &b->credentials;
    b->ws.plaintext_cap = PASARELA_JSON_OUT_MAX(json_max) * 4;
    b->ws.plaintext = (uint8_t *)must_alloc(b->ws.plaintext_cap);
    b->ws.scratch_cap = PASARELA_WORKSPACE_SCRATCH_SIZE(json_max);
    b->ws.scratch = must_alloc(b->ws.scratch_cap);
    b->ws.out_cap = PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(json_max)) * 16;
    b->ws.out = (char *)must_alloc(b->ws.out_cap);
    b->ws.keys_cap = pasarela_key_cache_size();
    b->ws.keys = must_alloc(b->ws.keys_cap);
}

static void seal_one(bench *b, const uint8_t *json, size_t len)
{
    if (pasarela_seal_json(&b->credentials, &b->ws, TIMESTAMP, json, len, PASARELA_JSON_SHORTEST_DIGITS, b->ivs) !=
        PASARELA_OK) {
        fprintf(stderr, "seal_speed: pasarela_seal_json refused the text\n");
        exit(1);
    }
}

/* BATCH copies of the text, back to back at texts, in as few calls as the workspace takes. */
static void seal_batch(bench *b, const uint8_t *texts, size_t len)
{
    size_t done = 0, i;
    for (i = 0; i < BATCH; i++)
        b->json_lens[i] = len;
    while (done < BATCH) {
        size_t got = pasarela_seal_json_batch(b->batch_credentials + done, TIMESTAMP, texts + done * len,
                                              b->json_lens + done, BATCH - done, PASARELA_JSON_SHORTEST_DIGITS,
                                              b->ivs + 16 * done, &b->ws, b->statuses + done,
                                              b->plaintext_lens + done, b->out_lens + done, b->facts + done);
        if (got == 0) {
            fprintf(stderr, "seal_speed: the workspace takes no item of %zu bytes\n", len);
            exit(1);
        }
        for (i = done; i < done + got; i++) {
            if (b->statuses[i] != PASARELA_OK) {
                fprintf(stderr, "seal_speed: pasarela_seal_json_batch refused item %zu\n", i);
                exit(1);
            }
        }
        done += got;
    }
}

/* The primitives' floor for an n-byte plaintext, as report.py's primitives_sum_ns sizes it. */
static void floor_once(const EVP_MD *const md[2], EVP_CIPHER_CTX *aes, uint8_t *scratch, size_t n)
{
    size_t key = sizeof BUSINESS_CODE - 1 + sizeof TERMINAL_SERIAL - 1 + 16, signed_base64 = 4 * ((n + 65 + 2) / 3);
    uint8_t digest[64];
    int out_len;
    if (!EVP_Digest(scratch, key > 32 ? key : 32, digest, NULL, md[0], NULL) ||
        !EVP_Digest(scratch, signed_base64, digest, NULL, md[1], NULL) ||
        !EVP_EncryptUpdate(aes, scratch, &out_len, scratch, (int)((n / 16 + 1) * 16))) {
        fprintf(stderr, "seal_speed: OpenSSL failed\n");
        exit(1);
    }
}

enum { SEAL_ONE, SEAL_BATCH, FLOOR, CALLS };

/* ns per request over about 20 ms of calls. */
static double time_calls(bench *b, int call, const uint8_t *json, const uint8_t *texts, size_t len,
                         const EVP_MD *const md[2], EVP_CIPHER_CTX *aes, uint8_t *scratch)
{
    size_t reps = call == SEAL_BATCH ? 1 : 64, requests = 0, i;
    double start = now_ns(), elapsed;
    do {
        for (i = 0; i < reps; i++) {
            if (call == SEAL_BATCH)
                seal_batch(b, texts, len);
            else if (call == SEAL_ONE)
                seal_one(b, json, len);
            else
                floor_once(md, aes, scratch, len);
        }
        requests += reps * (call == SEAL_BATCH ? BATCH : 1);
        elapsed = now_ns() - start;
    } while (elapsed < 2e7);
    return elapsed / (double)requests;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    static double times[MAX_FILES][CALLS][MAX_ROUNDS], ratios[MAX_FILES][2][MAX_ROUNDS];
    static const uint8_t aes_key[32], aes_iv[16];
    uint8_t *json[MAX_FILES], *texts[MAX_FILES], *scratch;
    size_t lens[MAX_FILES], json_max = 0, i;
    int rounds = 7, nfiles = 0, r, f, k, arg;
    bench *b = (bench *)must_alloc(sizeof *b);
    EVP_CIPHER_CTX *aes = EVP_CIPHER_CTX_new();
    /* fetched once, as `openssl speed -evp` does (EVP_sha512() would look the implementation up on every call) */
    EVP_MD *md[2] = {EVP_MD_fetch(NULL, "MD5", NULL), EVP_MD_fetch(NULL, "SHA512", NULL)};
    EVP_CIPHER *cbc = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);

    for (arg = 1; arg < argc; arg++) {
        if (strcmp(argv[arg], "--rounds") == 0 && arg + 1 < argc) {
            rounds = atoi(argv[++arg]);
        } else if (nfiles < MAX_FILES) {
            json[nfiles] = read_file(argv[arg], &lens[nfiles]);
            texts[nfiles] = (uint8_t *)must_alloc(lens[nfiles] * BATCH);
            for (i = 0; i < BATCH; i++)
                memcpy(texts[nfiles] + i * lens[nfiles], json[nfiles], lens[nfiles]);
            if (lens[nfiles] > json_max)
                json_max = lens[nfiles];
            nfiles++;
        }
    }
    if (nfiles == 0 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: seal_speed [--rounds 1..%d] FILE.json...\n", MAX_ROUNDS);
        return 2;
    }
    bench_init(b, json_max);
    scratch = (uint8_t *)must_alloc(4 * json_max + 256);
    if (aes == NULL || md[0] == NULL || md[1] == NULL || cbc == NULL ||
        !EVP_EncryptInit_ex(aes, cbc, NULL, aes_key, aes_iv) ||
        !EVP_CIPHER_CTX_set_padding(aes, 0)) {
        fprintf(stderr, "seal_speed: OpenSSL failed\n");
        return 1;
    }
    for (r = 0; r < rounds; r++) {
        for (f = 0; f < nfiles; f++) {
            for (k = 0; k < CALLS; k++)
                times[f][k][r] = time_calls(b, k, json[f], texts[f], lens[f], (const EVP_MD *const *)md, aes, scratch);
            for (k = 0; k < 2; k++)
                ratios[f][k][r] = times[f][k][r] / times[f][FLOOR][r];
        }
    }
    printf("| median of %d rounds: ns per request / x floor | pasarela_seal_json | pasarela_seal_json_batch (%d) |"
           " floor |\n|---|---|---|---|\n", rounds, BATCH);
    for (f = 0; f < nfiles; f++) {
        printf("| %zu B | %.0f / %.2fx | %.0f / %.2fx |", lens[f], median(times[f][SEAL_ONE], rounds),
               median(ratios[f][SEAL_ONE], rounds), median(times[f][SEAL_BATCH], rounds),
               median(ratios[f][SEAL_BATCH], rounds));
        printf(" %.0f |\n", median(times[f][FLOOR], rounds));
    }
    EVP_CIPHER_CTX_free(aes);
    EVP_CIPHER_free(cbc);
    EVP_MD_free(md[0]);
    EVP_MD_free(md[1]);
    pasarela_workspace_wipe(&b->ws);
    return 0;
}
