/* `mtlab bench --only ranks`: data-parallel training on this machine. The same run (a Mamba of
 * width 128 on a made-up corpus, the same global batch) trained by 1 process and by N ranks
 * under mpirun: the mean step time, the part of it in the gradient all-reduce, and target
 * tokens/s, from the runs' log.jsonl (step_s, reduce_s: mt_train_progress). The ranks share
 * the machine's cores (OMP_NUM_THREADS = cores / N each), so on one machine the figure is the
 * all-reduce's cost, not a speed-up. */
#include "bench/bench.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/rng.h"
#include "mtlab/tokenizer.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { BENCH_PAIRS = 3000, BENCH_STEPS = 30, BENCH_LOG_EVERY = 10 };

/* A parallel corpus of BENCH_PAIRS made-up sentences (the words' order mirrored on the target
 * side), enough for a tokenizer and batches of realistic lengths. */
static int write_corpus(const char *dir)
{
    static const char *const src_words[] = {
        "el",     "perro", "come",   "una",    "manzana", "roja",  "en",    "la",       "casa",
        "grande", "y",     "luego",  "duerme", "bajo",    "árbol", "verde", "mientras", "niños",
        "juegan", "con",   "pelota", "azul",   "cerca",   "del",   "río"};
    static const char *const tgt_words[] = {
        "the",  "dog",  "eats", "an",     "apple", "red",  "in",    "the",   "house",
        "big",  "and",  "then", "sleeps", "under", "tree", "green", "while", "children",
        "play", "with", "ball", "blue",   "near",  "the",  "river"};
    enum { N_WORDS = sizeof src_words / sizeof src_words[0] };
    char sp[600], tp[600];
    snprintf(sp, sizeof sp, "%s/train.es", dir);
    snprintf(tp, sizeof tp, "%s/train.en", dir);
    FILE *s = fopen(sp, "w"), *t = fopen(tp, "w");
    if (!s || !t) {
        if (s) fclose(s);
        if (t) fclose(t);
        return mt_error("%s: %s", sp, strerror(errno));
    }
    mt_rng rng;
    mt_rng_init(&rng, 7, 0);
    for (int i = 0; i < BENCH_PAIRS; i++) {
        int n = 4 + (int)mt_rng_below(&rng, 24), w[32];
        for (int k = 0; k < n; k++) w[k] = (int)mt_rng_below(&rng, N_WORDS);
        for (int k = 0; k < n; k++) fprintf(s, "%s%s", k ? " " : "", src_words[w[k]]);
        for (int k = n - 1; k >= 0; k--) fprintf(t, "%s%s", k < n - 1 ? " " : "", tgt_words[w[k]]);
        fputc('\n', s);
        fputc('\n', t);
    }
    int bad = ferror(s) || ferror(t);
    if ((fclose(s) | fclose(t)) != 0 || bad) return mt_error("%s: write failed", dir);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/spm", dir);
    const char *inputs[] = {sp, tp};
    mt_tokenizer_train_opts o = {.inputs = inputs,
                                 .n_inputs = 2,
                                 .model_prefix = prefix,
                                 .vocab_size = 100,
                                 .character_coverage = 1.0,
                                 .num_threads = 1,
                                 .seed = 1};
    return mt_tokenizer_train(&o);
}

static int write_config(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/bench.lua", dir);
    FILE *f = fopen(path, "w");
    if (!f) return mt_error("%s: %s", path, strerror(errno));
    fprintf(f,
            "return {\n  name = \"bench\",\n"
            "  model = { preset = \"mamba-small\", vocab_size = 128, d_model = 128, n_layers = 4, "
            "dropout = 0 },\n"
            "  train_src = \"train.es\", train_tgt = \"train.en\", tokenizer = \"spm.model\",\n"
            "  max_len = 64, max_tokens = 2048, lr = 1e-3, warmup = 10, seed = 1,\n"
            "  max_steps = %d, log_every = %d, valid_every = 0, valid_bleu_lines = 0, save_every = "
            "0,\n}\n",
            BENCH_STEPS, BENCH_LOG_EVERY);
    return fclose(f) == 0 ? 0 : mt_error("%s: write failed", path);
}

/* Run the config on `ranks` processes (1: no mpirun) as run NAME, with the key=value overrides
 * extra (NULL-terminated); 0, or -1 naming its log. */
static int train_on(const char *dir, const char *exe, int ranks, const char *name,
                    const char *const *extra)
{
    char log[700], np[16], mt[32], nm[160], threads[16];
    snprintf(log, sizeof log, "%s/%s.out", dir, name);
    snprintf(np, sizeof np, "%d", ranks);
    /* the same global batch whatever the number of ranks */
    snprintf(mt, sizeof mt, "max_tokens=%d", 2048 / ranks);
    snprintf(nm, sizeof nm, "name=%s", name);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(threads, sizeof threads, "%ld", cores / ranks > 0 ? cores / ranks : 1);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return mt_error("fork: %s", strerror(errno));
    if (pid == 0) {
        FILE *out = freopen(log, "w", stdout);
        if (!out || chdir(dir) != 0) _exit(126);
        dup2(1, 2);
        setenv("OMP_NUM_THREADS", threads, 1);
        char *plain[12] = {(char *)exe, "train", "bench.lua", mt, nm};
        for (int i = 0, k = 5; extra[i] && k < 11; i++) plain[k++] = (char *)extra[i];
        char *mpi[20];
        int n = 0;
        mpi[n++] = "mpirun";
        mpi[n++] = "--oversubscribe";
        if (geteuid() == 0) mpi[n++] = "--allow-run-as-root";
        mpi[n++] = "-np";
        mpi[n++] = np;
        for (int i = 0; plain[i]; i++) mpi[n++] = plain[i];
        mpi[n] = NULL;
        if (ranks == 1) execv(exe, plain);
        else execvp("mpirun", mpi);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return mt_error("waitpid: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return mt_error("%s could not be run (%s)", ranks > 1 ? "mpirun" : exe,
                        ranks > 1 ? "install openmpi-bin" : "exec failed");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return mt_error("the %d-rank run failed: see %s", ranks, log);
    return 0;
}

typedef struct {
    double step_s, reduce_s, tokens_per_s;
} ranks_figures;

/* Means over the log's train records after the first (the first interval holds the warm-up). */
static int read_figures(const char *dir, const char *name, ranks_figures *f)
{
    char path[700], line[4096];
    snprintf(path, sizeof path, "%s/runs/%s/log.jsonl", dir, name);
    FILE *in = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!in) return -1;
    memset(f, 0, sizeof *f);
    int n = 0, seen = 0;
    while (fgets(line, sizeof line, in)) {
        json_t *o = json_loads(line, 0, NULL);
        const char *ev = o ? json_string_value(json_object_get(o, "event")) : NULL;
        if (ev && !strcmp(ev, "train") && seen++ > 0) {
            f->step_s += json_number_value(json_object_get(o, "step_s"));
            f->reduce_s += json_number_value(json_object_get(o, "reduce_s"));
            f->tokens_per_s += json_number_value(json_object_get(o, "tokens_per_s"));
            n++;
        }
        json_decref(o);
    }
    fclose(in);
    if (n == 0) return mt_error("%s: no train records after the first", path);
    f->step_s /= n;
    f->reduce_s /= n;
    f->tokens_per_s /= n;
    return 0;
}

int bench_run_ranks(int repeat)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return mt_error("cannot find the mtlab binary (/proc/self/exe)");
    exe[len] = '\0';
    char dir[] = "/tmp/mtlab-bench-ranks-XXXXXX";
    if (!mkdtemp(dir)) return mt_error("mkdtemp: %s", strerror(errno));
    int rc = write_corpus(dir) || write_config(dir) ? -1 : 0;
    if (rc == 0)
        printf(
            "ranks: data-parallel training, one machine (%ld cores), Mamba d_model 128 x 4 layers, "
            "global batch 2048 tokens, %d steps, best of %d\n",
            sysconf(_SC_NPROCESSORS_ONLN), BENCH_STEPS, repeat);
    if (rc == 0)
        printf("  %5s %-25s %10s %14s %9s %10s\n", "ranks", "all-reduce", "step ms",
               "all-reduce ms", "share", "tok/s");
    /* the all-reduce ms is the time a step waits for it: all of it after backward (naive), what
     * is left when backward ends (overlapped, docs/distributed.md §3) */
    static const struct {
        int ranks;
        const char *what;
        const char *extra[4];
    } rows[] = {
        {1, "-", {NULL}},
        {2, "after backward, fp32", {"overlap=false", NULL}},
        /* the model's 1.8 MB of gradients make one 25 MiB bucket, complete only when backward
         * reaches the first layer; 0.5 MiB buckets hold about one layer each */
        {2, "overlapped, fp32, 25 MiB", {"overlap=true", NULL}},
        {2, "overlapped, fp32, 0.5", {"overlap=true", "bucket_mb=0.5", NULL}},
        {2, "overlapped, bf16, 0.5", {"overlap=true", "bucket_mb=0.5", "grad_dtype=bf16", NULL}},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0] && rc == 0; i++) {
        ranks_figures best = {0};
        for (int r = 0; r < repeat && rc == 0; r++) {
            char name[32];
            snprintf(name, sizeof name, "r%zu-%d", i, r);
            ranks_figures f;
            rc = train_on(dir, exe, rows[i].ranks, name, rows[i].extra) ||
                         read_figures(dir, name, &f)
                     ? -1
                     : 0;
            if (rc == 0 && (r == 0 || f.step_s < best.step_s)) best = f;
        }
        if (rc == 0)
            printf("  %5d %-25s %10.2f %14.3f %8.1f%% %10.0f\n", rows[i].ranks, rows[i].what,
                   1e3 * best.step_s, 1e3 * best.reduce_s, 100 * best.reduce_s / best.step_s,
                   best.tokens_per_s);
    }
    if (rc != 0) {
        fprintf(stderr, "mtlab bench: ranks: the runs are kept in %s\n", dir);
        return -1;
    }
    char *rm[] = {"rm", "-rf", dir, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execvp("rm", rm);
        _exit(127);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
    return 0;
}
