/* DIR/manifest.json (mtlab/dataset.h): written last into the same out_set as the files it
 * describes, so it is renamed into place with them. */
#ifndef MTLAB_DATA_MANIFEST_H
#define MTLAB_DATA_MANIFEST_H

#include <jansson.h>

#include "data/out_files.h"

/* Close the set's files, then add manifest.json to it: format, src_lang, tgt_lang, the
 * caller's keys of info (sources, filters, ...: stolen), every file's bytes, lines and SHA-256,
 * and per split ("train", "valid", "test" that have files) pairs and words of each language.
 * The caller commits the set. 0 or -1. */
int manifest_write(out_set *set, const char *dir, const char *src_lang, const char *tgt_lang,
                   json_t *info);

#endif
