/* A set of output files written to temporary names and renamed into place together only when
 * every one was written, so a failed run leaves the previous files intact (the Bible's corpus,
 * an imported dataset). */
#ifndef MTLAB_DATA_OUT_FILES_H
#define MTLAB_DATA_OUT_FILES_H

#include <limits.h>
#include <stdio.h>

enum { OUT_MAX_FILES = 32 };

typedef struct {
    char final[PATH_MAX];
    char tmp[PATH_MAX];
    char name[256]; /* the file's name inside the directory */
    FILE *f; /* NULL once closed */
} out_file;

typedef struct {
    out_file files[OUT_MAX_FILES];
    size_t n;
    int failed;
} out_set;

/* Create dir and its parents; 0 or -1. */
int out_dir_make(const char *dir);
/* Open DIR/NAME's temporary file; NULL (and set->failed, with mt_error) on failure. */
FILE *out_open(out_set *set, const char *dir, const char *name);
/* Flush, sync and close every open file; -1 (and set->failed) on a write error. */
int out_close_all(out_set *set);
/* Close what is open, then rename all into place, or remove all temporaries when anything
 * failed. 0 or -1. */
int out_commit(out_set *set);

#endif
