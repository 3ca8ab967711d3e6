/* `mtlab tui` (and `mtlab` with no arguments): the workbench. Without -m it opens the bundles
 * under models/ (or --models DIR); with none there it still opens, saying how to get some.
 * --script runs a Lua file in the console at start (a lesson of scripts/demo/). */
#include "cli/commands.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/runner.h"
#include "tui/tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv)
{
    tui_options o = {.beam = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_value) {
            if (o.n_dirs == TUI_MAX_PANES)
                return cli_fail("tui: at most %d models (-m) side by side", TUI_MAX_PANES);
            o.devices[o.n_dirs] = o.device;
            o.precision[o.n_dirs] = o.precision_flags;
            o.dirs[o.n_dirs++] = argv[++i];
        } else if (!strcmp(a, "--device") && has_value) {
            o.device = argv[++i];
        } else if (!strcmp(a, "--precision") && has_value) {
            int flags = mt_runner_precision_flags(argv[++i]);
            if (flags < 0) return cli_fail("tui: %s", mt_last_error());
            o.precision_flags = flags;
        } else if (!strcmp(a, "--models") && has_value) {
            o.models_root = argv[++i];
        } else if (!strcmp(a, "--theme") && has_value) {
            o.theme = argv[++i];
        } else if (!strcmp(a, "--beam") && has_value) {
            if (cli_option_int("tui", a, argv[++i], 1, MT_DECODE_MAX_BEAM, &o.beam)) return 2;
        } else if (!strcmp(a, "--refs") && has_value) {
            o.refs = argv[++i];
        } else if (!strcmp(a, "--comet") && has_value) {
            o.comet = argv[++i];
        } else if (!strcmp(a, "--script") && has_value) {
            o.script = argv[++i];
        } else if (!strcmp(a, "--ascii")) {
            o.ascii = 1;
        } else if (!strcmp(a, "--no-mouse")) {
            o.no_mouse = 1;
        } else {
            fprintf(stderr, "mtlab tui: unknown or incomplete argument '%s'\n", a);
            return cli_usage(&cmd_tui);
        }
    }
    char **defaults = NULL;
    int n_defaults = 0;
    char models_dir[4096], hint[4600], problem[4600];
    if (o.n_dirs == 0) {
        n_defaults = tui_default_bundles(&defaults, o.models_root, models_dir, sizeof models_dir,
                                         problem, sizeof problem);
        if (problem[0]) o.warning = problem;
        for (int i = 0; i < n_defaults && o.n_dirs < TUI_DEFAULT_PANES; i++) {
            o.devices[o.n_dirs] = o.device;
            o.precision[o.n_dirs] = o.precision_flags;
            o.dirs[o.n_dirs++] = defaults[i];
        }
        if (n_defaults == 0) {
            snprintf(hint, sizeof hint,
                     "No models yet: %s/ holds no bundle (a directory with config.json, "
                     "model.safetensors and tokenizer.model). Train one with `./mtlab train "
                     "scripts/train/mamba-small.lua` and copy runs/mamba-small/best to "
                     "models/mamba-small, or open bundles from elsewhere with `./mtlab tui -m DIR "
                     "-m DIR`. F5 opens the bundle picker; you can type text now.",
                     models_dir);
            o.empty_hint = hint;
        }
    }
    int rc = tui_run(&o);
    for (int i = 0; i < n_defaults; i++) free(defaults[i]);
    free(defaults);
    return rc;
}

const struct mt_command cmd_tui = {
    .name = "tui",
    .args = "[[--device cpu|cuda[:N]] [--precision fp32|int8|bf16] -m BUNDLE_DIR]... [--models "
            "DIR] [--theme NAME|FILE] [--beam N] [--refs FILE] [--comet DIR] [--ascii] "
            "[--no-mouse] [--script FILE.lua]",
    .summary = "the workbench: models side by side, streaming translation, heatmaps "
               "(also `mtlab` alone)",
    .run = run,
    .parallel = 1,
};
