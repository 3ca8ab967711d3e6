/* Scores by source length, as in the paper's length analysis: segments grouped by the number
 * of source tokens into 1-32, 33-64, 65-128, 129-256 and 257+, and BLEU and chrF computed per
 * group from the summed segment statistics (mtlab/metrics.h), never averaged per sentence.
 * Tokens are whitespace tokens unless the caller counts them another way (subword pieces). */
#ifndef MTLAB_BUCKETS_H
#define MTLAB_BUCKETS_H

#include <stddef.h>

#include "mtlab/metrics.h"
#include "mtlab/tokenizer.h"

#define MT_LENGTH_BUCKETS 5

/* The bucket of a source length: 0 for 0..32 tokens (an empty line joins the first bucket),
 * 1 for 33..64, 2 for 65..128, 3 for 129..256, 4 above. */
int mt_length_bucket(size_t tokens);
/* "1-32", "33-64", "65-128", "129-256", "257+" */
const char *mt_length_bucket_name(int bucket);

/* Tokens of text separated by Unicode whitespace (Python's str.split()); 0 or -1 on invalid
 * UTF-8. */
int mt_whitespace_tokens(const char *text, size_t *out);

/* The length of each of texts[0..n) that picks its bucket: whitespace tokens, or pieces of
 * tok when it is not NULL (subword lengths, as the paper counts them). 0, or -1 with *bad the
 * text at fault and a message that names no index ("invalid UTF-8 at byte 3 (0xFF)"). */
int mt_source_lengths(size_t *len, const char *const *texts, size_t n, const mt_tokenizer *tok,
                      size_t *bad);

typedef struct {
    size_t segments; /* segments in the bucket */
    size_t src_tokens; /* their source tokens */
    mt_bleu_stats bleu; /* summed */
    mt_chrf_stats chrf; /* summed */
    double bleu_score; /* 0..100; 0 when the bucket is empty */
    double chrf_score;
} mt_bucket_score;

/* Scores n hypotheses against one reference each, grouped by src_tokens[i]. 0, or -1 naming
 * the segment ("segment 17: invalid UTF-8 at byte 5"). */
int mt_bucket_scores(mt_bucket_score out[MT_LENGTH_BUCKETS], const size_t *src_tokens,
                     const char *const *hyps, const char *const *refs, size_t n);

#endif
