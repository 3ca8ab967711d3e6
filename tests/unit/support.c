/* Helpers shared by the unit tests (declared in test_util.h). */
#include "test_util.h"

#include "cli/commands.h"
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"
#include "mtlab/train.h"

#include <ftw.h>
#include <unistd.h>

void test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot create %s", path);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void test_write_text(const char *path, const char *text)
{
    test_write_file(path, text, strlen(text));
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    buf[got] = '\0';
    fclose(f);
    if (len) *len = got;
    return buf;
}

int test_make_tmpdir(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "/tmp/mtlab-%s-XXXXXX", tag);
    return mkdtemp(buf) ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int test_remove_tree(const char *dir) { return nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

float max_abs_diff(const float *a, const float *b, size_t n)
{
    float d = 0.0f;
    for (size_t i = 0; i < n; i++) d = fmaxf(d, fabsf(a[i] - b[i]));
    return d;
}

float *test_copy_floats(const float *x, size_t n)
{
    float *y = malloc(n * sizeof *y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

double max_rel(const float *a, const float *b, size_t n)
{
    double diff = 0.0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return diff / scale;
}

int test_train_fixture_tokenizer(const char *dir, int vocab_size, unsigned seed)
{
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%s/spm", dir);
    const char *inputs[] = {"tests/fixtures/tokenizer/corpus.es",
                            "tests/fixtures/tokenizer/corpus.en"};
    mt_tokenizer_train_opts o = {.inputs = inputs,
                                 .n_inputs = 2,
                                 .model_prefix = prefix,
                                 .vocab_size = vocab_size,
                                 .character_coverage = 1.0,
                                 .num_threads = 1,
                                 .seed = seed};
    return mt_tokenizer_train(&o);
}

int test_tokenizer_tmpdir(char *buf, size_t len, const char *tag)
{
    if (test_make_tmpdir(buf, len, tag) != 0) return -1;
    if (test_train_fixture_tokenizer(buf, 256, 1) != 0) {
        fprintf(stderr, "tokenizer: %s\n", mt_last_error());
        return -1;
    }
    return 0;
}

static char *slurp_captured(FILE *f)
{
    fflush(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

test_captured test_run_command(const struct mt_command *cmd, const char *const *args)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)cmd->name;
    for (; *args && argc < 62; args++) argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    FILE *out = tmpfile(), *err = tmpfile();
    assert_true(out && err);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    test_captured c;
    c.rc = cmd->run(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    c.out = slurp_captured(out);
    c.err = slurp_captured(err);
    return c;
}

void test_captured_free(test_captured *c)
{
    free(c->out);
    free(c->err);
    c->out = c->err = NULL;
}

void test_tiny_train_config(mt_train_config *cfg, const char *preset, const char *dir,
                            const char *run, long max_steps)
{
    mt_train_config_defaults(cfg);
    assert_int_equal(mt_model_preset(&cfg->model, preset), 0);
    cfg->model.vocab_size = 256;
    cfg->model.d_model = 16;
    cfg->model.n_layers = 2;
    cfg->model.dt_rank = 1;
    snprintf(cfg->name, sizeof cfg->name, "%s", run);
    snprintf(cfg->run_dir, sizeof cfg->run_dir, "%s/%s", dir, run);
    snprintf(cfg->train_src, sizeof cfg->train_src, "tests/fixtures/tokenizer/corpus.es");
    snprintf(cfg->train_tgt, sizeof cfg->train_tgt, "tests/fixtures/tokenizer/corpus.en");
    snprintf(cfg->tokenizer, sizeof cfg->tokenizer, "%s/spm.model", dir);
    cfg->max_len = 48;
    cfg->max_tokens = 600;
    cfg->lr = 3e-3;
    cfg->warmup = 2;
    cfg->max_steps = max_steps;
    cfg->log_every = 1;
    cfg->valid_every = 0;
    cfg->valid_bleu_lines = 0;
    cfg->save_every = 0;
}
