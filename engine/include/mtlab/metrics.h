/* Translation metrics that reproduce sacreBLEU exactly: BLEU (with its 13a, none, intl, char,
 * zh, flores101, flores200 and ja-mecab tokenizers), chrF, chrF++ and TER. Same numbers, same
 * signatures, same printed lines as sacrebleu MT_SACREBLEU_VERSION (run under CPython 3.11,
 * whose float sums are plain left-to-right additions).
 *
 * Text is UTF-8; every function that reads text validates it and fails with -1 and
 * "invalid UTF-8 at byte N" (mt_last_error) rather than guessing. Python semantics are kept
 * where sacreBLEU relies on them: str.split() splits on all Unicode whitespace, str.rstrip()
 * strips it, str.lower() is Unicode lowercasing (with the final-sigma rule).
 *
 * References come as streams, as on sacreBLEU's command line: refs[r][i] is reference r of
 * segment i, for r < n_refs. Corpus scores are computed from summed per-segment statistics
 * (never an average of sentence scores); the statistics are public so callers can score
 * subsets (e.g. length buckets) by summing segments themselves. */
#ifndef MTLAB_METRICS_H
#define MTLAB_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* The sacreBLEU release whose behaviour and signatures these functions reproduce. */
#define MT_SACREBLEU_VERSION "2.6.0"

/* ------------------------------------------------------------------ 13a tokenizer */

/* sacreBLEU's default "13a" tokenizer (mteval-v13a): malloc'd UTF-8 tokens joined by single
 * spaces, or NULL on invalid UTF-8. Does not strip or lowercase (BLEU does that first). */
char *mt_tokenize_13a(const char *line);

/* Python's str.lower() of UTF-8 text, malloc'd; NULL on invalid UTF-8. */
char *mt_lowercase(const char *text);

/* ------------------------------------------------------------------ BLEU's tokenizers */

/* sacreBLEU's --tokenize choices (ko-mecab is left out: MeCab's Korean dictionary is not in
 * Debian): */
typedef enum {
    MT_BLEU_TOK_13A = 0, /* mteval-v13a (the default) */
    MT_BLEU_TOK_NONE, /* the text as it is */
    MT_BLEU_TOK_INTL, /* mteval-v14 international: Unicode punctuation and symbols */
    MT_BLEU_TOK_CHAR, /* every character */
    MT_BLEU_TOK_ZH, /* Chinese characters one by one, the rest as 13a */
    MT_BLEU_TOK_FLORES101, /* SentencePiece pieces of a given model (spBLEU), FLORES-101's */
    MT_BLEU_TOK_FLORES200, /* ... FLORES-200's */
    MT_BLEU_TOK_JA_MECAB, /* MeCab's Japanese words, with the IPA dictionary make builds */
    MT_BLEU_TOK_COUNT
} mt_bleu_tokenize;

/* A SentencePiece model used only to split text into pieces, as sacreBLEU's spm tokenizers
 * do (any model file; mtlab's reserved ids are not required). engine/tokenizer/spm_pieces.cc */
typedef struct mt_spm_pieces mt_spm_pieces;
/* NULL with "PATH: ..." (mt_last_error) when the file is missing or not a model. */
mt_spm_pieces *mt_spm_pieces_load(const char *path);
void mt_spm_pieces_free(mt_spm_pieces *m);
/* " ".join(EncodeAsPieces(text)), malloc'd; NULL on invalid UTF-8 or a library error. */
char *mt_spm_pieces_encode(const mt_spm_pieces *m, const char *text);

/* The name sacreBLEU gives it (--tokenize and the signature's "tok:"): "13a", "none", "intl",
 * "char", "zh", "flores101", "flores200", "ja-mecab"; NULL when out of range. (The signature
 * says "ja-mecab-0.996-IPA" for the last, MeCab's version inside, as sacreBLEU's does.) */
const char *mt_bleu_tokenize_name(mt_bleu_tokenize t);
/* The tokenizer called name; -1 with "unknown tokenizer 'x' (13a, none, ...)" otherwise. */
int mt_bleu_tokenize_parse(const char *name, mt_bleu_tokenize *out);
/* What sacreBLEU's tokenizer t returns for line, byte for byte, malloc'd (for "none" the line
 * itself, for "char" every character, whitespace included, joined by spaces). spm is needed by
 * the flores tokenizers only. NULL with mt_last_error on invalid UTF-8, a missing model, or for
 * ja-mecab a missing dictionary. */
char *mt_tokenize_sacrebleu(mt_bleu_tokenize t, const mt_spm_pieces *spm, const char *line);

/* ------------------------------------------------------------------ BLEU */

#define MT_BLEU_MAX_ORDER 4

typedef enum {
    MT_SMOOTH_EXP, /* NIST geometric smoothing (sacreBLEU's default) */
    MT_SMOOTH_FLOOR, /* zero counts get precision smooth_value / total */
    MT_SMOOTH_ADD_K, /* orders 2..4 add smooth_value to matches and totals */
    MT_SMOOTH_NONE,
} mt_bleu_smooth;

typedef struct {
    int lowercase; /* 1: case-insensitive ("case:lc") */
    mt_bleu_smooth smooth;
    double smooth_value; /* < 0: sacreBLEU's default (floor 0.1, add-k 1) */
    int effective_order; /* 1: average only the orders that have n-grams (sentence BLEU) */
    mt_bleu_tokenize tokenize; /* MT_BLEU_TOK_13A (0) unless chosen ("tok:" in the signature) */
    const mt_spm_pieces *spm; /* the SentencePiece model of the flores tokenizers, else NULL */
} mt_bleu_opts;

/* sacreBLEU's corpus defaults: mixed case, exp smoothing, effective order off. */
mt_bleu_opts mt_bleu_defaults(void);

/* Sufficient statistics of one segment, or of a corpus once summed. */
typedef struct {
    int64_t hyp_len; /* hypothesis tokens */
    int64_t ref_len; /* closest reference length (ties: the shorter) */
    int64_t correct[MT_BLEU_MAX_ORDER]; /* clipped n-gram matches, n = 1..4 */
    int64_t total[MT_BLEU_MAX_ORDER]; /* hypothesis n-grams, n = 1..4 */
} mt_bleu_stats;

typedef struct {
    double score; /* 0..100 */
    double precisions[MT_BLEU_MAX_ORDER]; /* percentages, after smoothing */
    double bp; /* brevity penalty */
    double ratio; /* sys_len / ref_len (0 when ref_len is 0) */
    int64_t counts[MT_BLEU_MAX_ORDER]; /* the raw matches (sacreBLEU's add-k adds k here) */
    int64_t totals[MT_BLEU_MAX_ORDER]; /* the raw totals (likewise) */
    int64_t sys_len, ref_len;
} mt_bleu_score;

/* Statistics of one segment against its n_refs references (n_refs >= 1). 0 or -1. */
int mt_bleu_segment_stats(mt_bleu_stats *out, const char *hyp, const char *const *refs,
                          size_t n_refs, const mt_bleu_opts *opts);
/* acc += s */
void mt_bleu_stats_add(mt_bleu_stats *acc, const mt_bleu_stats *s);
/* The score of (summed) statistics. */
void mt_bleu_from_stats(mt_bleu_score *out, const mt_bleu_stats *stats, const mt_bleu_opts *opts);

/* Corpus BLEU of n hypotheses; refs[r][i] as described at the top. 0 or -1 (the message
 * names the segment: "segment 17: invalid UTF-8 at byte 5"). */
int mt_bleu_corpus(mt_bleu_score *out, const char *const *hyps, size_t n,
                   const char *const *const *refs, size_t n_refs, const mt_bleu_opts *opts);
/* BLEU of one sentence (sacrebleu.sentence_bleu: mt_bleu_defaults() with effective_order = 1). */
int mt_bleu_sentence(mt_bleu_score *out, const char *hyp, const char *const *refs, size_t n_refs,
                     const mt_bleu_opts *opts);

/* "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0" (tok: opts->tokenize), or with
 * short_form
 * "#:1|c:mixed|e:no|tok:13a|s:exp|v:2.6.0". Truncated to fit out_len. */
void mt_bleu_signature(char *out, size_t out_len, const mt_bleu_opts *opts, size_t n_refs,
                       int short_form);
/* sacreBLEU's printed line, scores with `width` decimals (sacreBLEU's API default is 2):
 * "BLEU|SIG = 34.21 67.3/41.2/27.0/18.1 (BP = 1.000 ratio = 1.023 hyp_len = 9 ref_len = 9)";
 * without "|SIG" when signature is NULL or "". The verbose part alone: mt_bleu_verbose. */
void mt_bleu_format(char *out, size_t out_len, const mt_bleu_score *s, const char *signature,
                    int width);
void mt_bleu_verbose(char *out, size_t out_len, const mt_bleu_score *s);

/* ------------------------------------------------------------------ chrF and chrF++ */

#define MT_CHRF_MAX_ORDERS 20 /* char_order + word_order */

typedef struct {
    int char_order; /* 6 */
    int word_order; /* 0: chrF, 2: chrF++ */
    int beta; /* 2: recall weighs 2x precision */
    int lowercase;
    int whitespace; /* 1: keep whitespace inside character n-grams */
    int eps_smoothing; /* 1: average per-order F scores (chrF++.py style) instead */
} mt_chrf_opts;

mt_chrf_opts mt_chrf_defaults(void); /* chrF2:   6, 0, 2 */
mt_chrf_opts mt_chrfpp_defaults(void); /* chrF2++: 6, 2, 2 */

/* Per order (character orders 1..char_order, then word orders 1..word_order): */
typedef struct {
    int n_orders; /* char_order + word_order */
    int64_t hyp[MT_CHRF_MAX_ORDERS]; /* hypothesis n-grams (0 if the reference has none) */
    int64_t ref[MT_CHRF_MAX_ORDERS]; /* reference n-grams */
    int64_t match[MT_CHRF_MAX_ORDERS]; /* clipped matches */
} mt_chrf_stats;

/* Statistics of one segment; with several references, those of the reference with the best
 * sentence-level score (the first one on ties). 0 or -1 (bad UTF-8, orders out of range). */
int mt_chrf_segment_stats(mt_chrf_stats *out, const char *hyp, const char *const *refs,
                          size_t n_refs, const mt_chrf_opts *opts);
void mt_chrf_stats_add(mt_chrf_stats *acc, const mt_chrf_stats *s);
/* 0..100 from (summed) statistics. */
double mt_chrf_from_stats(const mt_chrf_stats *stats, const mt_chrf_opts *opts);

int mt_chrf_corpus(double *score, const char *const *hyps, size_t n, const char *const *const *refs,
                   size_t n_refs, const mt_chrf_opts *opts);
int mt_chrf_sentence(double *score, const char *hyp, const char *const *refs, size_t n_refs,
                     const mt_chrf_opts *opts);

/* "chrF2" or "chrF2++" (one '+' per word order). */
void mt_chrf_name(char *out, size_t out_len, const mt_chrf_opts *opts);
/* "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0" (short: "#:1|c:mixed|e:yes|
 * nc:6|nw:0|s:no|v:2.6.0"). */
void mt_chrf_signature(char *out, size_t out_len, const mt_chrf_opts *opts, size_t n_refs,
                       int short_form);
/* "chrF2|SIG = 66.05" with `width` decimals; without "|SIG" when signature is NULL or "". */
void mt_chrf_format(char *out, size_t out_len, double score, const mt_chrf_opts *opts,
                    const char *signature, int width);

/* ------------------------------------------------------------------ reading text files */

/* Lines of a UTF-8 text file as sacreBLEU's command line reads them: split at '\n' only
 * (a '\r' stays part of the line), each with its trailing Unicode whitespace removed
 * (str.rstrip()). A final line without '\n' counts; an empty file has 0 lines. */
typedef struct {
    char **lines; /* (n) NUL-terminated UTF-8 */
    size_t n;
} mt_text_lines;

/* 0, or -1 with "PATH: No such file or directory", "PATH:17: invalid UTF-8 at byte 5 (0xFF)"
 * (bytes counted from 0), "PATH:3: NUL byte at byte 0" or a line over MT_LINE_MAX_BYTES
 * (mtlab/files.h: refused as soon as it is read). A regular file, a pipe or a FIFO. */
int mt_text_lines_read(mt_text_lines *out, const char *path);
void mt_text_lines_free(mt_text_lines *t);

/* ------------------------------------------------------------------ TER */

/* Translation edit rate as sacreBLEU computes it (Tercom's greedy shifts, engine/eval/ter.c):
 * the fewest word edits and block shifts turning the hypothesis into a reference, per
 * reference word. Lower is better. */
typedef struct {
    int normalized; /* 1: Tercom's normalization and punctuation splitting ("norm:yes") */
    int no_punct; /* 1: remove punctuation ("punct:no") */
    int asian_support; /* 1: with the two above, CJK characters and punctuation too */
    int case_sensitive; /* 0: lowercase first ("case:lc", sacreBLEU's default) */
} mt_ter_opts;

mt_ter_opts mt_ter_defaults(void); /* all 0: lowercased, not normalized, punctuation kept */

/* Statistics of one segment, or of a corpus once summed (sacreBLEU's [edits, ref length]). */
typedef struct {
    double edits; /* fewest edits over the references (a whole number) */
    double ref_len; /* the references' average length in words */
} mt_ter_stats;

/* sacreBLEU's TercomTokenizer after rstrip: malloc'd tokens joined by single spaces; NULL on
 * invalid UTF-8. */
char *mt_tokenize_tercom(const char *line, const mt_ter_opts *opts);

/* Statistics of one segment against its n_refs references (n_refs >= 1). 0 or -1. */
int mt_ter_segment_stats(mt_ter_stats *out, const char *hyp, const char *const *refs, size_t n_refs,
                         const mt_ter_opts *opts);
void mt_ter_stats_add(mt_ter_stats *acc, const mt_ter_stats *s);
/* 100 edits / ref_len; 100 when ref_len is 0 but edits are not, 0 when both are. */
double mt_ter_from_stats(const mt_ter_stats *stats);

/* Corpus TER; refs[r][i] as at the top. 0 or -1 ("segment 17: ..."). */
int mt_ter_corpus(double *score, const char *const *hyps, size_t n, const char *const *const *refs,
                  size_t n_refs, const mt_ter_opts *opts);
int mt_ter_sentence(double *score, const char *hyp, const char *const *refs, size_t n_refs,
                    const mt_ter_opts *opts);

/* "nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.6.0" (short:
 * "#:1|c:lc|t:tercom|nr:no|pn:yes|as:no|v:2.6.0"). */
void mt_ter_signature(char *out, size_t out_len, const mt_ter_opts *opts, size_t n_refs,
                      int short_form);
/* "TER|SIG = 25.93" with `width` decimals; without "|SIG" when signature is NULL or "". */
void mt_ter_format(char *out, size_t out_len, double score, const char *signature, int width);

#endif
