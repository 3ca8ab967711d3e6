#include "tui/format.h"

#include <stdio.h>
#include <string.h>

#include "common/columns.h"

/* v with three significant digits: 1.23, 12.3, 123 */
static void three_digits(char *out, size_t len, double v, const char *unit)
{
    int decimals = v < 10 ? 2 : v < 100 ? 1 : 0;
    snprintf(out, len, "%.*f%s", decimals, v, unit);
}

void tui_format_count(char *out, size_t len, size_t n)
{
    if (n < 1000) snprintf(out, len, "%zu", n);
    else if (n < 999500) three_digits(out, len, (double)n / 1e3, "K");
    else if (n < 999500000) three_digits(out, len, (double)n / 1e6, "M");
    else three_digits(out, len, (double)n / 1e9, "G");
}

void tui_format_direction(char *out, size_t len, const char *src, const char *tgt,
                          const char *arrow)
{
    if (!src[0] || !tgt[0]) snprintf(out, len, "%s", "");
    else snprintf(out, len, "%s%s%s", src, arrow, tgt);
}

void tui_format_bytes(char *out, size_t len, size_t bytes)
{
    static const char *const units[] = {" KiB", " MiB", " GiB", " TiB"};
    if (bytes < 1024) {
        snprintf(out, len, "%zu B", bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1023.5 && u < 3) v /= 1024.0, u++;
    three_digits(out, len, v, units[u]);
}

void tui_format_seconds(char *out, size_t len, double seconds)
{
    if (seconds < 10) snprintf(out, len, "%.0f ms", seconds * 1e3);
    else snprintf(out, len, "%.1f s", seconds);
}

void tui_format_search(char *out, size_t len, int beam)
{
    if (beam <= 1) snprintf(out, len, "greedy");
    else snprintf(out, len, "beam %d", beam);
}

enum { STATS_ITEMS = 5, STATS_ITEM_LEN = 48 };
typedef char stats_items[2][STATS_ITEMS][STATS_ITEM_LEN]; /* [long or short label][item] */

/* An item and its rank: when they do not all fit, the highest ranks go first. */
static void stats_item(stats_items items, int *rank, int *n, int r, const char *long_form,
                       const char *short_form)
{
    snprintf(items[0][*n], STATS_ITEM_LEN, "%s", long_form);
    snprintf(items[1][*n], STATS_ITEM_LEN, "%s", short_form);
    rank[(*n)++] = r;
}

int tui_format_stats(char *out, size_t len, const tui_stats *s, const char *sep, int width)
{
    char t[32], mem[32], a[STATS_ITEM_LEN], b[STATS_ITEM_LEN];
    stats_items items;
    int n = 0, rank[STATS_ITEMS];
    tui_format_seconds(t, sizeof t, s->seconds);
    tui_format_bytes(mem, sizeof mem, s->state_bytes);
    if (s->translated > 0) {
        double rate = s->seconds > 0 ? (double)s->tokens / s->seconds : 0.0;
        stats_item(items, rank, &n, 0, t, t);
        snprintf(a, sizeof a, "%.1f tok/s", rate);
        /* thousands as k from five digits on (11602.1 tok/s: 12k t/s), so a fast pane keeps its
         * working set beside the rate where a slow one does */
        if (rate >= 9999.5) snprintf(b, sizeof b, "%.0fk t/s", rate / 1000.0);
        else snprintf(b, sizeof b, "%.0f t/s", rate);
        stats_item(items, rank, &n, 2, a, b);
        /* named in both forms: the model's state, not the decoding's working set */
        snprintf(a, sizeof a, "state %s", mem);
        stats_item(items, rank, &n, 1, a, a);
    }
    if (s->cached > 0) {
        snprintf(a, sizeof a, "%d cached", s->cached);
        stats_item(items, rank, &n, 3, a, a);
    }
    /* the working set is always named, so it is not taken for the state */
    if (s->translated > 0 && s->work_bytes > 0) {
        tui_format_bytes(mem, sizeof mem, s->work_bytes);
        snprintf(a, sizeof a, "working set %s", mem);
        snprintf(b, sizeof b, "work %s", mem);
        stats_item(items, rank, &n, 4, a, b);
    }
    /* long labels, then short ones; then fewer items: the time, the model's state, the rate,
     * the cached count, the working set, in that order of keeping */
    for (int keep = n; keep > 0; keep--)
        for (int form = 0; form < 2; form++) {
            size_t used = 0;
            for (int i = 0, shown = 0; i < n && used < len; i++) {
                int ahead = 0;
                for (int j = 0; j < n; j++) ahead += rank[j] < rank[i];
                if (ahead >= keep) continue;
                used += (size_t)snprintf(out + used, len - used, "%s%s", shown++ ? sep : "",
                                         items[form][i]);
            }
            if (used >= len) continue;
            int cols = tui_text_width_z(out);
            if (cols <= width) return cols;
        }
    if (len > 0) out[0] = '\0';
    return 0;
}
