/* The workbench's entry point, for app/cli/cmd_tui.c (and `mtlab` with no arguments). */
#ifndef MTLAB_TUI_H
#define MTLAB_TUI_H

#include <stddef.h>

#include "tui/layout.h"

typedef struct {
    const char *dirs[TUI_MAX_PANES]; /* bundle directories, one pane each */
    const char *devices[TUI_MAX_PANES]; /* the device of each: the --device before it (NULL: cpu) */
    int n_dirs;
    const char *device; /* the last --device given: later bundles and the picker (NULL: cpu) */
    int precision[TUI_MAX_PANES]; /* how the linear layers of that pane's model run (runner
                                   * flags: 0, MT_RUNNER_INT8, MT_RUNNER_BF16; the
                                   * --precision before its -m) */
    int precision_flags; /* the last --precision given: later bundles and the picker */
    const char *theme; /* a name in themes/ or a file path; NULL: the default */
    int beam; /* 1: greedy (default), else beam search with this many beams */
    int ascii; /* ASCII glyphs even in a UTF-8 locale */
    int no_mouse;
    const char *models_root; /* where the picker looks for bundles (NULL: models/) */
    const char *empty_hint; /* shown when no pane is open */
    const char *warning; /* logged as a warning at start (NULL: none) */
    const char *script; /* a Lua file the console runs at start (NULL: none) */
    const char *refs; /* reference lines for the segments (--refs; NULL: none) */
    const char *comet; /* a COMET model (mtlab/comet.h) scoring each segment against its
                        * reference beside BLEU and chrF (--comet DIR; NULL: none) */
} tui_options;

/* The bundles (directories holding a config.json) in root, or when root is NULL in the
 * project's models/ (cli_find_resource), malloc'd: those root/panes.txt names (one per line, '#'
 * comments) first in its order, the rest sorted. models_dir (when not NULL) receives the directory
 * searched; problem (when not NULL) receives the first panes.txt name that is no bundle there, or
 * "". Returns their number. */
int tui_default_bundles(char ***dirs, const char *root, char *models_dir, size_t len, char *problem,
                        size_t plen);

/* The bundle directory a typed path names, into out: a leading ~ or ~/ is $HOME, a relative
 * path is taken from the working directory, a path to a bundle's config.json is its directory.
 * 0, or -1 with an error naming the path and the problem (no such directory, not a directory,
 * no config.json in it). */
int tui_bundle_path(const char *typed, char *out, size_t len);

/* Run the workbench until the user quits. 0, or 1 after printing why it could not start. */
int tui_run(const tui_options *o);

#endif
