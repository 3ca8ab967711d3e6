/* Messages and output files the commands and the services below them share (common/output.h). */
#include "common/output.h"
#include "mtlab/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int cli_read_sentences(mt_text_lines *t, const char *path)
{
    if (mt_text_lines_read(t, path) < 0) return 1;
    if (t->n == 0) {
        mt_text_lines_free(t);
        mt_error("%s is empty (one sentence per line expected)", path);
        return 1;
    }
    return 0;
}

int cli_stdout_check(void)
{
    static int reported;
    int err = fflush(stdout) != 0 ? errno : 0;
    if (!err && !ferror(stdout)) return 0;
    if (!reported)
        fprintf(stderr, "mtlab: cannot write the output (stdout): %s\n",
                err ? strerror(err) : "an earlier write failed");
    reported = 1;
    return 1;
}

int cli_finish(int status)
{
    int failed = cli_stdout_check();
    if (fclose(stdout) != 0 && !failed) {
        fprintf(stderr, "mtlab: cannot write the output (stdout): %s\n", strerror(errno));
        failed = 1;
    }
    return failed && status == 0 ? 1 : status;
}

int cli_check_output(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return cli_fail("%s: cannot create: %s", path, strerror(EISDIR));
    const char *slash = strrchr(path, '/');
    char parent[4096];
    snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1,
             slash ? path : ".");
    if (access(parent, W_OK | X_OK) != 0)
        return cli_fail("%s: cannot create: %s", path, strerror(errno));
    return 0;
}

FILE *cli_create(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) cli_fail("%s: cannot create: %s", path, strerror(errno));
    return f;
}

int cli_close_output(FILE *f, const char *path)
{
    int err = fflush(f) != 0 ? errno : 0;
    if (!err && ferror(f)) err = EIO;
    if (fclose(f) != 0 && !err) err = errno;
    return err ? cli_fail("%s: cannot write: %s", path, strerror(err)) : 0;
}
