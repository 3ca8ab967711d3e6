/* Model bundle directories: open (check members, load config, map weights) and write (every
 * member sealed under a temporary name before any is renamed into place). */
#include "mtlab/bundle.h"

#include "io/atomic_file.h"
#include "io/safetensors_write.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/torch_checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char CONFIG_FILE[] = "config.json";
static const char WEIGHTS_FILE[] = "model.safetensors";
static const char TOKENIZER_FILE[] = "tokenizer.model";
/* A checkpoint from the Hugging Face hub may hold another file in place of a member: the
 * weights as torch.save wrote them, the tokenizer as a tokenizer.json or as an opus-mt
 * checkpoint's source.spm, target.spm and vocab.json (mt_tokenizer_load reads the directory). */
static const char *const WEIGHTS_FILES[] = {WEIGHTS_FILE, "pytorch_model.bin", NULL};
static const char *const TOKENIZER_FILES[] = {TOKENIZER_FILE, "tokenizer.json", "source.spm", NULL};
static const char WEIGHTS_ALTERNATIVES[] = "model.safetensors (or pytorch_model.bin)";
static const char TOKENIZER_ALTERNATIVES[] =
    "tokenizer.model (or tokenizer.json, or source.spm, target.spm and vocab.json)";
static const char CORPUS_STATS_FILE[] = "corpus_stats.tsv";

struct mt_bundle {
    char *dir;
    mt_config *config;
    mt_safetensors *weights;
    char *tokenizer_path; /* NULL when absent */
    char *corpus_stats_path; /* NULL when absent */
};

static int is_regular_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int check_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) return mt_error("%s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return mt_error("%s: not a directory (a model bundle is a directory holding %s, %s and %s)",
                        dir, CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE);
    return 0;
}

/* The first of files[] that dir holds: its name, or NULL when none is there (*bad: one is
 * there but is no regular file, with the error). */
static const char *present(const char *dir, const char *const *files, int *bad)
{
    *bad = 0;
    for (int i = 0; files[i]; i++) {
        char *path = mt_path_join(dir, files[i]);
        struct stat sb;
        int absent = lstat(path, &sb) != 0 && errno == ENOENT;
        *bad = !absent && mt_file_check(path, MT_FILE_REGULAR) != 0;
        free(path);
        if (!absent) return files[i];
    }
    return NULL;
}

/* Names every missing member at once, so one run tells the whole story; a member that is
 * there but no regular file (a directory, a FIFO, a link to /dev/zero, a symlink loop, one
 * that cannot be reached) is named with what it is instead. */
static int check_members(const char *dir, unsigned flags)
{
    const char *const config_files[] = {CONFIG_FILE, NULL};
    const char *const *required[] = {config_files, WEIGHTS_FILES, TOKENIZER_FILES};
    const char *names[] = {CONFIG_FILE, WEIGHTS_ALTERNATIVES, TOKENIZER_ALTERNATIVES};
    const int n_required = (flags & MT_BUNDLE_NO_TOKENIZER) ? 2 : 3;
    char missing[512] = "";
    int n_missing = 0;
    for (int i = 0; i < n_required; i++) {
        int bad;
        int absent = present(dir, required[i], &bad) == NULL;
        if (bad) return mt_error_context("%s: not a usable model bundle", dir);
        if (absent) {
            size_t used = strlen(missing);
            snprintf(missing + used, sizeof missing - used, "%s%s", n_missing ? ", " : "",
                     names[i]);
            n_missing++;
        }
    }
    if (n_missing) return mt_error("%s: not a model bundle: missing %s", dir, missing);
    return 0;
}

mt_bundle *mt_bundle_open(const char *dir, unsigned flags)
{
    if (check_dir(dir) || check_members(dir, flags)) return NULL;
    mt_bundle *b = mt_xcalloc(1, sizeof *b);
    b->dir = mt_xstrdup(dir);
    int bad;
    const char *weights_file = present(dir, WEIGHTS_FILES, &bad);
    char *config_path = mt_path_join(dir, CONFIG_FILE),
         *weights_path = mt_path_join(dir, weights_file);
    b->config = mt_config_load(config_path);
    if (b->config)
        b->weights =
            weights_file == WEIGHTS_FILE ? mt_st_open(weights_path) : mt_torch_open(weights_path);
    free(config_path);
    free(weights_path);
    if (!b->weights) {
        mt_bundle_close(b);
        return NULL;
    }
    const char *tokenizer_file = present(dir, TOKENIZER_FILES, &bad);
    if (tokenizer_file && !bad)
        b->tokenizer_path = tokenizer_file == TOKENIZER_FILES[2]
                                ? mt_xstrdup(dir)
                                : mt_path_join(dir, tokenizer_file);
    b->corpus_stats_path = mt_path_join(dir, CORPUS_STATS_FILE);
    if (!is_regular_file(b->corpus_stats_path)) {
        free(b->corpus_stats_path);
        b->corpus_stats_path = NULL;
    }
    return b;
}

void mt_bundle_close(mt_bundle *b)
{
    if (!b) return;
    mt_config_free(b->config);
    mt_st_close(b->weights);
    free(b->tokenizer_path);
    free(b->corpus_stats_path);
    free(b->dir);
    free(b);
}

const char *mt_bundle_dir(const mt_bundle *b) { return b->dir; }
const mt_config *mt_bundle_config(const mt_bundle *b) { return b->config; }
const mt_safetensors *mt_bundle_weights(const mt_bundle *b) { return b->weights; }
const char *mt_bundle_tokenizer_path(const mt_bundle *b) { return b->tokenizer_path; }
const char *mt_bundle_corpus_stats_path(const mt_bundle *b) { return b->corpus_stats_path; }

int mt_bundle_read_f32(const mt_bundle *b, const char *name, int ndim, const int64_t *shape,
                       float *out)
{
    return mt_st_read_f32(b->weights, name, ndim, shape, out);
}

/* ---------------------------------------------------------------- writing */

/* mkdir -p */
static int make_dirs(const char *dir)
{
    if (!*dir) return mt_error("empty bundle directory name");
    char *path = mt_xstrdup(dir);
    int rc = 0;
    for (char *p = path + 1; !rc; p++) {
        const int end = *p == '\0';
        if (*p != '/' && !end) continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            rc = mt_error("%s: cannot create: %s", path, strerror(errno));
        if (end) break;
        *p = '/';
    }
    free(path);
    return rc ? rc : check_dir(dir);
}

/* An opus-mt tokenizer (a directory, mt_bundle_tokenizer_path) is copied as its three files,
 * and its target_vocab.json and tokenizer_config.json where it has them (separate
 * vocabularies); a Hugging Face tokenizer.json as tokenizer.json (where transformers looks for
 * it). */
enum {
    MEMBER_CONFIG,
    MEMBER_WEIGHTS,
    MEMBER_TOKENIZER,
    MEMBER_CORPUS_STATS,
    MEMBER_SOURCE_SPM,
    MEMBER_TARGET_SPM,
    MEMBER_VOCAB,
    MEMBER_TARGET_VOCAB,
    MEMBER_TOKENIZER_CONFIG,
    MEMBER_TOKENIZER_JSON,
    N_MEMBERS
};
static const char *const MEMBER_FILES[N_MEMBERS] = {
    CONFIG_FILE,  WEIGHTS_FILE, TOKENIZER_FILE,      CORPUS_STATS_FILE,       "source.spm",
    "target.spm", "vocab.json", "target_vocab.json", "tokenizer_config.json", "tokenizer.json"};

/* 1 when the opus-mt tokenizer directory tok holds member's file. */
static int tokenizer_has(const char *tok, int member)
{
    char *path = mt_path_join(tok, MEMBER_FILES[member]);
    const int has = mt_file_check(path, MT_FILE_REGULAR) == 0;
    free(path);
    return has;
}

static int write_member(atomic_file *af, int member, const mt_bundle_contents *c)
{
    switch (member) {
    case MEMBER_CONFIG: {
        char *text = mt_config_to_text(c->config);
        int rc = text ? atomic_file_write(af, text, strlen(text))
                      : mt_error("%s: cannot encode", af->path);
        free(text);
        return rc;
    }
    case MEMBER_WEIGHTS:
        return st_write_contents(af, c->tensors, c->n_tensors, c->metadata, c->n_metadata);
    case MEMBER_TOKENIZER:
    case MEMBER_TOKENIZER_JSON: return atomic_file_write_file(af, c->tokenizer_path);
    case MEMBER_CORPUS_STATS: return atomic_file_write_file(af, c->corpus_stats_path);
    case MEMBER_SOURCE_SPM:
    case MEMBER_TARGET_SPM:
    case MEMBER_VOCAB:
    case MEMBER_TARGET_VOCAB:
    case MEMBER_TOKENIZER_CONFIG: {
        char *from = mt_path_join(c->tokenizer_path, MEMBER_FILES[member]);
        int rc = atomic_file_write_file(af, from);
        free(from);
        return rc;
    }
    }
    return mt_error("%s: unknown bundle member", af->path);
}

int mt_bundle_write(const char *dir, const mt_bundle_contents *contents)
{
    if (!contents->config) return mt_error("%s: a bundle needs a config", dir);
    if (make_dirs(dir)) return -1;
    const char *const *files = MEMBER_FILES;
    struct stat sb;
    const int tok_dir =
        contents->tokenizer_path && stat(contents->tokenizer_path, &sb) == 0 && S_ISDIR(sb.st_mode);
    size_t tok_len = contents->tokenizer_path ? strlen(contents->tokenizer_path) : 0;
    const int tok_json =
        !tok_dir && tok_len >= 5 && !strcmp(contents->tokenizer_path + tok_len - 5, ".json");
    const int wanted[N_MEMBERS] = {
        1,
        1,
        contents->tokenizer_path != NULL && !tok_dir && !tok_json,
        contents->corpus_stats_path != NULL,
        tok_dir,
        tok_dir,
        tok_dir,
        tok_dir && tokenizer_has(contents->tokenizer_path, MEMBER_TARGET_VOCAB),
        tok_dir && tokenizer_has(contents->tokenizer_path, MEMBER_TOKENIZER_CONFIG),
        tok_json};
    atomic_file afs[N_MEMBERS] = {{0}};
    int rc = 0;
    for (int m = 0; m < N_MEMBERS && !rc; m++) {
        if (!wanted[m]) continue;
        char *path = mt_path_join(dir, files[m]);
        rc = atomic_file_begin(&afs[m], path);
        free(path);
        if (!rc) rc = write_member(&afs[m], m, contents);
        if (!rc) rc = atomic_file_seal(&afs[m]);
    }
    /* Only renames are left, and they rarely fail. Each is atomic but the set is not: a crash
     * between two renames leaves old and new members side by side, which the loader's shape
     * checks report rather than run. */
    for (int m = 0; m < N_MEMBERS && !rc; m++)
        if (wanted[m]) rc = atomic_file_commit(&afs[m]);
    for (int m = 0; m < N_MEMBERS; m++) atomic_file_discard(&afs[m]);
    return rc;
}

/* The last path component of dir[0..*len) without trailing slashes: its start, *len its end. */
static const char *last_component(const char *dir, size_t *len)
{
    while (*len > 1 && dir[*len - 1] == '/') (*len)--;
    const char *base = dir + *len;
    while (base > dir && base[-1] != '/') base--;
    return base;
}

void mt_bundle_name(char *out, size_t len, const char *dir)
{
    size_t end = strlen(dir);
    const char *base = last_component(dir, &end);
    size_t n = (size_t)(dir + end - base);
    int run_part =
        (n == 4 && !strncmp(base, "best", 4)) || (n == 10 && !strncmp(base, "checkpoint", 10));
    if (run_part && base > dir) {
        size_t parent_end = (size_t)(base - dir);
        const char *parent = last_component(dir, &parent_end);
        size_t pn = (size_t)(dir + parent_end - parent);
        if (pn > 0 && !(pn == 1 && parent[0] == '/') && !(pn == 1 && parent[0] == '.')) {
            base = parent;
            n = pn;
        }
    }
    snprintf(out, len, "%.*s", (int)n, base);
}
