/* The work of `mtlab eval`, shared by the command and Lua's mtlab.eval: every input checked
 * before any system runs, then each system translates the test set and is scored (BLEU, chrF,
 * named-entity recall by training frequency, length buckets, cost). */
#include "common/output.h"
#include "common/eval_run.h"
#include "common/progress.h"
#include "mtlab/buckets.h"
#include "mtlab/bundle.h"
#include "mtlab/comet.h"
#include "mtlab/dataset.h"
#include "mtlab/device.h"
#include "mtlab/entities.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "mtlab/tokenizer.h"
#include "mtlab/runner.h"
#include "mtlab/translator.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Record the message (mt_last_error) and return 1, the shape of every failure below. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mt_error("%s", msg);
    return 1;
}

static int read_pair(mt_text_lines *src, mt_text_lines *ref, const char *src_path,
                     const char *ref_path)
{
    if (cli_read_sentences(src, src_path)) return 1;
    if (cli_read_sentences(ref, ref_path)) {
        mt_text_lines_free(src);
        return 1;
    }
    if (src->n != ref->n) {
        fail("%s has %zu lines but %s has %zu: source and reference must be line-aligned", src_path,
             src->n, ref_path, ref->n);
        mt_text_lines_free(src);
        mt_text_lines_free(ref);
        return 1;
    }
    return 0;
}

/* A caller's lines (already in memory) as the evaluation's own copy, checked as files are. */
static int copy_lines(mt_text_lines *t, const mt_text_lines *from, const char *name)
{
    t->n = from->n;
    t->lines = mt_xcalloc(from->n + 1, sizeof *t->lines);
    for (size_t i = 0; i < from->n; i++) t->lines[i] = mt_xstrdup(from->lines[i]);
    if (t->n == 0) return fail("%s is empty (one sentence per line expected)", name);
    return 0;
}

static int check_aligned(const mt_text_lines *src, const mt_text_lines *ref, const char *src_name,
                         const char *ref_name)
{
    if (src->n == ref->n) return 0;
    return fail("%s has %zu lines but %s has %zu: source and reference must be line-aligned",
                src_name, src->n, ref_name, ref->n);
}

/* The target language of the evaluation, never a file's extension: the request's tgt_lang,
 * else its dataset's (manifest.json), else the first system's: a bundle's config.json
 * (mtlab.tgt_lang; a bundle that records none is the Bible's es -> en), Apertium's mode
 * ("spa-eng" -> "eng"). 0 or -1. */
static int target_lang(const eval_request *a, char *lang, size_t len)
{
    if (a->tgt_lang) {
        snprintf(lang, len, "%s", a->tgt_lang);
        return mt_lang_check(lang);
    }
    if (a->data) {
        mt_dataset d;
        if (mt_dataset_open(&d, a->data) < 0) return -1;
        snprintf(lang, len, "%s", d.tgt_lang);
        return 0;
    }
    const char *sys = a->systems[0];
    if (!strncmp(sys, "apertium:", 9)) {
        const char *dash = strrchr(sys, '-');
        snprintf(lang, len, "%s", dash ? dash + 1 : sys + 9);
        return 0;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", sys);
    mt_config *c = mt_config_load(path);
    if (!c) { /* not a bundle: opening it says why */
        snprintf(lang, len, "%s", MT_DEFAULT_TGT_LANG);
        return 0;
    }
    const mt_config *x = mt_config_object(c, "mtlab");
    snprintf(lang, len, "%s",
             x ? mt_config_string_or(x, "tgt_lang", MT_DEFAULT_TGT_LANG) : MT_DEFAULT_TGT_LANG);
    mt_config_free(c);
    return 0;
}

static void stats_progress(void *user, size_t done, size_t total)
{
    (void)total;
    cli_progress_update(user, done);
}

/* Without --stats or --train-src, the training frequencies stored with the first model bundle
 * that has them (BUNDLE/corpus_stats.tsv, written by mtlab train) give the recall bins. */
static void bundle_stats(eval_request *a, char *path, size_t path_len)
{
    for (size_t s = 0; s < a->n_systems; s++) {
        snprintf(path, path_len, "%s/corpus_stats.tsv", a->systems[s]);
        if (access(path, R_OK) == 0) {
            a->stats = path;
            return;
        }
    }
    path[0] = '\0';
}

static mt_corpus_stats *load_stats(const eval_request *a, mt_ner_lang lang, char *source,
                                   size_t source_len)
{
    if (a->stats) {
        mt_corpus_stats *s = mt_corpus_stats_read(a->stats);
        if (!s) {
            fail("%s", mt_last_error());
            return NULL;
        }
        if (mt_corpus_stats_lang(s) != lang) {
            /* counts from another recogniser would put entities in the wrong bins */
            fail("%s: counted with the %s recogniser, but this evaluation's target language uses "
                 "the %s "
                 "one (choose the %s recogniser, or recompute the statistics from the training "
                 "pair)",
                 a->stats, mt_ner_lang_name(mt_corpus_stats_lang(s)), mt_ner_lang_name(lang),
                 mt_ner_lang_name(mt_corpus_stats_lang(s)));
            mt_corpus_stats_free(s);
            return NULL;
        }
        snprintf(source, source_len, "%s", a->stats);
        return s;
    }
    mt_text_lines src, ref;
    if (read_pair(&src, &ref, a->train_src, a->train_ref)) return NULL;
    cli_progress bar;
    cli_progress_start(&bar, "entity statistics", src.n);
    mt_corpus_stats *s =
        mt_corpus_stats_build((const char *const *)src.lines, (const char *const *)ref.lines, src.n,
                              lang, stats_progress, &bar);
    cli_progress_finish(&bar, s ? "done" : NULL);
    mt_text_lines_free(&src);
    mt_text_lines_free(&ref);
    if (!s) {
        fail("%s: %s", a->train_ref, mt_last_error());
        return NULL;
    }
    snprintf(source, source_len, "%s + %s", a->train_src, a->train_ref);
    if (a->save_stats && mt_corpus_stats_write(s, a->save_stats) < 0) {
        fail("%s", mt_last_error());
        mt_corpus_stats_free(s);
        return NULL;
    }
    return s;
}

/* The entity lexicon of the translated-aware recall (docs/metrics.md §8): --lexicon, else the
 * first bundle's entity_lexicon.tsv, else one learned from --train-src/--train-ref; NULL with
 * *source "" when there is none (the figure is then left out), NULL with *failed on an error. */
static mt_entity_lexicon *load_lexicon(const eval_request *a, char *source, size_t source_len,
                                       int *failed)
{
    source[0] = '\0';
    *failed = 0;
    const char *path = a->lexicon;
    char bundle_path[512];
    for (size_t s = 0; !path && !a->train_src && s < a->n_systems; s++) {
        snprintf(bundle_path, sizeof bundle_path, "%s/entity_lexicon.tsv", a->systems[s]);
        if (access(bundle_path, R_OK) == 0) path = bundle_path;
    }
    mt_entity_lexicon *l = NULL;
    if (path) {
        if (!(l = mt_entity_lexicon_read(path))) {
            fail("%s", mt_last_error());
            *failed = 1;
            return NULL;
        }
        snprintf(source, source_len, "%s", path);
        return l;
    }
    if (!a->train_src) return NULL;
    mt_text_lines src, ref;
    if (read_pair(&src, &ref, a->train_src, a->train_ref)) {
        *failed = 1;
        return NULL;
    }
    cli_progress bar;
    cli_progress_start(&bar, "entity lexicon", src.n);
    l = mt_entity_lexicon_build((const char *const *)src.lines, (const char *const *)ref.lines,
                                src.n, stats_progress, &bar);
    cli_progress_finish(&bar, l ? "done" : NULL);
    mt_text_lines_free(&src);
    mt_text_lines_free(&ref);
    if (!l) {
        fail("%s: %s", a->train_src, mt_last_error());
        *failed = 1;
        return NULL;
    }
    snprintf(source, source_len, "%s + %s", a->train_src, a->train_ref);
    return l;
}

/* Source lengths for the buckets: whitespace tokens, or pieces of the --length-model. */
static int source_lengths(size_t *len, const mt_text_lines *src, const char *model_path,
                          const char *path)
{
    mt_tokenizer *tok = NULL;
    if (model_path && !(tok = mt_tokenizer_load(model_path))) return fail("%s", mt_last_error());
    size_t bad;
    int rc = 0;
    if (mt_source_lengths(len, (const char *const *)src->lines, src->n, tok, &bad) < 0)
        rc = fail("%s:%zu: %s", path, bad + 1, mt_last_error());
    mt_tokenizer_free(tok);
    return rc;
}

static int cancelled(const atomic_int *cancel) { return cancel && atomic_load(cancel); }

typedef struct {
    cli_progress bar;
    size_t lines_done;
    const atomic_int *cancel;
} translate_progress;

/* a non-zero return cancels the translation (mt_piece_fn) */
static int on_piece(void *user, size_t line, const char *text, int end_of_line)
{
    (void)line;
    (void)text;
    translate_progress *p = user;
    if (end_of_line) cli_progress_update(&p->bar, ++p->lines_done);
    return cancelled(p->cancel);
}

/* Hypotheses to DIR/NAME.txt with the system name made file-safe ("apertium_spa-eng.txt"). */
static int save_hyps(const char *dir, const char *system, char **hyps, size_t n)
{
    char path[4096];
    int k = snprintf(path, sizeof path, "%s/", dir);
    for (const char *c = system; *c && k < (int)sizeof path - 5; c++)
        path[k++] = (char)((*c == '/' || *c == ':' || *c == ' ') ? '_' : *c);
    snprintf(path + k, sizeof path - (size_t)k, ".txt");
    FILE *f = fopen(path, "w");
    if (!f) return fail("%s: %s", path, strerror(errno));
    for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", hyps[i]);
    int err = fflush(f) != 0 ? errno : ferror(f) ? EIO : 0;
    if (fclose(f) != 0 && !err) err = errno;
    return err ? fail("%s: cannot write: %s", path, strerror(err)) : 0;
}

/* Translate with one system and score it; with keep, the hypotheses are handed over. */
/* The per-segment statistics the paired test resamples: BLEU, chrF2 and chrF2++ rows. */
static int segment_stats(eval_system_result *r, const char *const *hyps, const char *const *refs,
                         size_t n)
{
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co[2] = {mt_chrf_defaults(), mt_chrfpp_defaults()};
    size_t k[EVAL_COMET] = {MT_SIG_BLEU_STATS, mt_sig_chrf_stats(&co[0]),
                            mt_sig_chrf_stats(&co[1])};
    for (int m = 0; m < EVAL_COMET; m++)
        r->seg_stats[m] = mt_xmalloc((n ? n : 1) * k[m] * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        mt_bleu_stats b;
        mt_chrf_stats c;
        if (mt_bleu_segment_stats(&b, hyps[i], &refs[i], 1, &bo) < 0) return -1;
        mt_sig_bleu_row(r->seg_stats[EVAL_BLEU] + i * k[EVAL_BLEU], &b);
        for (int m = 0; m < 2; m++) {
            if (mt_chrf_segment_stats(&c, hyps[i], &refs[i], 1, &co[m]) < 0) return -1;
            mt_sig_chrf_row(r->seg_stats[EVAL_CHRF + m] + i * k[EVAL_CHRF + m], &c);
        }
    }
    return 0;
}

static void free_segment_stats(eval_system_result *r)
{
    for (int m = 0; m < EVAL_METRICS; m++) {
        free(r->seg_stats[m]);
        r->seg_stats[m] = NULL;
    }
}

/* "bs", "ar", "none" or NULL (bs from two systems on): 1 + mt_sig_test, 0 for none, -1 */
static int paired_test(const char *name, size_t n_systems)
{
    if (!name) return n_systems >= 2 ? 1 + MT_SIG_BOOTSTRAP : 0;
    if (!strcmp(name, "none")) return 0;
    if (!strcmp(name, "bs")) return 1 + MT_SIG_BOOTSTRAP;
    if (!strcmp(name, "ar")) return 1 + MT_SIG_RANDOMIZATION;
    return -1;
}

/* COMET's segment scores of one system: its mean (COMET's scale) and the paired test's rows. */
static int comet_score(eval_system_result *r, mt_comet *comet, const char *const *src,
                       const char *const *hyps, const char *const *refs, size_t n)
{
    float *seg = mt_xmalloc((n ? n : 1) * sizeof *seg);
    r->seg_stats[EVAL_COMET] = mt_xmalloc((n ? n : 1) * MT_SIG_COMET_STATS * sizeof(double));
    int rc = n ? mt_comet_score(comet, src, hyps, refs, n, seg) : 0;
    double sum = 0; /* left to right, as `mtlab score -m comet` sums them */
    for (size_t i = 0; i < n && rc == 0; i++) {
        sum += seg[i];
        mt_sig_comet_row(r->seg_stats[EVAL_COMET] + i * MT_SIG_COMET_STATS, seg[i]);
    }
    r->comet = n ? sum / (double)n : 0.0;
    free(seg);
    return rc;
}

/* Every system against the first on BLEU, chrF2, chrF2++ and, with a model, COMET
 * (docs/metrics.md §10). */
static int compare_with_first(eval_report *rep, eval_system_result *res, size_t n_systems)
{
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co = mt_chrf_defaults(), cpp = mt_chrfpp_defaults();
    char name[2][32];
    mt_sig_metric m[EVAL_METRICS] = {
        mt_sig_bleu_metric(&bo), mt_sig_chrf_metric(&co, name[0], sizeof name[0]),
        mt_sig_chrf_metric(&cpp, name[1], sizeof name[1]), mt_sig_comet_metric()};
    mt_sig_opts o = mt_sig_defaults((mt_sig_test)(rep->paired - 1));
    rep->paired_n = mt_sig_samples(&o);
    rep->seed = o.seed;
    const double *stats[EVAL_MAX_SYSTEMS];
    mt_sig_result out[EVAL_MAX_SYSTEMS];
    for (int k = 0; k < (rep->comet_model ? EVAL_METRICS : EVAL_COMET); k++) {
        for (size_t s = 0; s < n_systems; s++) stats[s] = res[s].seg_stats[k];
        if (mt_sig_paired(out, stats, n_systems, rep->segments, &m[k], &o) < 0)
            return fail("eval: the paired test: %s", mt_last_error());
        for (size_t s = 0; s < n_systems; s++) res[s].sig[k] = out[s];
    }
    return 0;
}

/* What every system is evaluated on and with: the test set, its entity and name lists (NULL
 * when not asked), the sources' lengths for the buckets, COMET (or NULL), where to save the
 * translations (or NULL). */
typedef struct {
    const mt_text_lines *src, *ref;
    const mt_ne_testset *ts, *ts_translated;
    const mt_names_list *names;
    const size_t *lengths;
    mt_comet *comet;
    const char *hyps_dir;
    const atomic_int *cancel;
} eval_set;

static int evaluate_system(eval_system_result *r, mt_translator *t, const eval_set *set,
                           char ***keep)
{
    const mt_text_lines *src = set->src, *ref = set->ref;
    const mt_ne_testset *ts = set->ts, *ts_translated = set->ts_translated;
    const mt_names_list *names = set->names;
    const size_t *lengths = set->lengths;
    mt_comet *comet = set->comet;
    const char *hyps_dir = set->hyps_dir;
    memset(r, 0, sizeof *r);
    r->name = mt_translator_name(t);
    r->kind = mt_translator_kind(t);
    if (cancelled(set->cancel)) return fail("interrupted (Ctrl-C) before %s: no scores", r->name);
    char **hyps = mt_xcalloc(src->n, sizeof *hyps);
    translate_progress p = {.cancel = set->cancel};
    char label[96];
    snprintf(label, sizeof label, "eval %s", r->name);
    cli_progress_start(&p.bar, label, src->n);
    int rc =
        mt_translator_translate(t, hyps, (const char *const *)src->lines, src->n, on_piece, &p);
    if (rc < 0 && cancelled(set->cancel)) {
        cli_progress_finish(&p.bar, NULL);
        free(hyps);
        return fail("interrupted (Ctrl-C) while %s translated (%zu of %zu lines): no scores",
                    r->name, p.lines_done, src->n);
    }
    cli_progress_update(&p.bar, src->n);
    cli_progress_finish(&p.bar, rc == 0 ? "translated" : NULL);
    if (rc < 0) {
        free(hyps);
        return fail("%s", mt_last_error());
    }
    r->cost = *mt_translator_last_stats(t);
    const char *const *h = (const char *const *)hyps, *const *refs =
                                                          (const char *const *)ref->lines;
    const char *const *const ref_streams[1] = {refs};
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co = mt_chrf_defaults(), cpp = mt_chrfpp_defaults();
    if (mt_bleu_corpus(&r->bleu, h, src->n, ref_streams, 1, &bo) < 0 ||
        mt_chrf_corpus(&r->chrf, h, src->n, ref_streams, 1, &co) < 0 ||
        mt_chrf_corpus(&r->chrfpp, h, src->n, ref_streams, 1, &cpp) < 0 ||
        segment_stats(r, h, refs, src->n) < 0 ||
        mt_bucket_scores(r->buckets, lengths, h, refs, src->n) < 0)
        rc = fail("%s: scoring failed: %s", r->name, mt_last_error());
    if (rc == 0 && comet && cancelled(set->cancel))
        rc = fail("interrupted (Ctrl-C) before COMET scored %s: no scores", r->name);
    if (rc == 0 && comet &&
        comet_score(r, comet, (const char *const *)src->lines, h, refs, src->n) < 0)
        rc = fail("%s: COMET: %s", r->name, mt_last_error());
    if (rc == 0) mt_ne_recall_score(&r->ne, ts, h, NULL);
    if (rc == 0 && ts_translated) mt_ne_recall_score(&r->ne_translated, ts_translated, h, NULL);
    if (rc == 0 && names) mt_names_recall_score(&r->names, names, h);
    if (rc == 0 && hyps_dir) rc = save_hyps(hyps_dir, r->name, hyps, src->n);
    if (rc == 0 && keep) {
        *keep = hyps;
        return 0;
    }
    for (size_t i = 0; i < src->n; i++) free(hyps[i]);
    free(hyps);
    return rc != 0; /* a failed scoring (fail: 1) fails the system too */
}

/* One translator per system and precision (Apertium once: it has no precision), in the
 * order the systems were given. */
static int open_systems(mt_translator **systems, size_t *n, const eval_request *a)
{
    char list[64];
    if (snprintf(list, sizeof list, "%s", a->precision ? a->precision : "") >= (int)sizeof list)
        return fail("eval: --precision %s: too long", a->precision);
    const char *precisions[4];
    size_t n_prec = 0;
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (n_prec == sizeof precisions / sizeof *precisions || mt_runner_precision_flags(p) < 0)
            return fail("eval: --precision %s: %s", a->precision,
                        n_prec == 4 ? "too many precisions" : mt_last_error());
        precisions[n_prec++] = p;
    }
    if (a->precision && n_prec == 0)
        return fail("eval: --precision '%s': give fp32, int8, bf16 or a list such as fp32,int8",
                    a->precision);
    if (n_prec == 0) precisions[n_prec++] = NULL;
    mt_translate_opts opts = mt_translate_defaults();
    opts.beam = a->beam;
    opts.device = a->device;
    for (size_t s = 0; s < a->n_systems; s++) {
        int rule_based = !strncmp(a->systems[s], "apertium:", 9);
        for (size_t p = 0; p < (rule_based ? 1 : n_prec); p++) {
            if (*n == EVAL_MAX_SYSTEMS)
                return fail("eval: at most %d systems (precisions count separately)",
                            EVAL_MAX_SYSTEMS);
            opts.precision = rule_based ? NULL : precisions[p];
            if (!(systems[*n] = mt_translator_open(a->systems[s], &opts)))
                return fail("%s", mt_last_error());
            (*n)++;
        }
    }
    return 0;
}

int eval_run(const eval_request *req, eval_outcome *out)
{
    memset(out, 0, sizeof *out);
    eval_request a = *req;
    int rc;
    mt_ner_lang lang = MT_NER_ENGLISH;
    if (a.ner) {
        if (mt_ner_lang_parse(a.ner, &lang) < 0) return fail("eval: %s", mt_last_error());
    } else {
        char tgt[MT_LANG_MAX];
        if (target_lang(&a, tgt, sizeof tgt) < 0)
            return fail("eval: target language: %s", mt_last_error());
        lang = mt_ner_lang_for_code(tgt);
    }
    if (paired_test(a.paired, a.n_systems) < 0)
        return fail(
            "eval: paired test '%s': give bs (paired bootstrap), ar (approximate randomization) "
            "or none",
            a.paired);

    /* the --hyps directory is made (or found unusable) before minutes of translating */
    if (a.hyps_dir && mkdir(a.hyps_dir, 0777) != 0 && errno != EEXIST)
        return fail("eval: --hyps %s: %s", a.hyps_dir, strerror(errno));
    mt_text_lines src = {0}, ref = {0};
    if (a.src_lines) {
        if (copy_lines(&src, a.src_lines, a.src) || copy_lines(&ref, a.ref_lines, a.ref) ||
            check_aligned(&src, &ref, a.src, a.ref)) {
            mt_text_lines_free(&src);
            mt_text_lines_free(&ref);
            return 1;
        }
    } else if (read_pair(&src, &ref, a.src, a.ref)) {
        return 1;
    }

    mt_translator *systems[EVAL_MAX_SYSTEMS] = {0};
    size_t n_systems = 0;
    mt_corpus_stats *stats = NULL;
    mt_ne_testset ts = {0}, ts_translated = {0};
    mt_entity_lexicon *lexicon = NULL;
    mt_names_list names = {0};
    mt_comet *comet = NULL;
    char *lexicon_source = out->lexicon_source;
    size_t *lengths = mt_xcalloc(src.n, sizeof *lengths);
    eval_system_result *results = out->results;
    char *stats_source = out->stats_source;
    rc = 1;
    if (open_systems(systems, &n_systems, &a)) goto done;
    if (a.comet) {
        const mt_backend *be = a.device ? mt_backend_for(a.device, 0) : mt_backend_cpu();
        if (!be || !(comet = mt_comet_open(a.comet, be))) {
            fail("eval: COMET model %s: %s", a.comet, mt_last_error());
            goto done;
        }
    }
    if (source_lengths(lengths, &src, a.length_model, a.src)) goto done;
    if (a.names) {
        if (mt_names_list_read(&names, a.names) < 0) {
            fail("%s", mt_last_error());
            goto done;
        }
        if (names.n_segments != src.n) {
            fail("%s lists names for %zu segments but %s has %zu lines", a.names, names.n_segments,
                 a.src, src.n);
            goto done;
        }
    }
    char bundle_stats_path[512];
    if (!a.stats && !a.train_src) bundle_stats(&a, bundle_stats_path, sizeof bundle_stats_path);
    if ((a.stats || a.train_src) &&
        !(stats = load_stats(&a, lang, stats_source, sizeof out->stats_source)))
        goto done;
    if (mt_ne_testset_build(&ts, (const char *const *)src.lines, (const char *const *)ref.lines,
                            src.n, lang, stats) < 0) {
        fail("%s: %s", a.ref, mt_last_error());
        goto done;
    }
    int lexicon_failed;
    lexicon = load_lexicon(&a, lexicon_source, sizeof out->lexicon_source, &lexicon_failed);
    if (lexicon_failed) goto done;
    if (lexicon && mt_ne_testset_build_translated(&ts_translated, (const char *const *)src.lines,
                                                  (const char *const *)ref.lines, src.n, lang,
                                                  stats, lexicon) < 0) {
        fail("%s: %s", a.ref, mt_last_error());
        goto done;
    }
    eval_set set = {&src,
                    &ref,
                    &ts,
                    lexicon ? &ts_translated : NULL,
                    a.names ? &names : NULL,
                    lengths,
                    comet,
                    a.hyps_dir,
                    a.cancel};
    for (size_t s = 0; s < n_systems; s++) {
        if (evaluate_system(&results[s], systems[s], &set, a.keep_hyps ? &out->hyps[s] : NULL))
            goto done;
        /* the report outlives the systems: it keeps its own copy of their names */
        results[s].name = out->names[s] = mt_xstrdup(results[s].name);
    }

    char *length_unit = out->length_unit;
    if (a.length_model)
        snprintf(length_unit, sizeof out->length_unit, "pieces of %s", a.length_model);
    else snprintf(length_unit, sizeof out->length_unit, "whitespace tokens");
    out->report = (eval_report){
        .src_path = a.src,
        .ref_path = a.ref,
        .segments = src.n,
        .ner = mt_ner_lang_name(lang),
        .stats_source = stats ? stats_source : NULL,
        .stats_pairs = stats ? mt_corpus_stats_pairs(stats) : 0,
        .stats_entities = stats ? mt_corpus_stats_entities(stats) : 0,
        .lexicon_source = lexicon ? lexicon_source : NULL,
        .length_unit = length_unit,
        .beam = a.beam,
        .names_source = a.names,
        .comet_model = a.comet,
        .systems = results,
        .n_systems = n_systems,
    };
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co = mt_chrf_defaults(), cpp = mt_chrfpp_defaults();
    mt_bleu_signature(out->report.bleu_signature, sizeof out->report.bleu_signature, &bo, 1, 0);
    mt_chrf_signature(out->report.chrf_signature, sizeof out->report.chrf_signature, &co, 1, 0);
    mt_chrf_signature(out->report.chrfpp_signature, sizeof out->report.chrfpp_signature, &cpp, 1,
                      0);
    out->report.paired = paired_test(a.paired, n_systems);
    if (cancelled(a.cancel)) {
        fail("interrupted (Ctrl-C) before the paired tests: no scores");
        goto done;
    }
    if (out->report.paired && n_systems >= 2 && src.n > 0 &&
        compare_with_first(&out->report, results, n_systems))
        goto done;
    if (n_systems < 2 || src.n == 0) out->report.paired = 0;
    rc = 0;
done:
    for (size_t s = 0; s < EVAL_MAX_SYSTEMS; s++) free_segment_stats(&results[s]);
    for (size_t s = 0; s < n_systems; s++) mt_translator_close(systems[s]);
    mt_comet_free(comet);
    mt_ne_testset_free(&ts);
    mt_ne_testset_free(&ts_translated);
    mt_entity_lexicon_free(lexicon);
    mt_names_list_free(&names);
    mt_corpus_stats_free(stats);
    free(lengths);
    if (rc == 0 && a.keep_hyps) {
        out->src = src;
        out->ref = ref;
    } else {
        mt_text_lines_free(&src);
        mt_text_lines_free(&ref);
    }
    return rc;
}

void eval_outcome_free(eval_outcome *o)
{
    for (size_t s = 0; s < EVAL_MAX_SYSTEMS; s++) {
        if (o->hyps[s])
            for (size_t i = 0; i < o->report.segments; i++) free(o->hyps[s][i]);
        free(o->hyps[s]);
        free(o->names[s]);
    }
    mt_text_lines_free(&o->src);
    mt_text_lines_free(&o->ref);
    memset(o, 0, sizeof *o);
}
