/* Model bundles as translators (mtlab/translator.h): the bundle opened on its device
 * (mtlab/runner.h) behind mt_translate (mtlab/decode.h). Greedy decoding streams each line's text
 * as it grows; beam search may change its leading hypothesis, so a beam line is delivered once,
 * when final. */
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/runner.h"
#include "mtlab/translator.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    mt_runner *runner;
    mt_translate_opts opts;
} bundle_translator;

/* Per-batch streaming state: how much of each line's text has been handed out. */
typedef struct {
    const bundle_translator *bt;
    mt_piece_fn on_piece;
    void *user;
    size_t *sent; /* (n) bytes of text already delivered per line */
    atomic_int cancel;
    int failed; /* a piece could not be decoded (message recorded) */
} stream_ctx;

static void on_event(void *user, const mt_decode_event *ev)
{
    stream_ctx *s = user;
    if (atomic_load(&s->cancel) || s->failed) return;
    int greedy = s->bt->opts.beam <= 1;
    if (!ev->final && !greedy) return;
    char *text = mt_tokenizer_decode(s->bt->runner->tok, ev->tokens, (size_t)ev->n_tokens);
    if (!text) {
        s->failed = 1;
        atomic_store(&s->cancel, 1);
        return;
    }
    size_t len = strlen(text), done = s->sent[ev->sentence];
    /* A piece that decodes to a partial character or changes earlier text (sentencepiece
     * joins some pieces) waits until the text before it is stable again. */
    if (len >= done && !ev->final) {
        if (s->on_piece(s->user, (size_t)ev->sentence, text + done, 0) != 0)
            atomic_store(&s->cancel, 1);
        s->sent[ev->sentence] = len;
    } else if (ev->final) {
        const char *rest = len >= done ? text + done : "";
        if (s->on_piece(s->user, (size_t)ev->sentence, rest, 1) != 0) atomic_store(&s->cancel, 1);
        s->sent[ev->sentence] = len;
    }
    free(text);
}

static int bundle_translate(void *self, char **hyps, const char *const *src, size_t n,
                            mt_piece_fn on_piece, void *user, mt_translate_stats *stats)
{
    bundle_translator *bt = self;
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = bt->opts.beam > 0 ? bt->opts.beam : 1;
    stream_ctx s = {.bt = bt, .on_piece = on_piece, .user = user};
    atomic_init(&s.cancel, 0);
    if (on_piece) {
        s.sent = mt_xcalloc(n ? n : 1, sizeof *s.sent);
        o.on_token = on_event;
        o.user = &s;
    }
    o.cancel = &s.cancel;
    mt_decode_result res = {0};
    int rc =
        mt_translate(bt->runner->model, bt->runner->tok, src, (int)n, bt->opts.max_batch, &o, &res);
    free(s.sent);
    if (rc == 0 && (s.failed || res.cancelled)) {
        if (!s.failed) mt_error("cancelled");
        rc = -1;
    }
    if (rc != 0) {
        if (res.failed_input >= 0) mt_error_context("source line %d", res.failed_input + 1);
        mt_decode_result_free(&res);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        hyps[i] = res.hyps[i].text;
        res.hyps[i].text = NULL;
    }
    stats->peak_bytes = res.state_bytes;
    stats->memory_kind = "decoding state (caches and recurrent states)";
    mt_decode_result_free(&res);
    return 0;
}

static void bundle_close(void *self)
{
    bundle_translator *bt = self;
    mt_runner_close(bt->runner);
    free(bt);
}

static const mt_translator_impl bundle_impl = {"bundle", bundle_translate, bundle_close};

mt_translator *mt_bundle_translator_open(const char *dir, const mt_translate_opts *opts)
{
    char path[4096];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path ||
        stat(path, &st) != 0) {
        mt_error(
            "%s: not a model bundle (no config.json); give a bundle directory or apertium:MODE",
            dir);
        return NULL;
    }
    const char *precision = opts ? opts->precision : NULL;
    int flags = mt_runner_precision_flags(precision);
    if (flags < 0) return NULL;
    mt_runner *r = mt_runner_open(dir, opts ? opts->device : NULL, (unsigned)flags);
    if (!r) return NULL;
    bundle_translator *bt = mt_xcalloc(1, sizeof *bt);
    bt->opts = opts ? *opts : mt_translate_defaults();
    bt->runner = r;
    if (!precision) return mt_translator_wrap(dir, &bundle_impl, bt);
    char name[4096];
    snprintf(name, sizeof name, "%s · %s", dir, precision);
    return mt_translator_wrap(name, &bundle_impl, bt);
}
