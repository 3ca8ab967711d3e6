/* `mtlab data`: datasets (mtlab/dataset.h).
 *   bible   build the Spanish-English Bible corpus from Debian's SWORD modules: mod2imp dumps
 *           each module; the engine (mtlab/bible.h) cleans, joins, splits and writes.
 *   import  any parallel corpus (two aligned files or TSV columns) into the same layout. */
#include "cli/commands.h"
#include "common/paths.h"
#include "common/progress.h"
#include "mtlab/clock.h"
#include "mtlab/bible.h"
#include "mtlab/dataset.h"
#include "mtlab/error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_EXCLUDE "scripts/data/bible_exclude.tsv"
#define DEFAULT_OUT "data/bible"
#define DEFAULT_GAZETTEER "scripts/data/gazetteer.test.txt"

typedef struct {
    const char *module; /* SWORD module name */
    const char *package; /* Debian package that installs it */
} sword_module;

static const sword_module spanish = {"spaRV1909eb", "sword-text-sparv"};
static const sword_module english = {"engWEB2015eb", "sword-text-web"};

static int on_path(const char *program)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    char dir[PATH_MAX + 64];
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && n < PATH_MAX &&
            snprintf(dir, sizeof dir, "%.*s/%s", (int)n, path, program) > 0 &&
            access(dir, X_OK) == 0)
            return 1;
        path += n + (path[n] == ':');
    }
    return 0;
}

/* Dump one module with mod2imp and read it. A module that is not installed makes mod2imp
 * print its usage and exit non-zero, so the exit status is checked before any parse error. */
static int read_module(const sword_module *m, mt_verse_list *out)
{
    char command[128];
    snprintf(command, sizeof command, "mod2imp %s 2>/dev/null", m->module);
    FILE *pipe = popen(command, "r");
    if (!pipe) return cli_fail("cannot run mod2imp: %s", strerror(errno));
    int rc = mt_imp_read(pipe, m->module, out);
    char drain[65536];
    while (rc < 0 && fread(drain, 1, sizeof drain, pipe) > 0)
        continue; /* let mod2imp exit by itself */
    int status = pclose(pipe);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || (rc == 0 && out->n == 0))
        return cli_fail("SWORD module %s is not installed (or mod2imp failed on it): install the "
                        "Debian package "
                        "%s (`make deps` installs everything mtlab needs)",
                        m->module, m->package);
    if (rc < 0) return cli_fail("%s", mt_last_error());
    return 0;
}

static size_t restored_and_kept(const mt_bible_corpus *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_pairs; i++) n += (size_t)c->pairs[i].es->caps_restored;
    return n;
}

static int build_bible(const char *out_dir, const char *exclude_path, const char *gazetteer_path)
{
    double t0 = mt_now_s();
    if (!on_path("mod2imp"))
        return cli_fail(
            "mod2imp not found: install the Debian package libsword-utils (`make deps` installs "
            "everything mtlab needs)");
    mt_verse_list es = {0}, en = {0};
    mt_exclusions ex = {0};
    mt_bible_corpus corpus = {0};
    mt_gazetteer gaz = {0};
    mt_bible_names names = {0};
    int rc = 1;
    if (mt_gazetteer_load(&gaz, gazetteer_path) < 0) {
        cli_fail("%s", mt_last_error());
        goto done;
    }
    if (read_module(&spanish, &es) != 0) goto done;
    size_t restored = mt_restore_chapter_caps(&es);
    if (read_module(&english, &en) != 0) goto done;
    if (mt_exclusions_load(exclude_path, &ex) < 0 || mt_bible_build(&es, &en, &ex, &corpus) < 0 ||
        mt_bible_names_build(&names, &corpus, &gaz) < 0 ||
        mt_bible_write(&corpus, &names, out_dir) < 0) {
        cli_fail("%s", mt_last_error());
        goto done;
    }
    printf("%-13s %6zu verses; opening capitals restored in %zu (%zu of them in kept pairs)\n",
           spanish.module, es.n, restored, restored_and_kept(&corpus));
    printf("%-13s %6zu verses (%zu without a Spanish verse: deuterocanon, ignored)\n",
           english.module, en.n, corpus.n_en_only);
    printf("%-13s %6zu keys from %s\n", "excluded", ex.n, exclude_path);
    printf("%-13s %6zu pairs = %zu common keys - %zu excluded\n", "joined", corpus.n_pairs,
           corpus.n_common, corpus.n_excluded);
    if (corpus.n_es_only)
        printf("%-13s %6zu Spanish keys without an English verse (ignored)\n", "",
               corpus.n_es_only);
    printf("%-13s %6zu train / %zu valid / %zu test pairs\n", "split",
           corpus.split_pairs[MT_SPLIT_TRAIN], corpus.split_pairs[MT_SPLIT_VALID],
           corpus.split_pairs[MT_SPLIT_TEST]);
    printf(
        "%-13s %6zu valid / %zu test runs of %d consecutive verses (%zu in train, not written)\n",
        "paragraphs", corpus.n_para[MT_SPLIT_VALID], corpus.n_para[MT_SPLIT_TEST],
        MT_BIBLE_PARA_VERSES, corpus.n_para[MT_SPLIT_TRAIN]);
    printf("%-13s %6zu complete in all splits; %zu test chapters written\n", "chapters",
           corpus.n_chapters[MT_SPLIT_TRAIN] + corpus.n_chapters[MT_SPLIT_VALID] +
               corpus.n_chapters[MT_SPLIT_TEST],
           corpus.n_chapters[MT_SPLIT_TEST]);
    printf("%-13s %6zu test verses share a name verbatim: %zu names substituted from %s\n",
           "test.names", names.n, names.first[names.n], gazetteer_path);
    printf("wrote %s/ in %.2f s\n", out_dir, mt_now_s() - t0);
    rc = 0;
done:
    mt_bible_names_free(&names);
    mt_gazetteer_free(&gaz);
    mt_bible_corpus_free(&corpus);
    mt_exclusions_free(&ex);
    mt_verse_list_free(&es);
    mt_verse_list_free(&en);
    return rc;
}

/* ---------------------------------------------------------------- import */
enum { MAX_SOURCES = 64, BAD_LINES_SHOWN = 20 };

typedef struct {
    cli_progress bar;
    size_t bad_lines;
} import_ui;

static void import_bad_line(void *ud, const char *file, size_t line, const char *problem)
{
    import_ui *ui = ud;
    if (++ui->bad_lines > BAD_LINES_SHOWN) return;
    cli_progress_clear(&ui->bar);
    fprintf(stderr, "mtlab: %s:%zu: %s (line dropped, counted as bad_line)\n", file, line, problem);
}

static void import_progress(void *ud, size_t done, size_t total)
{
    (void)total;
    cli_progress_update(&((import_ui *)ud)->bar, done);
}

/* "--valid N" (a count) or "--valid 0.05" (a fraction of the kept pairs). */
static int split_option(const char *opt, const char *text, size_t *n, double *frac)
{
    char *end;
    errno = 0;
    if (strchr(text, '.')) {
        double v = strtod(text, &end);
        if (errno || end == text || *end || !(v > 0 && v < 1))
            return cli_fail(
                "data import: %s takes a count of pairs or a fraction between 0 and 1, not '%s'",
                opt, text);
        *n = 0;
        *frac = v;
        return 0;
    }
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 0)
        return cli_fail(
            "data import: %s takes a count of pairs or a fraction between 0 and 1, not '%s'", opt,
            text);
    *n = (size_t)v;
    *frac = 0;
    return 0;
}

static int parse_columns(const char *text, int *s, int *t)
{
    char *end;
    long a = strtol(text, &end, 10), b = 0;
    if (*end == ',') b = strtol(end + 1, &end, 10);
    if (*end || a < 1 || b < 1 || a > 1000 || b > 1000 || a == b)
        return cli_fail(
            "data import: --columns takes two different column numbers counted from 1, as 1,2 (not "
            "'%s')",
            text);
    *s = (int)a;
    *t = (int)b;
    return 0;
}

static int run_import(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-')
        return cli_fail("data import: the first argument is the dataset directory to write (mtlab "
                        "data import DIR "
                        "--src FILE --tgt FILE --src-lang L --tgt-lang L)");
    const char *dir = argv[1];
    mt_import_source sources[MAX_SOURCES];
    size_t n_sources = 0;
    const char *pending_src = NULL, *pending_tgt = NULL;
    int columns[2] = {1, 2}, valid_given = 0, test_given = 0;
    mt_import_opts o = {
        .sources = sources, .seed = 1, .valid_n = MT_SPLIT_AUTO, .test_n = MT_SPLIT_AUTO};
    long seed = 1, max_words = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int two = !strcmp(a, "--valid-files") || !strcmp(a, "--test-files");
        if (!v || (two && i + 2 >= argc))
            return cli_fail("data import: %s needs %s", a, two ? "two files" : "a value");
        i++;
        int rc = 0;
        if (!strcmp(a, "--src") || !strcmp(a, "--tgt")) {
            const char **slot = a[2] == 's' ? &pending_src : &pending_tgt;
            if (*slot)
                return cli_fail("data import: %s %s given before the %s of the previous %s", a, v,
                                a[2] == 's' ? "--tgt" : "--src", a);
            *slot = v;
            if (pending_src && pending_tgt) {
                if (n_sources == MAX_SOURCES)
                    return cli_fail("data import: more than %d sources", MAX_SOURCES);
                sources[n_sources++] = (mt_import_source){pending_src, pending_tgt, 0, 0};
                pending_src = pending_tgt = NULL;
            }
        } else if (!strcmp(a, "--tsv")) {
            if (n_sources == MAX_SOURCES)
                return cli_fail("data import: more than %d sources", MAX_SOURCES);
            sources[n_sources++] = (mt_import_source){v, NULL, columns[0], columns[1]};
        } else if (!strcmp(a, "--columns")) {
            rc = parse_columns(v, &columns[0], &columns[1]);
            if (rc == 0 && n_sources && !sources[n_sources - 1].tgt) { /* the --tsv just before */
                sources[n_sources - 1].src_col = columns[0];
                sources[n_sources - 1].tgt_col = columns[1];
            }
        } else if (!strcmp(a, "--src-lang")) o.src_lang = v;
        else if (!strcmp(a, "--tgt-lang")) o.tgt_lang = v;
        else if (!strcmp(a, "--valid") || !strcmp(a, "--test")) {
            int *given = a[2] == 'v' ? &valid_given : &test_given;
            if (*given)
                return cli_fail("data import: give %s once, either as a count or with %s-files", a,
                                a);
            *given = 1;
            rc = a[2] == 'v' ? split_option(a, v, &o.valid_n, &o.valid_frac)
                             : split_option(a, v, &o.test_n, &o.test_frac);
        } else if (two) {
            int *given = a[2] == 'v' ? &valid_given : &test_given;
            if (*given)
                return cli_fail("data import: give the %s split once, as a count or as files",
                                a[2] == 'v' ? "valid" : "test");
            *given = 1;
            const char **files = a[2] == 'v' ? o.valid_files : o.test_files;
            files[0] = v;
            files[1] = argv[++i];
        } else if (!strcmp(a, "--seed"))
            rc = cli_option_long("data import", a, v, 0, LONG_MAX, &seed);
        else if (!strcmp(a, "--max-words"))
            rc = cli_option_long("data import", a, v, 1, 1000000, &max_words);
        else if (!strcmp(a, "--max-ratio")) {
            char *end;
            o.max_ratio = strtod(v, &end);
            if (*end || !(o.max_ratio >= 1))
                return cli_fail("data import: --max-ratio takes a number >= 1, not '%s'", v);
        } else return cli_fail("data import: unknown option '%s' (see `mtlab data --help`)", a);
        if (rc) return rc;
    }
    if (pending_src || pending_tgt)
        return cli_fail("data import: %s %s has no %s to pair with",
                        pending_src ? "--src" : "--tgt", pending_src ? pending_src : pending_tgt,
                        pending_src ? "--tgt" : "--src");
    if (n_sources == 0)
        return cli_fail("data import: give the corpus: --src FILE --tgt FILE, or --tsv FILE");
    if (!o.src_lang || !o.tgt_lang)
        return cli_fail("data import: give the languages: --src-lang L --tgt-lang L (BCP-47 codes, "
                        "e.g. de en)");
    if (o.valid_files[0]) o.valid_n = 0;
    if (o.test_files[0]) o.test_n = 0;
    o.n_sources = n_sources;
    o.seed = (uint64_t)seed;
    o.max_words = (size_t)max_words;
    import_ui ui = {0};
    o.bad_line = import_bad_line;
    o.progress = import_progress;
    o.ud = &ui;
    double t0 = mt_now_s();
    mt_import_counts c;
    cli_progress_start(&ui.bar, "import", 0);
    int rc = mt_dataset_import(&o, dir, &c);
    cli_progress_finish(&ui.bar, NULL);
    if (ui.bad_lines > BAD_LINES_SHOWN)
        fprintf(stderr, "mtlab: ... and %zu more bad lines (all counted in the manifest)\n",
                ui.bad_lines - BAD_LINES_SHOWN);
    if (rc < 0) return cli_fail("data import: %s", mt_last_error());
    printf("%-10s %8zu pairs from %zu source%s (%s -> %s)\n", "read", c.read, n_sources,
           n_sources == 1 ? "" : "s", o.src_lang, o.tgt_lang);
    printf("%-10s %8zu bad lines, %zu empty, %zu too long, %zu length ratio, %zu duplicate, %zu in "
           "valid/test "
           "files\n",
           "dropped", c.bad_line, c.empty, c.too_long, c.ratio, c.duplicate, c.overlap);
    printf("%-10s %8zu pairs (%zu changed by NFC, %zu had control characters removed)\n", "kept",
           c.kept, c.nfc_changed, c.control_removed);
    printf("%-10s %8zu train / %zu valid / %zu test pairs\n", "split", c.split[0], c.split[1],
           c.split[2]);
    printf("wrote %s/ (train.%s train.%s ..., manifest.json) in %.2f s\n", dir, o.src_lang,
           o.tgt_lang, mt_now_s() - t0);
    return 0;
}

static int run_data(int argc, char **argv)
{
    if (argc < 2) return cli_usage(&cmd_data);
    if (!strcmp(argv[1], "import")) return run_import(argc - 1, argv + 1);
    if (strcmp(argv[1], "bible") != 0) {
        fprintf(stderr, "mtlab data: unknown subcommand '%s' (known: bible, import)\n", argv[1]);
        return cli_usage(&cmd_data);
    }
    const char *out_dir = DEFAULT_OUT, *exclude = NULL, *gazetteer = NULL;
    for (int i = 2; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--out") == 0) out_dir = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--exclude") == 0) exclude = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--gazetteer") == 0) gazetteer = argv[++i];
        else return cli_usage(&cmd_data);
    }
    char found[PATH_MAX], found_gaz[PATH_MAX];
    if (!exclude) {
        if (cli_find_resource(DEFAULT_EXCLUDE, found, sizeof found) < 0)
            return cli_fail("%s", mt_last_error());
        exclude = found;
    }
    if (!gazetteer) {
        if (cli_find_resource(DEFAULT_GAZETTEER, found_gaz, sizeof found_gaz) < 0)
            return cli_fail("%s", mt_last_error());
        gazetteer = found_gaz;
    }
    return build_bible(out_dir, exclude, gazetteer);
}

const struct mt_command cmd_data = {
    "data",
    "bible [--out DIR] [--exclude FILE] [--gazetteer FILE]\n"
    "       mtlab data import DIR (--src FILE --tgt FILE | --tsv FILE [--columns S,T])... "
    "--src-lang L\n"
    "                   --tgt-lang L [--valid N | --valid-files S T] [--test N | --test-files S "
    "T]\n"
    "                   [--seed S] [--max-words N] [--max-ratio R]",
    "build the Bible corpus (default data/bible), or import any parallel corpus into DIR\n"
    "(DIR/{train,valid,test}.{L} and DIR/manifest.json; --valid/--test: a count or a fraction "
    "such\n"
    "as 0.05, drawn with --seed; default 5% each, at most 1000)",
    run_data,
    .parallel = 0,
};
