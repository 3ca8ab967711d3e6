/* mtlab subcommands. Each lives in its own app/cli/cmd_NAME.c and is listed once in
 * app/main.c's table, which also produces `mtlab --help`. A command returns the process exit
 * status: 0 ok, 1 failure (message already printed), 2 usage error. */
#ifndef MTLAB_APP_COMMANDS_H
#define MTLAB_APP_COMMANDS_H

#include <stdio.h>

#include "mtlab/metrics.h"

struct mt_command {
    const char *name;    /* "translate" */
    const char *args;    /* "-m BUNDLE [--beam N] [-i FILE]" */
    const char *summary; /* one line for the usage screen */
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    int parallel; /* 1: it runs model math (OpenMP teams, BLAS): app/main.c settles OpenMP's
                   * spinning and the BLAS kernels first */
};

extern const struct mt_command cmd_devices;
extern const struct mt_command cmd_tokenizer;
extern const struct mt_command cmd_data;
extern const struct mt_command cmd_score;
extern const struct mt_command cmd_inspect;
extern const struct mt_command cmd_average;
extern const struct mt_command cmd_train;
extern const struct mt_command cmd_forward;
extern const struct mt_command cmd_translate;
extern const struct mt_command cmd_eval;
extern const struct mt_command cmd_entities;
extern const struct mt_command cmd_tui;
extern const struct mt_command cmd_bench;
extern const struct mt_command cmd_run;
extern const struct mt_command cmd_jobs;

/* Print "mtlab: <msg>" to stderr and return 1 (for `return cli_fail(...)`). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "mtlab NAME: usage: mtlab NAME ARGS" and return 2. */
int cli_usage(const struct mt_command *cmd);
/* The usage lines on out (`mtlab NAME --help` prints them on stdout). */
void cli_print_usage(FILE *out, const struct mt_command *cmd);
/* The value of integer option opt of command cmd: text must be a decimal whole number from lo
 * to hi. Otherwise prints "mtlab CMD: OPT takes a whole number from LO to HI, not 'TEXT'" and
 * returns 2 (the usage-error status); 0 when *out is set. */
int cli_option_long(const char *cmd, const char *opt, const char *text, long lo, long hi, long *out);
/* The same for an int. */
int cli_option_int(const char *cmd, const char *opt, const char *text, int lo, int hi, int *out);
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
