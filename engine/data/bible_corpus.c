/* Joining the two modules on the verse key, the book split, 8-verse runs, complete chapters. */
#include "mtlab/bible.h"
#include "mtlab/error.h"

#include "data/strmap.h"
#include "core/textbuf.h"

#include <stdlib.h>
#include <string.h>

/* Whole books held out (docs/data.md §4): parallel passages cannot leak from train; the Gospels and
 * Kings/Chronicles, which repeat each other, all stay in train. */
static const char *const valid_books[] = {"Ruth",       "Joel",    "Habakkuk",
                                          "Zephaniah",  "Haggai",  "Galatians",
                                          "Colossians", "I Peter", "Jude"};
static const char *const test_books[] = {"Esther",      "Ecclesiastes", "Micah", "Nahum", "Obadiah",
                                         "Philippians", "Titus",        "James", "I John"};

mt_split mt_bible_split_of(const char *book)
{
    for (size_t i = 0; i < sizeof valid_books / sizeof valid_books[0]; i++)
        if (strcmp(book, valid_books[i]) == 0) return MT_SPLIT_VALID;
    for (size_t i = 0; i < sizeof test_books / sizeof test_books[0]; i++)
        if (strcmp(book, test_books[i]) == 0) return MT_SPLIT_TEST;
    return MT_SPLIT_TRAIN;
}

const char *mt_split_name(mt_split split)
{
    static const char *const names[MT_SPLIT_COUNT] = {"train", "valid", "test"};
    return split < MT_SPLIT_COUNT ? names[split] : "?";
}

static int same_chapter(const mt_verse *a, const mt_verse *b)
{
    return a->chapter == b->chapter && strcmp(a->book, b->book) == 0;
}

size_t mt_bible_windows(const mt_pair *pairs, size_t n, size_t width, mt_span *out)
{
    size_t count = 0, run_start = 0;
    for (size_t i = 1; i <= n; i++) {
        int continues = i < n && same_chapter(pairs[i - 1].es, pairs[i].es) &&
                        pairs[i].es->verse == pairs[i - 1].es->verse + 1;
        if (continues) continue;
        for (size_t s = run_start; width > 0 && s + width <= i; s += width)
            out[count++] = (mt_span){s, width};
        run_start = i;
    }
    return count;
}

/* Verses with text per chapter of a module, keyed "Book C". An empty verse carries nothing to
 * miss (WEB keeps empty III John 1:15 and Revelation 12:18 where its text ends a verse early). */
static void count_chapter_verses(const mt_verse_list *list, strmap *counts, textbuf *key)
{
    for (size_t i = 0; i < list->n; i++) {
        if (!list->items[i].text[0]) continue;
        key->n = 0;
        textbuf_append(key, list->items[i].key, strlen(list->items[i].key));
        key->n = (size_t)(strrchr(key->p, ':') - key->p);
        (*strmap_put(counts, key->p, key->n, 0, NULL))++;
    }
}

/* Spans of the pairs that cover every verse with text of their chapter in both modules. */
static size_t complete_chapters(const mt_verse_list *es, const mt_verse_list *en,
                                const mt_pair *pairs, size_t n, mt_span *out)
{
    strmap es_count = {0}, en_count = {0};
    textbuf key = {0};
    count_chapter_verses(es, &es_count, &key);
    count_chapter_verses(en, &en_count, &key);
    size_t count = 0, start = 0;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && same_chapter(pairs[start].es, pairs[i].es)) continue;
        key.n = 0;
        textbuf_append(&key, pairs[start].es->key, strlen(pairs[start].es->key));
        key.n = (size_t)(strrchr(key.p, ':') - key.p);
        const size_t *in_es = strmap_get(&es_count, key.p, key.n),
                     *in_en = strmap_get(&en_count, key.p, key.n);
        if (in_es && in_en && *in_es == i - start && *in_en == i - start)
            out[count++] = (mt_span){start, i - start};
        start = i;
    }
    strmap_free(&es_count);
    strmap_free(&en_count);
    free(key.p);
    return count;
}

static void index_keys(const mt_verse_list *list, strmap *map)
{
    for (size_t i = 0; i < list->n; i++)
        strmap_put(map, list->items[i].key, strlen(list->items[i].key), i, NULL);
}

/* Every excluded key must exist in both modules: a key that matches nothing means the list and
 * the modules have drifted apart, and the totals would silently change. */
static int check_exclusions(const mt_exclusions *ex, const strmap *es_keys, const strmap *en_keys)
{
    for (size_t i = 0; i < ex->n; i++) {
        size_t klen = strlen(ex->keys[i]);
        int in_es = strmap_get(es_keys, ex->keys[i], klen) != NULL,
            in_en = strmap_get(en_keys, ex->keys[i], klen) != NULL;
        if (!in_es || !in_en)
            return mt_error("%s: line %zu: excluded key '%s' is not a verse of %s", ex->path,
                            ex->lines[i], ex->keys[i],
                            !in_es && !in_en ? "either module"
                            : !in_es         ? "the Spanish module"
                                             : "the English module");
    }
    return 0;
}

static int join(const mt_verse_list *es, const mt_verse_list *en, const mt_exclusions *ex,
                mt_bible_corpus *c)
{
    strmap es_keys = {0}, en_keys = {0}, excluded = {0};
    index_keys(es, &es_keys);
    index_keys(en, &en_keys);
    int rc = check_exclusions(ex, &es_keys, &en_keys);
    for (size_t i = 0; i < ex->n; i++)
        strmap_put(&excluded, ex->keys[i], strlen(ex->keys[i]), i, NULL);
    c->pairs = mt_xcalloc(es->n ? es->n : 1, sizeof *c->pairs);
    for (size_t i = 0; rc == 0 && i < es->n; i++) {
        const mt_verse *v = &es->items[i];
        size_t klen = strlen(v->key);
        const size_t *e = strmap_get(&en_keys, v->key, klen);
        if (!e) {
            c->n_es_only++;
            continue;
        }
        c->n_common++;
        if (strmap_get(&excluded, v->key, klen)) {
            c->n_excluded++;
            continue;
        }
        const mt_verse *w = &en->items[*e];
        if (!v->text[0] || !w->text[0]) {
            rc = mt_error("%s: the %s text is empty but the key is not in the exclusion list %s",
                          v->key, !v->text[0] ? "Spanish" : "English", ex->path);
            break;
        }
        mt_split split = mt_bible_split_of(v->book);
        c->pairs[c->n_pairs++] = (mt_pair){v, w, split};
        c->split_pairs[split]++;
    }
    c->n_en_only = en->n - c->n_common;
    if (rc == 0 && (c->n_excluded != ex->n || c->n_pairs != c->n_common - ex->n))
        rc = mt_error("%s: %zu keys listed but %zu excluded, leaving %zu pairs of %zu common keys",
                      ex->path, ex->n, c->n_excluded, c->n_pairs, c->n_common);
    strmap_free(&es_keys);
    strmap_free(&en_keys);
    strmap_free(&excluded);
    return rc;
}

int mt_bible_build(const mt_verse_list *es, const mt_verse_list *en, const mt_exclusions *ex,
                   mt_bible_corpus *out)
{
    *out = (mt_bible_corpus){0};
    if (join(es, en, ex, out) < 0) {
        mt_bible_corpus_free(out);
        return -1;
    }
    mt_span *para = mt_xmalloc((out->n_pairs / MT_BIBLE_PARA_VERSES + 1) * sizeof *para);
    mt_span *chapters = mt_xmalloc((out->n_pairs + 1) * sizeof *chapters);
    size_t n_para = mt_bible_windows(out->pairs, out->n_pairs, MT_BIBLE_PARA_VERSES, para);
    size_t n_chapters = complete_chapters(es, en, out->pairs, out->n_pairs, chapters);
    /* spans never cross a book, so each belongs to the split of its first pair */
    for (int s = 0; s < MT_SPLIT_COUNT; s++) {
        out->para[s] = mt_xmalloc((n_para + 1) * sizeof *out->para[s]);
        out->chapters[s] = mt_xmalloc((n_chapters + 1) * sizeof *out->chapters[s]);
    }
    for (size_t i = 0; i < n_para; i++) {
        mt_split s = out->pairs[para[i].first].split;
        out->para[s][out->n_para[s]++] = para[i];
    }
    for (size_t i = 0; i < n_chapters; i++) {
        mt_split s = out->pairs[chapters[i].first].split;
        out->chapters[s][out->n_chapters[s]++] = chapters[i];
    }
    free(para);
    free(chapters);
    return 0;
}

void mt_bible_corpus_free(mt_bible_corpus *c)
{
    free(c->pairs);
    for (int s = 0; s < MT_SPLIT_COUNT; s++) {
        free(c->para[s]);
        free(c->chapters[s]);
    }
    *c = (mt_bible_corpus){0};
}
