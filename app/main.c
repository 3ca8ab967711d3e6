/* mtlab: a terminal workbench for machine translation with state space models and attention.
 * This file dispatches to the subcommands in app/cli/ (with no arguments, or options alone,
 * it opens the workbench: `mtlab --theme light` is `mtlab tui --theme light`), first settling
 * OpenMP's spinning and the BLAS kernels for those that run model math (below). */
#include "cli/commands.h"
#include "common/allocator.h"
#include "mtlab/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Two settings that libraries read before main, set here for the commands that run model
 * math, which then execute mtlab again, once (about 60 ms of loading). A variable set before
 * main is lost when libc's own initialiser takes the environment from the stack again, so
 * setting it in this process is too late; the processes mtlab starts (training jobs) inherit
 * both. A user's own value of either is left as it is.
 *
 * How long OpenMP's idle threads spin. A libgomp thread that waits at a barrier spins for
 * GOMP_SPINCOUNT iterations before it sleeps: 300,000 by default, about a millisecond. When
 * every core is busy (a training job beside the workbench, two jobs on two cores), the thread
 * it waits for is not running, and the spinning holds the core that thread needs: on a 2-core
 * machine with training jobs on both cores, a greedy decode of 60 verses took 2.2 s on one
 * thread and 111 s on two. With 1,000 spins the idle machine decodes and trains as fast as
 * before, and the busy one took 2.8 s (docs/decoding.md §9.1).
 *
 * Which BLAS kernels: OpenBLAS picks them by CPU model and gives CPUs newer than itself
 * narrower ones than they run (SSE3 on a Xeon with AVX-512, AVX2 on Zen 4); OPENBLAS_CORETYPE
 * names the widest the CPU's features allow (engine/backend/cpu/cpu_blas_info.c,
 * docs/models.md §10.9). */
#define SPIN_COUNT "1000"

static void settle_environment(char **argv)
{
    int again = 0;
    if (!getenv("GOMP_SPINCOUNT") && !getenv("OMP_WAIT_POLICY"))
        again |= setenv("GOMP_SPINCOUNT", SPIN_COUNT, 1) == 0;
    const char *core = getenv("OPENBLAS_CORETYPE") ? NULL : mt_cpu_blas_best_core();
    if (core) again |= setenv("OPENBLAS_CORETYPE", core, 1) == 0;
    if (!again) return;
    /* the binary's own path, not /proc/self/exe: the process keeps its name ("mtlab" in ps) */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || (size_t)n >= sizeof self - 1) return;
    self[n] = '\0';
    execv(self, argv);
    /* the binary is gone (rebuilt under the running program): go on with the libraries'
     * defaults here; the processes this one starts get the variables */
}

static const struct mt_command *const commands[] = {
    &cmd_devices, &cmd_tokenizer, &cmd_data,      &cmd_score,     &cmd_inspect, &cmd_average,
    &cmd_train,   &cmd_forward,   &cmd_attribute, &cmd_translate, &cmd_eval,    &cmd_entities,
    &cmd_tui,     &cmd_bench,     &cmd_run,       &cmd_jobs,
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: mtlab COMMAND [ARGS]   (mtlab [tui options] opens the workbench)\n\n"
                 "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\n`mtlab COMMAND --help` shows a command's arguments.\n");
}

/* Every exit after output goes through cli_finish: output that could not be written fails. */
int main(int argc, char **argv)
{
    app_settle_allocator();
    if (argc < 2) {
        settle_environment(argv);
        return cli_finish(cmd_tui.run(1, (char *[]){"tui", NULL}));
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return cli_finish(0);
    }
    /* `mtlab --theme light`: options before any command are the workbench's */
    if (argv[1][0] == '-') {
        settle_environment(argv);
        char **args = malloc((size_t)(argc + 1) * sizeof *args);
        if (!args) return cli_finish(1);
        args[0] = "tui";
        memcpy(args + 1, argv + 1, (size_t)argc * sizeof *args);
        int rc = cmd_tui.run(argc, args);
        free(args);
        return cli_finish(rc);
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(argv[1], commands[i]->name) != 0) continue;
        if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            cli_print_usage(stdout, commands[i]);
            return cli_finish(0);
        }
        if (commands[i]->parallel) settle_environment(argv);
        return cli_finish(commands[i]->run(argc - 1, argv + 1));
    }
    fprintf(stderr, "mtlab: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
