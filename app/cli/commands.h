/* mtlab subcommands. Each lives in its own app/cli/cmd_NAME.c and is listed once in
 * app/main.c's table, which also produces `mtlab --help`. A command returns the process exit
 * status: 0 ok, 1 failure (message already printed), 2 usage error. */
#ifndef MTLAB_APP_COMMANDS_H
#define MTLAB_APP_COMMANDS_H

#include <signal.h>
#include <stdio.h>

#include "common/output.h"

struct mt_command {
    const char *name; /* "translate" */
    const char *args; /* "-m BUNDLE [--beam N] [-i FILE]" */
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
extern const struct mt_command cmd_attribute;
extern const struct mt_command cmd_translate;
extern const struct mt_command cmd_eval;
extern const struct mt_command cmd_entities;
extern const struct mt_command cmd_tui;
extern const struct mt_command cmd_bench;
extern const struct mt_command cmd_run;
extern const struct mt_command cmd_jobs;

/* Ctrl-C calls handler while a command's long work runs: cli_sigint_catch installs it (the
 * previous disposition into *old), cli_sigint_restore puts that back; outside, SIGINT ends the
 * process as usual. */
void cli_sigint_catch(void (*handler)(int), struct sigaction *old);
void cli_sigint_restore(const struct sigaction *old);
/* on: a Ctrl-C meanwhile waits (SIGINT blocked in this thread) so that what is being written is
 * not cut short by an interrupted write(2) (EINTR); off: it is delivered now. */
void cli_sigint_hold(int on);
/* Print "mtlab NAME: usage: mtlab NAME ARGS" and return 2. */
int cli_usage(const struct mt_command *cmd);
/* The usage lines on out (`mtlab NAME --help` prints them on stdout). */
void cli_print_usage(FILE *out, const struct mt_command *cmd);
/* The value of integer option opt of command cmd: text must be a decimal whole number from lo
 * to hi. Otherwise prints "mtlab CMD: OPT takes a whole number from LO to HI, not 'TEXT'" and
 * returns 2 (the usage-error status); 0 when *out is set. */
int cli_option_long(const char *cmd, const char *opt, const char *text, long lo, long hi,
                    long *out);
/* The same for an int. */
int cli_option_int(const char *cmd, const char *opt, const char *text, int lo, int hi, int *out);

#endif
