/* libFuzzer target for `mtlab data import` (engine/data/import.c, manifest.c): a plain
 * two-file or a TSV corpus into a dataset directory. The input's first byte picks the options
 * (bit 0: TSV; bits 1-2: valid pairs 0, 1, 3 or auto; bit 3: 2 test pairs; bit 4: at most 4
 * words a side; bit 5: TSV columns 2,1; bits 6-7: the seed); the rest is the corpus, for two
 * files cut at the first "\n@@\n" (source before, target after).
 *
 * An import either fails with a message and leaves no dataset, or: every split file has as many
 * lines as its split's count, which the manifest repeats (filters, splits, files); every line is
 * valid UTF-8 in NFC, non-empty, without control characters, tabs or edge spaces; the bad-line
 * callback ran once per bad line; and importing the written splits again keeps every pair,
 * changes none, and writes them back in the same order.
 * Build and run: make fuzz (see the Makefile). */
#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"

#include <ftw.h>
#include <jansson.h>
#include "fuzz_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>

static const char *const SPLITS[3] = {"train", "valid", "test"};
static const char *const LANGS[2] = {"de", "en"};
static char root[64];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir) { nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

static size_t bad_calls;

static void on_bad_line(void *ud, const char *file, size_t line, const char *problem)
{
    (void)ud;
    CHECK(file && line >= 1 && problem && problem[0]);
    bad_calls++;
}

/* Lines of a written split file (0 when absent), each checked as a cleaned line. */
static size_t check_lines(const char *path, int text)
{
    size_t len;
    char *buf = fuzz_read_file(path, &len);
    if (!buf) return 0;
    CHECK(len > 0 && buf[len - 1] == '\n');
    size_t lines = 0;
    for (char *p = buf; p < buf + len;) {
        char *nl = memchr(p, '\n', (size_t)(buf + len - p));
        size_t n = (size_t)(nl - p);
        lines++;
        if (text) {
            CHECK(n > 0 && p[0] != ' ' && p[n - 1] != ' ');
            CHECK(mt_utf8_invalid_offset(p, n) == n);
            for (size_t at = 0; at < n;) {
                uint32_t cp;
                int k = mt_utf8_next(p + at, n - at, &cp);
                CHECK(k > 0);
                CHECK(utf8proc_category((utf8proc_int32_t)cp) != UTF8PROC_CATEGORY_CC &&
                      cp != 0xFEFF);
                CHECK(!(cp == ' ' && at + 1 < n && p[at + 1] == ' '));
                at += (size_t)k;
            }
            utf8proc_uint8_t *nfc = NULL;
            utf8proc_ssize_t got =
                utf8proc_map((const utf8proc_uint8_t *)p, (utf8proc_ssize_t)n, &nfc,
                             (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
            CHECK(got == (utf8proc_ssize_t)n && memcmp(nfc, p, n) == 0);
            free(nfc);
        }
        p = nl + 1;
    }
    free(buf);
    return lines;
}

static json_int_t manifest_int(json_t *m, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(json_object_get(m, a), b);
    if (c) v = json_object_get(v, c);
    CHECK(json_is_integer(v));
    return json_integer_value(v);
}

/* The split files of dir concatenated, one language side. */
static char *concat_splits(const char *dir, int side, size_t *len)
{
    char *all = calloc(1, 1);
    *len = 0;
    for (int s = 0; s < 3; s++) {
        char path[128];
        size_t n;
        snprintf(path, sizeof path, "%s/%s.%s", dir, SPLITS[s], LANGS[side]);
        char *part = fuzz_read_file(path, &n);
        if (!part) continue;
        all = realloc(all, *len + n + 1);
        memcpy(all + *len, part, n + 1);
        *len += n;
        free(part);
    }
    return all;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (!root[0]) fuzz_scratch_dir(root, sizeof root, "mtlab-fuzz-import-");
    char in_src[96], in_tgt[96], out[96], again[96];
    snprintf(in_src, sizeof in_src, "%s/corpus.src", root);
    snprintf(in_tgt, sizeof in_tgt, "%s/corpus.tgt", root);
    snprintf(out, sizeof out, "%s/out", root);
    snprintf(again, sizeof again, "%s/again", root);
    remove_tree(out);
    remove_tree(again);

    uint8_t mode = data[0];
    const uint8_t *body = data + 1;
    size_t body_len = size - 1;
    int tsv = mode & 1;
    mt_import_source source = {in_src, NULL, 1, 2};
    if (tsv) {
        fuzz_write_file(in_src, body, body_len);
        if (mode & 32) source.src_col = 2, source.tgt_col = 1;
    } else {
        static const char cut[] = "\n@@\n";
        const uint8_t *at = memmem(body, body_len, cut, sizeof cut - 1);
        size_t first = at ? (size_t)(at - body) : body_len;
        fuzz_write_file(in_src, body, first);
        fuzz_write_file(in_tgt, at ? at + sizeof cut - 1 : body + body_len,
                        at ? body_len - first - (sizeof cut - 1) : 0);
        source.tgt = in_tgt;
    }
    static const size_t valid_ns[4] = {0, 1, 3, MT_SPLIT_AUTO};
    mt_import_opts o = {0};
    o.sources = &source;
    o.n_sources = 1;
    o.src_lang = LANGS[0];
    o.tgt_lang = LANGS[1];
    o.valid_n = valid_ns[(mode >> 1) & 3];
    o.test_n = mode & 8 ? 2 : 0;
    o.max_words = mode & 16 ? 4 : 0;
    o.seed = (uint64_t)(mode >> 6);
    o.bad_line = on_bad_line;

    mt_import_counts c;
    bad_calls = 0;
    mt_clear_error();
    char manifest_path[128];
    snprintf(manifest_path, sizeof manifest_path, "%s/%s", out, MT_MANIFEST_FILE);
    if (mt_dataset_import(&o, out, &c) != 0) {
        CHECK(mt_last_error()[0]);
        CHECK(access(manifest_path, F_OK) != 0);
        return 0;
    }
    CHECK(bad_calls == c.bad_line);
    CHECK(c.kept > 0);
    CHECK(c.read == c.bad_line + c.empty + c.too_long + c.ratio + c.duplicate + c.overlap + c.kept);
    CHECK(c.split[0] + c.split[1] + c.split[2] == c.kept);
    CHECK(c.overlap == 0 && c.split[0] > 0);

    json_error_t jerr;
    json_t *m = json_load_file(manifest_path, 0, &jerr);
    CHECK(m);
    static const char *const filters[] = {"read",        "bad_line",       "empty",   "too_long",
                                          "ratio",       "duplicate",      "overlap", "kept",
                                          "nfc_changed", "control_removed"};
    const size_t counted[] = {c.read,      c.bad_line, c.empty, c.too_long,    c.ratio,
                              c.duplicate, c.overlap,  c.kept,  c.nfc_changed, c.control_removed};
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        CHECK(manifest_int(m, "filters", filters[i], NULL) == (json_int_t)counted[i]);
    for (int s = 0; s < 3; s++) {
        char name[32], path[128];
        for (int side = 0; side < 3; side++) {
            const char *ext = side < 2 ? LANGS[side] : "keys";
            snprintf(name, sizeof name, "%s.%s", SPLITS[s], ext);
            snprintf(path, sizeof path, "%s/%s", out, name);
            CHECK(check_lines(path, side < 2) == c.split[s]);
            if (c.split[s])
                CHECK(manifest_int(m, "files", name, "lines") == (json_int_t)c.split[s]);
            else CHECK(!json_object_get(json_object_get(m, "files"), name));
        }
        if (c.split[s])
            CHECK(manifest_int(m, "splits", SPLITS[s], "pairs") == (json_int_t)c.split[s]);
    }
    json_decref(m);

    /* the written splits imported again: every pair kept as it is, in the same order */
    char paths[3][2][128];
    mt_import_source again_src[3];
    size_t n_again = 0;
    for (int s = 0; s < 3; s++) {
        if (!c.split[s]) continue;
        for (int side = 0; side < 2; side++)
            snprintf(paths[s][side], sizeof paths[s][side], "%s/%s.%s", out, SPLITS[s],
                     LANGS[side]);
        again_src[n_again++] = (mt_import_source){paths[s][0], paths[s][1], 0, 0};
    }
    mt_import_opts o2 = o;
    o2.sources = again_src;
    o2.n_sources = n_again;
    o2.valid_n = o2.test_n = 0;
    mt_import_counts c2;
    bad_calls = 0;
    if (mt_dataset_import(&o2, again, &c2) != 0) {
        fprintf(stderr, "second import failed: %s\n", mt_last_error());
        CHECK(0);
    }
    CHECK(c2.read == c.kept && c2.kept == c.kept && c2.split[0] == c.kept);
    CHECK(c2.bad_line == 0 && c2.nfc_changed == 0 && c2.control_removed == 0 && bad_calls == 0);
    for (int side = 0; side < 2; side++) {
        size_t la, lb;
        char *a = concat_splits(out, side, &la), *b = concat_splits(again, side, &lb);
        CHECK(la == lb && memcmp(a, b, la) == 0);
        free(a);
        free(b);
    }
    return 0;
}
