/* The one-off message over the status line, logged as a warning too. */
#include <stdarg.h>
#include <stdio.h>

#include "mtlab/clock.h"
#include "tui/app.h"

void tui_notice(tui_app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->notice, sizeof a->notice, fmt, ap);
    va_end(ap);
    a->notice_until = mt_now_s() + 6.0;
    tui_log_add(&a->log, TUI_LOG_WARN, "%s", a->notice);
    a->dirty = 1;
}
