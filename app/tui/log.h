/* The workbench's log: loads, errors, timings, notices. A ring of the last TUI_LOG_LINES
 * lines with their time; the F2 pane shows the newest. UI thread only (workers send
 * TUI_EV_LOG events). */
#ifndef MTLAB_TUI_LOG_H
#define MTLAB_TUI_LOG_H

#include <stddef.h>

#include "mtlab/error.h"

#define TUI_LOG_LINES 500

typedef enum { TUI_LOG_INFO, TUI_LOG_WARN, TUI_LOG_ERROR } tui_log_level;

typedef struct {
    char *text; /* "12:03:44 loaded models/mamba (mamba, 7.52M params, cpu)" */
    tui_log_level level;
} tui_log_line;

typedef struct {
    tui_log_line lines[TUI_LOG_LINES];
    int first, n; /* the oldest line and how many there are */
    unsigned long added; /* lines ever added (the view follows the newest) */
} tui_log;

void tui_log_init(tui_log *l);
void tui_log_free(tui_log *l);
void tui_log_add(tui_log *l, tui_log_level level, const char *fmt, ...) MT_PRINTF(3, 4);
/* Line i, 0 the oldest kept. */
const tui_log_line *tui_log_get(const tui_log *l, int i);

#endif
