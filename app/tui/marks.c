#include "tui/marks.h"

#include <string.h>

void tui_mark_recalled(tui_styled *st, size_t base, const char *hyp, const char *src,
                       const mt_text_span *spans, size_t n)
{
    size_t hyp_len = strlen(hyp);
    for (size_t k = 0; k < n; k++) {
        const char *ent = src + spans[k].start;
        size_t len = spans[k].end - spans[k].start;
        for (const char *p = hyp; len > 0 && (p = memmem(p, hyp_len - (size_t)(p - hyp), ent, len));
             p += len)
            tui_styled_mark(st, base + (size_t)(p - hyp), base + (size_t)(p - hyp) + len,
                            TUI_C_RECALLED);
    }
}

int tui_entity_line(tui_styled *st, const char *hyp, const char *src, const mt_text_span *spans,
                    size_t n, const tui_glyphs *g)
{
    int recalled_count = 0;
    /* first the recalled ones, then the dropped ones */
    for (int pass = 0; pass < 2; pass++) {
        int listed = 0;
        for (size_t k = 0; k < n; k++) {
            const char *ent = src + spans[k].start;
            size_t len = spans[k].end - spans[k].start;
            int recalled = mt_text_contains(hyp, ent, len);
            if (recalled != (pass == 0)) continue;
            recalled_count += recalled;
            tui_meaning m = recalled ? TUI_C_RECALLED : TUI_C_DROPPED;
            if (listed++ == 0) {
                tui_styled_addz(st, pass == 1 && recalled_count > 0 ? "   " : "  ", TUI_C_TEXT);
                tui_styled_addz(st, recalled ? g->recalled : g->dropped, m);
                tui_styled_addz(st, recalled ? " recalled: " : " dropped: ", m);
            } else {
                tui_styled_addz(st, ", ", TUI_C_DIM);
            }
            tui_styled_add(st, ent, len, m);
        }
    }
    return recalled_count;
}
