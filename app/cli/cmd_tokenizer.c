/* `mtlab tokenizer`: train a sentencepiece model on a dataset's training split (joint over both
 * languages, or one per language), and encode/decode text through a model, stdin to stdout,
 * one line at a time. */
#include "cli/commands.h"
#include "mtlab/clock.h"
#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/tokenizer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The trained model depends on the thread count (see tokenizer.h); a fixed default makes
 * `mtlab tokenizer train` give the same model on every machine. */
enum { DEFAULT_TRAIN_THREADS = 8, DEFAULT_VOCAB = 8000 };

/* Strips a final "\r" (of "\r\n") in place. */
static void chomp_cr(char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r') line[len - 1] = '\0';
}

/* Average pieces per line of a file (a verse per line in the Bible corpus); -1 on error. */
static double pieces_per_line(const mt_tokenizer *tok, const char *path, size_t *n_lines)
{
    FILE *f = mt_file_fopen(path, MT_FILE_STREAM);
    if (!f) {
        cli_fail("%s", mt_last_error());
        return -1;
    }
    mt_line_reader lr;
    mt_line_reader_init(&lr, f, path, 0);
    char *line;
    size_t len, lines = 0, pieces = 0;
    int got, failed = 0;
    while (!failed && (got = mt_line_next(&lr, &line, &len)) != 0) {
        if (got < 0) {
            failed = cli_fail("%s", mt_last_error());
            break;
        }
        chomp_cr(line, len);
        int *ids;
        size_t n;
        lines++;
        if (mt_tokenizer_encode(tok, line, &ids, &n)) {
            failed = cli_fail("%s:%zu: %s", path, lines, mt_last_error());
            break;
        }
        pieces += n;
        free(ids);
    }
    mt_line_reader_free(&lr);
    fclose(f);
    if (failed) return -1;
    *n_lines = lines;
    return lines ? (double)pieces / (double)lines : 0.0;
}

/* A model file already at prefix.model is replaced only when asked (force); anything but a
 * regular file there (a directory, a FIFO) never is. 0, or the exit status. */
static int check_model_target(const char *prefix, int force)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s.model", prefix) >= sizeof path)
        return cli_fail("--out: path too long");
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : cli_fail("%s: %s", path, strerror(errno));
    if (mt_file_check(path, MT_FILE_REGULAR) != 0) return cli_fail("%s", mt_last_error());
    if (!force) return cli_fail("%s: already exists; not overwritten (--force replaces it)", path);
    return 0;
}

/* Train one model on inputs[0..n) into prefix.model and print its pieces per line of each. */
static int train_one(const char *const *inputs, size_t n, const char *prefix, const char *what,
                     const mt_tokenizer_train_opts *base)
{
    char model_path[PATH_MAX];
    if ((size_t)snprintf(model_path, sizeof model_path, "%s.model", prefix) >= sizeof model_path)
        return cli_fail("--out: path too long");
    mt_tokenizer_train_opts opts = *base;
    opts.inputs = inputs;
    opts.n_inputs = n;
    opts.model_prefix = prefix;
    double t0 = mt_now_s();
    if (mt_tokenizer_train(&opts)) return cli_fail("%s", mt_last_error());
    double train_s = mt_now_s() - t0;
    mt_tokenizer *tok = mt_tokenizer_load(model_path);
    if (!tok) return cli_fail("%s", mt_last_error());
    printf("%s: %d pieces (unigram, %s, coverage %g, seed %u, threads %d), trained in %.1f s\n",
           model_path, mt_tokenizer_vocab_size(tok), what, opts.character_coverage, opts.seed,
           opts.num_threads, train_s);
    int rc = 0;
    for (size_t s = 0; s < n && rc == 0; s++) {
        size_t lines;
        double avg = pieces_per_line(tok, inputs[s], &lines);
        if (avg < 0) rc = 1;
        else printf("  %s: %.2f pieces per line (%zu lines)\n", inputs[s], avg, lines);
    }
    mt_tokenizer_free(tok);
    return rc;
}

static int run_train(int argc, char **argv)
{
    const char *dir = "data/bible", *out = NULL, *user_symbols = NULL;
    long vocab = DEFAULT_VOCAB, seed = 0, threads = DEFAULT_TRAIN_THREADS;
    double coverage = 1.0;
    int verbose = 0, separate = 0, force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--verbose") || !strcmp(a, "--separate") || !strcmp(a, "--joint") ||
            !strcmp(a, "--force")) {
            if (a[2] == 'v') verbose = 1;
            else if (a[2] == 'f') force = 1;
            else separate = a[2] == 's';
            continue;
        }
        if (!v) return cli_usage(&cmd_tokenizer);
        i++;
        int rc = 0;
        if (!strcmp(a, "--data")) dir = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--user-symbols")) user_symbols = v;
        else if (!strcmp(a, "--vocab"))
            rc = cli_option_long("tokenizer", a, v, MT_UNK_ID + 2, 1000000, &vocab);
        else if (!strcmp(a, "--seed")) rc = cli_option_long("tokenizer", a, v, 0, UINT_MAX, &seed);
        else if (!strcmp(a, "--threads")) rc = cli_option_long("tokenizer", a, v, 1, 128, &threads);
        else if (!strcmp(a, "--character-coverage")) {
            char *end;
            coverage = strtod(v, &end);
            if (*end || !(coverage >= 0.9 && coverage <= 1.0))
                return cli_fail(
                    "tokenizer: --character-coverage takes a number from 0.9 to 1 (0.9995 for "
                    "languages with many characters, such as Chinese or Japanese), not '%s'",
                    v);
        } else return cli_usage(&cmd_tokenizer);
        if (rc) return rc;
    }
    mt_dataset ds;
    if (mt_dataset_open(&ds, dir) < 0) return cli_fail("--data: %s", mt_last_error());
    char inputs[2][PATH_MAX];
    for (int s = 0; s < 2; s++) {
        if (mt_dataset_path(&ds, "train", s, inputs[s], sizeof inputs[s]) < 0)
            return cli_fail("%s", mt_last_error());
        if (access(inputs[s], R_OK) != 0)
            return cli_fail("%s: %s (the %s training side of the dataset %s)", inputs[s],
                            strerror(errno), s ? ds.tgt_lang : ds.src_lang, dir);
    }
    mt_tokenizer_train_opts base = {
        .vocab_size = (int)vocab,
        .character_coverage = coverage,
        .num_threads = (int)threads,
        .seed = (unsigned)seed,
        .verbose = verbose,
        .user_symbols = user_symbols,
    };
    char prefix[PATH_MAX], what[2 * MT_LANG_MAX + 16];
    if (!separate) {
        if ((size_t)snprintf(prefix, sizeof prefix, "%s%s", out ? out : dir, out ? "" : "/spm") >=
            sizeof prefix)
            return cli_fail("--out: path too long");
        int rc = check_model_target(prefix, force);
        if (rc) return rc;
        snprintf(what, sizeof what, "joint %s+%s", ds.src_lang, ds.tgt_lang);
        const char *const input_list[] = {inputs[0], inputs[1]};
        return train_one(input_list, 2, prefix, what, &base);
    }
    /* one model per language: PREFIX.L.model, both targets checked before either is trained */
    char prefixes[2][PATH_MAX];
    for (int s = 0; s < 2; s++) {
        const char *lang = s ? ds.tgt_lang : ds.src_lang;
        if ((size_t)snprintf(prefixes[s], sizeof prefixes[s], "%s%s.%s", out ? out : dir,
                             out ? "" : "/spm", lang) >= sizeof prefixes[s])
            return cli_fail("--out: path too long");
        int rc = check_model_target(prefixes[s], force);
        if (rc) return rc;
    }
    for (int s = 0; s < 2; s++) {
        snprintf(what, sizeof what, "%s only", s ? ds.tgt_lang : ds.src_lang);
        const char *const input_list[] = {inputs[s]};
        int rc = train_one(input_list, 1, prefixes[s], what, &base);
        if (rc) return rc;
    }
    return 0;
}

/* Parses "-m MODEL [--ids]" and loads the model: 0 ok, else the exit status (1 or 2). MODEL
 * is a sentencepiece model, a tokenizer.json, or a model directory (mt_tokenizer_load: its
 * tokenizer.model or tokenizer.json, or an opus-mt checkpoint's source.spm and vocab.json). */
static int open_model(int argc, char **argv, int *ids_flag, mt_tokenizer **tok)
{
    const char *model = NULL;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc)
            model = argv[++i];
        else if (ids_flag && !strcmp(argv[i], "--ids")) *ids_flag = 1;
        else return cli_usage(&cmd_tokenizer);
    }
    if (!model) return cli_usage(&cmd_tokenizer);
    *tok = mt_tokenizer_load(model);
    return *tok ? 0 : cli_fail("%s", mt_last_error());
}

static int run_encode(int argc, char **argv)
{
    int as_ids = 0;
    mt_tokenizer *tok;
    int status = open_model(argc, argv, &as_ids, &tok);
    if (status) return status;
    mt_line_reader lr;
    mt_line_reader_init(&lr, stdin, "stdin", 0);
    char *line;
    size_t len;
    int got, rc = 0;
    while (rc == 0 && (got = mt_line_next(&lr, &line, &len)) != 0) {
        if (got < 0) {
            rc = cli_fail("%s", mt_last_error());
            break;
        }
        chomp_cr(line, len);
        int *ids;
        size_t n;
        if (mt_tokenizer_encode(tok, line, &ids, &n)) {
            rc = cli_fail("stdin:%zu: %s", lr.line_no, mt_last_error());
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (i) putchar(' ');
            if (as_ids) printf("%d", ids[i]);
            else fputs(mt_tokenizer_id_to_piece(tok, ids[i]), stdout);
        }
        putchar('\n');
        free(ids);
        if (ferror(stdout))
            rc = cli_stdout_check(); /* stop at a full disk, not at the input's end */
    }
    mt_line_reader_free(&lr);
    mt_tokenizer_free(tok);
    return rc;
}

/* Parses one line of whitespace-separated ids into *ids (grown as needed); -1 on a bad token. */
static int parse_ids(char *line, size_t line_no, int **ids, size_t *cap, size_t *n)
{
    *n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
        char *end;
        errno = 0;
        long v = strtol(t, &end, 10);
        if (errno || end == t || *end || v < INT_MIN || v > INT_MAX) {
            cli_fail("stdin:%zu: '%s' is not a token id", line_no, t);
            return -1;
        }
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *ids = mt_xrealloc(*ids, *cap * sizeof **ids);
        }
        (*ids)[(*n)++] = (int)v;
    }
    return 0;
}

static int run_decode(int argc, char **argv)
{
    mt_tokenizer *tok;
    int status = open_model(argc, argv, NULL, &tok);
    if (status) return status;
    mt_line_reader lr;
    mt_line_reader_init(&lr, stdin, "stdin", 0);
    char *line;
    int *ids = NULL;
    size_t len, ids_cap = 0, n;
    int got, rc = 0;
    while (rc == 0 && (got = mt_line_next(&lr, &line, &len)) != 0) {
        if (got < 0) {
            rc = cli_fail("%s", mt_last_error());
            break;
        }
        chomp_cr(line, len);
        if (parse_ids(line, lr.line_no, &ids, &ids_cap, &n)) {
            rc = 1;
            break;
        }
        char *text = mt_tokenizer_decode(tok, ids, n);
        if (!text) {
            rc = cli_fail("stdin:%zu: %s", lr.line_no, mt_last_error());
            break;
        }
        puts(text);
        free(text);
        if (ferror(stdout)) rc = cli_stdout_check();
    }
    mt_line_reader_free(&lr);
    free(ids);
    mt_tokenizer_free(tok);
    return rc;
}

static int run_tokenizer(int argc, char **argv)
{
    if (argc < 2) return cli_usage(&cmd_tokenizer);
    if (!strcmp(argv[1], "train")) return run_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "encode")) return run_encode(argc - 1, argv + 1);
    if (!strcmp(argv[1], "decode")) return run_decode(argc - 1, argv + 1);
    return cli_usage(&cmd_tokenizer);
}

const struct mt_command cmd_tokenizer = {
    "tokenizer",
    "train [--data DIR] [--vocab N] [--joint | --separate] [--character-coverage C]\n"
    "             [--user-symbols A,B] [--out PREFIX] [--force] [--seed S] [--threads N] "
    "[--verbose]\n"
    "       mtlab tokenizer encode -m MODEL [--ids]   (stdin -> stdout, a line at a time)\n"
    "       mtlab tokenizer decode -m MODEL           (lines of space-separated ids)",
    "train a sentencepiece model on a dataset's train split (default data/bible; its languages "
    "from\n"
    "DIR/manifest.json): joint over both languages into DIR/spm.model, or --separate into\n"
    "DIR/spm.SRC.model and DIR/spm.TGT.model (the trainer takes a joint one); a model file "
    "already\n"
    "there is replaced only with --force (whole, in one rename); encode or decode text",
    run_tokenizer,
    .parallel = 0,
};
