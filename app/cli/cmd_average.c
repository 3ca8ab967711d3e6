/* `mtlab average -o OUT BUNDLE...`: checkpoint averaging, one bundle whose weights are the
 * element-wise mean of several bundles of one model (docs/models.md §10.10). */
#include "cli/commands.h"
#include "mtlab/bundle.h"
#include "mtlab/error.h"
#include "mtlab/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run_average(int argc, char **argv)
{
    const char *out = NULL, *dtype_name = NULL;
    const char **dirs = calloc((size_t)argc, sizeof *dirs);
    int n = 0, force = 0;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            dtype_name = argv[++i];
        } else if (!strcmp(argv[i], "--force")) {
            force = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            free(dirs);
            cli_print_usage(stdout, &cmd_average);
            return 0;
        } else if (argv[i][0] == '-') {
            free(dirs);
            fprintf(stderr, "mtlab average: unknown option '%s'\n", argv[i]);
            return cli_usage(&cmd_average);
        } else {
            dirs[n++] = argv[i];
        }
    }
    if (!out || n < 1) {
        free(dirs);
        return cli_usage(&cmd_average);
    }
    int dtype = -1;
    if (dtype_name) {
        mt_dtype dt;
        if (mt_model_save_dtype_parse(dtype_name, &dt) != 0) {
            free(dirs);
            fprintf(stderr, "mtlab average: --dtype: %s\n", mt_last_error());
            return 2;
        }
        dtype = (int)dt;
    }
    mt_bundle_target target;
    int rc = mt_bundle_target_begin(&target, out, force);
    if (rc == 0 && (rc = mt_model_average(dirs, n, target.tmp, dtype)) == 0)
        rc = mt_bundle_target_commit(&target);
    mt_bundle_target_discard(&target);
    free(dirs);
    if (rc == MT_BUNDLE_TARGET_EXISTS) return cli_fail("%s (--force replaces it)", mt_last_error());
    if (rc != 0) return cli_fail("%s", mt_last_error());
    printf("%s: the mean of %d bundle%s\n", out, n, n == 1 ? "" : "s");
    return 0;
}

const struct mt_command cmd_average = {
    "average",
    "-o OUT [--force] [--dtype f32|f16|bf16] BUNDLE...\n"
    "  an existing OUT bundle is replaced only with --force (whole, in one rename)",
    "checkpoint averaging: a bundle with the mean weights of bundles of one model",
    run_average,
    .parallel = 0,
};
