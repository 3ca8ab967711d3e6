/* Finding the project's own files (scripts/, themes/, models/, data/) whether mtlab runs from
 * the repository root, from another directory, or as a binary built elsewhere (build/x/mtlab). */
#ifndef MTLAB_APP_PATHS_H
#define MTLAB_APP_PATHS_H

#include <stddef.h>

/* Locate the project-relative resource rel ("scripts/data/bible_exclude.tsv"): first under the
 * current directory, then under the directory of the running executable (/proc/self/exe) and
 * up to three of its parents. Writes the path found to out; 0, or -1 with mt_last_error()
 * saying where it looked. */
int cli_find_resource(const char *rel, char *out, size_t out_len);

#endif
