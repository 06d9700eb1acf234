/*
 * ivs.c — the random bytes of a workspace's IV pool (pasarela_iv_pool_fill): AES-256 output under a key the
 * OS CSPRNG gives afresh for every fill.
 *
 * Why not the OS's bytes themselves: the pool (4,096 bytes, the IVs of 256 seals) was filled by os.urandom,
 * whose kernel ChaCha20 runs far slower than AES with hardware instructions, and on a VM took as long per seal as
 * copying a batch's requests out. Here 48 bytes from the OS (a 256-bit key and
 * a 128-bit nonce) key AES-256, and eight CBC chains over zero bytes, run side by side by
 * pasarela_aes256_cbc_encrypt_many, write the pool: chain j starts from the nonce with its last byte XORed
 * with j, and its final block is the PKCS#7 one (16 bytes of 0x10 XORed into the chain).
 *
 * Why it is as good: each output block is AES-256 under a secret random key of an input that no other block
 * of the fill had (the eight starting inputs differ; every other input is an earlier output, equal to another
 * input with probability below 2^-110 for a fill), so the pool cannot be told from random bytes without
 * telling AES-256 from a random permutation (the argument that makes CTR mode a generator). Nothing is kept
 * from one fill to the next: a key serves one fill and is wiped with its schedule before return, so a pool
 * (or this process's memory after it) says nothing of any other. Forks are the caller's care, as before: a
 * child must discard the pool it inherited (python/pasarela/_binding.py does).
 */
#include <string.h>

#include "internal.h"

#define CHAINS 8

int pasarela_iv_pool_fill(unsigned cpu, const uint8_t seed[PASARELA_IV_SEED_LEN], uint8_t *pool, size_t len)
{
    pasarela_aes256_schedule ks;
    pasarela_cbc_job jobs[CHAINS];
    uint8_t starts[CHAINS][16];
    size_t chain_len, j;
    int status;

    if (seed == NULL || pool == NULL || len == 0 || len % (CHAINS * 16) != 0)
        return PASARELA_E_INVALID_ARGUMENT;
    status = pasarela_aes256_expand(cpu, seed, &ks);
    if (status != PASARELA_OK)
        return status;
    chain_len = len / CHAINS; /* a multiple of 16: its last block is the padding's */
    memset(pool, 0, len);
    for (j = 0; j < CHAINS; j++) {
        memcpy(starts[j], seed + 32, 16);
        starts[j][15] ^= (uint8_t)j;
        jobs[j].ks = &ks;
        jobs[j].iv = starts[j];
        jobs[j].in = pool + j * chain_len;
        jobs[j].len = chain_len - 16;
        jobs[j].out = pool + j * chain_len; /* in == out: allowed within a job */
    }
    pasarela_aes256_cbc_encrypt_many(cpu, jobs, CHAINS);
    pasarela_wipe(&ks, sizeof ks);
    pasarela_wipe(starts, sizeof starts);
    return PASARELA_OK;
}
