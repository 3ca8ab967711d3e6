/* Scores by source-length bucket (mtlab/buckets.h). */
#include "eval/codepoints.h"
#include "mtlab/buckets.h"
#include "mtlab/error.h"

#include <stdlib.h>
#include <string.h>

/* Upper bounds (inclusive) of the first four buckets; the last has none. */
static const size_t bucket_max[MT_LENGTH_BUCKETS - 1] = {32, 64, 128, 256};

int mt_length_bucket(size_t tokens)
{
    int b = 0;
    while (b < MT_LENGTH_BUCKETS - 1 && tokens > bucket_max[b]) b++;
    return b;
}

const char *mt_length_bucket_name(int bucket)
{
    static const char *const names[MT_LENGTH_BUCKETS] = {"1-32", "33-64", "65-128", "129-256",
                                                         "257+"};
    return bucket >= 0 && bucket < MT_LENGTH_BUCKETS ? names[bucket] : "?";
}

int mt_whitespace_tokens(const char *text, size_t *out)
{
    mt_cpbuf cps = {0};
    if (mt_utf8_decode(&cps, text, strlen(text)) < 0) {
        mt_cpbuf_free(&cps);
        return -1;
    }
    size_t n = 0;
    int in_token = 0;
    for (size_t i = 0; i < cps.n; i++) {
        int space = mt_is_py_space(cps.cp[i]);
        n += (size_t)(!space && !in_token);
        in_token = !space;
    }
    mt_cpbuf_free(&cps);
    *out = n;
    return 0;
}

int mt_source_lengths(size_t *len, const char *const *texts, size_t n, const mt_tokenizer *tok,
                      size_t *bad)
{
    for (size_t i = 0; i < n; i++) {
        int rc;
        if (tok) {
            int *ids;
            rc = mt_tokenizer_encode(tok, texts[i], &ids, &len[i]);
            if (rc == 0) free(ids);
        } else {
            rc = mt_whitespace_tokens(texts[i], &len[i]);
        }
        if (rc < 0) {
            *bad = i;
            return -1;
        }
    }
    return 0;
}

int mt_bucket_scores(mt_bucket_score out[MT_LENGTH_BUCKETS], const size_t *src_tokens,
                     const char *const *hyps, const char *const *refs, size_t n)
{
    memset(out, 0, MT_LENGTH_BUCKETS * sizeof *out);
    mt_bleu_opts bleu_opts = mt_bleu_defaults();
    mt_chrf_opts chrf_opts = mt_chrf_defaults();
    for (size_t i = 0; i < n; i++) {
        mt_bucket_score *b = &out[mt_length_bucket(src_tokens[i])];
        mt_bleu_stats bs;
        mt_chrf_stats cs;
        if (mt_bleu_segment_stats(&bs, hyps[i], &refs[i], 1, &bleu_opts) < 0 ||
            mt_chrf_segment_stats(&cs, hyps[i], &refs[i], 1, &chrf_opts) < 0)
            return mt_error_context("segment %zu", i + 1);
        mt_bleu_stats_add(&b->bleu, &bs);
        mt_chrf_stats_add(&b->chrf, &cs);
        b->segments++;
        b->src_tokens += src_tokens[i];
    }
    for (int k = 0; k < MT_LENGTH_BUCKETS; k++) {
        if (out[k].segments == 0) continue;
        mt_bleu_score score;
        mt_bleu_from_stats(&score, &out[k].bleu, &bleu_opts);
        out[k].bleu_score = score.score;
        out[k].chrf_score = mt_chrf_from_stats(&out[k].chrf, &chrf_opts);
    }
    return 0;
}
