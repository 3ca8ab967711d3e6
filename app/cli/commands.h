/* mtlab subcommands. Each lives in its own app/cli/cmd_NAME.c and is listed once in
 * app/main.c's table, which also produces `mtlab --help`. A command returns the process exit
 * status: 0 ok, 1 failure (message already printed), 2 usage error. */
#ifndef MTLAB_APP_COMMANDS_H
#define MTLAB_APP_COMMANDS_H

struct mt_command {
    const char *name;    /* "translate" */
    const char *args;    /* "-m BUNDLE [--beam N] [-i FILE]" */
    const char *summary; /* one line for the usage screen */
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
};

extern const struct mt_command cmd_devices;
extern const struct mt_command cmd_tokenizer;
extern const struct mt_command cmd_data;
extern const struct mt_command cmd_score;
extern const struct mt_command cmd_inspect;
extern const struct mt_command cmd_train;
extern const struct mt_command cmd_forward;
extern const struct mt_command cmd_translate;
extern const struct mt_command cmd_eval;
extern const struct mt_command cmd_tui;
extern const struct mt_command cmd_bench;
extern const struct mt_command cmd_run;
extern const struct mt_command cmd_jobs;

/* Print "mtlab: <msg>" to stderr and return 1 (for `return cli_fail(...)`). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "mtlab NAME: usage: mtlab NAME ARGS" and return 2. */
int cli_usage(const struct mt_command *cmd);

#endif
