/* `mtlab forward`: run a bundle on token ids and show what it predicts at every position —
 * a smoke test for a model bundle, and (with --logits / --save) the way to compare it with
 * another implementation (tests/fixtures/models/check_transformers.py does that). */
#include "cli/commands.h"
#include "mtlab/bundle.h"
#include "mtlab/error.h"
#include "mtlab/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append the integers of text ("5 6 7", "5,6,7") to *ids; -1 on anything else. */
static int parse_ids(const char *text, int32_t **ids, int *n, int *cap)
{
    const char *p = text;
    while (*p) {
        if (*p == ' ' || *p == ',' || *p == '\t') {
            p++;
            continue;
        }
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX) return -1;
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *ids = mt_xrealloc(*ids, (size_t)*cap * sizeof **ids);
        }
        (*ids)[(*n)++] = (int32_t)v;
        p = end;
    }
    return 0;
}

static int write_floats(const char *path, const float *x, size_t n)
{
    FILE *f = cli_create(path);
    if (!f) return 1;
    fwrite(x, sizeof(float), n, f);
    return cli_close_output(f, path);
}

/* The model as a bundle in dir, through a new directory renamed into place (--force: over an
 * existing bundle). */
static int save_bundle(const mt_model *m, const char *dir, mt_dtype dtype, int force)
{
    mt_bundle_target target;
    int rc = mt_bundle_target_begin(&target, dir, force);
    if (rc == 0 && (rc = mt_model_save(m, target.tmp, mt_model_tokenizer_path(m), dtype)) == 0)
        rc = mt_bundle_target_commit(&target);
    mt_bundle_target_discard(&target);
    if (rc == MT_BUNDLE_TARGET_EXISTS) return cli_fail("%s (--force replaces it)", mt_last_error());
    return rc ? cli_fail("%s", mt_last_error()) : 0;
}

static int run_forward(int argc, char **argv)
{
    const char *bundle = NULL, *src_text = NULL, *logits_path = NULL, *save_dir = NULL;
    const char *device = NULL;
    mt_dtype save_dtype = MT_DT_F32;
    int32_t *ids = NULL, *src = NULL;
    int n = 0, cap = 0, n_src = 0, cap_src = 0, force = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) bundle = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!strcmp(argv[i], "--src") && i + 1 < argc) src_text = argv[++i];
        else if (!strcmp(argv[i], "--logits") && i + 1 < argc) logits_path = argv[++i];
        else if (!strcmp(argv[i], "--save") && i + 1 < argc) save_dir = argv[++i];
        else if (!strcmp(argv[i], "--force")) force = 1;
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            if (mt_dtype_from_name(argv[++i], &save_dtype))
                return cli_fail("forward: --dtype '%s' is not F32, F16 or BF16", argv[i]);
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') return cli_usage(&cmd_forward);
        else if (parse_ids(argv[i], &ids, &n, &cap)) {
            free(ids);
            return cli_fail("forward: '%s' is not a list of token ids", argv[i]);
        }
    }
    if (!bundle || n == 0) {
        free(ids);
        return cli_usage(&cmd_forward);
    }
    if (src_text && parse_ids(src_text, &src, &n_src, &cap_src)) {
        free(ids);
        free(src);
        return cli_fail("forward: --src '%s' is not a list of token ids", src_text);
    }
    int rc = 1;
    float *logits = NULL;
    mt_runner *r = mt_runner_open(bundle, device, 0);
    if (!r) {
        cli_fail("%s", mt_last_error());
        goto done;
    }
    mt_model *m = r->model;
    const mt_model_config *cfg = mt_model_get_config(m);
    if (mt_model_is_encdec(m) && n_src == 0) {
        cli_fail("forward: %s is an encoder-decoder model: give the source with --src", bundle);
        goto done;
    }
    mt_batch b = {.B = 1, .T = n, .ids = ids, .S = n_src, .src = src};
    size_t V = (size_t)cfg->vocab_size;
    logits = mt_xmalloc((size_t)n * V * sizeof(float));
    if (mt_model_forward(m, &b, logits)) {
        cli_fail("%s", mt_last_error());
        goto done;
    }
    printf("%s: %s, %zu parameters, vocabulary %d\n", bundle, cfg->arch, mt_model_param_count(m),
           cfg->vocab_size);
    printf("%4s %8s %10s %10s\n", "pos", "token", "predicted", "logit");
    for (int t = 0; t < n; t++) {
        const float *row = logits + (size_t)t * V;
        size_t best = 0;
        for (size_t v = 1; v < V; v++)
            if (row[v] > row[best]) best = v;
        printf("%4d %8d %10zu %10.4f\n", t, ids[t], best, row[best]);
    }
    if (logits_path && write_floats(logits_path, logits, (size_t)n * V)) goto done;
    if (save_dir && save_bundle(m, save_dir, save_dtype, force)) goto done;
    rc = 0;
done:
    free(logits);
    free(ids);
    free(src);
    mt_runner_close(r);
    return rc;
}

const struct mt_command cmd_forward = {
    "forward",
    "-m BUNDLE [--device cpu|cuda[:N]] [--src IDS] [--logits FILE] [--save DIR [--force] [--dtype "
    "F32|F16|BF16]] IDS\n"
    "  an existing --save bundle is replaced only with --force (whole, in one rename)",
    "run a model bundle on token ids: the prediction at every position",
    run_forward,
    .parallel = 1,
};
