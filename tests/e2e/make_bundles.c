/* Test setup for the workbench's end-to-end tests: two tiny random-weight bundles sharing a
 * tokenizer trained on tests/fixtures/tokenizer/corpus.{es,en}, and one broken bundle.
 *
 *   make_bundles OUTDIR   ->  OUTDIR/transformer, OUTDIR/mamba, OUTDIR/broken
 *                             (broken: the mamba bundle with a truncated config.json)
 *
 * The models emit gibberish, deterministically (fixed seeds), but exercise everything the
 * workbench does: loading, streaming, both searches, probes, entity marks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/tokenizer.h"

#define CORPUS "tests/fixtures/tokenizer/corpus."
enum { VOCAB = 304 }; /* the 300 pieces, padded to a multiple of 8 */

static int fail(const char *what)
{
    fprintf(stderr, "make_bundles: %s: %s\n", what, mt_last_error());
    return 1;
}

static int make_model(const char *arch, const char *dir, const char *tokenizer, uint64_t seed)
{
    mt_model_config cfg;
    if (mt_model_preset(&cfg, !strcmp(arch, "mamba") ? "mamba-small" : "transformer-small"))
        return fail(arch);
    cfg.vocab_size = VOCAB;
    cfg.d_model = 32;
    cfg.n_layers = 2;
    cfg.n_encoder_layers = 2;
    cfg.n_heads = 4;
    cfg.ffn_dim = 64;
    cfg.max_positions = 256;
    cfg.d_state = 8;
    cfg.dt_rank = 2;
    cfg.dropout = 0.0f;
    /* an untied output projection: a tied random model only echoes its last input token */
    cfg.tie_embeddings = 0;
    cfg.init_std = 0.1f;
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), seed);
    if (!m) return fail(arch);
    int rc = mt_model_save(m, dir, tokenizer, MT_DT_F32) ? fail(dir) : 0;
    mt_model_free(m);
    return rc;
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *o = fopen(to, "wb");
    char buf[1 << 16];
    size_t n;
    int rc = in && o ? 0 : -1;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, o) != n) rc = -1;
    if (in) fclose(in);
    if (o && fclose(o) != 0) rc = -1;
    if (rc) fprintf(stderr, "make_bundles: cannot copy %s to %s\n", from, to);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_bundles OUTDIR\n");
        return 2;
    }
    const char *out = argv[1];
    char prefix[1024], model[1100], dir[1100];
    mkdir(out, 0755);
    snprintf(prefix, sizeof prefix, "%s/spm", out);
    const char *inputs[] = {CORPUS "es", CORPUS "en"};
    mt_tokenizer_train_opts o = {.inputs = inputs,
                                 .n_inputs = 2,
                                 .model_prefix = prefix,
                                 .vocab_size = 300,
                                 .character_coverage = 1.0,
                                 .num_threads = 1,
                                 .seed = 7};
    if (mt_tokenizer_train(&o)) return fail("tokenizer");
    snprintf(model, sizeof model, "%s.model", prefix);
    snprintf(dir, sizeof dir, "%s/transformer", out);
    if (make_model("transformer", dir, model, 4)) return 1;
    snprintf(dir, sizeof dir, "%s/mamba", out);
    if (make_model("mamba", dir, model, 2)) return 1;
    /* the mamba bundle with its config.json cut short: its pane must show the error */
    char from[1200], to[1200];
    snprintf(dir, sizeof dir, "%s/broken", out);
    mkdir(dir, 0755);
    const char *files[] = {"model.safetensors", "tokenizer.model"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s/mamba/%s", out, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        if (copy_file(from, to)) return 1;
    }
    snprintf(to, sizeof to, "%s/config.json", dir);
    FILE *f = fopen(to, "w");
    if (!f || fputs("{ \"model_type\": \"mamba\", \"hidden_size\": ", f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "make_bundles: cannot write %s\n", to);
        return 1;
    }
    return 0;
}
