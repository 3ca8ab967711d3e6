/* Where the keys go: the editor, a pane (its text or its heatmap), the log, an overlay or the
 * jobs view. Key dispatch (actions.c), the status line (draw.c) and the console's ui.focus
 * (console/ui.c) read and set it here, so none of them needs another. */
#include "tui/app.h"

unsigned tui_pane_context(const tui_pane *p)
{
    return p->view == TUI_VIEW_HEATMAP ? TUI_IN_HEATMAP : TUI_IN_PANE;
}

unsigned tui_focus_context(const tui_app *a)
{
    if (a->overlay != TUI_OVERLAY_NONE) return TUI_IN_OVERLAY;
    if (a->jobs) return TUI_IN_JOBS;
    if (a->log_focus) return TUI_IN_LOG;
    if (a->focus < 0) return TUI_IN_EDITOR;
    return tui_pane_context(a->panes[a->focus]);
}

void tui_focus(tui_app *a, int index)
{
    a->focus = index;
    a->log_focus = 0;
    a->dirty = 1;
}
