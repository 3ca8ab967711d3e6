/* A model bundle small enough to load, translate and probe in milliseconds: a tokenizer
 * trained on the fixture corpus (tests/fixtures/tokenizer) and a random two-layer Mamba. */
#ifndef MTLAB_TEST_TINY_BUNDLE_H
#define MTLAB_TEST_TINY_BUNDLE_H

#include <stddef.h>

/* Write the bundle to the directory dir/mamba (dir must exist) and its path into bundle.
 * 0, or -1 (mt_last_error). */
int test_tiny_bundle(const char *dir, char *bundle, size_t len);
/* The same model as dir/name, its config.json recording the direction src_lang -> tgt_lang
 * (both NULL: none, as a bundle made before bundles recorded it); the tokenizer dir/spm.model
 * is trained once and shared. */
int test_tiny_bundle_langs(const char *dir, const char *name, const char *src_lang,
                           const char *tgt_lang, char *bundle, size_t len);

/* n malloc'd copies of Genesis 1:1, 1:3 and 1:4 in turn, for a worker to translate (it takes
 * the array and the strings). */
char **test_verses(int n);

#endif
