/* Apertium, Debian's rule-based translator, as an mt_translator (mtlab/translator.h).
 *
 * One batch = one `apertium -u MODE` process in its default (txt) format, which keeps line
 * breaks, so line i of its output is the translation of source line i (`-f line` would drop
 * final periods; `-u` drops the '*' marks on unknown words). Source goes in and output and
 * stderr come back through pipes (a socket will not do: apertium's scripts open /dev/stdin),
 * all three served by one poll() loop so neither side can block the other. The cost reported
 * is the peak resident memory of the process tree. */
#include "core/textbuf.h"
#include "mtlab/error.h"
#include "mtlab/translator.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define APERTIUM_PROGRAM "apertium"
#define APERTIUM_PACKAGES "Debian packages apertium and apertium-eng-spa; `make deps` installs them"
#define STDERR_KEEP 1024 /* bytes of the translator's stderr kept for error messages */

typedef struct {
    char *mode;
} apertium;

/* A running child with our ends of its three pipes (to_child is non-blocking). */
typedef struct {
    pid_t pid;
    int to_child, from_child, errors;
} child_proc;

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static int spawn(child_proc *c, char *const argv[])
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    c->pid = -1;
    c->to_child = c->from_child = c->errors = -1;
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
        fcntl(in[1], F_SETFL, O_NONBLOCK) < 0) {
        mt_error("cannot create pipes for %s: %s", argv[0], strerror(errno));
        goto fail;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
    int rc = posix_spawnp(&c->pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        c->pid = -1;
        if (rc == ENOENT) mt_error("%s is not installed (%s)", argv[0], APERTIUM_PACKAGES);
        else mt_error("cannot run %s: %s", argv[0], strerror(rc));
        goto fail;
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    c->to_child = in[1];
    c->from_child = out[0];
    c->errors = err[0];
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        close_fd(&in[i]);
        close_fd(&out[i]);
        close_fd(&err[i]);
    }
    return -1;
}

/* Reap the child; *status and *usage as wait4 gives them. */
static void reap(child_proc *c, int *status, struct rusage *usage)
{
    close_fd(&c->to_child);
    close_fd(&c->from_child);
    close_fd(&c->errors);
    if (c->pid < 0) return;
    while (wait4(c->pid, status, 0, usage) < 0 && errno == EINTR) continue;
    c->pid = -1;
}

/* The first line of what the child printed on stderr, for messages. */
static const char *first_error_line(textbuf *err)
{
    if (!err->p) return "";
    err->p[strcspn(err->p, "\n")] = '\0';
    return err->p;
}

/* Output handed on to the caller one finished line at a time. */
typedef struct {
    textbuf out;
    size_t lines_done, scan_from;
    mt_piece_fn on_piece;
    void *user;
} line_feed;

static int feed_lines(line_feed *f)
{
    while (f->scan_from < f->out.n) {
        char *nl = memchr(f->out.p + f->scan_from, '\n', f->out.n - f->scan_from);
        if (!nl) {
            f->scan_from = f->out.n;
            break;
        }
        size_t start = f->scan_from, len = (size_t)(nl - (f->out.p + start));
        f->scan_from = start + len + 1;
        if (f->on_piece) {
            char *line = mt_xmalloc(len + 1);
            memcpy(line, f->out.p + start, len);
            line[len] = '\0';
            int stop = f->on_piece(f->user, f->lines_done, line, 1);
            free(line);
            if (stop) return mt_error("cancelled");
        }
        f->lines_done++;
    }
    return 0;
}

/* write() that reports a closed pipe as EPIPE without killing the process with SIGPIPE: the
 * signal is blocked on this thread during the call and, if it was raised, taken off again. */
static ssize_t write_no_sigpipe(int fd, const void *buf, size_t len)
{
    sigset_t pipe_signal, old, pending;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    ssize_t k = write(fd, buf, len);
    int saved = errno;
    if (k < 0 && errno == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_signal, NULL, &zero) < 0 && errno == EINTR) continue;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return k;
}

/* Write input to the child while reading its stdout and stderr, until its stdout ends.
 * *all_sent tells whether it read all of the input (a translator that fails early does not,
 * and its exit status and stderr then say why). */
static int exchange(child_proc *c, const textbuf *input, line_feed *feed, textbuf *err,
                    int *all_sent)
{
    size_t sent = 0;
    char buf[65536];
    if (input->n == 0) close_fd(&c->to_child);
    while (c->from_child >= 0) {
        struct pollfd p[3] = {
            {c->from_child, POLLIN, 0}, {c->errors, POLLIN, 0}, {c->to_child, POLLOUT, 0}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR) continue;
            return mt_error("poll: %s", strerror(errno));
        }
        if (p[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
            ssize_t k = write_no_sigpipe(c->to_child, input->p + sent, input->n - sent);
            if (k > 0) sent += (size_t)k;
            /* all sent: end of input lets it finish; EPIPE: it stopped reading */
            if (sent == input->n || (k < 0 && errno != EAGAIN && errno != EINTR))
                close_fd(&c->to_child);
        }
        if (p[1].revents & (POLLIN | POLLHUP)) {
            ssize_t k = read(c->errors, buf, sizeof buf);
            if (k <= 0) close_fd(&c->errors);
            else if (err->n < STDERR_KEEP) textbuf_append(err, buf, (size_t)k);
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t k = read(c->from_child, buf, sizeof buf);
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) return mt_error("reading its output failed: %s", strerror(errno));
            if (k == 0) {
                close_fd(&c->from_child);
                break;
            }
            textbuf_append(&feed->out, buf, (size_t)k);
            if (feed_lines(feed) < 0) return -1;
        }
    }
    *all_sent = sent == input->n;
    while (c->errors >= 0) { /* drain stderr so the message below is complete */
        ssize_t k = read(c->errors, buf, sizeof buf);
        if (k <= 0) close_fd(&c->errors);
        else if (err->n < STDERR_KEEP) textbuf_append(err, buf, (size_t)k);
    }
    return 0;
}

/* Split the whole output into exactly n lines (each line ended by '\n'). */
static int split_lines(char **hyps, const textbuf *out, size_t n)
{
    size_t pos = 0, i = 0;
    while (i < n && pos < out->n) {
        const char *nl = memchr(out->p + pos, '\n', out->n - pos);
        size_t len = nl ? (size_t)(nl - (out->p + pos)) : out->n - pos;
        hyps[i] = mt_xmalloc(len + 1);
        memcpy(hyps[i], out->p + pos, len);
        hyps[i][len] = '\0';
        i++;
        pos += len + 1;
    }
    if (i == n && pos >= out->n) return 0;
    for (size_t k = 0; k < i; k++) {
        free(hyps[k]);
        hyps[k] = NULL;
    }
    size_t got = 0;
    for (size_t k = 0; k < out->n; k++) got += out->p[k] == '\n';
    return mt_error("returned %zu lines for %zu source lines", got, n);
}

static int apertium_translate(void *self, char **hyps, const char *const *src, size_t n,
                              mt_piece_fn on_piece, void *user, mt_translate_stats *stats)
{
    apertium *a = self;
    textbuf input = {0}, err = {0};
    line_feed feed = {.on_piece = on_piece, .user = user};
    for (size_t i = 0; i < n; i++) {
        textbuf_append(&input, src[i], strlen(src[i]));
        textbuf_append(&input, "\n", 1);
    }
    char *argv[] = {APERTIUM_PROGRAM, "-u", a->mode, NULL};
    child_proc c;
    int rc = spawn(&c, argv);
    if (rc == 0) {
        int all_sent = 0;
        rc = exchange(&c, &input, &feed, &err, &all_sent);
        if (rc < 0 && c.pid > 0) kill(c.pid, SIGTERM);
        int status = 0;
        struct rusage usage = {0};
        reap(&c, &status, &usage);
        if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            rc = mt_error("apertium -u %s failed (%s %d): %s", a->mode,
                          WIFEXITED(status) ? "exit status" : "signal",
                          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                          first_error_line(&err));
        if (rc == 0 && !all_sent)
            rc = mt_error("apertium -u %s stopped reading its input: %s", a->mode,
                          first_error_line(&err));
        if (rc == 0) rc = split_lines(hyps, &feed.out, n);
        stats->peak_bytes = (size_t)usage.ru_maxrss * 1024;
        stats->memory_kind = "peak RSS of the apertium processes";
    }
    free(input.p);
    free(err.p);
    free(feed.out.p);
    return rc;
}

static void apertium_close(void *self)
{
    apertium *a = self;
    free(a->mode);
    free(a);
}

static const mt_translator_impl apertium_impl = {
    .kind = "apertium",
    .translate = apertium_translate,
    .close = apertium_close,
};

char *mt_apertium_modes(void)
{
    char *argv[] = {APERTIUM_PROGRAM, "-l", NULL};
    child_proc c;
    if (spawn(&c, argv) < 0) return NULL;
    textbuf none = {0}, err = {0};
    line_feed feed = {0};
    int all_sent;
    int rc = exchange(&c, &none, &feed, &err, &all_sent);
    int status = 0;
    struct rusage usage;
    reap(&c, &status, &usage);
    if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        rc = mt_error("apertium -l failed: %s", first_error_line(&err));
    free(err.p);
    if (rc < 0) {
        free(feed.out.p);
        return NULL;
    }
    textbuf list = {0};
    textbuf_append(&list, "", 0);
    for (char *line = feed.out.p ? strtok(feed.out.p, "\n") : NULL; line;
         line = strtok(NULL, "\n")) {
        line += strspn(line, " \t");
        if (!*line) continue;
        if (list.n) textbuf_append(&list, ", ", 2);
        textbuf_append(&list, line, strlen(line));
    }
    free(feed.out.p);
    return list.p;
}

/* 1 when mode is one of the comma-separated installed modes. */
static int mode_listed(const char *modes, const char *mode)
{
    size_t len = strlen(mode);
    for (const char *p = modes; *p;) {
        size_t k = strcspn(p, ",");
        if (k == len && !strncmp(p, mode, len)) return 1;
        p += k;
        p += strspn(p, ", ");
    }
    return 0;
}

mt_translator *mt_apertium_open(const char *mode, const mt_translate_opts *opts)
{
    (void)opts;
    char *modes = mt_apertium_modes();
    if (!modes) return NULL;
    if (!*mode || !mode_listed(modes, mode)) {
        mt_error("apertium mode '%s' is not installed (installed: %s)", mode,
                 *modes ? modes : "none");
        free(modes);
        return NULL;
    }
    free(modes);
    apertium *a = mt_xcalloc(1, sizeof *a);
    a->mode = mt_xstrdup(mode);
    size_t name_len = strlen(mode) + 16;
    char *name = mt_xmalloc(name_len);
    snprintf(name, name_len, "apertium:%s", mode);
    mt_translator *t = mt_translator_wrap(name, &apertium_impl, a);
    free(name);
    return t;
}
