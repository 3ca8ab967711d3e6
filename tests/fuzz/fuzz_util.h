/* What the libFuzzer targets share: CHECK, which aborts naming the promise an input broke, and
 * the scratch files a target writes its input to (in /dev/shm where it can, else /tmp, named by
 * the process so that parallel fuzzing jobs do not meet). Header-only, because the Makefile
 * builds every tests/fuzz/fuzz_*.c as a target of its own. */
#ifndef MTLAB_FUZZ_UTIL_H
#define MTLAB_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* path = TMP/PREFIX<pid>SUFFIX, e.g. /dev/shm/mtlab-fuzz-job-4242 or /tmp/mtlab-fuzz-4242.model */
static inline void fuzz_scratch_path(char *path, size_t cap, const char *prefix, const char *suffix)
{
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, cap, "%s/%s%ld%s", tmp, prefix, (long)getpid(), suffix);
}

/* A scratch directory TMP/PREFIX<pid>, made once per process (it may exist already). */
static inline void fuzz_scratch_dir(char *dir, size_t cap, const char *prefix)
{
    fuzz_scratch_path(dir, cap, prefix, "");
    mkdir(dir, 0700);
}

static inline void fuzz_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0);
}

/* The whole file, NUL-terminated (its length in *len), or NULL when it cannot be opened. */
static inline char *fuzz_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap + 1);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) buf = realloc(buf, (cap *= 2) + 1);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

#endif
