#include "tui/editor.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "mtlab/utf8.h"
#include "common/columns.h"

void tui_editor_init(tui_editor *e, size_t max_bytes)
{
    memset(e, 0, sizeof *e);
    e->cap = 256;
    e->text = mt_xmalloc(e->cap);
    e->text[0] = '\0';
    e->goal_col = -1;
    e->max_bytes = max_bytes;
}

void tui_editor_free(tui_editor *e)
{
    free(e->text);
    memset(e, 0, sizeof *e);
}

static uint32_t cp_at(const tui_editor *e, size_t pos, int *len)
{
    uint32_t cp;
    int n = tui_utf8_decode(e->text + pos, e->len - pos, &cp);
    *len = n ? n : 1;
    return cp;
}

/* A cluster is a character with the zero-width characters that follow it. */
static size_t next_cluster(const tui_editor *e, size_t pos)
{
    int len;
    cp_at(e, pos, &len);
    pos += (size_t)len;
    while (pos < e->len) {
        uint32_t cp = cp_at(e, pos, &len);
        if (tui_cp_width(cp) != 0 || cp == '\n') break;
        pos += (size_t)len;
    }
    return pos;
}

static size_t prev_cluster(const tui_editor *e, size_t pos)
{
    int len;
    size_t p = mt_utf8_prev(e->text, pos);
    while (p > 0) {
        uint32_t cp = cp_at(e, p, &len);
        if (tui_cp_width(cp) != 0 || cp == '\n') break;
        p = mt_utf8_prev(e->text, p);
    }
    return p;
}

/* The cleaned form of s[0..n) (see tui_editor_insert); malloc'd, *out_len its length,
 * *replaced the input bytes that became U+FFFD. */
static char *clean_text(const char *s, size_t n, size_t *out_len, size_t *replaced)
{
    char *valid = mt_xmalloc(3 * n + 1);
    size_t m = mt_utf8_repair(s, n, valid, replaced);
    char *out = mt_xmalloc(m + 1);
    size_t o = 0;
    for (size_t i = 0; i < m;) {
        unsigned char c = (unsigned char)valid[i];
        if (c == '\r') {
            out[o++] = '\n';
            i += (i + 1 < m && valid[i + 1] == '\n') ? 2 : 1;
            continue;
        }
        if (c == '\t') {
            out[o++] = ' ';
            i++;
            continue;
        }
        uint32_t cp;
        int len = mt_utf8_next(valid + i, m - i, &cp);
        if (cp == '\n' || (cp >= 0x20 && !(cp >= 0x7F && cp < 0xA0)))
            memcpy(out + o, valid + i, (size_t)len), o += (size_t)len;
        i += (size_t)len;
    }
    free(valid);
    *out_len = o;
    return out;
}

static void reserve(tui_editor *e, size_t need)
{
    if (need + 1 <= e->cap) return;
    while (e->cap < need + 1) e->cap *= 2;
    e->text = mt_xrealloc(e->text, e->cap);
}

size_t tui_editor_insert(tui_editor *e, const char *s, size_t n, size_t *replaced)
{
    size_t m, bad;
    char *clean = clean_text(s, n, &m, &bad);
    if (replaced) *replaced = bad;
    size_t room = e->max_bytes > e->len ? e->max_bytes - e->len : 0;
    size_t keep = m < room ? m : room;
    while (keep > 0 && keep < m && ((unsigned char)clean[keep] & 0xC0) == 0x80) keep--;
    if (keep > 0) {
        reserve(e, e->len + keep);
        memmove(e->text + e->cursor + keep, e->text + e->cursor, e->len - e->cursor + 1);
        memcpy(e->text + e->cursor, clean, keep);
        e->len += keep;
        e->cursor += keep;
        e->version++;
    }
    e->goal_col = -1;
    free(clean);
    return m - keep;
}

int tui_editor_insert_char(tui_editor *e, uint32_t cp)
{
    char buf[4];
    int n = mt_utf8_put(cp, buf);
    if (n == 0) return 0;
    return tui_editor_insert(e, buf, (size_t)n, NULL) ? -1 : 0;
}

size_t tui_editor_set_text(tui_editor *e, const char *s)
{
    e->len = 0;
    e->cursor = 0;
    e->text[0] = '\0';
    e->version++;
    return tui_editor_insert(e, s, strlen(s), NULL);
}

static void remove_range(tui_editor *e, size_t a, size_t b)
{
    memmove(e->text + a, e->text + b, e->len - b + 1);
    e->len -= b - a;
    e->cursor = a;
    e->version++;
    e->goal_col = -1;
}

void tui_editor_backspace(tui_editor *e)
{
    if (e->cursor > 0) remove_range(e, prev_cluster(e, e->cursor), e->cursor);
}

void tui_editor_delete(tui_editor *e)
{
    if (e->cursor < e->len) remove_range(e, e->cursor, next_cluster(e, e->cursor));
}

void tui_editor_left(tui_editor *e)
{
    if (e->cursor > 0) e->cursor = prev_cluster(e, e->cursor);
    e->goal_col = -1;
}

void tui_editor_right(tui_editor *e)
{
    if (e->cursor < e->len) e->cursor = next_cluster(e, e->cursor);
    e->goal_col = -1;
}

void tui_editor_home(tui_editor *e)
{
    while (e->cursor > 0 && e->text[e->cursor - 1] != '\n') e->cursor--;
    e->goal_col = -1;
}

void tui_editor_end(tui_editor *e)
{
    while (e->cursor < e->len && e->text[e->cursor] != '\n') e->cursor++;
    e->goal_col = -1;
}

/* Rows of the line [ls, le) of text appended to *rows. */
static void wrap_line(const char *text, size_t ls, size_t le, int line, int width, tui_vrow **rows,
                      int *n, int *cap)
{
    size_t start = ls;
    do {
        size_t pos = start, brk = le, after_space = 0;
        int cols = 0;
        while (pos < le) {
            uint32_t cp;
            int len = tui_utf8_decode(text + pos, le - pos, &cp);
            int w = tui_cp_width(cp);
            if (cols + w > width && pos > start) {
                brk = after_space ? after_space : pos;
                break;
            }
            cols += w;
            pos += len ? (size_t)len : 1;
            if (cp == ' ') after_space = pos;
        }
        if (*n == *cap) {
            *cap *= 2;
            *rows = mt_xrealloc(*rows, (size_t)*cap * sizeof **rows);
        }
        (*rows)[(*n)++] = (tui_vrow){start, brk, line};
        start = brk;
    } while (start < le);
}

int tui_wrap(const char *text, size_t len, int width, tui_vrow **rows_out)
{
    int n = 0, cap = 16, line = 0;
    tui_vrow *rows = mt_xmalloc((size_t)cap * sizeof *rows);
    size_t ls = 0;
    for (;;) {
        const char *nl = memchr(text + ls, '\n', len - ls);
        size_t le = nl ? (size_t)(nl - text) : len;
        wrap_line(text, ls, le, line, width < 2 ? 2 : width, &rows, &n, &cap);
        if (!nl) break;
        ls = le + 1;
        line++;
    }
    *rows_out = rows;
    return n;
}

/* Whether the cursor at byte pos is shown on row r (the end of a wrapped row belongs to the
 * next row of the same line). */
static int cursor_on_row(const tui_vrow *rows, int n, int r, size_t pos)
{
    if (pos < rows[r].start || pos > rows[r].end) return 0;
    if (pos < rows[r].end) return 1;
    return r == n - 1 || rows[r + 1].line != rows[r].line;
}

int tui_editor_wrap(const tui_editor *e, int width, tui_vrow **rows_out, int *cur_row, int *cur_col)
{
    tui_vrow *rows;
    int n = tui_wrap(e->text, e->len, width, &rows);
    if (cur_row || cur_col) {
        int r = 0;
        while (r < n - 1 && !cursor_on_row(rows, n, r, e->cursor)) r++;
        if (cur_row) *cur_row = r;
        if (cur_col) *cur_col = tui_text_width(e->text + rows[r].start, e->cursor - rows[r].start);
    }
    *rows_out = rows;
    return n;
}

static void vertical(tui_editor *e, int width, int dir)
{
    tui_vrow *rows;
    int r, col;
    int n = tui_editor_wrap(e, width, &rows, &r, &col);
    if (e->goal_col < 0) e->goal_col = col;
    int t = r + dir;
    if (t >= 0 && t < n) {
        size_t pos = rows[t].start + tui_text_fit(e->text + rows[t].start,
                                                  rows[t].end - rows[t].start, e->goal_col, NULL);
        /* the end of a wrapped row would show the cursor on the next row */
        if (pos == rows[t].end && pos > rows[t].start && !cursor_on_row(rows, n, t, pos))
            pos = prev_cluster(e, pos);
        e->cursor = pos;
    } else {
        e->cursor = t < 0 ? 0 : e->len;
    }
    free(rows);
}

void tui_editor_up(tui_editor *e, int width) { vertical(e, width, -1); }
void tui_editor_down(tui_editor *e, int width) { vertical(e, width, +1); }

int tui_editor_segments(const tui_editor *e, tui_segment **segs)
{
    int n = 0, cap = 0, line = 0;
    *segs = NULL;
    size_t ls = 0;
    for (;;) {
        const char *nl = memchr(e->text + ls, '\n', e->len - ls);
        size_t le = nl ? (size_t)(nl - e->text) : e->len;
        size_t a = ls, b = le;
        while (a < b && e->text[a] == ' ') a++;
        while (b > a && e->text[b - 1] == ' ') b--;
        if (a < b) {
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                *segs = mt_xrealloc(*segs, (size_t)cap * sizeof **segs);
            }
            (*segs)[n++] = (tui_segment){a, b, line};
        }
        if (!nl) break;
        ls = le + 1;
        line++;
    }
    return n;
}

int tui_editor_cursor_line(const tui_editor *e)
{
    int line = 0;
    for (size_t i = 0; i < e->cursor; i++) line += e->text[i] == '\n';
    return line;
}
