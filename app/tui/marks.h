/* Entity marks in a model pane (docs/metrics.md §5.4): each source name the translation
 * copied verbatim is "copied", one it wrote in a form its training corpus gives it (the
 * bundle's entity lexicon: Dios -> God) is "translated", the others are "dropped". Copied
 * and translated names are highlighted where they occur in the translation, and every name is
 * listed once under its mark, with a symbol as well as a colour so the marks survive
 * colour-blindness and monochrome terminals. */
#ifndef MTLAB_TUI_MARKS_H
#define MTLAB_TUI_MARKS_H

#include "mtlab/entities.h"
#include "tui/glyphs.h"
#include "tui/styled.h"

/* Restyle every occurrence, in hyp (which starts at byte base of st), of a name src[spans[k]]
 * as copied, and of the lexicon form found for a translated name as translated. lex may be
 * NULL. */
void tui_mark_entities(tui_styled *st, size_t base, const char *hyp, const char *src,
                       const mt_text_span *spans, size_t n, const mt_entity_lexicon *lex);
/* Append "  ✓ copied: A", "  ⇄ translated: Dios→God ×3" and "  ✗ dropped: C", one line each
 * and each only when it has names (each distinct name once, "×N" when the source has it N
 * times); nothing when there are no names. Returns the number of distinct names copied or
 * translated. */
int tui_entity_line(tui_styled *st, const char *hyp, const char *src, const mt_text_span *spans,
                    size_t n, const mt_entity_lexicon *lex, const tui_glyphs *g);

#endif
