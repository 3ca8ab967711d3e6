#include "tui/marks.h"

#include <stdio.h>
#include <string.h>

static void mark_all(tui_styled *st, size_t base, const char *hyp, const char *needle, size_t len,
                     tui_meaning m)
{
    size_t hyp_len = strlen(hyp);
    for (const char *p = hyp; len > 0 && (p = memmem(p, hyp_len - (size_t)(p - hyp), needle, len));
         p += len)
        tui_styled_mark(st, base + (size_t)(p - hyp), base + (size_t)(p - hyp) + len, m);
}

void tui_mark_entities(tui_styled *st, size_t base, const char *hyp, const char *src,
                       const mt_text_span *spans, size_t n, const mt_entity_lexicon *lex)
{
    for (size_t k = 0; k < n; k++) {
        const char *name = src + spans[k].start;
        size_t len = spans[k].end - spans[k].start;
        const char *form = NULL;
        mt_entity_fate fate = mt_entity_fate_in(hyp, name, len, lex, &form);
        if (fate == MT_ENTITY_COPIED) mark_all(st, base, hyp, name, len, TUI_C_RECALLED);
        else if (fate == MT_ENTITY_TRANSLATED)
            mark_all(st, base, hyp, form, strlen(form), TUI_C_TRANSLATED);
    }
}

static int same_name(const char *src, mt_text_span a, mt_text_span b)
{
    return a.end - a.start == b.end - b.start &&
           !memcmp(src + a.start, src + b.start, a.end - a.start);
}

/* How often name k occurs in spans; 0 when an earlier span already has it. */
static size_t repeats(const char *src, const mt_text_span *spans, size_t n, size_t k)
{
    for (size_t j = 0; j < k; j++)
        if (same_name(src, spans[j], spans[k])) return 0;
    size_t count = 1;
    for (size_t j = k + 1; j < n; j++) count += (size_t)same_name(src, spans[j], spans[k]);
    return count;
}

int tui_entity_line(tui_styled *st, const char *hyp, const char *src, const mt_text_span *spans,
                    size_t n, const mt_entity_lexicon *lex, const tui_glyphs *g)
{
    static const mt_entity_fate order[] = {MT_ENTITY_COPIED, MT_ENTITY_TRANSLATED,
                                           MT_ENTITY_DROPPED};
    static const tui_meaning meaning[] = {TUI_C_RECALLED, TUI_C_TRANSLATED, TUI_C_DROPPED};
    static const char *const label[] = {" copied: ", " translated: ", " dropped: "};
    const char *symbol[] = {g->recalled, g->translated, g->dropped};
    int carried = 0, parts = 0;
    for (int pass = 0; pass < 3; pass++) {
        int listed = 0;
        tui_meaning m = meaning[pass];
        for (size_t k = 0; k < n; k++) {
            size_t count = repeats(src, spans, n, k);
            const char *name = src + spans[k].start, *form = NULL;
            size_t len = spans[k].end - spans[k].start;
            if (count == 0 || mt_entity_fate_in(hyp, name, len, lex, &form) != order[pass])
                continue;
            carried += order[pass] != MT_ENTITY_DROPPED;
            if (listed++ == 0) {
                /* one line per mark: a wrapped line never parts a symbol from its label */
                tui_styled_addz(st, parts++ > 0 ? "\n  " : "  ", TUI_C_TEXT);
                tui_styled_addz(st, symbol[pass], m);
                tui_styled_addz(st, label[pass], m);
            } else {
                tui_styled_addz(st, ", ", TUI_C_DIM);
            }
            tui_styled_add(st, name, len, m);
            if (form) {
                tui_styled_addz(st, g->arrow, TUI_C_DIM);
                tui_styled_addz(st, form, m);
            }
            if (count > 1) {
                char times[32];
                snprintf(times, sizeof times, " %s%zu", g->times, count);
                tui_styled_addz(st, times, TUI_C_DIM);
            }
        }
    }
    return carried;
}
