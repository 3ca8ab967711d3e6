#include "tui/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tui_log_init(tui_log *l) { memset(l, 0, sizeof *l); }

void tui_log_free(tui_log *l)
{
    for (int i = 0; i < l->n; i++) free(l->lines[(l->first + i) % TUI_LOG_LINES].text);
    memset(l, 0, sizeof *l);
}

void tui_log_add(tui_log *l, tui_log_level level, const char *fmt, ...)
{
    char msg[1024], stamp[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
    size_t len = strlen(stamp) + strlen(msg) + 2;
    char *text = mt_xmalloc(len);
    snprintf(text, len, "%s %s", stamp, msg);
    /* one screen line per log line */
    for (char *p = text; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    int slot;
    if (l->n == TUI_LOG_LINES) {
        slot = l->first;
        free(l->lines[slot].text);
        l->first = (l->first + 1) % TUI_LOG_LINES;
    } else {
        slot = (l->first + l->n++) % TUI_LOG_LINES;
    }
    l->lines[slot] = (tui_log_line){text, level};
    l->added++;
}

const tui_log_line *tui_log_get(const tui_log *l, int i)
{
    return &l->lines[(l->first + i) % TUI_LOG_LINES];
}
