#include "cli/commands.h"

#include <stdarg.h>
#include <stdio.h>

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mtlab: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_usage(const struct mt_command *cmd)
{
    fprintf(stderr, "usage: mtlab %s %s\n  %s\n", cmd->name, cmd->args, cmd->summary);
    return 2;
}
