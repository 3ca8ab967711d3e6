#include "common/eval_report.h"

#include "common/output.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_WIDTH 34

void eval_format_bytes(char *out, size_t len, size_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(out, len, "%zu B", bytes);
    else snprintf(out, len, "%.1f %s", v, units[u]);
}

static int column_width(const eval_report *r)
{
    int w = 12;
    for (size_t s = 0; s < r->n_systems; s++) {
        int k = (int)strlen(r->systems[s].name) + 2;
        if (k > w) w = k;
    }
    return w;
}

/* One table row: the label, then one cell per system made by cell(). */
typedef void (*cell_fn)(char *out, size_t len, const eval_system_result *s, int arg);

static void row(FILE *out, const eval_report *r, int width, const char *label, cell_fn cell,
                int arg)
{
    fprintf(out, "%-*s", LABEL_WIDTH, label);
    for (size_t s = 0; s < r->n_systems; s++) {
        char text[64];
        cell(text, sizeof text, &r->systems[s], arg);
        fprintf(out, "%*s", width, text);
    }
    fputc('\n', out);
}

/* A corpus score, starred when the paired test finds it differs from the first system's;
 * COMET on its own scale with 4 decimals, as comet-score and `mtlab score` print it */
static void cell_score(char *o, size_t n, const eval_system_result *s, int metric)
{
    double v = metric == EVAL_BLEU     ? s->bleu.score
               : metric == EVAL_CHRF   ? s->chrf
               : metric == EVAL_CHRFPP ? s->chrfpp
                                       : s->comet;
    const mt_sig_result *t = &s->sig[metric];
    snprintf(o, n, "%.*f%s", metric == EVAL_COMET ? 4 : 2, v, t->has_p && t->p <= 0.05 ? "*" : "");
}

/* The test's p-value against the first system ("-" for the first) */
static void cell_p(char *o, size_t n, const eval_system_result *s, int metric)
{
    const mt_sig_result *t = &s->sig[metric];
    if (t->has_p) snprintf(o, n, "%.4f", t->p);
    else snprintf(o, n, "-");
}

static void cell_names(char *o, size_t n, const eval_system_result *s, int a)
{
    (void)a;
    snprintf(o, n, "%.1f%%", 100.0 * s->names.recall);
}

static void cell_ne(char *o, size_t n, const eval_system_result *s, int bin)
{
    size_t entities = bin < MT_NE_BINS ? s->ne.entities[bin] : s->ne.entities_all;
    double recall = bin < MT_NE_BINS ? s->ne.recall[bin] : s->ne.recall_all;
    if (entities == 0) snprintf(o, n, "-");
    else snprintf(o, n, "%.1f%%", 100.0 * recall);
}

static void cell_ne_translated(char *o, size_t n, const eval_system_result *s, int bin)
{
    size_t entities =
        bin < MT_NE_BINS ? s->ne_translated.entities[bin] : s->ne_translated.entities_all;
    double recall = bin < MT_NE_BINS ? s->ne_translated.recall[bin] : s->ne_translated.recall_all;
    if (entities == 0) snprintf(o, n, "-");
    else snprintf(o, n, "%.1f%%", 100.0 * recall);
}

static void cell_bucket_bleu(char *o, size_t n, const eval_system_result *s, int b)
{
    if (s->buckets[b].segments == 0) snprintf(o, n, "-");
    else snprintf(o, n, "%.2f", s->buckets[b].bleu_score);
}

static void cell_bucket_chrf(char *o, size_t n, const eval_system_result *s, int b)
{
    if (s->buckets[b].segments == 0) snprintf(o, n, "-");
    else snprintf(o, n, "%.2f", s->buckets[b].chrf_score);
}

static void cell_seconds(char *o, size_t n, const eval_system_result *s, int a)
{
    (void)a;
    snprintf(o, n, "%.2f s", s->cost.seconds);
}

static void cell_ms_per_sentence(char *o, size_t n, const eval_system_result *s, int a)
{
    (void)a;
    snprintf(o, n, "%.2f",
             s->cost.sentences ? 1000.0 * s->cost.seconds / (double)s->cost.sentences : 0.0);
}

static void cell_tokens_per_second(char *o, size_t n, const eval_system_result *s, int a)
{
    (void)a;
    snprintf(o, n, "%.0f",
             s->cost.seconds > 0 ? (double)s->cost.hyp_tokens / s->cost.seconds : 0.0);
}

static void cell_memory(char *o, size_t n, const eval_system_result *s, int a)
{
    (void)a;
    if (s->cost.peak_bytes == 0) snprintf(o, n, "-");
    else eval_format_bytes(o, n, s->cost.peak_bytes);
}

void eval_report_print(FILE *out, const eval_report *r)
{
    int width = column_width(r);
    char label[96];
    fprintf(out, "%-*s", LABEL_WIDTH, "");
    for (size_t s = 0; s < r->n_systems; s++) fprintf(out, "%*s", width, r->systems[s].name);
    fputc('\n', out);
    static const char *const metric_label[EVAL_METRICS] = {"BLEU", "chrF2", "chrF2++", "COMET"};
    int n_metrics = r->comet_model ? EVAL_METRICS : EVAL_COMET;
    for (int m = 0; m < n_metrics; m++) row(out, r, width, metric_label[m], cell_score, m);
    for (int m = 0; r->paired && m < n_metrics; m++) {
        snprintf(label, sizeof label, "  p vs first, %s", metric_label[m]);
        row(out, r, width, label, cell_p, m);
    }
    if (r->names_source && r->n_systems) {
        snprintf(label, sizeof label, "names recall (%zu substituted)", r->systems[0].names.names);
        row(out, r, width, label, cell_names, 0);
    }

    const mt_ne_recall *ne = r->n_systems ? &r->systems[0].ne : NULL; /* counts are shared */
    for (int b = 0; b <= MT_NE_BINS; b++) {
        size_t e = !ne ? 0 : b < MT_NE_BINS ? ne->entities[b] : ne->entities_all;
        size_t occ = !ne ? 0 : b < MT_NE_BINS ? ne->occurrences[b] : ne->occurrences_all;
        snprintf(label, sizeof label, "NE recall %-8s (%zu ent, %zu occ)",
                 b < MT_NE_BINS ? mt_ne_bin_name(b) : "all", e, occ);
        row(out, r, width, label, cell_ne, b);
    }
    const mt_ne_recall *nt =
        r->n_systems && r->lexicon_source ? &r->systems[0].ne_translated : NULL;
    for (int b = 0; nt && b <= MT_NE_BINS; b++) {
        size_t e = b < MT_NE_BINS ? nt->entities[b] : nt->entities_all;
        size_t occ = b < MT_NE_BINS ? nt->occurrences[b] : nt->occurrences_all;
        snprintf(label, sizeof label, "NE +tr.   %-8s (%zu ent, %zu occ)",
                 b < MT_NE_BINS ? mt_ne_bin_name(b) : "all", e, occ);
        row(out, r, width, label, cell_ne_translated, b);
    }
    for (int b = 0; b < MT_LENGTH_BUCKETS; b++) {
        size_t segs = r->n_systems ? r->systems[0].buckets[b].segments : 0;
        snprintf(label, sizeof label, "BLEU  src %-7s (%zu seg)", mt_length_bucket_name(b), segs);
        row(out, r, width, label, cell_bucket_bleu, b);
    }
    for (int b = 0; b < MT_LENGTH_BUCKETS; b++) {
        size_t segs = r->n_systems ? r->systems[0].buckets[b].segments : 0;
        snprintf(label, sizeof label, "chrF2 src %-7s (%zu seg)", mt_length_bucket_name(b), segs);
        row(out, r, width, label, cell_bucket_chrf, b);
    }
    row(out, r, width, "time", cell_seconds, 0);
    row(out, r, width, "ms / sentence", cell_ms_per_sentence, 0);
    row(out, r, width, "tokens / s (hypothesis words)", cell_tokens_per_second, 0);
    row(out, r, width, "peak memory", cell_memory, 0);

    fprintf(out, "\n%zu segments of %s -> %s\n", r->segments, r->src_path, r->ref_path);
    fprintf(out, "BLEU:    %s\nchrF2:   %s\nchrF2++: %s\n", r->bleu_signature, r->chrf_signature,
            r->chrfpp_signature);
    if (r->comet_model)
        fprintf(out,
                "COMET:   model %s, the mean of the segment scores (its paired test on the mean x "
                "100)\n",
                r->comet_model);
    if (r->paired)
        fprintf(out,
                "*: differs from %s at p <= 0.05 (paired %s, %zu %s, seed %llu; docs/metrics.md "
                "§10)\n",
                r->systems[0].name,
                r->paired - 1 == MT_SIG_BOOTSTRAP ? "bootstrap" : "approximate randomization",
                r->paired_n, r->paired - 1 == MT_SIG_BOOTSTRAP ? "resamples" : "trials", r->seed);
    fprintf(out, "NE:    %s recogniser on the reference, kept when verbatim in the source; ",
            r->ner);
    if (r->stats_source)
        fprintf(
            out,
            "bins by training pairs (unseen 0, regular 1-%d, frequent %d+) from %s (%zu pairs, %zu "
            "entities)\n",
            MT_NE_FREQUENT_MIN - 1, MT_NE_FREQUENT_MIN, r->stats_source, r->stats_pairs,
            r->stats_entities);
    else
        fprintf(
            out,
            "no training statistics (give --stats or --train-src/--train-ref): every entity counts "
            "as unseen\n");
    if (r->lexicon_source)
        fprintf(out,
                "NE +tr.: also kept when a lexicon form of a source name, hit when copied or "
                "translated; "
                "lexicon %s\n",
                r->lexicon_source);
    else
        fprintf(
            out,
            "NE +tr.: no entity lexicon (give --lexicon or --train-src/--train-ref, or a bundle "
            "with entity_lexicon.tsv)\n");
    if (r->names_source)
        fprintf(out, "names: substituted names of %s found as words of the hypothesis\n",
                r->names_source);
    fprintf(out, "length: source %s\n", r->length_unit);
    for (size_t s = 0; s < r->n_systems; s++)
        if (r->systems[s].cost.memory_kind)
            fprintf(out, "memory of %s: %s\n", r->systems[s].name, r->systems[s].cost.memory_kind);
    fprintf(out, "beam: %d (search-based systems; Apertium is rule-based)\n", r->beam);
}

static json_t *ne_bin_json(double recall, size_t entities, size_t occurrences, size_t hits)
{
    json_t *o = json_object();
    json_object_set_new(o, "recall", entities ? json_real(recall) : json_null());
    json_object_set_new(o, "entities", json_integer((json_int_t)entities));
    json_object_set_new(o, "occurrences", json_integer((json_int_t)occurrences));
    json_object_set_new(o, "hits", json_integer((json_int_t)hits));
    return o;
}

static json_t *system_json(const eval_system_result *s, int with_translated, int with_names,
                           int with_comet)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(s->name));
    json_object_set_new(o, "kind", json_string(s->kind));
    json_object_set_new(o, "bleu", json_real(s->bleu.score));
    char verbose[256];
    mt_bleu_verbose(verbose, sizeof verbose, &s->bleu);
    json_object_set_new(o, "bleu_verbose", json_string(verbose));
    json_object_set_new(o, "chrf", json_real(s->chrf));
    json_object_set_new(o, "chrfpp", json_real(s->chrfpp));
    json_object_set_new(o, "comet", with_comet ? json_real(s->comet) : json_null());
    static const char *const metric_key[EVAL_METRICS] = {"bleu", "chrf", "chrfpp", "comet"};
    json_t *sig = json_null();
    if (s->sig[EVAL_BLEU].has_ci || s->sig[EVAL_BLEU].has_p) {
        sig = json_object();
        for (int m = 0; m < (with_comet ? EVAL_METRICS : EVAL_COMET); m++) {
            const mt_sig_result *t = &s->sig[m];
            json_t *e = json_object();
            json_object_set_new(e, "p_value", t->has_p ? json_real(t->p) : json_null());
            json_object_set_new(e, "mean", t->has_ci ? json_real(t->mean) : json_null());
            json_object_set_new(e, "ci", t->has_ci ? json_real(t->ci) : json_null());
            json_object_set_new(sig, metric_key[m], e);
        }
    }
    json_object_set_new(o, "significance", sig);

    json_t *ne = json_object();
    for (int b = 0; b < MT_NE_BINS; b++)
        json_object_set_new(
            ne, mt_ne_bin_name(b),
            ne_bin_json(s->ne.recall[b], s->ne.entities[b], s->ne.occurrences[b], s->ne.hits[b]));
    json_object_set_new(
        ne, "all",
        ne_bin_json(s->ne.recall_all, s->ne.entities_all, s->ne.occurrences_all, s->ne.hits_all));
    json_object_set_new(o, "ne_recall", ne);
    json_t *nt = json_null();
    if (with_translated) {
        nt = json_object();
        const mt_ne_recall *t = &s->ne_translated;
        for (int b = 0; b < MT_NE_BINS; b++)
            json_object_set_new(
                nt, mt_ne_bin_name(b),
                ne_bin_json(t->recall[b], t->entities[b], t->occurrences[b], t->hits[b]));
        json_object_set_new(
            nt, "all",
            ne_bin_json(t->recall_all, t->entities_all, t->occurrences_all, t->hits_all));
    }
    json_object_set_new(o, "ne_recall_translated", nt);
    json_t *names = json_null();
    if (with_names) {
        names = json_object();
        json_object_set_new(names, "recall",
                            s->names.names ? json_real(s->names.recall) : json_null());
        json_object_set_new(names, "names", json_integer((json_int_t)s->names.names));
        json_object_set_new(names, "hits", json_integer((json_int_t)s->names.hits));
    }
    json_object_set_new(o, "names_recall", names);

    json_t *buckets = json_array();
    for (int b = 0; b < MT_LENGTH_BUCKETS; b++) {
        const mt_bucket_score *k = &s->buckets[b];
        json_t *e = json_object();
        json_object_set_new(e, "range", json_string(mt_length_bucket_name(b)));
        json_object_set_new(e, "segments", json_integer((json_int_t)k->segments));
        json_object_set_new(e, "src_tokens", json_integer((json_int_t)k->src_tokens));
        json_object_set_new(e, "bleu", k->segments ? json_real(k->bleu_score) : json_null());
        json_object_set_new(e, "chrf", k->segments ? json_real(k->chrf_score) : json_null());
        json_array_append_new(buckets, e);
    }
    json_object_set_new(o, "length_buckets", buckets);

    const mt_translate_stats *c = &s->cost;
    json_t *cost = json_object();
    json_object_set_new(cost, "seconds", json_real(c->seconds));
    json_object_set_new(cost, "sentences", json_integer((json_int_t)c->sentences));
    json_object_set_new(cost, "ms_per_sentence",
                        json_real(c->sentences ? 1000.0 * c->seconds / (double)c->sentences : 0.0));
    json_object_set_new(cost, "src_tokens", json_integer((json_int_t)c->src_tokens));
    json_object_set_new(cost, "hyp_tokens", json_integer((json_int_t)c->hyp_tokens));
    json_object_set_new(cost, "tokens_per_second",
                        json_real(c->seconds > 0 ? (double)c->hyp_tokens / c->seconds : 0.0));
    json_object_set_new(cost, "peak_bytes",
                        c->peak_bytes ? json_integer((json_int_t)c->peak_bytes) : json_null());
    json_object_set_new(cost, "memory_kind",
                        c->memory_kind ? json_string(c->memory_kind) : json_null());
    json_object_set_new(o, "cost", cost);
    return o;
}

int eval_report_write_json(const eval_report *r, const char *path)
{
    json_t *root = json_object();
    json_object_set_new(root, "src", json_string(r->src_path));
    json_object_set_new(root, "ref", json_string(r->ref_path));
    json_object_set_new(root, "segments", json_integer((json_int_t)r->segments));
    json_object_set_new(root, "bleu_signature", json_string(r->bleu_signature));
    json_object_set_new(root, "chrf_signature", json_string(r->chrf_signature));
    json_object_set_new(root, "chrfpp_signature", json_string(r->chrfpp_signature));
    json_object_set_new(root, "comet_model",
                        r->comet_model ? json_string(r->comet_model) : json_null());
    json_t *test = json_null();
    if (r->paired) {
        test = json_object();
        json_object_set_new(test, "test",
                            json_string(r->paired - 1 == MT_SIG_BOOTSTRAP ? "bs" : "ar"));
        json_object_set_new(test, "samples", json_integer((json_int_t)r->paired_n));
        json_object_set_new(test, "seed", json_integer((json_int_t)r->seed));
        json_object_set_new(test, "baseline", json_string(r->systems[0].name));
    }
    json_object_set_new(root, "paired_test", test);
    json_object_set_new(root, "beam", json_integer(r->beam));
    json_t *ent = json_object();
    json_object_set_new(ent, "recogniser", json_string(r->ner));
    json_object_set_new(ent, "stats", r->stats_source ? json_string(r->stats_source) : json_null());
    json_object_set_new(ent, "stats_pairs", json_integer((json_int_t)r->stats_pairs));
    json_object_set_new(ent, "stats_entities", json_integer((json_int_t)r->stats_entities));
    json_object_set_new(ent, "frequent_min", json_integer(MT_NE_FREQUENT_MIN));
    json_object_set_new(ent, "lexicon",
                        r->lexicon_source ? json_string(r->lexicon_source) : json_null());
    json_object_set_new(root, "entities", ent);
    json_object_set_new(root, "length_unit", json_string(r->length_unit));
    json_object_set_new(root, "names",
                        r->names_source ? json_string(r->names_source) : json_null());
    json_t *systems = json_array();
    for (size_t s = 0; s < r->n_systems; s++)
        json_array_append_new(systems,
                              system_json(&r->systems[s], r->lexicon_source != NULL,
                                          r->names_source != NULL, r->comet_model != NULL));
    json_object_set_new(root, "systems", systems);

    int flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10);
    int rc;
    if (!strcmp(path, "-")) {
        rc = json_dumpf(root, stdout, flags) != 0 || fputc('\n', stdout) == EOF ? cli_stdout_check()
                                                                                : 0;
    } else {
        FILE *f = cli_create(path);
        rc = !f;
        if (f) {
            json_dumpf(root, f, flags);
            fputc('\n', f);
            rc = cli_close_output(f, path);
        }
    }
    json_decref(root);
    return rc;
}
