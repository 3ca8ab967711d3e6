/* `mtlab inspect BUNDLE_OR_SAFETENSORS`: what a model bundle or a weights file holds: the
 * config, every tensor (name, dtype, shape, bytes; in natural order, layer 2 before 10), the
 * totals, and whether the config's dtype is the one the weights are stored in. */
#include "cli/commands.h"
#include "mtlab/bundle.h"
#include "mtlab/error.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Config values longer than this are cut: the summary is for reading, not for copying. */
enum { MAX_VALUE_COLUMNS = 72, MAX_NAME_COLUMNS = 64 };

/* 1234567 -> "1,234,567" */
static const char *grouped(char *buf, size_t len, unsigned long long v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", v);
    size_t out = 0;
    for (int i = 0; i < n && out + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0) buf[out++] = ',';
        buf[out++] = digits[i];
    }
    buf[out] = '\0';
    return buf;
}

static long long file_bytes(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* The tokenizer line: a file with its size, or an opus-mt checkpoint's three files (the
 * bundle's tokenizer is then its directory) with theirs. */
static void print_tokenizer(const char *tok)
{
    char a[32];
    struct stat sb;
    if (stat(tok, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        printf("tokenizer  %s (%s bytes)\n", tok,
               grouped(a, sizeof a, (unsigned long long)file_bytes(tok)));
        return;
    }
    printf("tokenizer  %s: opus-mt", tok);
    const char *files[] = {"source.spm", "target.spm", "vocab.json"};
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", tok, files[i]);
        printf("%s %s (%s bytes)", i ? "," : "", files[i],
               grouped(a, sizeof a, (unsigned long long)file_bytes(path)));
    }
    printf("\n");
}

static void print_config(const mt_config *c)
{
    int n;
    const char **keys = mt_config_keys(c, &n);
    int width = 0;
    for (int i = 0; i < n; i++) width = (int)strlen(keys[i]) > width ? (int)strlen(keys[i]) : width;
    printf("config     %s (%d keys)\n", mt_config_name(c), n);
    for (int i = 0; i < n; i++) {
        char *value = mt_config_value_json(c, keys[i]);
        if (value && strlen(value) > MAX_VALUE_COLUMNS)
            strcpy(value + MAX_VALUE_COLUMNS - 3, "...");
        printf("  %-*s  %s\n", width, keys[i], value ? value : "?");
        free(value);
    }
    free(keys);
}

/* Natural order: digit runs compare as numbers, so layers.2 comes before layers.10. */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0') a++;
            while (*b == '0') b++;
            size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
            if (la != lb) return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c) return c;
            a += la;
            b += lb;
        } else {
            if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return *a ? 1 : *b ? -1 : 0;
}

static const mt_safetensors *sort_st;
static int by_name(const void *x, const void *y)
{
    return natural_cmp(mt_st_tensor_at(sort_st, *(const int *)x)->name,
                       mt_st_tensor_at(sort_st, *(const int *)y)->name);
}

/* per_dtype (when not NULL) receives the parameters of each dtype. */
static void print_tensors(const mt_safetensors *st, unsigned long long *per_dtype_out)
{
    char a[32], b[32];
    printf("weights    %s (%s bytes, %d tensors)\n", mt_st_name(st),
           grouped(a, sizeof a, mt_st_file_size(st)), mt_st_count(st));
    for (int i = 0; i < mt_st_metadata_count(st); i++)
        printf("  metadata %s = %s\n", mt_st_metadata_key(st, i), mt_st_metadata_value(st, i));
    int width = 4;
    for (int i = 0; i < mt_st_count(st); i++) {
        int len = (int)strlen(mt_st_tensor_at(st, i)->name);
        if (len > width) width = len < MAX_NAME_COLUMNS ? len : MAX_NAME_COLUMNS;
    }
    printf("\n%-*s  %-5s %-20s %15s\n", width, "name", "dtype", "shape", "bytes");
    unsigned long long params = 0, bytes = 0, per_dtype[MT_DT_COUNT] = {0};
    int n = mt_st_count(st);
    int *order = mt_xmalloc(((size_t)n + 1) * sizeof *order);
    for (int i = 0; i < n; i++) order[i] = i;
    sort_st = st;
    qsort(order, (size_t)n, sizeof *order, by_name);
    for (int k = 0; k < n; k++) {
        const mt_st_tensor *t = mt_st_tensor_at(st, order[k]);
        char shape[160];
        printf("%-*s  %-5s %-20s %15s\n", width, t->name, mt_dtype_name(t->dtype),
               mt_st_shape_text(shape, sizeof shape, t->ndim, t->shape),
               grouped(a, sizeof a, t->nbytes));
        params += t->numel;
        bytes += t->nbytes;
        per_dtype[t->dtype] += t->numel;
    }
    free(order);
    printf("\ntotal      %s parameters, %s bytes", grouped(a, sizeof a, params),
           grouped(b, sizeof b, bytes));
    const char *sep = " (";
    for (int d = 0; d < MT_DT_COUNT; d++) {
        if (!per_dtype[d]) continue;
        printf("%s%s %s", sep, mt_dtype_name((mt_dtype)d), grouped(a, sizeof a, per_dtype[d]));
        sep = ", ";
    }
    printf("%s\n", params ? ")" : "");
    if (per_dtype_out) memcpy(per_dtype_out, per_dtype, sizeof per_dtype);
}

/* The config's "dtype" (or older "torch_dtype") against the floating-point tensors' dtypes:
 * transformers loads the weights as the config's dtype, so a mismatch is worth a word. */
static void print_dtype_check(const mt_config *c, const unsigned long long *per_dtype)
{
    const char *key = mt_config_has(c, "dtype") ? "dtype" : "torch_dtype";
    const char *named = mt_config_has(c, key) ? mt_config_string(c, key) : NULL;
    char stored[64] = "";
    int n_float = 0;
    mt_dtype only = MT_DT_F32;
    for (int d = 0; d < MT_DT_COUNT; d++) {
        if (!per_dtype[d] || !mt_dtype_is_float((mt_dtype)d)) continue;
        snprintf(stored + strlen(stored), sizeof stored - strlen(stored), "%s%s",
                 n_float ? ", " : "", mt_dtype_torch_name((mt_dtype)d));
        only = (mt_dtype)d;
        n_float++;
    }
    mt_dtype want;
    if (!named) {
        printf("dtype      the config names none; the weights are stored as %s\n",
               n_float ? stored : "no floating-point type");
    } else if (mt_dtype_from_torch_name(named, &want) != 0) {
        printf("dtype      the config's %s \"%s\" is no dtype mtlab knows; the weights are "
               "stored as %s\n",
               key, named, n_float ? stored : "no floating-point type");
    } else if (n_float == 1 && want == only) {
        printf("dtype      %s, as the config says\n", stored);
    } else {
        printf("dtype      the config says %s but the weights are stored as %s: they disagree "
               "(transformers would load them as %s)\n",
               named, n_float ? stored : "nothing", named);
    }
}

static int inspect_bundle(const char *dir)
{
    mt_bundle *b = mt_bundle_open(dir, MT_BUNDLE_NO_TOKENIZER);
    if (!b) return cli_fail("%s", mt_last_error());
    printf("bundle     %s\n", dir);
    print_config(mt_bundle_config(b));
    const char *tok = mt_bundle_tokenizer_path(b), *stats = mt_bundle_corpus_stats_path(b);
    char a[32];
    if (tok) print_tokenizer(tok);
    else printf("tokenizer  none (the bundle has no tokenizer.model)\n");
    if (stats)
        printf("stats      %s (%s bytes)\n", stats,
               grouped(a, sizeof a, (unsigned long long)file_bytes(stats)));
    unsigned long long per_dtype[MT_DT_COUNT];
    print_tensors(mt_bundle_weights(b), per_dtype);
    print_dtype_check(mt_bundle_config(b), per_dtype);
    mt_bundle_close(b);
    return 0;
}

static int inspect_file(const char *path)
{
    mt_safetensors *st = mt_st_open(path);
    if (!st) return cli_fail("%s", mt_last_error());
    print_tensors(st, NULL);
    mt_st_close(st);
    return 0;
}

static int run_inspect(int argc, char **argv)
{
    if (argc != 2) return cli_usage(&cmd_inspect);
    struct stat sb;
    if (stat(argv[1], &sb) != 0) return cli_fail("%s: %s", argv[1], strerror(errno));
    return S_ISDIR(sb.st_mode) ? inspect_bundle(argv[1]) : inspect_file(argv[1]);
}

const struct mt_command cmd_inspect = {
    "inspect",
    "BUNDLE_DIR | FILE.safetensors",
    "show a model bundle or weights file: config, tensors, parameter counts",
    run_inspect,
    .parallel = 0,
};
