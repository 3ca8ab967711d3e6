/* `mtlab data bible`: build the Spanish-English Bible corpus from Debian's SWORD modules.
 * mod2imp dumps each module; the engine (mtlab/bible.h) cleans, joins, splits and writes. */
#include "cli/commands.h"
#include "cli/paths.h"
#include "mtlab/clock.h"
#include "mtlab/bible.h"
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
    const char *module;  /* SWORD module name */
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
        if (n > 0 && n < PATH_MAX && snprintf(dir, sizeof dir, "%.*s/%s", (int)n, path, program) > 0 &&
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
    while (rc < 0 && fread(drain, 1, sizeof drain, pipe) > 0) continue; /* let mod2imp exit by itself */
    int status = pclose(pipe);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || (rc == 0 && out->n == 0))
        return cli_fail("SWORD module %s is not installed (or mod2imp failed on it): install the Debian package "
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
        return cli_fail("mod2imp not found: install the Debian package libsword-utils (`make deps` installs "
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
        mt_bible_names_build(&names, &corpus, &gaz) < 0 || mt_bible_write(&corpus, &names, out_dir) < 0) {
        cli_fail("%s", mt_last_error());
        goto done;
    }
    printf("%-13s %6zu verses; opening capitals restored in %zu (%zu of them in kept pairs)\n",
           spanish.module, es.n, restored, restored_and_kept(&corpus));
    printf("%-13s %6zu verses (%zu without a Spanish verse: deuterocanon, ignored)\n", english.module, en.n,
           corpus.n_en_only);
    printf("%-13s %6zu keys from %s\n", "excluded", ex.n, exclude_path);
    printf("%-13s %6zu pairs = %zu common keys - %zu excluded\n", "joined", corpus.n_pairs, corpus.n_common,
           corpus.n_excluded);
    if (corpus.n_es_only) printf("%-13s %6zu Spanish keys without an English verse (ignored)\n", "", corpus.n_es_only);
    printf("%-13s %6zu train / %zu valid / %zu test pairs\n", "split", corpus.split_pairs[MT_SPLIT_TRAIN],
           corpus.split_pairs[MT_SPLIT_VALID], corpus.split_pairs[MT_SPLIT_TEST]);
    printf("%-13s %6zu valid / %zu test runs of %d consecutive verses (%zu in train, not written)\n", "paragraphs",
           corpus.n_para[MT_SPLIT_VALID], corpus.n_para[MT_SPLIT_TEST], MT_BIBLE_PARA_VERSES,
           corpus.n_para[MT_SPLIT_TRAIN]);
    printf("%-13s %6zu complete in all splits; %zu test chapters written\n", "chapters",
           corpus.n_chapters[MT_SPLIT_TRAIN] + corpus.n_chapters[MT_SPLIT_VALID] + corpus.n_chapters[MT_SPLIT_TEST],
           corpus.n_chapters[MT_SPLIT_TEST]);
    printf("%-13s %6zu test verses share a name verbatim: %zu names substituted from %s\n", "test.names",
           names.n, names.first[names.n], gazetteer_path);
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

static int run_data(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "bible") != 0) return cli_usage(&cmd_data);
    const char *out_dir = DEFAULT_OUT, *exclude = NULL, *gazetteer = NULL;
    for (int i = 2; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--out") == 0) out_dir = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--exclude") == 0) exclude = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--gazetteer") == 0) gazetteer = argv[++i];
        else return cli_usage(&cmd_data);
    }
    char found[PATH_MAX], found_gaz[PATH_MAX];
    if (!exclude) {
        if (cli_find_resource(DEFAULT_EXCLUDE, found, sizeof found) < 0) return cli_fail("%s", mt_last_error());
        exclude = found;
    }
    if (!gazetteer) {
        if (cli_find_resource(DEFAULT_GAZETTEER, found_gaz, sizeof found_gaz) < 0) return cli_fail("%s", mt_last_error());
        gazetteer = found_gaz;
    }
    return build_bible(out_dir, exclude, gazetteer);
}

const struct mt_command cmd_data = {
    "data",
    "bible [--out DIR] [--exclude FILE] [--gazetteer FILE]",
    "build the Spanish-English Bible corpus (default data/bible) from Debian's SWORD modules",
    run_data,
    .parallel = 0,
};
