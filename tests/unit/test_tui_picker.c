/* The bundles `mtlab` opens by default: every directory of models/ holding a config.json, sorted,
 * except that those models/panes.txt names come first in its order; a name there that is no
 * bundle is reported, never silently dropped. */
#include "test_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include "mtlab/error.h"
#include "tui/tui.h"

static char root[256];

static void make_bundle(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, name);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/%s/config.json", root, name);
    test_write_text(path, "{}\n");
}

static void write_order(const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/panes.txt", root);
    test_write_text(path, text);
}

/* The default bundles' names, space-separated, and the problem reported. */
static void defaults(char *names, size_t len, char *problem, size_t plen)
{
    char **dirs;
    int n = tui_default_bundles(&dirs, root, NULL, 0, problem, plen);
    names[0] = 0;
    for (int i = 0; i < n; i++) {
        const char *base = strrchr(dirs[i], '/') + 1;
        snprintf(names + strlen(names), len - strlen(names), "%s%s", i ? " " : "", base);
        free(dirs[i]);
    }
    free(dirs);
}

static int setup(void **state)
{
    (void)state;
    if (test_make_tmpdir(root, sizeof root, "picker") != 0) return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(root);
}

static void test_sorted_then_ordered(void **state)
{
    (void)state;
    const char *names[] = {"transformer-small", "mamba-small", "mamba-local-small", "retnet-small",
                           "mamba-encdec-small"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) make_bundle(names[i]);
    char notes[512];
    snprintf(notes, sizeof notes, "%s/notes", root); /* a directory without config.json */
    assert_int_equal(mkdir(notes, 0755), 0);

    char got[1024], problem[1024];
    defaults(got, sizeof got, problem, sizeof problem);
    assert_string_equal(
        got, "mamba-encdec-small mamba-local-small mamba-small retnet-small transformer-small");
    assert_string_equal(problem, "");

    write_order("# the demo's panes\n  transformer-small  \n\nmamba-small # the "
                "SSM\r\nmamba-encdec-small\n");
    defaults(got, sizeof got, problem, sizeof problem);
    assert_string_equal(
        got, "transformer-small mamba-small mamba-encdec-small mamba-local-small retnet-small");
    assert_string_equal(problem, "");

    /* A name that is no bundle (a typo, or one listed twice) is reported; the others still apply.
     */
    write_order("mamba-smal\nretnet-small\nretnet-small\nnotes\n");
    defaults(got, sizeof got, problem, sizeof problem);
    assert_string_equal(
        got, "retnet-small mamba-encdec-small mamba-local-small mamba-small transformer-small");
    assert_non_null(strstr(problem, "panes.txt:1 names 'mamba-smal', which is not a bundle there"));

    /* No problem buffer: the order still applies. */
    char **dirs;
    int n = tui_default_bundles(&dirs, root, NULL, 0, NULL, 0);
    assert_int_equal(n, 5);
    assert_non_null(strstr(dirs[0], "/retnet-small"));
    for (int i = 0; i < n; i++) free(dirs[i]);
    free(dirs);

    /* An unreadable panes.txt is reported and the bundles open sorted. */
    write_order("transformer-small\nmamba-\xff\n");
    defaults(got, sizeof got, problem, sizeof problem);
    assert_string_equal(
        got, "mamba-encdec-small mamba-local-small mamba-small retnet-small transformer-small");
    assert_non_null(strstr(problem, "panes.txt:2: invalid UTF-8"));
}

/* The project's own models/panes.txt (what `make run` opens) names only bundles shipped there. */
static void test_shipped_order(void **state)
{
    (void)state;
    char **dirs, models_dir[1024], problem[1024];
    int n =
        tui_default_bundles(&dirs, NULL, models_dir, sizeof models_dir, problem, sizeof problem);
    print_message("%s: %d bundles, first %s\n", models_dir, n, n ? dirs[0] : "-");
    assert_true(n >= 2);
    assert_string_equal(problem, "");
    for (int i = 0; i < n; i++) free(dirs[i]);
    free(dirs);
}

static void test_missing_root(void **state)
{
    (void)state;
    char **dirs, problem[64] = "stale";
    assert_int_equal(
        tui_default_bundles(&dirs, "/nonexistent/mtlab-models", NULL, 0, problem, sizeof problem),
        0);
    assert_null(dirs);
    assert_string_equal(problem, "");
}

/* A typed path: ~ is $HOME, relative paths are the working directory's, a config.json names
 * its bundle, and each bad path is an error naming it and what is wrong. */
static void test_typed_bundle_path(void **state)
{
    (void)state;
    make_bundle("mine");
    char out[1024], want[512], path[512];
    snprintf(want, sizeof want, "%s/mine", root);
    assert_int_equal(tui_bundle_path(want, out, sizeof out), 0);
    assert_string_equal(out, want);
    snprintf(path, sizeof path, "  %s/mine/config.json ", root);
    assert_int_equal(tui_bundle_path(path, out, sizeof out), 0);
    assert_string_equal(out, want);
    /* ~ */
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", root, 1);
    assert_int_equal(tui_bundle_path("~/mine", out, sizeof out), 0);
    assert_string_equal(out, want);
    assert_int_equal(tui_bundle_path("~", out, sizeof out), -1);
    assert_non_null(strstr(mt_last_error(), "no config.json there"));
    /* relative to the working directory */
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(root), 0);
    assert_int_equal(tui_bundle_path("mine", out, sizeof out), 0);
    assert_string_equal(out, "mine");
    assert_int_equal(tui_bundle_path("mine/config.json", out, sizeof out), 0);
    assert_string_equal(out, "mine");
    assert_int_equal(tui_bundle_path("nope", out, sizeof out), -1);
    assert_string_equal(mt_last_error(), "nope: No such file or directory");
    assert_int_equal(tui_bundle_path("mine/config.json/x", out, sizeof out), -1);
    assert_non_null(strstr(mt_last_error(), "mine/config.json/x: Not a directory"));
    test_write_text("plain.txt", "x\n");
    assert_int_equal(tui_bundle_path("plain.txt", out, sizeof out), -1);
    assert_non_null(strstr(mt_last_error(), "plain.txt: not a directory (a model bundle"));
    assert_int_equal(tui_bundle_path("   ", out, sizeof out), -1);
    assert_non_null(strstr(mt_last_error(), "type the path"));
    assert_int_equal(chdir(cwd), 0);
    if (old_home) setenv("HOME", old_home, 1);
    else unsetenv("HOME");
    free(old_home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sorted_then_ordered, setup, teardown),
        cmocka_unit_test(test_shipped_order),
        cmocka_unit_test(test_missing_root),
        cmocka_unit_test_setup_teardown(test_typed_bundle_path, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
