/*
 * The checked mode's check for text that is already canonical (json_checked.c): what it says yes to and no to, and
 * that saying so changes nothing but the time: on every text here, and on random texts and their one-byte mutations,
 * pasarela_json_canonicalize with it gives the token by token pass's result (PASARELA_JSON_NO_SHORTCUT), and a yes
 * only ever comes for a text that is that pass's result as it is, with the same facts. With SSE2, and with AVX2
 * and AVX-512 BW where the CPU has them; where the check does not exist (not x86-64 with GCC or clang) it always says
 * no.
 */
#include <stdlib.h>

#include "check.h"
#include "internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CHECK_EXISTS 1
#else
#define CHECK_EXISTS 0
#endif

typedef struct outcome {
    int rc;
    size_t len;
    unsigned facts;
    uint8_t *out;
} outcome;

static outcome canonical(unsigned cpu, const uint8_t *text, size_t n, unsigned flags) {
    outcome o = {0, 0, 0, (uint8_t *)malloc(PASARELA_JSON_OUT_MAX(n))};
    void *scratch = malloc(PASARELA_JSON_SCRATCH_SIZE(n));
    size_t offset = 0;
    o.rc = pasarela_json_canonicalize_cpu(cpu, text, n, flags, o.out, PASARELA_JSON_OUT_MAX(n), &o.len, scratch,
                                          PASARELA_JSON_SCRATCH_SIZE(n), &offset, &o.facts);
    free(scratch);
    return o;
}

/* The check's verdict on text with cpu (-1: it refused the scratch), after holding its result to the token pass. */
static int verdict(unsigned cpu, const uint8_t *text, size_t n, const char *label) {
    /* an exact-size copy, so that a read past the end shows under the sanitizers and valgrind */
    uint8_t *copy = (uint8_t *)malloc(n ? n : 1);
    memcpy(copy, text, n);
    void *scratch = malloc(PASARELA_JSON_SCRATCH_SIZE(n));
    unsigned facts = 99;
    int yes = pasarela_json_checked_canonical(cpu, copy, n, scratch, PASARELA_JSON_SCRATCH_SIZE(n), &facts);
    outcome tokens = canonical(cpu, copy, n, PASARELA_JSON_NO_SHORTCUT), with = canonical(cpu, copy, n, 0);
    CHECK(with.rc == tokens.rc && with.len == tokens.len && with.facts == tokens.facts &&
              memcmp(with.out, tokens.out, with.len) == 0,
          "%s: the check changed the result (cpu 0x%x)", label, cpu);
    if (yes)
        CHECK(tokens.rc == PASARELA_OK && tokens.len == n && memcmp(tokens.out, copy, n) == 0 &&
                  facts == tokens.facts,
              "%s: said canonical, the token pass says otherwise (cpu 0x%x)", label, cpu);
    free(tokens.out);
    free(with.out);
    free(scratch);
    free(copy);
    return yes;
}

typedef struct example {
    const char *text;
    int canonical_plain; /* 1: the check says yes (where it exists); 0: no */
} example;

static const example examples[] = {
    {"{}", 1},
    {"{\"a\":1}", 1},
    {"{\"a\":[1,2,3],\"b\":{\"c\":{\"d\":[]}},\"e\":[{}],\"f\":[[]]}", 1},
    {"{\"a\":-0.5,\"b\":0,\"c\":-1,\"d\":10,\"e\":0.000001,\"f\":123456789012345,\"g\":-12.25}", 1},
    {"{\"a\":null,\"b\":true,\"c\":false,\"d\":[null,true,false]}", 1},
    {"{\"a\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\",\"\":\"\",\"b\":\"0\",\"c\":\"12\"}", 1},
    {"{\"k\":{\"key\":1,\"__proto__\":2},\"l\":[{\"key\":3}]}", 1}, /* "key" below the top level: no fact */
    {"{\"items\":[{\"sku\":\"A\",\"qty\":1},{\"sku\":\"B\",\"qty\":2}]}", 1}, /* the same keys in two objects */
    {"{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"j\":10,\"k\":11,\"l\":12,\"m\":13,"
     "\"n\":14,\"o\":15,\"p\":16,\"q\":17,\"r\":18,\"s\":19}", 1}, /* more keys than compared pairwise */
    {"{\"a\":\"\x7f\",\"b\":\"/\"}", 1},
    /* not canonical, or not JSON, or left to the token pass */
    {"{\"a\":1,\"a\":2}", 0},
    {"{\"a\":{\"b\":1,\"c\":2,\"b\":3}}", 0},
    {"{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"j\":10,\"k\":11,\"l\":12,\"m\":13,"
     "\"n\":14,\"o\":15,\"p\":16,\"q\":17,\"r\":18,\"a\":19}", 0},
    {"{\"abcdefgh1\":1,\"abcdefgh2\":2,\"abcdefgh1\":3}", 0},
    {"{\"1\":1}", 0},
    {"{\"a\":1,\"0\":2}", 0},
    {"{\"key\":1}", 0},
    {"{\"a\":1,\"__proto__\":2}", 0},
    {"{\"a\":1.0}", 0},
    {"{\"a\":1.50}", 0},
    {"{\"a\":-0}", 0},
    {"{\"a\":-0.0}", 0},
    {"{\"a\":01}", 0},
    {"{\"a\":-01}", 0},
    {"{\"a\":1e5}", 0},
    {"{\"a\":1E5}", 0},
    {"{\"a\":0.0000001}", 0},
    {"{\"a\":1234567890123456}", 0},
    {"{\"a\":1.2.3}", 0},
    {"{\"a\":-}", 0},
    {"{\"a\":.5}", 0},
    {"{\"a\":5.}", 0},
    {"{\"a\":+1}", 0},
    {"{\"a\":--1}", 0},
    {"{\"a\":1-2}", 0},
    {"{\"a\":\"\\n\"}", 0},
    {"{\"a\":\"\\u0041\"}", 0},
    {"{\"a\":\"\x01\"}", 0},
    {"{\"a\":\"\xff\"}", 0},
    {"{\"a\":\"\xc3\"}", 0},
    {"{\"a\":\"\xed\xa0\x80\"}", 0},
    {"{\"a\": 1}", 0},
    {"{ \"a\":1}", 0},
    {"{\"a\":1} ", 0},
    {"{\"a\":1,}", 0},
    {"{,\"a\":1}", 0},
    {"{\"a\":1}}", 0},
    {"{\"a\":[1}", 0},
    {"{\"a\":[1]]}", 0},
    {"{\"a\":{\"b\":1]}", 0},
    {"{\"a\":1},{\"b\":2}", 0},
    {"{\"a\":1}{}", 0},
    {"{\"a\":1}x", 0},
    {"[1]", 0},
    {"\"a\"", 0},
    {"1", 0},
    {"{", 0},
    {"}", 0},
    {"", 0},
    {"{\"a\"}", 0},
    {"{\"a\":}", 0},
    {"{\"a\"1}", 0},
    {"{\"a\"::1}", 0},
    {"{\"a\":1:2}", 0},
    {"{\"a\":\"b\":1}", 0},
    {"{\"a\":1,2}", 0},
    {"{\"a\":1,[]}", 0},
    {"{\"a\":1,{}}", 0},
    {"{\"a\":[\"b\":1]}", 0},
    {"{\"a\":[1,\"b\":2]}", 0},
    {"{\"a\":[,1]}", 0},
    {"{\"a\":[1,,2]}", 0},
    {"{\"a\":\"x\"\"y\"}", 0},
    {"{\"a\":\"x\"1}", 0},
    {"{\"a\":1\"x\"}", 0},
    {"{\"a\":tru}", 0},
    {"{\"a\":truex}", 0},
    {"{\"a\":true1}", 0},
    {"{\"a\":nul}", 0},
    {"{\"a\":nulll}", 0},
    {"{\"a\":fals}", 0},
    {"{\"a\":t}", 0},
    {"{\"a\":1true}", 0},
    {"{\"a\":NaN}", 0},
    {"{\"a\":[]1}", 0},
    {"{\"a\":{}\"b\"}", 0},
    {"{\"a\":\"b\"", 0},
    {"{\"a\":\"b}", 0},
    {"{{}}", 0},
    {"{[]}", 0},
    {"{:1}", 0},
    {"{\"a\":[}", 0},
};

/* A random canonical object text (JSON.stringify's form, no escapes) of about budget bytes into buf. */
static size_t random_value(char *buf, size_t at, unsigned depth, size_t budget);

static size_t random_key(char *buf, size_t at, unsigned i) {
    static const char *const names[] = {"sku", "qty", "price", "note", "a", "b", "k", "ref", "amount_total_cop"};
    return at + (size_t)sprintf(buf + at, "\"%s%u\"", names[rng64() % 9], i);
}

static size_t random_object(char *buf, size_t at, unsigned depth, size_t budget) {
    unsigned members = (unsigned)(rng64() % 6);
    buf[at++] = '{';
    for (unsigned i = 0; i < members && budget > 0; i++) {
        if (i) buf[at++] = ',';
        at = random_key(buf, at, i);
        buf[at++] = ':';
        at = random_value(buf, at, depth + 1, budget / 2);
    }
    buf[at++] = '}';
    return at;
}

static size_t random_value(char *buf, size_t at, unsigned depth, size_t budget) {
    static const char *const scalars[] = {"0", "-1", "1999.99", "0.5", "-0.000001", "123456789012345", "true",
                                          "false", "null", "\"\"", "\"2026-11-28\"", "\"Bogot\xc3\xa1\""};
    unsigned kind = (unsigned)(rng64() % 8);
    if (depth < 6 && budget > 8 && kind == 0) return random_object(buf, at, depth, budget);
    if (depth < 6 && budget > 8 && kind == 1) {
        unsigned items = (unsigned)(rng64() % 5);
        buf[at++] = '[';
        for (unsigned i = 0; i < items; i++) {
            if (i) buf[at++] = ',';
            at = random_value(buf, at, depth + 1, budget / 2);
        }
        buf[at++] = ']';
        return at;
    }
    if (kind == 2) { /* a string of random length: its ends fall anywhere in a 64-byte block */
        size_t len = (size_t)(rng64() % 150);
        buf[at++] = '"';
        for (size_t i = 0; i < len; i++) buf[at++] = (char)('a' + rng64() % 26);
        buf[at++] = '"';
        return at;
    }
    return at + (size_t)sprintf(buf + at, "%s", scalars[rng64() % 12]);
}

int main(void) {
    unsigned features = pasarela_cpu_features(); /* (AVX-512 BW's instance wherever the CPU has it) */
    unsigned cpus[3] = {0, features & PASARELA_CPU_AVX2, features & (PASARELA_CPU_AVX2 | PASARELA_CPU_AVX512)};
    size_t count = sizeof examples / sizeof examples[0];
    for (size_t e = 0; e < count; e++) {
        const uint8_t *text = (const uint8_t *)examples[e].text;
        size_t n = strlen(examples[e].text);
        for (int k = 0; k < 3; k++) {
            int yes = verdict(cpus[k], text, n, examples[e].text);
            CHECK(yes == (CHECK_EXISTS && examples[e].canonical_plain), "%s: said %d (cpu 0x%x)", examples[e].text,
                  yes, cpus[k]);
        }
    }
    /* a text of 1,000 levels is left to the token pass (json.c's limit); one of 990 is not */
    static char deep[8000];
    for (unsigned levels = 990; levels <= 1000; levels += 10) {
        size_t at = 0;
        deep[at++] = '{';
        for (unsigned i = 1; i < levels; i++) at += (size_t)sprintf(deep + at, "\"a\":{");
        for (unsigned i = 0; i < levels; i++) deep[at++] = '}';
        for (int k = 0; k < 3; k++)
            CHECK(verdict(cpus[k], (const uint8_t *)deep, at, "deep") == (CHECK_EXISTS && levels < 1000),
                  "%u levels", levels);
    }
    /* objects of 2,000 keys that share their first and last 8 bytes and their length (the check's prints of them
     * collide: it may leave them to the token pass, which must then agree), without and with a duplicate */
    static char wide[80000];
    for (int duplicate = 0; duplicate < 2; duplicate++) {
        size_t at = 0;
        wide[at++] = '{';
        for (unsigned i = 0; i < 2000; i++)
            at += (size_t)sprintf(wide + at, "%s\"aaaaaaaa%04ubbbbbbbb\":%u", i ? "," : "",
                                  duplicate && i == 1999 ? 7u : i, i);
        wide[at++] = '}';
        for (int k = 0; k < 3; k++)
            CHECK(verdict(cpus[k], (const uint8_t *)wide, at, "colliding keys") == 0 || !duplicate,
                  "a duplicate among colliding keys found canonical");
    }
    /* objects of 2 to 5 keys (up to 4, their prints are compared all at once in the check), at the top level and
     * nested, with each pair of their keys made the same (no) or none (yes): keys of up to 8 bytes, whose print is
     * the key itself, and keys of 17 bytes that share their first and last 8 bytes (prints that collide: the keys
     * themselves decide) */
    for (unsigned members = 2; members <= 5; members++)
        for (unsigned i = 0; i < members; i++)
            for (unsigned j = i + 1; j <= members; j++) /* key j made key i's (j == members: none) */
                for (int form = 0; form < 4; form++) {
                    char text[512];
                    int nested = form & 1, long_keys = form >> 1;
                    size_t at = (size_t)sprintf(text, "%s", nested ? "{\"items\":[{" : "{");
                    for (unsigned k = 0; k < members; k++) {
                        unsigned id = k == j ? i : k;
                        at += (size_t)sprintf(text + at, long_keys ? "%s\"aaaaaaaa%ubbbbbbbb\":%u" : "%s\"k%u\":%u",
                                              k ? "," : "", id, k);
                    }
                    at += (size_t)sprintf(text + at, "%s", nested ? "}]}" : "}");
                    for (int k = 0; k < 3; k++)
                        CHECK(verdict(cpus[k], (const uint8_t *)text, at, "small object") ==
                                  (CHECK_EXISTS && j == members),
                              "%s: said otherwise (cpu 0x%x)", text, cpus[k]);
                }
    /* random canonical texts, each at every offset in a block (a prefix member of 0-63 bytes), and mutations */
    static char buf[1 << 16];
    unsigned yes_count = 0, texts = 0;
    for (unsigned round = 0; round < 300; round++) {
        size_t body = random_object(buf + 200, 0, 0, 2000); /* {...} at buf + 200 */
        for (unsigned shift = 0; shift < 64; shift += 7) {
            /* {"p":"<shift x's>",<the members>} */
            size_t at = 0;
            at += (size_t)sprintf(buf + 4096 + at, "{\"p\":\"");
            for (unsigned i = 0; i < shift; i++) buf[4096 + at++] = 'x';
            buf[4096 + at++] = '"';
            if (body > 2) buf[4096 + at++] = ',';
            memcpy(buf + 4096 + at, buf + 201, body - 1);
            at += body - 1;
            const uint8_t *text = (const uint8_t *)buf + 4096;
            for (int k = 0; k < 3; k++) {
                int yes = verdict(cpus[k], text, at, "random");
                yes_count += (unsigned)yes;
                texts++;
                CHECK(yes == CHECK_EXISTS, "random text: said %d: %.*s", yes, (int)at, (const char *)text);
            }
            static uint8_t mutated[8192];
            for (unsigned m = 0; m < 20; m++) {
                memcpy(mutated, text, at);
                size_t where = (size_t)(rng64() % at);
                static const char bytes[] = "{}[],:\"\\0123456789.-+eE tfnul\x01\x80\xc3";
                mutated[where] = (uint8_t)bytes[rng64() % (sizeof bytes - 1)];
                for (int k = 0; k < 3; k++) verdict(cpus[k], mutated, at, "mutated");
            }
        }
    }
    printf("%u of %u random canonical texts found canonical by the check\n", yes_count, texts);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
