/*
 * Replays files through a fuzz target without libFuzzer: link it with one fuzz_<name>.c and
 * the core's C files using any C compiler, then run it on files or directories (for example the seed corpus
 * under valgrind, or a crash file libFuzzer left behind under gdb). Also runs the empty input.
 *
 *   gcc -std=c99 -g -DPASARELA_VERSION='"0.0.0"' -Icsrc csrc/fuzz/fuzz_main.c csrc/fuzz/fuzz_hex_decode.c \
 *       csrc/[a-z]*.c -o /tmp/replay_hex_decode && /tmp/replay_hex_decode csrc/fuzz/corpus/hex_decode
 *
 * Prints "N passed, 0 failed" (a failing input aborts, as it would under libFuzzer).
 */
#define _DEFAULT_SOURCE 1 /* dirent's d_type and DT_DIR */

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static size_t replayed;

static void replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    long size;
    uint8_t *data;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    data = (uint8_t *)fuzz_alloc((size_t)size);
    if (fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    free(data);
    replayed++;
}

static void replay(const char *path)
{
    struct stat st;
    DIR *dir;
    struct dirent *entry;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "no such file: %s\n", path);
        exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        replay_file(path);
        return;
    }
    if ((dir = opendir(path)) == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    while ((entry = readdir(dir)) != NULL) {
        char child[4096];
        if (entry->d_name[0] == '.')
            continue;
        if ((size_t)snprintf(child, sizeof child, "%s/%s", path, entry->d_name) >= sizeof child) {
            fprintf(stderr, "path too long under %s\n", path);
            exit(2);
        }
        replay(child);
    }
    closedir(dir);
}

int main(int argc, char **argv)
{
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
    replayed++;
    for (int i = 1; i < argc; i++)
        replay(argv[i]);
    printf("%zu passed, 0 failed\n", replayed);
    return 0;
}
