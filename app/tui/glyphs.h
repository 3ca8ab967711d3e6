/* The symbols the workbench draws, in UTF-8 and in plain ASCII (a non-UTF-8 locale or
 * --ascii): entity marks, the busy spinner, heat shading. Marks never rely on colour alone. */
#ifndef MTLAB_TUI_GLYPHS_H
#define MTLAB_TUI_GLYPHS_H

#define TUI_SHADES 5

typedef struct {
    const char *recalled; /* before an entity the model copied */
    const char *dropped; /* before an entity it left out */
    const char *translated; /* before an entity it wrote in its lexicon form */
    const char *arrow; /* between a name and its translation: "Dios→God" */
    const char *times; /* before a repeat count: "Dios ×3" */
    const char *ellipsis;
    const char *shades[TUI_SHADES]; /* a heat cell by shading, light to dark */
    const char *spinner[8];
    int n_spinner;
    const char *row_mark, *col_mark; /* the heatmap cursor's row and column */
    const char *dot; /* separator in titles */
    const char *focus_mark; /* before the focused box's title */
} tui_glyphs;

const tui_glyphs *tui_glyphs_for(int utf8);

#endif
