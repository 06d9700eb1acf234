/*
 * Fuzz target: pasarela_json_canonicalize, the plaintext canonicalizer (JSON text from callers).
 *
 * Input: a selector byte, then the JSON text. Selector bit 0: also run the trusted-serializer mode
 * (PASARELA_JSON_SHORTEST_DIGITS) on the text, which breaks its contract: memory safety, and its check for
 * text that is already canonical against itself (SSE2, AVX2, AVX-512) and against the token by token pass;
 * bit 1: also call with output and scratch one byte short of the documented sizes.
 * Always, on the text and on its result: the check for text that is already canonical of the checked mode
 * (json_checked.c) changes nothing but the time (check_checked).
 * Checks: only documented statuses (never BUFFER_TOO_SMALL at the documented sizes); a result of
 * the checked mode is well-formed UTF-8 without raw control bytes (JSON.stringify escapes them and
 * writes no whitespace), and it has an integer literal of 17 digits or more exactly when the facts say so
 * (PASARELA_JSON_FACT_LONG_INT); canonicalizing it again, in either mode, gives the same bytes (idempotence).
 */
#include "fuzz.h"

typedef struct result {
    int rc;
    uint8_t *out;
    size_t len;
    unsigned facts;
} result;

static result canonicalize_cpu(const uint8_t *data, size_t n, unsigned flags, unsigned cpu)
{
    uint8_t *in = fuzz_copy(data, n);
    void *scratch = fuzz_alloc(PASARELA_JSON_SCRATCH_SIZE(n));
    size_t error_offset = 0;
    result r = {0, (uint8_t *)fuzz_alloc(PASARELA_JSON_OUT_MAX(n)), 12345, -1};
    r.rc = pasarela_json_canonicalize_cpu(cpu, in, n, flags, r.out, PASARELA_JSON_OUT_MAX(n), &r.len, scratch,
                                          PASARELA_JSON_SCRATCH_SIZE(n), &error_offset, &r.facts);
    FUZZ_CHECK(r.rc == PASARELA_OK || r.rc == PASARELA_E_JSON_SYNTAX || r.rc == PASARELA_E_JSON_UNSUPPORTED ||
               r.rc == PASARELA_E_JSON_UNSAFE_INTEGER);
    FUZZ_CHECK((r.facts & ~(PASARELA_JSON_FACT_KEY | PASARELA_JSON_FACT_NULL | PASARELA_JSON_FACT_PROTO |
                            PASARELA_JSON_FACT_LONG_INT)) == 0);
    if (r.rc == PASARELA_OK) {
        FUZZ_CHECK(r.len <= PASARELA_JSON_OUT_MAX(n) && error_offset == 0);
    } else {
        FUZZ_CHECK(r.len == 0 && error_offset <= n);
    }
    free(scratch);
    free(in);
    return r;
}

static result canonicalize(const uint8_t *data, size_t n, unsigned flags)
{
    return canonicalize_cpu(data, n, flags, 0);
}

static int same_result(const result *a, const result *b)
{
    return a->rc == b->rc && a->len == b->len && a->facts == b->facts && memcmp(a->out, b->out, a->len) == 0;
}

/* The trusted-serializer mode on any text (hostile text breaks its contract, so beyond memory safety and
 * documented statuses only this is checked): the check for text that is already canonical decides alike in
 * its instances (SSE2, and AVX2 where this CPU has it), and whenever the token by token pass succeeds, the
 * result with the check is that pass's result (same bytes, same facts). */
static void check_shortcut(const uint8_t *data, size_t n)
{
    result portable = canonicalize_cpu(data, n, PASARELA_JSON_SHORTEST_DIGITS, 0);
    result native = canonicalize_cpu(data, n, PASARELA_JSON_SHORTEST_DIGITS, pasarela_cpu_features());
    result tokens = canonicalize(data, n, PASARELA_JSON_SHORTEST_DIGITS | PASARELA_JSON_NO_SHORTCUT);
    FUZZ_CHECK(same_result(&portable, &native));
    if (tokens.rc == PASARELA_OK && portable.rc == PASARELA_OK)
        FUZZ_CHECK(same_result(&portable, &tokens));
    free(portable.out);
    free(native.out);
    free(tokens.out);
}

/* The checked mode's check for text that is already canonical (json_checked.c, with SSE2, and with this CPU's
 * AVX2 and AVX-512 BW), which trusts nothing: on any text, the result with it is the token by token pass's (same
 * status, bytes and facts), and whenever it says yes the text is that pass's result as it is. */
static void check_checked(const uint8_t *data, size_t n)
{
    result tokens = canonicalize(data, n, PASARELA_JSON_NO_SHORTCUT);
    static const unsigned cpus[] = {0, PASARELA_CPU_AVX2, PASARELA_CPU_AVX2 | PASARELA_CPU_AVX512};
    for (size_t k = 0; k < sizeof cpus / sizeof cpus[0]; k++) {
        unsigned cpu = cpus[k] & pasarela_cpu_features();
        result checked = canonicalize_cpu(data, n, 0, cpu);
        FUZZ_CHECK(same_result(&checked, &tokens));
        free(checked.out);
        uint8_t *in = fuzz_copy(data, n);
        void *scratch = fuzz_alloc(PASARELA_JSON_SCRATCH_SIZE(n));
        unsigned facts = 12345;
        if (pasarela_json_checked_canonical(cpu, in, n, scratch, PASARELA_JSON_SCRATCH_SIZE(n), &facts)) {
            FUZZ_CHECK(tokens.rc == PASARELA_OK && tokens.len == n && memcmp(tokens.out, data, n) == 0);
            FUZZ_CHECK(facts == tokens.facts);
        }
        free(scratch);
        free(in);
    }
    free(tokens.out);
}

/* Well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), no byte < 0x20. */
static int is_stringify_text(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint32_t cp, min;
        if (c < 0x20)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            k = 2, cp = c & 0x1Fu, min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 3, cp = c & 0x0Fu, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 4, cp = c & 0x07u, min = 0x10000;
        } else {
            return 0;
        }
        if (n - i < k)
            return 0;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + j] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k;
    }
    return 1;
}

/* Whether the text has an integer token of min_digits or more digits outside strings: JSON.stringify
 * writes 1e20 as 100000000000000000000, which canonicalizing again refuses as an unsafe integer (16 or
 * more digits), and which the canonicalizer reports as PASARELA_JSON_FACT_LONG_INT (17 or more). */
static int has_integer_of(const uint8_t *s, size_t n, size_t min_digits)
{
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        if (in_string) {
            if (s[i] == '\\')
                i++;
            else if (s[i] == '"')
                in_string = 0;
        } else if (s[i] == '"') {
            in_string = 1;
        } else if (s[i] >= '0' && s[i] <= '9' && (i == 0 || s[i - 1] < '0' || s[i - 1] > '9')) {
            size_t j = i;
            while (j < n && s[j] >= '0' && s[j] <= '9')
                j++;
            if (j - i >= min_digits && (j == n || (s[j] != '.' && s[j] != 'e')) && (i == 0 || s[i - 1] != '.'))
                return 1;
            i = j - 1;
        }
    }
    return 0;
}

static void check_too_small(const uint8_t *data, size_t n)
{
    uint8_t *out = (uint8_t *)fuzz_alloc(PASARELA_JSON_OUT_MAX(n));
    void *scratch = fuzz_alloc(PASARELA_JSON_SCRATCH_SIZE(n));
    size_t len = 0;
    FUZZ_CHECK(pasarela_json_canonicalize(data, n, 0, out, PASARELA_JSON_OUT_MAX(n) - 1, &len, scratch,
                                          PASARELA_JSON_SCRATCH_SIZE(n), NULL, NULL) == PASARELA_E_BUFFER_TOO_SMALL);
    FUZZ_CHECK(pasarela_json_canonicalize(data, n, 0, out, PASARELA_JSON_OUT_MAX(n), &len, scratch,
                                          PASARELA_JSON_SCRATCH_SIZE(n) - 1, NULL, NULL) == PASARELA_E_BUFFER_TOO_SMALL);
    free(scratch);
    free(out);
}

/* pasarela_json_array_items on any bytes: no items, or items that, joined by commas inside brackets, are
 * the text (in exactly the buffers given: items of n bytes, lens of max_items). A well-formed array whose
 * canonical form has k top-level items splits into k items (checked by the caller). */
static size_t check_array_items(const uint8_t *data, size_t n, size_t max_items)
{
    uint8_t *items = (uint8_t *)fuzz_alloc(n);
    size_t *lens = (size_t *)fuzz_alloc(sizeof(size_t) * (max_items ? max_items : 1));
    size_t count = pasarela_json_array_items(data, n, items, lens, max_items), at = 1, from = 0;
    FUZZ_CHECK(count <= max_items);
    for (size_t i = 0; i < count; i++) {
        FUZZ_CHECK(lens[i] > 0 && at + lens[i] < n && memcmp(data + at, items + from, lens[i]) == 0);
        at += lens[i];
        from += lens[i];
        FUZZ_CHECK(data[at] == (i + 1 < count ? ',' : ']'));
        at++;
    }
    FUZZ_CHECK(count == 0 || (at == n && data[0] == '['));
    free(lens);
    free(items);
    return count;
}

/* On JSON text, the split 64 bytes at a time gives what the byte scan gives (items, lengths, count). */
static void check_split_like_byte_scan(const uint8_t *data, size_t n)
{
    size_t max_items = n / 2 + 1;
    uint8_t *items = (uint8_t *)fuzz_alloc(n), *portable_items = (uint8_t *)fuzz_alloc(n);
    size_t *lens = (size_t *)fuzz_alloc(sizeof(size_t) * max_items);
    size_t *portable_lens = (size_t *)fuzz_alloc(sizeof(size_t) * max_items);
    size_t count = pasarela_json_array_items(data, n, items, lens, max_items);
    FUZZ_CHECK(count == pasarela_json_array_items_portable(data, n, portable_items, portable_lens, max_items));
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        FUZZ_CHECK(lens[i] == portable_lens[i]);
        total += lens[i];
    }
    FUZZ_CHECK(memcmp(items, portable_items, total) == 0);
    free(portable_lens);
    free(lens);
    free(portable_items);
    free(items);
}

/* The number of top-level items of canonical JSON text that is an array (0 for "[]" and for the rest). */
static size_t canonical_array_items(const uint8_t *text, size_t n)
{
    size_t count = 0, depth = 0;
    if (n < 2 || text[0] != '[' || n == 2) return 0;
    for (size_t i = 1; i + 1 < n; i++) {
        if (text[i] == '"') {
            for (i++; text[i] != '"'; i++)
                if (text[i] == '\\') i++;
        } else if (text[i] == '[' || text[i] == '{') {
            depth++;
        } else if (text[i] == ']' || text[i] == '}') {
            depth--;
        } else if (text[i] == ',' && depth == 0) {
            count++;
        }
    }
    return count + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader reader = {data, size};
    uint8_t selector = fuzz_u8(&reader);
    if (selector & 1)
        check_shortcut(reader.data, reader.size);
    if (selector & 2)
        check_too_small(reader.data, reader.size);
    check_array_items(reader.data, reader.size, selector >> 4);
    check_checked(reader.data, reader.size);
    result first = canonicalize(reader.data, reader.size, 0);
    if (first.rc == PASARELA_OK) {
        check_checked(first.out, first.len);
        check_split_like_byte_scan(reader.data, reader.size);
        size_t items = canonical_array_items(first.out, first.len);
        FUZZ_CHECK(check_array_items(first.out, first.len, 1000) == items);
        FUZZ_CHECK(is_stringify_text(first.out, first.len));
        FUZZ_CHECK(!(first.facts & PASARELA_JSON_FACT_LONG_INT) == !has_integer_of(first.out, first.len, 17));
        /* The result is JSON.stringify output (shortest digits, JSON.stringify escapes, no duplicate
         * keys): canonicalizing it again, checked or trusted (with and without the check for text that
         * is already canonical, which takes it as it is), gives the same bytes. */
        static const unsigned again_flags[] = {0, PASARELA_JSON_SHORTEST_DIGITS,
                                               PASARELA_JSON_SHORTEST_DIGITS | PASARELA_JSON_NO_SHORTCUT};
        for (size_t k = 0; k < sizeof again_flags / sizeof again_flags[0]; k++) {
            result again = canonicalize_cpu(first.out, first.len, again_flags[k], pasarela_cpu_features());
            if (again.rc == PASARELA_E_JSON_UNSAFE_INTEGER) {
                FUZZ_CHECK(has_integer_of(first.out, first.len, 16));
            } else {
                FUZZ_CHECK(again.rc == PASARELA_OK);
                FUZZ_CHECK(again.len == first.len && memcmp(again.out, first.out, first.len) == 0);
                FUZZ_CHECK(again.facts == first.facts);
            }
            free(again.out);
        }
    }
    free(first.out);
    return 0;
}
