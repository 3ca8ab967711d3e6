/* The system-independent half of mtlab/translator.h: the handle every system is wrapped in,
 * checking the batch, timing it and counting its tokens. The systems (apertium.c,
 * translator_bundle.c) build on this file; translator_open.c chooses one by name. */
#include "eval/codepoints.h"
#include "mtlab/buckets.h"
#include "mtlab/clock.h"
#include "mtlab/error.h"
#include "mtlab/translator.h"

#include <stdlib.h>
#include <string.h>

struct mt_translator {
    char *name;
    const mt_translator_impl *impl;
    void *self;
    mt_translate_stats last;
};

mt_translate_opts mt_translate_defaults(void)
{
    return (mt_translate_opts){.beam = 5, .max_batch = 0, .device = NULL, .precision = NULL};
}

mt_translator *mt_translator_wrap(const char *name, const mt_translator_impl *impl, void *self)
{
    mt_translator *t = mt_xcalloc(1, sizeof *t);
    t->name = mt_xstrdup(name);
    t->impl = impl;
    t->self = self;
    return t;
}

void mt_translator_close(mt_translator *t)
{
    if (!t) return;
    t->impl->close(t->self);
    free(t->name);
    free(t);
}

const char *mt_translator_name(const mt_translator *t) { return t->name; }
const char *mt_translator_kind(const mt_translator *t) { return t->impl->kind; }
const mt_translate_stats *mt_translator_last_stats(const mt_translator *t) { return &t->last; }

/* Source lines must be UTF-8 without line breaks: line-based systems would split them. */
static int check_source(const char *const *src, size_t n, size_t *tokens)
{
    *tokens = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        if (mt_whitespace_tokens(src[i], &k) < 0) return mt_error_context("source line %zu", i + 1);
        if (strpbrk(src[i], "\n\r"))
            return mt_error(
                "source line %zu: contains a line break (one sentence per line expected)", i + 1);
        *tokens += k;
    }
    return 0;
}

int mt_translator_translate(mt_translator *t, char **hyps, const char *const *src, size_t n,
                            mt_piece_fn on_piece, void *user)
{
    mt_translate_stats stats = {0};
    if (check_source(src, n, &stats.src_tokens) < 0) return mt_error_context("%s", t->name);
    double t0 = mt_now_s();
    if (t->impl->translate(t->self, hyps, src, n, on_piece, user, &stats) < 0)
        return mt_error_context("%s", t->name);
    stats.seconds = mt_now_s() - t0;
    stats.sentences = n;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        if (mt_whitespace_tokens(hyps[i], &k) < 0) {
            for (size_t j = 0; j < n; j++) {
                free(hyps[j]);
                hyps[j] = NULL;
            }
            return mt_error_context("%s: hypothesis %zu", t->name, i + 1);
        }
        stats.hyp_tokens += k;
    }
    t->last = stats;
    return 0;
}
