/* `mtlab tokenizer`: train the joint Spanish+English sentencepiece model on a parallel corpus,
 * and encode/decode text through a model, stdin to stdout, one line at a time. */
#include "cli/commands.h"
#include "mtlab/clock.h"
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

static const char *const SIDES[] = {"es", "en"};

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

static int run_train(int argc, char **argv)
{
    const char *dir = "data/bible", *out = NULL;
    long vocab = DEFAULT_VOCAB, seed = 0, threads = DEFAULT_TRAIN_THREADS;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--verbose")) {
            verbose = 1;
            continue;
        }
        if (!v) return cli_usage(&cmd_tokenizer);
        i++;
        int rc = 0;
        if (!strcmp(a, "--data")) dir = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--vocab")) rc = cli_option_long("tokenizer", a, v, MT_UNK_ID + 2, 1000000, &vocab);
        else if (!strcmp(a, "--seed")) rc = cli_option_long("tokenizer", a, v, 0, UINT_MAX, &seed);
        else if (!strcmp(a, "--threads")) rc = cli_option_long("tokenizer", a, v, 1, 128, &threads);
        else return cli_usage(&cmd_tokenizer);
        if (rc) return rc;
    }
    char inputs[2][PATH_MAX], prefix[PATH_MAX], model_path[PATH_MAX];
    for (int s = 0; s < 2; s++) {
        if ((size_t)snprintf(inputs[s], sizeof inputs[s], "%s/train.%s", dir, SIDES[s]) >= sizeof inputs[s])
            return cli_fail("--data: path too long");
        if (access(inputs[s], R_OK) != 0)
            return cli_fail("%s: %s (build the corpus with `mtlab data bible`, or point --data at a "
                            "directory holding train.es and train.en)", inputs[s], strerror(errno));
    }
    if ((size_t)snprintf(prefix, sizeof prefix, "%s%s", out ? out : dir, out ? "" : "/spm") >= sizeof prefix ||
        (size_t)snprintf(model_path, sizeof model_path, "%s.model", prefix) >= sizeof model_path)
        return cli_fail("--out: path too long");

    const char *const input_list[] = {inputs[0], inputs[1]};
    mt_tokenizer_train_opts opts = {
        .inputs = input_list, .n_inputs = 2, .model_prefix = prefix, .vocab_size = (int)vocab,
        .character_coverage = 1.0, .num_threads = (int)threads, .seed = (unsigned)seed,
        .verbose = verbose,
    };
    double t0 = mt_now_s();
    if (mt_tokenizer_train(&opts)) return cli_fail("%s", mt_last_error());
    double train_s = mt_now_s() - t0;

    mt_tokenizer *tok = mt_tokenizer_load(model_path);
    if (!tok) return cli_fail("%s", mt_last_error());
    printf("%s: %d pieces (unigram, joint es+en, seed %ld, threads %ld), trained in %.1f s\n",
           model_path, mt_tokenizer_vocab_size(tok), seed, threads, train_s);
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        size_t lines;
        double avg = pieces_per_line(tok, inputs[s], &lines);
        if (avg < 0) rc = 1;
        else printf("  %s: %.2f pieces per verse (%zu verses)\n", inputs[s], avg, lines);
    }
    mt_tokenizer_free(tok);
    return rc;
}

/* Parses "-m MODEL [--ids]" and loads the model: 0 ok, else the exit status (1 or 2). MODEL
 * is a sentencepiece model or a model bundle directory (its tokenizer.model). */
static int open_model(int argc, char **argv, int *ids_flag, mt_tokenizer **tok)
{
    const char *model = NULL;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc) model = argv[++i];
        else if (ids_flag && !strcmp(argv[i], "--ids")) *ids_flag = 1;
        else return cli_usage(&cmd_tokenizer);
    }
    if (!model) return cli_usage(&cmd_tokenizer);
    char member[PATH_MAX];
    struct stat sb;
    if (stat(model, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if ((size_t)snprintf(member, sizeof member, "%s/tokenizer.model", model) >= sizeof member)
            return cli_fail("%s: path too long", model);
        if (lstat(member, &sb) != 0 && errno == ENOENT)
            return cli_fail("%s: a directory without a tokenizer.model (-m takes a sentencepiece "
                            "model or a model bundle)", model);
        model = member;
    }
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
        if (ferror(stdout)) rc = cli_stdout_check(); /* stop at a full disk, not at the input's end */
    }
    mt_line_reader_free(&lr);
    mt_tokenizer_free(tok);
    return rc;
}

/* Parses one line of whitespace-separated ids into *ids (grown as needed); -1 on a bad token. */
static int parse_ids(char *line, size_t line_no, int **ids, size_t *cap, size_t *n)
{
    *n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
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
    "train [--data DIR] [--vocab N] [--out PREFIX] [--seed S] [--threads N] [--verbose]\n"
    "       mtlab tokenizer encode -m MODEL [--ids]   (stdin -> stdout, a line at a time)\n"
    "       mtlab tokenizer decode -m MODEL           (lines of space-separated ids)",
    "train the joint es+en sentencepiece model; encode or decode text with one",
    run_tokenizer,
    .parallel = 0,
};
