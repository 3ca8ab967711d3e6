/* libFuzzer target for the workbench editor's key and paste input (app/tui/editor.c), the state
 * machine every typed character, bracketed paste and cursor key of the TUI ends in, without
 * curses. The input is a script of operations, one byte each, some followed by their argument
 * bytes: a typed character (any code point, ill-formed ones included), a paste of raw bytes
 * (invalid UTF-8, control characters, CR LF), Backspace, Delete, the cursor keys at a window
 * width, a whole new text, soft wrapping and the segments. After every operation the editor
 * keeps its promises (editor.h): valid UTF-8 without control characters but '\n', within its
 * cap, NUL-terminated, the cursor on a character boundary, every row of the wrap inside the
 * text and in order, the segments non-blank and in order.
 * Build and run: make fuzz (see the Makefile). */
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/utf8.h"
#include "tui/editor.h"

#include "fuzz_util.h"

/* Small enough that the cap is reached often. */
#define MAX_BYTES 512

static void check_editor(const tui_editor *e, int width)
{
    CHECK(e->len <= e->max_bytes);
    CHECK(e->len < e->cap);
    CHECK(e->text[e->len] == '\0');
    CHECK(strlen(e->text) == e->len);
    CHECK(mt_utf8_invalid_offset(e->text, e->len) == e->len);
    for (size_t i = 0; i < e->len; i++) {
        unsigned char c = (unsigned char)e->text[i];
        CHECK(c == '\n' || c >= 0x20);
        CHECK(c != 0x7F);
    }
    CHECK(e->cursor <= e->len);
    CHECK(e->cursor == e->len || ((unsigned char)e->text[e->cursor] & 0xC0) != 0x80);

    tui_vrow *rows;
    int cur_row = -1, cur_col = -1;
    int n = tui_editor_wrap(e, width, &rows, &cur_row, &cur_col);
    CHECK(n >= 1);
    CHECK(cur_row >= 0 && cur_row < n && cur_col >= 0 && cur_col <= width);
    for (int i = 0; i < n; i++) {
        CHECK(rows[i].start <= rows[i].end && rows[i].end <= e->len);
        if (i > 0) CHECK(rows[i].start >= rows[i - 1].end && rows[i].line >= rows[i - 1].line);
    }
    free(rows);

    tui_segment *segs;
    int m = tui_editor_segments(e, &segs);
    CHECK(m >= 0);
    for (int i = 0; i < m; i++) {
        CHECK(segs[i].start < segs[i].end && segs[i].end <= e->len);
        if (i > 0) CHECK(segs[i].start > segs[i - 1].end && segs[i].line > segs[i - 1].line);
        int blank = 1;
        for (size_t k = segs[i].start; k < segs[i].end; k++) blank &= e->text[k] == ' ';
        CHECK(!blank);
    }
    free(segs);
    CHECK(tui_editor_cursor_line(e) >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        /* widths come from wcwidth, which needs a UTF-8 LC_CTYPE, as in the workbench */
        setlocale(LC_CTYPE, "C.UTF-8");
        ready = 1;
    }
    tui_editor e;
    tui_editor_init(&e, MAX_BYTES);
    int width = 20;
    size_t i = 0;
    while (i < size) {
        uint8_t op = data[i++];
        size_t left = size - i;
        switch (op % 12) {
        case 0: /* a typed character: up to three bytes of a code point */
        case 1: {
            uint32_t cp = 0;
            for (int k = 0; k < 3 && i < size; k++) cp = cp << 8 | data[i++];
            tui_editor_insert_char(&e, cp % 0x110000);
            break;
        }
        case 2: { /* a paste: a length byte, then that many raw bytes */
            size_t n = left > 0 ? data[i++] : 0;
            if (n > size - i) n = size - i;
            size_t replaced = 0;
            size_t dropped = tui_editor_insert(&e, (const char *)data + i, n, &replaced);
            CHECK(replaced <= n);
            CHECK(dropped <= 3 * n);
            i += n;
            break;
        }
        case 3: tui_editor_backspace(&e); break;
        case 4: tui_editor_delete(&e); break;
        case 5: tui_editor_left(&e); break;
        case 6: tui_editor_right(&e); break;
        case 7: tui_editor_home(&e); break;
        case 8: tui_editor_end(&e); break;
        case 9: tui_editor_up(&e, width); break;
        case 10: tui_editor_down(&e, width); break;
        case 11: { /* a resize, or (odd bytes) a whole new text up to the next NUL */
            uint8_t arg = left > 0 ? data[i++] : 0;
            if (arg & 1) {
                size_t n = 0;
                while (i + n < size && data[i + n]) n++;
                char *s = malloc(n + 1);
                memcpy(s, data + i, n);
                s[n] = '\0';
                tui_editor_set_text(&e, s);
                free(s);
                i += n;
            } else {
                width = 2 + arg % 120;
            }
            break;
        }
        }
        check_editor(&e, width);
    }
    tui_editor_free(&e);
    return 0;
}
