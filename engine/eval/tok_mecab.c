/* sacreBLEU's ja-mecab tokenizer: MeCab's word segmentation (-Owakati) of the stripped line,
 * stripped again, as TokenizerJaMecab does it with mecab-python3 and PyPI's ipadic 1.0.0.
 *
 * The dictionary is that ipadic's: sacreBLEU refuses any other (it asserts 392,126 entries).
 * Debian's mecab-ipadic holds the same sources plus one entry added in 2019 (令和, which then
 * segments differently); `make` compiles the sources without it into BUILD/mecab-ipadic
 * (scripts/data/mecab_ipadic.sh), whose absolute path is built in here as MTLAB_MECAB_DIC.
 * The environment variable MTLAB_MECAB_DIC names another directory.
 *
 * One tagger for the process, made on first use; MeCab's taggers are not reentrant, so calls
 * take turns under a mutex. */
#include "eval/tok_sacrebleu.h"

#include "mtlab/error.h"

#include <mecab.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MTLAB_MECAB_DIC
#define MTLAB_MECAB_DIC NULL
#endif

/* sacreBLEU's check that the dictionary is IPA (TokenizerJaMecab.__init__). */
#define IPA_ENTRIES 392126

static pthread_mutex_t tagger_lock = PTHREAD_MUTEX_INITIALIZER;
static mecab_t *tagger;

/* The tagger, made on first use; NULL with mt_last_error naming the dictionary. Under tagger_lock.
 */
static mecab_t *tagger_get(void)
{
    if (tagger) return tagger;
    const char *dir = getenv("MTLAB_MECAB_DIC");
    if (!dir || !*dir) dir = MTLAB_MECAB_DIC;
    if (!dir) {
        mt_error("ja-mecab: no MeCab dictionary (set MTLAB_MECAB_DIC to the directory `make` "
                 "builds as BUILD/mecab-ipadic)");
        return NULL;
    }
    /* as ipadic.MECAB_ARGS + " -Owakati": no resource file, the dictionary, words only */
    char *argv[] = {"mtlab", "-r", "/dev/null", "-d", (char *)dir, "-Owakati", NULL};
    mecab_t *m = mecab_new(6, argv);
    if (!m) {
        const char *why = mecab_strerror(NULL);
        mt_error("ja-mecab: %s: %s (make builds the dictionary; MTLAB_MECAB_DIC names another)",
                 dir, why && *why ? why : "MeCab cannot open a dictionary there");
        return NULL;
    }
    const mecab_dictionary_info_t *info = mecab_dictionary_info(m);
    if (!info || info->size != IPA_ENTRIES || info->next) {
        mt_error("ja-mecab: %s: a dictionary of %u entries%s; sacreBLEU's ja-mecab needs the IPA "
                 "dictionary of %d and no user dictionary",
                 dir, info ? info->size : 0, info && info->next ? " with a user dictionary" : "",
                 IPA_ENTRIES);
        mecab_destroy(m);
        return NULL;
    }
    return tagger = m;
}

static char signature[64];

static void signature_fill(void)
{
    snprintf(signature, sizeof signature, "ja-mecab-%s-IPA", mecab_version());
}

const char *mt_mecab_signature(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, signature_fill);
    return signature;
}

int mt_mecab_tokenize(mt_cpbuf *out, const uint32_t *in, size_t n)
{
    size_t a = 0;
    while (a < n && mt_is_py_space(in[a])) a++;
    size_t bytes;
    char *text = mt_utf8_encode(in + a, mt_py_rstrip_len(in + a, n - a), &bytes, NULL);
    mt_cpbuf parsed = {0};
    int rc = -1;
    pthread_mutex_lock(&tagger_lock);
    mecab_t *m = tagger_get();
    const char *words = m ? mecab_sparse_tostr2(m, text, bytes) : NULL;
    if (m && !words) mt_error("ja-mecab: %s", mecab_strerror(m));
    else if (words) rc = mt_utf8_decode(&parsed, words, strlen(words));
    pthread_mutex_unlock(&tagger_lock);
    free(text);
    if (rc == 0) {
        size_t b = 0;
        while (b < parsed.n && mt_is_py_space(parsed.cp[b])) b++;
        size_t end = b + mt_py_rstrip_len(parsed.cp + b, parsed.n - b);
        for (size_t i = b; i < end; i++) mt_cpbuf_push(out, parsed.cp[i]);
    }
    mt_cpbuf_free(&parsed);
    return rc;
}
