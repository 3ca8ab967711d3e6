/* A dataset: a directory of aligned splits named by language and a manifest.
 *
 *   DIR/train.SRC  DIR/train.TGT  DIR/train.keys     one pair per line; .keys names each
 *   DIR/valid.SRC  DIR/valid.TGT  DIR/valid.keys     line's origin ("corpus.de:17")
 *   DIR/test.SRC   DIR/test.TGT   DIR/test.keys
 *   DIR/manifest.json    languages, sources, every filter's count, sizes and SHA-256 hashes
 *
 * `mtlab data import` (mt_dataset_import) makes one from any parallel corpus; `mtlab data
 * bible` writes the same layout for es/en (mtlab/bible.h). Readers (the tokenizer trainer, a
 * training config's `dataset = DIR`, eval) take the languages from mt_dataset_open, never from
 * a file's extension. docs/data.md §10 lists the cleaning steps. */
#ifndef MTLAB_DATASET_H
#define MTLAB_DATASET_H

#include <stddef.h>
#include <stdint.h>

enum { MT_LANG_MAX = 36 };
#define MT_SPLIT_AUTO \
    ((size_t)-1) /* bytes of a language tag with its NUL: "de", "pt-BR", "sr-Latn-RS" */

#define MT_MANIFEST_FILE "manifest.json"
#define MT_MANIFEST_FORMAT "mtlab-dataset 1"
/* A dataset directory made before manifests existed (the Bible's data/bible of older builds)
 * reads as this pair when it holds train.es and train.en. */
#define MT_DEFAULT_SRC_LANG "es"
#define MT_DEFAULT_TGT_LANG "en"

/* 0 when tag has the shape of a BCP-47 tag (a 2-3 or 4-8 letter language subtag, then
 * subtags of 1-8 letters or digits, hyphen-separated, as "de", "gsw", "pt-BR", "zh-Hant"),
 * else -1 with "language 'x_y': not a BCP-47 tag (e.g. de, en, pt-BR)". */
int mt_lang_check(const char *tag);

/* ---------------------------------------------------------------- reading a dataset */
typedef struct {
    char dir[4096];
    char src_lang[MT_LANG_MAX], tgt_lang[MT_LANG_MAX];
    int has_manifest; /* 0: an old directory read with the default languages */
} mt_dataset;

/* Read DIR/manifest.json (format, src_lang, tgt_lang); without one, a directory holding
 * train.es and train.en is the default es/en pair. Errors name the file and key, or say what
 * the directory lacks. */
int mt_dataset_open(mt_dataset *d, const char *dir);
/* "DIR/SPLIT.LANG" of one side (target 0: source) into out; -1 when it does not fit. */
int mt_dataset_path(const mt_dataset *d, const char *split, int target, char *out, size_t len);

/* ---------------------------------------------------------------- importing */
typedef struct {
    const char *src, *tgt; /* two aligned plain-text files, or src = a TSV file and tgt = NULL */
    int src_col, tgt_col; /* TSV: 1-based columns */
} mt_import_source;

/* What happened to the lines, per the manifest's "filters" (every dropped pair is in one). */
typedef struct {
    size_t read; /* pairs read from the training sources */
    size_t bad_line; /* invalid UTF-8, or a TSV line without the columns */
    size_t empty; /* a side empty after cleaning */
    size_t too_long; /* a side over max_words words */
    size_t ratio; /* character-length ratio over max_ratio */
    size_t duplicate; /* the same pair (after cleaning) seen before */
    size_t overlap; /* a pair of the given valid or test files */
    size_t kept; /* read - the six above */
    size_t nfc_changed; /* pairs whose text NFC normalisation changed (kept or not) */
    size_t control_removed; /* pairs that had control characters removed (tabs become spaces) */
    size_t split[3]; /* pairs written to train, valid, test */
} mt_import_counts;

typedef struct {
    const mt_import_source *sources; /* (n_sources) training data, concatenated in order */
    size_t n_sources;
    const char *src_lang, *tgt_lang; /* BCP-47 tags, different */
    /* valid and test: given as files (valid_files[0] source, [1] target: kept whole, cleaned
     * of control characters and NFC-normalised only), or split off the training data: a count
     * (valid_n) or, when valid_n is 0, a fraction (valid_frac) of the kept pairs, chosen with
     * seed; neither: nothing. valid_n = MT_SPLIT_AUTO: 5% of the kept pairs, at most 1000. */
    const char *valid_files[2], *test_files[2];
    size_t valid_n, test_n;
    double valid_frac, test_frac;
    uint64_t seed;
    size_t max_words; /* a side with more whitespace-separated words is dropped (0: 250) */
    double max_ratio; /* longer/shorter side in characters, when the longer has >= 10 (0: 3) */
    /* called for every line dropped as bad, with its file and line (1-based) */
    void (*bad_line)(void *ud, const char *file, size_t line, const char *problem);
    /* bytes of the sources read so far, of total */
    void (*progress)(void *ud, size_t done, size_t total);
    void *ud;
} mt_import_opts;

/* Read, clean, filter, deduplicate and split, then write DIR's split files, .keys and
 * manifest.json (all to temporary names, renamed into place only once every file was
 * written). Files of two-file sources must have the same number of lines. 0 or -1. */
int mt_dataset_import(const mt_import_opts *opts, const char *dir, mt_import_counts *counts);

/* One line of text cleaned as the importer cleans it: control characters removed (tab, and
 * any Unicode space, becomes a space), whitespace runs collapsed and trimmed, NFC. Returns a
 * malloc'd string, or NULL with "invalid UTF-8 at byte N". flags (when not NULL) gets
 * MT_CLEAN_NFC and MT_CLEAN_CONTROL for what changed. */
enum { MT_CLEAN_NFC = 1, MT_CLEAN_CONTROL = 2 };
char *mt_text_clean(const char *text, size_t len, int *flags);

#endif
