/* A dataset's manifest: writing it over the files of an out_set, reading its languages back,
 * and the language-tag check (mtlab/dataset.h). */
#include "data/manifest.h"
#include "data/sha256.h"
#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/files.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const SPLITS[] = {"train", "valid", "test"};

int mt_lang_check(const char *tag)
{
    size_t n = strlen(tag), at = 0, part = 0;
    int ok = n > 0 && n < MT_LANG_MAX;
    while (ok && at < n) {
        size_t len =
            strspn(tag + at, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
        if (part == 0) {
            for (size_t i = 0; i < len; i++) ok &= isalpha((unsigned char)tag[at + i]) != 0;
            ok &= (len >= 2 && len <= 3) || (len >= 4 && len <= 8);
        } else {
            ok &= len >= 1 && len <= 8;
        }
        at += len;
        if (at < n) ok &= tag[at] == '-' && at + 1 < n;
        at++;
        part++;
    }
    return ok ? 0 : mt_error("language '%s': not a BCP-47 tag (e.g. de, en, pt-BR)", tag);
}

/* Bytes, lines, words and SHA-256 of a written (closed) file. */
static json_t *file_facts(const char *path, const char *name, size_t *lines_out, size_t *words_out)
{
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) {
        mt_error_context("%s: cannot read back", name);
        return NULL;
    }
    sha256_ctx c;
    sha256_init(&c);
    unsigned char buf[65536];
    size_t got, lines = 0, words = 0, bytes = 0;
    int in_word = 0;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        sha256_update(&c, buf, got);
        bytes += got;
        for (size_t i = 0; i < got; i++) {
            int space = buf[i] == ' ' || buf[i] == '\n';
            lines += buf[i] == '\n';
            words += !space && !in_word;
            in_word = !space;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        mt_error("%s: read error", name);
        return NULL;
    }
    char hex[65];
    sha256_hex(&c, hex);
    *lines_out = lines;
    *words_out = words;
    return json_pack("{s:I, s:I, s:s}", "bytes", (json_int_t)bytes, "lines", (json_int_t)lines,
                     "sha256", hex);
}

int manifest_write(out_set *set, const char *dir, const char *src_lang, const char *tgt_lang,
                   json_t *info)
{
    json_t *m = json_pack("{s:s, s:s, s:s}", "format", MT_MANIFEST_FORMAT, "src_lang", src_lang,
                          "tgt_lang", tgt_lang);
    json_object_update(m, info);
    json_decref(info);
    json_t *files = json_object(), *splits = json_object();
    json_object_set_new(m, "splits", splits);
    json_object_set_new(m, "files", files);
    int rc = out_close_all(set);
    for (size_t i = 0; i < set->n && rc == 0; i++) {
        const out_file *o = &set->files[i];
        size_t lines, words;
        json_t *facts = file_facts(o->tmp, o->final, &lines, &words);
        if (!facts) {
            rc = -1;
            break;
        }
        json_object_set_new(files, o->name, facts);
        for (int s = 0; s < 3; s++)
            for (int side = 0; side < 2; side++) {
                char want[64];
                snprintf(want, sizeof want, "%s.%s", SPLITS[s], side ? tgt_lang : src_lang);
                if (strcmp(o->name, want) != 0) continue;
                json_t *split = json_object_get(splits, SPLITS[s]);
                if (!split) json_object_set_new(splits, SPLITS[s], split = json_object());
                json_object_set_new(split, "pairs", json_integer((json_int_t)lines));
                char key[MT_LANG_MAX + 8];
                snprintf(key, sizeof key, "%s_words", side ? "tgt" : "src");
                json_object_set_new(split, key, json_integer((json_int_t)words));
            }
    }
    FILE *f = rc == 0 ? out_open(set, dir, MT_MANIFEST_FILE) : NULL;
    if (f && (json_dumpf(m, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF))
        rc = mt_error("%s/%s: write error", dir, MT_MANIFEST_FILE);
    if (!f) rc = -1;
    json_decref(m);
    if (rc) set->failed = 1;
    return rc;
}

int mt_dataset_path(const mt_dataset *d, const char *split, int target, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%s.%s", d->dir, split, target ? d->tgt_lang : d->src_lang);
    return n < 0 || (size_t)n >= len ? mt_error("%s: path too long", d->dir) : 0;
}

static int read_lang(const char *path, json_t *m, const char *key, char *out)
{
    json_t *v = json_object_get(m, key);
    if (!json_is_string(v))
        return mt_error("%s: key '%s' must be a language tag such as \"de\"", path, key);
    if (mt_lang_check(json_string_value(v)) < 0) return mt_error_context("%s: key '%s'", path, key);
    snprintf(out, MT_LANG_MAX, "%s", json_string_value(v));
    return 0;
}

int mt_dataset_open(mt_dataset *d, const char *dir)
{
    memset(d, 0, sizeof *d);
    if ((size_t)snprintf(d->dir, sizeof d->dir, "%s", dir) >= sizeof d->dir)
        return mt_error("%s: path too long", dir);
    char path[sizeof d->dir + 32];
    snprintf(path, sizeof path, "%s/%s", dir, MT_MANIFEST_FILE);
    if (access(path, F_OK) != 0) {
        char es[sizeof d->dir + 32], en[sizeof d->dir + 32];
        snprintf(es, sizeof es, "%s/train.%s", dir, MT_DEFAULT_SRC_LANG);
        snprintf(en, sizeof en, "%s/train.%s", dir, MT_DEFAULT_TGT_LANG);
        if (access(es, R_OK) != 0 || access(en, R_OK) != 0)
            return mt_error("%s: not a dataset (no %s; make one with `mtlab data import` or `mtlab "
                            "data bible`)",
                            dir, MT_MANIFEST_FILE);
        snprintf(d->src_lang, sizeof d->src_lang, "%s", MT_DEFAULT_SRC_LANG);
        snprintf(d->tgt_lang, sizeof d->tgt_lang, "%s", MT_DEFAULT_TGT_LANG);
        return 0;
    }
    json_error_t err;
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return -1;
    json_t *m = json_loadf(f, 0, &err);
    fclose(f);
    if (!m) return mt_error("%s:%d: %s", path, err.line, mt_error_oneline(err.text));
    int rc = 0;
    json_t *format = json_object_get(m, "format");
    if (!json_is_object(m) || !json_is_string(format) ||
        strcmp(json_string_value(format), MT_MANIFEST_FORMAT) != 0)
        rc = mt_error("%s: key 'format' must be \"%s\"", path, MT_MANIFEST_FORMAT);
    if (rc == 0) rc = read_lang(path, m, "src_lang", d->src_lang);
    if (rc == 0) rc = read_lang(path, m, "tgt_lang", d->tgt_lang);
    json_decref(m);
    d->has_manifest = rc == 0;
    return rc;
}
