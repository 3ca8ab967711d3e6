/* `mtlab entities build`: learn the bilingual entity lexicon (docs/metrics.md §8) from a
 * training corpus and store it with a bundle, for bundles trained before `mtlab train` wrote
 * one or trained elsewhere. */
#include "cli/commands.h"
#include "common/progress.h"
#include "mtlab/entities.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void lexicon_progress(void *user, size_t done, size_t total)
{
    (void)total;
    cli_progress_update(user, done);
}

static int build(const char *train_src, const char *train_ref, const char *out)
{
    mt_text_lines src = {0}, ref = {0};
    if (mt_text_lines_read(&src, train_src) < 0 || mt_text_lines_read(&ref, train_ref) < 0) {
        mt_text_lines_free(&src);
        return cli_fail("%s", mt_last_error());
    }
    int rc = 1;
    if (src.n != ref.n) {
        cli_fail("%s has %zu lines but %s has %zu: the training files must be line-aligned",
                 train_src, src.n, train_ref, ref.n);
        goto done;
    }
    char path[4096];
    struct stat st;
    size_t len = strlen(out);
    while (len > 1 && out[len - 1] == '/') len--;
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(path, sizeof path, "%.*s/entity_lexicon.tsv", (int)len, out);
    else snprintf(path, sizeof path, "%s", out);
    cli_progress bar;
    cli_progress_start(&bar, "entity lexicon", src.n);
    mt_entity_lexicon *lex =
        mt_entity_lexicon_build((const char *const *)src.lines, (const char *const *)ref.lines,
                                src.n, lexicon_progress, &bar);
    cli_progress_finish(&bar, lex ? "done" : NULL);
    if (!lex) {
        cli_fail("%s: %s", train_src, mt_last_error());
        goto done;
    }
    if (mt_entity_lexicon_write(lex, path) < 0) cli_fail("%s", mt_last_error());
    else {
        printf("%zu names from %zu training pairs -> %s\n", mt_entity_lexicon_names(lex), src.n,
               path);
        rc = 0;
    }
    mt_entity_lexicon_free(lex);
done:
    mt_text_lines_free(&src);
    mt_text_lines_free(&ref);
    return rc;
}

static int run_entities(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "build") != 0) {
        if (argc >= 2)
            fprintf(stderr, "mtlab entities: unknown action '%s' (known: build)\n", argv[1]);
        return cli_usage(&cmd_entities);
    }
    const char *train_src = NULL, *train_ref = NULL, *out = NULL;
    for (int i = 2; i < argc; i++) {
        const char **dest = !strcmp(argv[i], "--train-src")   ? &train_src
                            : !strcmp(argv[i], "--train-ref") ? &train_ref
                            : !strcmp(argv[i], "--out")       ? &out
                                                              : NULL;
        if (!dest) {
            fprintf(stderr, "mtlab entities: unknown argument '%s'\n", argv[i]);
            return cli_usage(&cmd_entities);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "mtlab entities: %s needs a value\n", argv[i]);
            return cli_usage(&cmd_entities);
        }
        *dest = argv[++i];
    }
    const char *missing = !train_src   ? "--train-src"
                          : !train_ref ? "--train-ref"
                          : !out       ? "--out"
                                       : NULL;
    if (missing) {
        fprintf(stderr, "mtlab entities build: %s is missing\n", missing);
        return cli_usage(&cmd_entities);
    }
    return build(train_src, train_ref, out);
}

const struct mt_command cmd_entities = {
    .name = "entities",
    .args =
        "build --train-src FILE --train-ref FILE --out BUNDLE|FILE\n"
        "  writes BUNDLE/entity_lexicon.tsv (or FILE): which target forms each source name takes",
    .summary =
        "learn the bilingual entity lexicon a bundle uses to tell translated names from dropped",
    .run = run_entities,
};
