/* c_harness.h — what the C benchmark drivers open_parts.c and sha512_overlap.c share: their arguments (--rounds N,
 * a flag, the payload files), a monotonic clock, stopping with a message, allocation that cannot fail (zeroed), the
 * rounds (every file and part timed in turn, for about 5 ms each, the fastest round kept: this machine is shared, and
 * the least disturbed round is the closest to the code's own speed) and the table they print.
 *
 * A driver defines HARNESS_NAME (its name, for its messages) before including this file, and after defining its
 * own bench and request types and run_part(bench *, const request *, int part), writes HARNESS_TIME_PART(bench,
 * request) for time_part: the ns per call of one part, called 16 at a time for about 5 ms. */
#ifndef PASARELA_BENCHMARKS_C_HARNESS_H
#define PASARELA_BENCHMARKS_C_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef HARNESS_NAME
#error "define HARNESS_NAME (the driver's name) before including c_harness.h"
#endif

static inline double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline void fail(const char *what) {
    fprintf(stderr, HARNESS_NAME ": %s\n", what);
    exit(1);
}

static inline void *must_alloc(size_t n) {
    void *p = calloc(1, n);
    if (p == NULL) fail("out of memory");
    return p;
}

/* The bytes of the file at path, with 128 zero bytes after them (a Base64 of the text and the 66 bytes after it,
 * the length of a signed text's key member, reads past it). */
static inline uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    long size = 0;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0)
        fail("cannot read a file");
    uint8_t *data = (uint8_t *)must_alloc((size_t)size + 128);
    if (fread(data, 1, (size_t)size, f) != (size_t)size) fail("cannot read a file");
    fclose(f);
    *len = (size_t)size;
    return data;
}

#define HARNESS_MAX_FILES 8

/* A payload file given on the command line. */
typedef struct harness_file {
    const char *name; /* its path without the directory */
    uint8_t *json;    /* read_file's */
    size_t len;
} harness_file;

/* The arguments: "--rounds N" (default 15), flag (when not NULL: *flag_set to 1 when given) and up to
 * HARNESS_MAX_FILES files, read into files. Stops with usage unless there is a file and N >= 1. Returns the number
 * of files. */
static inline int harness_args(int argc, char **argv, const char *usage, const char *flag, int *flag_set, int *rounds,
                               harness_file files[HARNESS_MAX_FILES]) {
    int nfiles = 0;
    *rounds = 15;
    for (int arg = 1; arg < argc; arg++) {
        if (strcmp(argv[arg], "--rounds") == 0 && arg + 1 < argc) {
            *rounds = atoi(argv[++arg]);
        } else if (flag != NULL && strcmp(argv[arg], flag) == 0) {
            *flag_set = 1;
        } else if (nfiles < HARNESS_MAX_FILES) {
            const char *slash = strrchr(argv[arg], '/');
            files[nfiles].name = slash != NULL ? slash + 1 : argv[arg];
            files[nfiles].json = read_file(argv[arg], &files[nfiles].len);
            nfiles++;
        }
    }
    if (nfiles == 0 || *rounds < 1) fail(usage);
    return nfiles;
}

/* best[f * parts + part]: the fastest of rounds rounds of time(ctx, f, part) (ns per call), every file and part timed
 * in turn in each round. */
static inline void harness_fastest(int rounds, int nfiles, int parts, double (*time)(void *ctx, int f, int part),
                                   void *ctx, double *best) {
    for (int i = 0; i < nfiles * parts; i++) best[i] = 1e300;
    for (int round = 0; round < rounds; round++)
        for (int f = 0; f < nfiles; f++)
            for (int part = 0; part < parts; part++) {
                double t = time(ctx, f, part);
                if (t < best[f * parts + part]) best[f * parts + part] = t;
            }
}

/* The table of best (harness_fastest's): a column a file, a row a part. */
static inline void harness_table(int rounds, const char *note, const harness_file *files, int nfiles,
                                 const char *const *part_names, int parts, const double *best) {
    printf("| ns per call, fastest of %d rounds%s |", rounds, note);
    for (int f = 0; f < nfiles; f++) printf(" %s (%zu B) |", files[f].name, files[f].len);
    printf("\n|---|");
    for (int f = 0; f < nfiles; f++) printf("---|");
    printf("\n");
    for (int part = 0; part < parts; part++) {
        printf("| %s |", part_names[part]);
        for (int f = 0; f < nfiles; f++) printf(" %.0f |", best[f * parts + part]);
        printf("\n");
    }
}

/* time_part(b, r, part): the ns per call of run_part(b, r, part), called 16 at a time for about 5 ms; and
 * harness_time_one, harness_fastest's time for a harness_timed (the bench and the requests, one a file). */
#define HARNESS_TIME_PART(bench_type, request_type)                                    \
    static double time_part(bench_type *b, const request_type *r, int part) {          \
        size_t calls = 0;                                                               \
        double start = now_ns(), elapsed;                                               \
        do {                                                                            \
            for (int i = 0; i < 16; i++) run_part(b, r, part);                          \
            calls += 16;                                                                \
            elapsed = now_ns() - start;                                                 \
        } while (elapsed < 5e6);                                                        \
        return elapsed / (double)calls;                                                 \
    }                                                                                   \
    typedef struct harness_timed {                                                      \
        bench_type *b;                                                                  \
        const request_type *requests;                                                   \
    } harness_timed;                                                                    \
    static double harness_time_one(void *ctx, int f, int part) {                        \
        const harness_timed *t = (const harness_timed *)ctx;                            \
        return time_part(t->b, &t->requests[f], part);                                  \
    }

#endif
