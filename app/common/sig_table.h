/* The multi-system table `mtlab score --paired-bs|--paired-ar` prints: sacreBLEU's own
 * (tabulate's fancy_grid: systems right-aligned, cells centred, a p-value line under every
 * system but the baseline), so the two can be compared line for line. */
#ifndef MTLAB_APP_SIG_TABLE_H
#define MTLAB_APP_SIG_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "mtlab/significance.h"

/* systems[n_sys] (the first is the baseline, printed "Baseline: NAME"); results[m][s] for
 * metric m of names[m]; scores with `width` decimals. */
void sig_table_print(FILE *out, const char *const *systems, size_t n_sys, const char *const *names,
                     const mt_sig_result *const *results, size_t n_metrics, int width);

#endif
