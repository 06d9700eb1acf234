/*
 * Fuzz target: pasarela_seal_json_batch (groups of up to 16 requests hashed side by side and encrypted
 * as interleaved CBC chains, keys shared within a group) against pasarela_seal_json item by item.
 *
 * Input: selector, timestamp (8 bytes), two pairs of credentials (one length byte each), then the
 * items separated by 0xFF bytes (never part of valid JSON); an item's first byte picks its
 * credentials (bit 0), the rest is its JSON text. Selector bit 0: PASARELA_JSON_SHORTEST_DIGITS;
 * bit 1: fold the timestamp into the valid range; bit 2: IVs from the workspace's pool instead of
 * an array; bit 3: no key cache in the workspace; bit 4: a small output buffer (several calls).
 * Checks: every item's status, plaintext length, facts and request bytes (plaintext, signature, body)
 * equal what pasarela_seal_json gives for that item alone, with the same IV (from the pool: one per
 * item processed, in order; items whose signed text and ciphertext cannot fit in ws->plaintext are
 * sealed alone inside the batch); the calls together process every item. Then pasarela_seal_batch of the
 * sealed items' plaintexts, each request into its own buffer of exactly its length, with the same IVs (from an
 * array, or bit 2: from a pool that holds just enough), gives the same requests.
 */
#include "fuzz.h"

#define MAX_ITEMS 64

static int single(const pasarela_credentials *c, uint64_t timestamp, const uint8_t *json, size_t n, unsigned flags,
                  const uint8_t iv[16], pasarela_workspace *ws)
{
    fuzz_workspace_alloc(ws, PASARELA_JSON_OUT_MAX(n), PASARELA_WORKSPACE_SCRATCH_SIZE(n),
                         PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(n)));
    return pasarela_seal_json(c, ws, timestamp, json, n, flags, iv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    fuzz_seal_head head = fuzz_seal_start(&r);
    pasarela_credentials creds[2];
    creds[0] = fuzz_credentials(&r, fuzz_cpu());
    creds[1] = fuzz_credentials(&r, fuzz_cpu());
    creds[1].id = 2;
    if (head.selector & 8) creds[0].id = creds[1].id = 0;

    /* split the rest into items */
    const pasarela_credentials *item_creds[MAX_ITEMS];
    size_t lens[MAX_ITEMS], n = 0, total = 0;
    uint8_t *json = fuzz_copy(r.data, r.size); /* the items' texts, concatenated (separators dropped) */
    for (size_t at = 0; at <= r.size && n < MAX_ITEMS;) {
        size_t end = at;
        while (end < r.size && r.data[end] != 0xFF) end++;
        if (end > at) {
            item_creds[n] = &creds[r.data[at] & 1];
            lens[n] = end - at - 1;
            memmove(json + total, r.data + at + 1, lens[n]);
            total += lens[n];
            n++;
        }
        at = end + 1;
    }

    uint8_t ivs[16 * MAX_ITEMS], pool[16 * MAX_ITEMS];
    for (size_t i = 0; i < sizeof ivs; i++) ivs[i] = pool[i] = (uint8_t)(i * 7 + head.selector);
    size_t out_cap = (head.selector & 16) ? PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(total / 2 + 1))
                                     : PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(total));
    pasarela_workspace ws;
    fuzz_workspace_alloc(&ws, PASARELA_JSON_OUT_MAX(total), PASARELA_WORKSPACE_SCRATCH_SIZE(total), out_cap);
    ws.iv_pool = pool;
    ws.iv_pool_len = sizeof pool;
    int statuses[MAX_ITEMS];
    size_t plaintext_lens[MAX_ITEMS], out_lens[MAX_ITEMS];
    unsigned facts[MAX_ITEMS];

    /* what pasarela_seal_batch is checked with: the plaintexts, IVs and requests of the items sealed */
    uint8_t *plaintexts = (uint8_t *)fuzz_alloc(6 * total + 32 * MAX_ITEMS); /* each canonical: <= 6 n + 32 */
    const pasarela_credentials *sealed_creds[MAX_ITEMS];
    size_t sealed_lens[MAX_ITEMS], sealed_n = 0, sealed_total = 0, sealed_max = 0;
    uint8_t sealed_ivs[16 * MAX_ITEMS];
    char *requests[MAX_ITEMS];

    size_t start = 0, offset = 0, pooled = 0; /* pooled: IVs the batch has taken from the pool */
    while (start < n) {
        size_t done = pasarela_seal_json_batch(item_creds + start, head.timestamp, json + offset, lens + start, n - start,
                                               head.flags, (head.selector & 4) ? NULL : ivs + 16 * start, &ws,
                                               statuses + start, plaintext_lens + start, out_lens + start,
                                               facts + start);
        FUZZ_CHECK(done <= n - start);
        if (done == 0) { /* only an item that cannot fit in this output buffer at all stops a call */
            FUZZ_CHECK(out_cap < PASARELA_REQUEST_LEN(PASARELA_JSON_OUT_MAX(lens[start])));
            statuses[start] = -1;
            offset += lens[start];
            start++;
            continue;
        }
        /* compare this call's items with single seals */
        size_t o = 0;
        for (size_t i = start; i < start + done; i++) {
            const uint8_t *iv = (head.selector & 4) ? pool + 16 * pooled++ : ivs + 16 * i;
            pasarela_workspace one;
            int rc = single(item_creds[i], head.timestamp, json + offset, lens[i], head.flags, iv, &one);
            FUZZ_CHECK(statuses[i] == rc);
            if (statuses[i] == PASARELA_OK) {
                FUZZ_CHECK(plaintext_lens[i] == one.plaintext_len && out_lens[i] == one.out_len &&
                           facts[i] == one.json_facts);
                FUZZ_CHECK(memcmp(ws.out + o, one.out, one.out_len) == 0);
                o += out_lens[i];
                sealed_creds[sealed_n] = item_creds[i];
                sealed_lens[sealed_n] = one.plaintext_len;
                memcpy(sealed_ivs + 16 * sealed_n, iv, 16);
                memcpy(plaintexts + sealed_total, one.out, one.plaintext_len);
                requests[sealed_n] = (char *)fuzz_copy((const uint8_t *)one.out, one.out_len);
                if (one.plaintext_len > sealed_max) sealed_max = one.plaintext_len;
                sealed_total += sealed_lens[sealed_n++];
            } else {
                FUZZ_CHECK(plaintext_lens[i] == 0 && out_lens[i] == 0);
            }
            fuzz_workspace_free(&one);
            offset += lens[i];
        }
        start += done;
    }
    if (head.selector & 4) FUZZ_CHECK(ws.iv_pool_used == 16 * pooled);
    for (unsigned mask = 0; mask < 16; mask += 5) { /* the first item its caller must look at, for some fact masks */
        size_t first = 0;
        while (first < n && statuses[first] == PASARELA_OK && (facts[first] & mask) == 0) first++;
        FUZZ_CHECK(pasarela_batch_first_exception(statuses, facts, n, mask) == first);
    }

    /* the same requests, each sealed into a buffer of its own (the workspace's out unused) */
    fuzz_workspace_free(&ws);
    fuzz_workspace_alloc(&ws, PASARELA_JSON_OUT_MAX(sealed_total), PASARELA_WORKSPACE_SCRATCH_SIZE(sealed_max), 1);
    ws.iv_pool = pool;
    char *outs[MAX_ITEMS];
    for (size_t i = 0; i < sealed_n; i++) outs[i] = (char *)fuzz_alloc(PASARELA_REQUEST_LEN(sealed_lens[i]));
    memcpy(pool, sealed_ivs, 16 * sealed_n);
    ws.iv_pool_len = 16 * sealed_n;
    ws.iv_pool_used = 0;
    for (size_t begin = 0, at = 0; begin < sealed_n;) {
        size_t done = pasarela_seal_batch(sealed_creds + begin, head.timestamp, plaintexts + at, sealed_lens + begin,
                                          sealed_n - begin, (head.selector & 4) ? NULL : sealed_ivs + 16 * begin, &ws,
                                          outs + begin, statuses);
        FUZZ_CHECK(done > 0 && done <= sealed_n - begin);
        for (size_t i = begin; i < begin + done; i++) {
            FUZZ_CHECK(statuses[i - begin] == PASARELA_OK);
            FUZZ_CHECK(memcmp(outs[i], requests[i], PASARELA_REQUEST_LEN(sealed_lens[i])) == 0);
            at += sealed_lens[i];
        }
        begin += done;
    }
    if (head.selector & 4) FUZZ_CHECK(ws.iv_pool_used == 16 * sealed_n);
    for (size_t i = 0; i < sealed_n; i++) {
        free(outs[i]);
        free(requests[i]);
    }
    free(plaintexts);
    fuzz_workspace_free(&ws);
    free(json);
    fuzz_credentials_free(&creds[0]);
    fuzz_credentials_free(&creds[1]);
    return 0;
}
