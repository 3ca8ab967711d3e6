/* Entity marks in a model pane: the source entities the translation copied verbatim are
 * "recalled" (highlighted where they occur, and listed with a check mark), the others
 * "dropped" (listed with a cross): a symbol as well as a colour, so the marks survive
 * colour-blindness and monochrome terminals. */
#ifndef MTLAB_TUI_MARKS_H
#define MTLAB_TUI_MARKS_H

#include "mtlab/entities.h"
#include "tui/glyphs.h"
#include "tui/styled.h"

/* Restyle as recalled every occurrence, in hyp (which starts at byte base of st), of each
 * entity src[spans[k]] that hyp contains. */
void tui_mark_recalled(tui_styled *st, size_t base, const char *hyp, const char *src,
                       const mt_text_span *spans, size_t n);
/* Append "  ✓ recalled: A, B   ✗ dropped: C" (either part only when it has entities);
 * nothing when there are no entities. Returns the number of recalled entities. */
int tui_entity_line(tui_styled *st, const char *hyp, const char *src, const mt_text_span *spans,
                    size_t n, const tui_glyphs *g);

#endif
