/* mtlab: a terminal workbench for machine translation with state space models and attention.
 * This file only dispatches to the subcommands in app/cli/; with no arguments it opens the
 * workbench (`mtlab tui`). */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

static const struct mt_command *const commands[] = {
    &cmd_devices,
    &cmd_tokenizer,
    &cmd_data,
    &cmd_score,
    &cmd_inspect,
    &cmd_average,
    &cmd_train,
    &cmd_forward,
    &cmd_translate,
    &cmd_eval,
    &cmd_entities,
    &cmd_tui,
    &cmd_bench,
    &cmd_run,
    &cmd_jobs,
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: mtlab COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\n`mtlab COMMAND --help` shows a command's arguments.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) return cmd_tui.run(1, (char *[]){"tui", NULL});
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(argv[1], commands[i]->name) != 0) continue;
        if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            cli_print_usage(stdout, commands[i]);
            return 0;
        }
        return commands[i]->run(argc - 1, argv + 1);
    }
    fprintf(stderr, "mtlab: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
