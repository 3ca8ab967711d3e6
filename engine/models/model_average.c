/* Checkpoint averaging: one bundle whose weights are the element-wise mean of several bundles
 * of one model (docs/models.md §10.10), and the layout check it shares with training's `init`. */
#include "io/atomic_file.h"
#include "models/model_internal.h"
#include "mtlab/backend.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/model.h"
#include "mtlab/safetensors.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int mt_model_check_same_layout(const mt_model *want, const char *want_name, const mt_model *got,
                               const char *got_name)
{
    const mt_model_config *c = mt_model_get_config(want), *x = mt_model_get_config(got);
    if (strcmp(x->arch, c->arch) != 0)
        return mt_error("%s is a %s model, %s is %s", got_name, x->arch, want_name, c->arch);
    unsigned layout = mt_arch_find(c->arch)->layout_keys;
    if ((layout & MT_LAYOUT_HEADS) && x->n_heads != c->n_heads)
        return mt_error("%s has %d heads, %s has %d", got_name, x->n_heads, want_name, c->n_heads);
    if ((layout & MT_LAYOUT_WINDOW) && x->window != c->window)
        return mt_error("%s has window %d, %s has %d", got_name, x->window, want_name, c->window);
    if ((layout & MT_LAYOUT_ROTARY) &&
        (x->rope_theta != c->rope_theta || x->rotary_pct != c->rotary_pct))
        return mt_error("%s rotates %g of each head at base %g, %s %g at base %g", got_name,
                        x->rotary_pct, x->rope_theta, want_name, c->rotary_pct, c->rope_theta);
    if ((layout & MT_LAYOUT_RESIDUAL) && x->parallel_residual != c->parallel_residual)
        return mt_error("%s has a %s residual, %s a %s one", got_name,
                        x->parallel_residual ? "parallel" : "sequential", want_name,
                        c->parallel_residual ? "parallel" : "sequential");
    int n = mt_model_tensor_count(want);
    for (int i = 0; i < n; i++) {
        mt_model_tensor_info t, u;
        mt_model_tensor(want, i, &t);
        int j = mt_model_find_tensor(got, t.name);
        if (j >= 0) mt_model_tensor(got, j, &u);
        if (j < 0 || u.ndim != t.ndim ||
            memcmp(u.shape, t.shape, (size_t)t.ndim * sizeof *t.shape) != 0)
            return mt_error(
                "%s: %s %s (the configs differ: d_model, layers, ffn_dim or vocabulary)", got_name,
                t.name, j < 0 ? "is missing" : "has another shape");
    }
    if (mt_model_tensor_count(got) != n ||
        mt_model_param_block_size(got) != mt_model_param_block_size(want))
        return mt_error("%s holds other tensors than %s", got_name, want_name);
    return 0;
}

/* 1 when the two files hold the same bytes, 0 when not, -1 (an error) when one is unreadable. */
static int same_bytes(const char *a, const char *b)
{
    FILE *fa = mt_file_fopen(a, MT_FILE_REGULAR),
         *fb = fa ? mt_file_fopen(b, MT_FILE_REGULAR) : NULL;
    if (!fa || !fb) {
        if (fa) fclose(fa);
        return -1;
    }
    int same = 1;
    char x[65536], y[65536];
    for (;;) {
        size_t nx = fread(x, 1, sizeof x, fa), ny = fread(y, 1, sizeof y, fb);
        if (nx != ny || memcmp(x, y, nx) != 0) {
            same = 0;
            break;
        }
        if (nx < sizeof x) break;
    }
    fclose(fa);
    fclose(fb);
    return same;
}

/* The dtype the weights of bundle dir are stored in (its first tensor's). */
static int stored_dtype(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    mt_safetensors *st = mt_st_open(path);
    if (!st) return -1;
    int dt = mt_st_count(st) > 0 ? (int)mt_st_tensor_at(st, 0)->dtype : (int)MT_DT_F32;
    mt_st_close(st);
    if (dt != MT_DT_F32 && dt != MT_DT_F16 && dt != MT_DT_BF16) dt = MT_DT_F32;
    return dt;
}

/* The first bundle's training statistics, when it has them, into out: the averaged bundles come
 * from one training corpus, so its statistics hold for the mean too. */
static int copy_stats(const char *from, const char *out)
{
    static const char *const files[] = {"corpus_stats.tsv", "entity_lexicon.tsv"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char src[PATH_MAX], dst[PATH_MAX];
        struct stat sb;
        snprintf(src, sizeof src, "%s/%s", from, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", out, files[i]);
        if (stat(src, &sb) == 0 && atomic_file_copy(dst, src) != 0) return -1;
    }
    return 0;
}

/* 1 when out names the same directory as dir (both existing), else 0. */
static int same_dir(const char *out, const char *dir)
{
    struct stat a, b;
    return stat(out, &a) == 0 && stat(dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int mt_model_average(const char *const *dirs, int n, const char *out, int dtype)
{
    if (n < 1) return mt_error("average: no bundles to average");
    for (int i = 0; i < n; i++)
        if (same_dir(out, dirs[i]))
            return mt_error(
                "average: the output %s is one of the bundles averaged; write it elsewhere", out);
    if (dtype < 0 && (dtype = stored_dtype(dirs[0])) < 0) return mt_error_context("average");
    const mt_backend *be = mt_backend_cpu();
    mt_model *first = mt_model_load(dirs[0], be, 0);
    if (!first) return mt_error_context("average: %s", dirs[0]);
    size_t nf = mt_model_param_block_size(first);
    double *sum = calloc(nf ? nf : 1, sizeof *sum);
    if (!sum) {
        mt_model_free(first);
        return mt_error("average: out of memory for %zu weights", nf);
    }
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        mt_model *m = k == 0 ? first : mt_model_load(dirs[k], be, 0);
        if (!m) {
            rc = mt_error_context("average: %s", dirs[k]);
            break;
        }
        int same_tok = 1;
        if (k > 0 && (rc = mt_model_check_same_layout(first, dirs[0], m, dirs[k])) == 0) {
            same_tok = same_bytes(mt_model_tokenizer_path(first), mt_model_tokenizer_path(m));
            if (same_tok < 0) rc = -1;
            else if (!same_tok)
                rc = mt_error("%s has another tokenizer.model than %s: its ids mean other pieces",
                              dirs[k], dirs[0]);
        }
        if (rc == 0) {
            /* tensor by tensor through the names, so only names and shapes need to agree */
            int nt = mt_model_tensor_count(first);
            const float *p = mt_model_params(m);
            for (int i = 0; i < nt; i++) {
                mt_model_tensor_info t, u;
                mt_model_tensor(first, i, &t);
                mt_model_tensor(m, mt_model_find_tensor(m, t.name), &u);
                for (size_t e = 0; e < t.numel; e++) sum[t.offset + e] += p[u.offset + e];
            }
        }
        if (m != first) mt_model_free(m);
    }
    if (rc == 0) {
        float *w = mt_model_params(first);
        for (size_t i = 0; i < nf; i++) w[i] = (float)(sum[i] / n);
        if (mt_model_save(first, out, mt_model_tokenizer_path(first), (mt_dtype)dtype) != 0 ||
            copy_stats(dirs[0], out) != 0)
            rc = mt_error_context("average: %s", out);
    }
    free(sum);
    mt_model_free(first);
    return rc;
}
