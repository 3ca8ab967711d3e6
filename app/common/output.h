/* Messages and output files of mtlab's commands, shared with the services below them
 * (app/common): "mtlab: ..." on stderr, output files checked before long work, and stdout
 * written in full or the exit status says it was not. */
#ifndef MTLAB_COMMON_OUTPUT_H
#define MTLAB_COMMON_OUTPUT_H

#include <stdio.h>

#include "mtlab/metrics.h"

/* Print "mtlab: <msg>" to stderr and return 1 (for `return cli_fail(...)`). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 0 while everything written to stdout so far got there (flushed); else 1, after printing
 * "mtlab: cannot write the output (stdout): No space left on device" once. A command writing
 * much calls it as it goes, to stop early; main calls cli_finish after every command. */
int cli_stdout_check(void);
/* The exit status after flushing and closing stdout: status, or 1 when status was 0 and the
 * output could not be written (a full disk, /dev/full, an I/O error at close). */
int cli_finish(int status);
/* Whether an output file the user named could be created (not a directory, its directory
 * writable), checked before long work: 0, or 1 after "mtlab: PATH: cannot create: REASON". */
int cli_check_output(const char *path);
/* An output file the user named, for writing; NULL after "mtlab: PATH: cannot create: REASON". */
FILE *cli_create(const char *path);
/* Flush and close it: 0, or 1 after "mtlab: PATH: cannot write: No space left on device" (a
 * write or the close failed). */
int cli_close_output(FILE *f, const char *path);
/* A sentence-per-line file (mt_text_lines_read: UTF-8 checked) that is not empty; 0, or 1
 * with the reason in mt_last_error(). */
int cli_read_sentences(mt_text_lines *t, const char *path);

#endif
