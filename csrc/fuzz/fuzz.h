/*
 * Shared helpers of the fuzz targets in csrc/fuzz/ (one target per fuzz_<name>.c file).
 *
 * A target defines LLVMFuzzerTestOneInput and nothing else; scripts/hardening finds every
 * fuzz_<name>.c, builds it with clang -fsanitize=fuzzer,address,undefined against every C file of the core,
 * and runs it from the seed corpus in corpus/<name>/ (with <name>.dict as its dictionary when
 * that file exists). The same file also links against fuzz_main.c, a plain main() that replays
 * files through the target, so gcc and valgrind can run the corpus without libFuzzer.
 *
 * To add a target (as fuzz_open.c was added): write fuzz_<name>.c on the pattern of the others, add
 * its seeds to seeds.py and run it (corpus/<name>/ is written), optionally link <name>.dict to a
 * dictionary; scripts/hardening picks it up with no other change (build, valgrind replay, fuzzing).
 *
 * Conventions that keep the targets useful:
 *  - every buffer handed to the library is malloc'ed at exactly the documented size, so ASan
 *    flags the first byte written or read past it;
 *  - a status is checked against an independent oracle where one exists, and a violated
 *    expectation calls FUZZ_CHECK, which aborts (libFuzzer records it as a crash);
 *  - structured inputs are cut from the fuzz data with the fuzz_reader below, which never fails:
 *    missing bytes read as zero, so every input is valid and the fuzzer explores freely.
 */
#ifndef PASARELA_FUZZ_H
#define PASARELA_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FUZZ_CHECK(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);    \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads fields off the front of the fuzz input. */
typedef struct fuzz_reader {
    const uint8_t *data;
    size_t size;
} fuzz_reader;

static inline uint8_t fuzz_u8(fuzz_reader *r)
{
    uint8_t v = 0;
    if (r->size > 0) {
        v = r->data[0];
        r->data++;
        r->size--;
    }
    return v;
}

static inline uint64_t fuzz_u64(fuzz_reader *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | fuzz_u8(r);
    return v;
}

/* Copies n bytes into out, zero-filling what the input lacks. */
static inline void fuzz_fill(fuzz_reader *r, uint8_t *out, size_t n)
{
    size_t k = r->size < n ? r->size : n;
    memcpy(out, r->data, k);
    memset(out + k, 0, n - k);
    r->data += k;
    r->size -= k;
}

/* A length-prefixed field (one length byte): points into the input, no copy. */
static inline const uint8_t *fuzz_field(fuzz_reader *r, size_t *len)
{
    size_t want = fuzz_u8(r);
    const uint8_t *p = r->data;
    *len = want < r->size ? want : r->size;
    r->data += *len;
    r->size -= *len;
    return p;
}

/* malloc of exactly n bytes (at least 1, so a zero-length buffer is still a valid pointer). */
static inline void *fuzz_alloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);
    FUZZ_CHECK(p != NULL);
    return p;
}

/* The copy of data[0..n) at an exact-size heap block: reads past the end are caught by ASan. */
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t n)
{
    uint8_t *p = (uint8_t *)fuzz_alloc(n);
    if (n > 0)
        memcpy(p, data, n);
    else
        p[0] = 0; /* never read: keeps gcc from seeing an uninitialized block passed as input */
    return p;
}

/* A workspace whose buffers are malloc'ed at exactly the given capacities. */
static inline void fuzz_workspace_alloc(pasarela_workspace *ws, size_t plaintext_cap, size_t scratch_cap,
                                        size_t out_cap)
{
    memset(ws, 0, sizeof *ws);
    ws->plaintext_cap = plaintext_cap;
    ws->plaintext = (uint8_t *)fuzz_alloc(plaintext_cap);
    ws->scratch_cap = scratch_cap;
    ws->scratch = fuzz_alloc(scratch_cap);
    ws->out_cap = out_cap;
    ws->out = (char *)fuzz_alloc(out_cap);
    ws->keys_cap = pasarela_key_cache_size();
    ws->keys = fuzz_alloc(ws->keys_cap);
    memset(ws->keys, 0, ws->keys_cap);
}

static inline void fuzz_workspace_free(pasarela_workspace *ws)
{
    pasarela_workspace_wipe(ws);
    free(ws->keys);
    free(ws->out);
    free(ws->scratch);
    free(ws->plaintext);
}

/* A timestamp from 8 input bytes; folded into the valid 10-digit range when fold is set (otherwise
 * mostly invalid: PASARELA_E_TIMESTAMP). */
static inline uint64_t fuzz_timestamp(fuzz_reader *r, int fold)
{
    uint64_t t = fuzz_u64(r);
    return fold ? UINT64_C(1000000000) + t % UINT64_C(9000000000) : t;
}

/* The start of a seal target's input: its selector (bit 0: flags PASARELA_JSON_SHORTEST_DIGITS, else 0; bit 1: the
 * timestamp folded into the valid range; the other bits the target's), then the timestamp (8 bytes). */
typedef struct fuzz_seal_head {
    uint8_t selector;
    unsigned flags;
    uint64_t timestamp;
} fuzz_seal_head;

static inline fuzz_seal_head fuzz_seal_start(fuzz_reader *r)
{
    fuzz_seal_head h;
    h.selector = fuzz_u8(r);
    h.flags = (h.selector & 1) ? PASARELA_JSON_SHORTEST_DIGITS : 0u;
    h.timestamp = fuzz_timestamp(r, h.selector & 2);
    return h;
}

static inline int fuzz_timestamp_valid(uint64_t t)
{
    return t >= UINT64_C(1000000000) && t <= UINT64_C(9999999999);
}

/* Credentials cut from the input (one length byte each), copied to exact-size blocks: free with
 * fuzz_credentials_free. */
static inline pasarela_credentials fuzz_credentials(fuzz_reader *r, unsigned cpu)
{
    pasarela_credentials c;
    const uint8_t *business_code = fuzz_field(r, &c.business_code_len);
    const uint8_t *terminal_serial = fuzz_field(r, &c.terminal_serial_len);
    c.business_code = fuzz_copy(business_code, c.business_code_len);
    c.terminal_serial = fuzz_copy(terminal_serial, c.terminal_serial_len);
    c.cpu = cpu;
    c.id = 1; /* each input has fresh workspaces, so their key caches never hold another input's keys */
    return c;
}

static inline void fuzz_credentials_free(pasarela_credentials *c)
{
    free((void *)(uintptr_t)c->business_code);
    free((void *)(uintptr_t)c->terminal_serial);
}

/* CPU features, detected once per process (CPUID traps to the hypervisor on virtual machines). */
static inline unsigned fuzz_cpu(void)
{
    static int known;
    static unsigned features;
    if (!known) {
        features = pasarela_cpu_features();
        known = 1;
    }
    return features;
}

#endif
