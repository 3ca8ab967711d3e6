/* Replace a file so that readers (and a crash) see either the old contents or the complete new
 * ones: write a temporary file beside it, flush and fsync it, rename it over the target, then
 * fsync the directory so the rename itself is durable.
 *
 * The steps are separate so that a bundle can seal all its files first and rename them only
 * when every one was written (a failed bundle write then leaves the old bundle untouched). */
#ifndef MTLAB_IO_ATOMIC_FILE_H
#define MTLAB_IO_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f; /* open while writing, NULL once sealed */
    char *path; /* the file to replace */
    char *tmp_path; /* "<path>.tmp-<pid>-<n>" in the same directory */
} atomic_file;

/* Create the temporary file (mode 0666 less the umask, like fopen). */
int atomic_file_begin(atomic_file *af, const char *path);
int atomic_file_write(atomic_file *af, const void *data, size_t n);
/* Flush, fsync and close the temporary file. */
int atomic_file_seal(atomic_file *af);
/* Rename the sealed temporary over path and fsync the directory; releases af. */
int atomic_file_commit(atomic_file *af);
/* Remove the temporary file and release af (safe at any stage, and after commit). */
void atomic_file_discard(atomic_file *af);

/* begin + write + seal + commit of one buffer, discarding the temporary on failure. */
int atomic_file_replace(const char *path, const void *data, size_t n);
/* Append the whole file src to af. */
int atomic_file_write_file(atomic_file *af, const char *src);
/* atomic_file_replace with the contents of the file src. */
int atomic_file_copy(const char *path, const char *src);

#endif
