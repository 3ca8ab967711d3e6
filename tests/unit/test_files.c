/* The files a user names (mtlab/files.h): non-regular files refused by what they are without
 * blocking, the one line limit applied while reading, and a bundle written where a user named
 * it (mtlab/bundle.h, mt_bundle_target): never over a bundle unless asked, then whole. */
#include "test_util.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtlab/bundle.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/metrics.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return test_make_tmpdir(dir, sizeof dir, "files");
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(dir);
}

static const char *path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
    return buf;
}

static void expect_error(const char *contains)
{
    if (!strstr(mt_last_error(), contains))
        fail_msg("error '%s' lacks '%s'", mt_last_error(), contains);
}

static void test_kinds_refused_without_blocking(void **state)
{
    (void)state;
    char fifo[320], loop[320], file[320];
    path_in(fifo, sizeof fifo, "fifo");
    path_in(loop, sizeof loop, "loop");
    path_in(file, sizeof file, "file");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink("loop", loop), 0);
    test_write_text(file, "text\n");

    /* a FIFO without a writer: open() alone would block here forever */
    assert_int_equal(mt_file_open(fifo, MT_FILE_REGULAR), -1);
    expect_error("fifo: a FIFO (named pipe), not a regular file");
    assert_null(mt_file_fopen(fifo, MT_FILE_REGULAR));
    assert_int_equal(mt_file_check(dir, MT_FILE_STREAM), -1);
    expect_error(": is a directory, not a file");
    assert_int_equal(mt_file_check("/dev/zero", MT_FILE_STREAM), -1);
    expect_error("/dev/zero: a character device, not a regular file");
    assert_int_equal(mt_file_check(loop, MT_FILE_REGULAR), -1);
    expect_error("loop: Too many levels of symbolic links");
    assert_int_equal(mt_file_check(fifo, MT_FILE_STREAM), 0);

    FILE *f = mt_file_fopen(file, MT_FILE_REGULAR);
    assert_non_null(f);
    char buf[16] = "";
    assert_non_null(fgets(buf, sizeof buf, f));
    assert_string_equal(buf, "text\n");
    fclose(f);
}

/* Lines of text through the reader with a limit of max: how many, or -1 with the message. */
static int read_all(const char *text, size_t len, size_t max, size_t *total)
{
    FILE *f = fmemopen((void *)text, len, "rb");
    assert_non_null(f);
    mt_line_reader r;
    mt_line_reader_init(&r, f, "t.txt", max);
    char *line;
    size_t n, lines = 0;
    int got;
    *total = 0;
    while ((got = mt_line_next(&r, &line, &n)) > 0) {
        assert_int_equal(strlen(line), n);
        *total += n;
        lines++;
    }
    mt_line_reader_free(&r);
    fclose(f);
    return got < 0 ? -1 : (int)lines;
}

static void test_line_limit_while_reading(void **state)
{
    (void)state;
    size_t total;
    assert_int_equal(read_all("", 0, 4, &total), 0);
    assert_int_equal(read_all("ab\n\ncd", 6, 4, &total), 3); /* a last line without '\n' counts */
    assert_int_equal(total, 4);
    assert_int_equal(read_all("abcd\nabcd", 9, 4, &total), 2); /* exactly the limit */
    assert_int_equal(read_all("ab\nabcde\n", 9, 4, &total), -1);
    expect_error("t.txt:2: line longer than the 4-byte limit");
    assert_int_equal(read_all("ab\nabcde", 8, 4, &total), -1);
    assert_int_equal(read_all("ab\na\0c\n", 7, 4, &total), -1);
    expect_error("t.txt:2: NUL byte at byte 1");

    /* the default limit, on a stream that would never end: refused after MT_LINE_MAX_BYTES */
    size_t big = MT_LINE_MAX_BYTES + 100;
    char *text = malloc(big);
    memset(text, 'a', big);
    assert_int_equal(read_all(text, big, 0, &total), -1);
    expect_error("t.txt:1: line longer than the 1048576-byte limit");
    free(text);
}

static void test_text_lines_share_the_limit(void **state)
{
    (void)state;
    char path[320];
    path_in(path, sizeof path, "long.txt");
    size_t big = MT_LINE_MAX_BYTES + 1;
    char *text = malloc(big + 8);
    memcpy(text, "ok\n", 3);
    memset(text + 3, 'a', big);
    test_write_file(path, text, big + 3);
    free(text);
    mt_text_lines t;
    assert_int_equal(mt_text_lines_read(&t, path), -1);
    expect_error("long.txt:2: line longer than the 1048576-byte limit");
    assert_int_equal(mt_text_lines_read(&t, "/dev/zero"), -1);
    expect_error("/dev/zero: a character device");
}

/* A stand-in for a bundle written into the target's temporary directory. */
static void write_member(const char *d, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", d, name);
    test_write_text(p, text);
}

static char *member_text(const char *d, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", d, name);
    return test_read_file(p, NULL);
}

static void test_bundle_target(void **state)
{
    (void)state;
    char out[320], notes[320];
    path_in(out, sizeof out, "models/new");
    mt_bundle_target t;
    /* a new bundle, its parents made */
    assert_int_equal(mt_bundle_target_begin(&t, out, 0), 0);
    write_member(t.tmp, "config.json", "{\"v\": 1}");
    assert_int_equal(mt_bundle_target_commit(&t), 0);
    char *s = member_text(out, "config.json");
    assert_string_equal(s, "{\"v\": 1}");
    free(s);

    /* not over it unasked, and nothing left behind */
    assert_int_equal(mt_bundle_target_begin(&t, out, 0), MT_BUNDLE_TARGET_EXISTS);
    expect_error("new: already exists and holds a model bundle; not overwritten");
    assert_null(t.tmp);

    /* asked: replaced whole (the old member not kept beside the new ones) */
    write_member(out, "old_only.tsv", "x");
    assert_int_equal(mt_bundle_target_begin(&t, out, 1), 0);
    write_member(t.tmp, "config.json", "{\"v\": 2}");
    assert_int_equal(mt_bundle_target_commit(&t), 0);
    s = member_text(out, "config.json");
    assert_string_equal(s, "{\"v\": 2}");
    free(s);
    assert_null(member_text(out, "old_only.tsv"));

    /* a failed write discarded: the old bundle stays, no temporary directory is left */
    assert_int_equal(mt_bundle_target_begin(&t, out, 1), 0);
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", t.tmp);
    write_member(t.tmp, "config.json", "{\"v\": 3}");
    mt_bundle_target_discard(&t);
    struct stat sb;
    assert_int_equal(stat(tmp, &sb), -1);
    s = member_text(out, "config.json");
    assert_string_equal(s, "{\"v\": 2}");
    free(s);

    /* never over a directory that is no bundle, even when asked */
    path_in(notes, sizeof notes, "notes");
    assert_int_equal(mkdir(notes, 0777), 0);
    write_member(notes, "todo.txt", "keep");
    assert_int_equal(mt_bundle_target_begin(&t, notes, 1), -1);
    expect_error("notes: holds no config.json: not a model bundle: not replaced");
    write_member(notes, "config.json", "{}");
    char sub[400];
    snprintf(sub, sizeof sub, "%s/steps", notes);
    assert_int_equal(mkdir(sub, 0777), 0);
    assert_int_equal(mt_bundle_target_begin(&t, notes, 1), -1);
    expect_error("notes: holds steps/, which no model bundle holds: not replaced");
    s = member_text(notes, "todo.txt");
    assert_string_equal(s, "keep");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds_refused_without_blocking),
        cmocka_unit_test(test_line_limit_while_reading),
        cmocka_unit_test(test_text_lines_share_the_limit),
        cmocka_unit_test(test_bundle_target),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
