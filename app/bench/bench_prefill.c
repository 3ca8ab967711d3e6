/* A long prompt's prefill in chunks against one pass, each in a child process of its own so
 * that its peak resident memory (wait4's ru_maxrss) is its alone (docs/decoding.md §1.1). */
#include "bench/bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"

/* In the child: the preset with random weights, a decode state sized for the prompt plus
 * new_tokens, and one prefill of T tokens in chunks of chunk (0: one pass); writes its
 * seconds to fd, or the error with status 2 when the model refuses the prompt. */
static int child_prefill(const char *preset, int T, int new_tokens, int chunk, int fd)
{
    mt_model_config cfg;
    if (mt_model_preset(&cfg, preset)) return 1;
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 1);
    if (!m) return 1;
    int encdec = mt_model_is_encdec(m);
    int32_t *src = mt_xmalloc((size_t)T * sizeof *src), bos = cfg.decoder_start_id;
    for (int t = 0; t < T; t++)
        src[t] = 5 + (int32_t)((t * 7919u) % (unsigned)(cfg.vocab_size - 5));
    if (!encdec) src[T - 1] = cfg.sep_id;
    mt_decode_state *st =
        mt_decode_state_new(m, 1, (encdec ? 1 : T) + new_tokens - 1, encdec ? T : 0);
    if (st) mt_decode_state_set_prefill_chunk(st, chunk);
    mt_batch b = {.B = 1,
                  .T = encdec ? 1 : T,
                  .ids = encdec ? &bos : src,
                  .S = encdec ? T : 0,
                  .src = encdec ? src : NULL};
    float *logits = mt_xmalloc((size_t)cfg.vocab_size * sizeof *logits);
    double t0 = mt_now_s();
    int rc = st ? mt_model_prefill(m, st, &b, logits) : -1;
    double seconds = mt_now_s() - t0;
    if (rc) {
        const char *why = mt_last_error();
        return write(fd, why, strlen(why)) > 0 ? 2 : 1;
    }
    return write(fd, &seconds, sizeof seconds) == (ssize_t)sizeof seconds ? 0 : 1;
}

int bench_prefill_child(const char *preset, int T, int new_tokens, int chunk,
                        bench_prefill_result *r)
{
    int fds[2];
    if (pipe(fds)) return mt_error("bench prefill: pipe failed");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return mt_error("bench prefill: fork failed");
    if (pid == 0) {
        close(fds[0]);
        _exit(child_prefill(preset, T, new_tokens, chunk, fds[1]));
    }
    close(fds[1]);
    char out[sizeof r->refused];
    size_t got = 0;
    ssize_t n;
    while (got + 1 < sizeof out && (n = read(fds[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = 0;
    close(fds[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        (WEXITSTATUS(status) == 0 && got != sizeof r->seconds) ||
        (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2))
        return mt_error("bench prefill: %s, %d tokens, chunk %d: the child failed", preset, T,
                        chunk);
    r->refused[0] = 0;
    r->seconds = 0.0;
    if (WEXITSTATUS(status) == 2) memcpy(r->refused, out, got + 1);
    else memcpy(&r->seconds, out, sizeof r->seconds);
    r->peak_rss_bytes = (size_t)ru.ru_maxrss * 1024;
    return 0;
}
