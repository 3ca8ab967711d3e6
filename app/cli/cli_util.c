#include "cli/commands.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_sigint_catch(void (*handler)(int), struct sigaction *old)
{
    struct sigaction sa = {0};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old);
}

void cli_sigint_restore(const struct sigaction *old) { sigaction(SIGINT, old, NULL); }

void cli_sigint_hold(int on)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    pthread_sigmask(on ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
}

void cli_print_usage(FILE *out, const struct mt_command *cmd)
{
    fprintf(out, "usage: mtlab %s %s\n  %s\n", cmd->name, cmd->args, cmd->summary);
}

int cli_usage(const struct mt_command *cmd)
{
    cli_print_usage(stderr, cmd);
    return 2;
}

int cli_option_long(const char *cmd, const char *opt, const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "mtlab %s: %s takes a whole number from %ld to %ld, not '%s'\n", cmd, opt,
                lo, hi, text);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_option_int(const char *cmd, const char *opt, const char *text, int lo, int hi, int *out)
{
    long v;
    int rc = cli_option_long(cmd, opt, text, lo, hi, &v);
    if (rc == 0) *out = (int)v;
    return rc;
}
