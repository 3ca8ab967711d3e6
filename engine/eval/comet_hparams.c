/* COMET's hparams.yaml, as `yaml.dump` of the RegressionMetric's hyper-parameters writes it:
 * one "key: value" per line at column 0, lists as following "- item" lines (or "[a, b]").
 * Only the keys that change the computation are read; a key that is absent takes
 * RegressionMetric's default, as COMET's own constructor gives it. */
#include "eval/comet_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mtlab/error.h"
#include "mtlab/files.h"

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
    if (e - s >= 2 && (s[0] == '\'' || s[0] == '"') && e[-1] == s[0]) e[-1] = 0, s++;
    return s;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < -1 || v > 1000000) return -1;
    *out = (int)v;
    return 0;
}

int comet_activation_from_name(const char *name, mt_act *out)
{
    /* COMET builds getattr(torch.nn, name.title()) */
    static const struct {
        const char *name;
        mt_act act;
    } acts[] = {{"tanh", MT_ACT_TANH},
                {"relu", MT_ACT_RELU},
                {"gelu", MT_ACT_GELU},
                {"softplus", MT_ACT_SOFTPLUS}};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (!strcasecmp(name, acts[i].name)) return *out = acts[i].act, 0;
    return -1;
}

typedef struct {
    const char *path;
    size_t line;
    mt_comet_config *cfg;
    int in_hidden; /* the last key was hidden_sizes: "- N" lines follow */
    int saw_class;
} hp_reader;

static int hidden_item(hp_reader *r, const char *item)
{
    int v;
    if (parse_int(item, &v) || v < 1)
        return mt_error("%s:%zu: hidden_sizes: '%s' is not a positive integer", r->path, r->line,
                        item);
    if (r->cfg->n_hidden == MT_COMET_MAX_HIDDEN)
        return mt_error("%s:%zu: hidden_sizes: more than %d layers", r->path, r->line,
                        MT_COMET_MAX_HIDDEN);
    r->cfg->hidden[r->cfg->n_hidden++] = v;
    return 0;
}

static int flow_list(hp_reader *r, char *v)
{
    size_t n = strlen(v);
    if (n < 2 || v[n - 1] != ']')
        return mt_error("%s:%zu: hidden_sizes: '%s' is not a list", r->path, r->line, v);
    v[n - 1] = 0;
    for (char *save = NULL, *tok = strtok_r(v + 1, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        if (hidden_item(r, trim(tok))) return -1;
    return 0;
}

static int bool_value(hp_reader *r, const char *key, const char *v, int *out)
{
    if (!strcasecmp(v, "true")) return *out = 1, 0;
    if (!strcasecmp(v, "false")) return *out = 0, 0;
    return mt_error("%s:%zu: %s: '%s' is not true or false", r->path, r->line, key, v);
}

static int key_value(hp_reader *r, const char *key, char *v)
{
    mt_comet_config *c = r->cfg;
    const char *at = r->path;
    size_t ln = r->line;
    if (!strcmp(key, "class_identifier")) {
        r->saw_class = 1;
        if (strcmp(v, "regression_metric"))
            return mt_error("%s:%zu: class_identifier '%s': mtlab computes COMET regression "
                            "metrics (regression_metric, as wmt22-comet-da) only",
                            at, ln, v);
    } else if (!strcmp(key, "encoder_model")) {
        if (strcmp(v, "XLM-RoBERTa"))
            return mt_error("%s:%zu: encoder_model '%s': mtlab's COMET encoder is XLM-RoBERTa", at,
                            ln, v);
    } else if (!strcmp(key, "layer")) {
        if (!strcmp(v, "mix")) c->layer = -1;
        else if (parse_int(v, &c->layer) || c->layer < 0)
            return mt_error("%s:%zu: layer '%s' is neither mix nor a layer number", at, ln, v);
    } else if (!strcmp(key, "layer_transformation")) {
        /* "sparsemax_patch" marks models trained with softmax under a sparsemax name; COMET
         * >= 2.2.4 computes them with softmax, and so does its layer code for any name but
         * "sparsemax" */
        if (!strcmp(v, "sparsemax")) c->sparsemax = 1;
        else if (!strcmp(v, "softmax") || !strcmp(v, "sparsemax_patch")) c->sparsemax = 0;
        else
            return mt_error("%s:%zu: layer_transformation '%s' is not softmax, sparsemax or "
                            "sparsemax_patch",
                            at, ln, v);
    } else if (!strcmp(key, "layer_norm")) {
        return bool_value(r, key, v, &c->layer_norm);
    } else if (!strcmp(key, "pool")) {
        if (!strcmp(v, "avg")) c->pool = MT_COMET_POOL_AVG;
        else if (!strcmp(v, "cls")) c->pool = MT_COMET_POOL_CLS;
        else if (!strcmp(v, "default")) c->pool = MT_COMET_POOL_DEFAULT;
        else
            return mt_error("%s:%zu: pool '%s' is not one mtlab computes (avg, cls, default)", at,
                            ln, v);
    } else if (!strcmp(key, "hidden_sizes")) {
        c->n_hidden = 0;
        if (*v) return flow_list(r, v);
        r->in_hidden = 1;
    } else if (!strcmp(key, "activations")) {
        if (comet_activation_from_name(v, &c->act))
            return mt_error("%s:%zu: activations '%s' is not Tanh, ReLU, GELU or Softplus", at, ln,
                            v);
    } else if (!strcmp(key, "final_activation")) {
        mt_act a;
        if (!strcmp(v, "null") || !strcmp(v, "~") || !*v) c->final_act = -1;
        else if (comet_activation_from_name(v, &a))
            return mt_error("%s:%zu: final_activation '%s' is not null, Tanh, ReLU, GELU or "
                            "Softplus",
                            at, ln, v);
        else c->final_act = (int)a;
    }
    return 0;
}

int comet_hparams_read(const char *path, mt_comet_config *cfg)
{
    /* RegressionMetric's defaults */
    cfg->layer = -1, cfg->sparsemax = 0, cfg->layer_norm = 1, cfg->pool = MT_COMET_POOL_AVG;
    cfg->n_hidden = 2, cfg->hidden[0] = 3072, cfg->hidden[1] = 1024;
    cfg->act = MT_ACT_TANH, cfg->final_act = -1;

    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return -1;
    mt_line_reader lr;
    mt_line_reader_init(&lr, f, path, 0);
    hp_reader r = {.path = path, .cfg = cfg};
    char *line;
    size_t len;
    int got, rc = 0;
    while (!rc && (got = mt_line_next(&lr, &line, &len)) > 0) {
        r.line = lr.line_no;
        char *s = trim(line);
        if (!*s || *s == '#') continue;
        if (s[0] == '-' && (s[1] == ' ' || !s[1])) {
            if (r.in_hidden) rc = hidden_item(&r, trim(s + 1));
            continue;
        }
        if (line[0] == ' ' || line[0] == '\t') continue; /* inside a nested value */
        r.in_hidden = 0;
        char *colon = strchr(s, ':');
        if (!colon) {
            rc = mt_error("%s:%zu: expected 'key: value', got '%s'", path, r.line, s);
            break;
        }
        *colon = 0;
        rc = key_value(&r, trim(s), trim(colon + 1));
    }
    if (got < 0) rc = -1;
    mt_line_reader_free(&lr);
    fclose(f);
    if (rc) return -1;
    if (!r.saw_class) return mt_error("%s: no class_identifier: not a COMET hparams.yaml", path);
    if (cfg->n_hidden == 0) return mt_error("%s: hidden_sizes is empty", path);
    return 0;
}
