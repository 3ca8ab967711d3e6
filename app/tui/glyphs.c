#include "tui/glyphs.h"

#include <stddef.h>

static const tui_glyphs unicode = {
    .recalled = "\u2713",
    .dropped = "\u2717",
    .translated = "\u21c4",
    .arrow = "\u2192",
    .times = "\u00d7",
    .ellipsis = "\u2026",
    .shades = {" ", "\u2591", "\u2592", "\u2593", "\u2588"},
    .spinner = {"\u280b", "\u2819", "\u2839", "\u2838", "\u283c", "\u2834", "\u2826", "\u2827"},
    .n_spinner = 8,
    .row_mark = "\u25b6",
    .col_mark = "\u25bc",
    .dot = "\u00b7",
    .focus_mark = "\u25b6",
};

static const tui_glyphs ascii = {
    .recalled = "+",
    .dropped = "x",
    .translated = "~",
    .arrow = "->",
    .times = "x",
    .ellipsis = "...",
    .shades = {" ", ".", ":", "o", "#"},
    .spinner = {"|", "/", "-", "\\"},
    .n_spinner = 4,
    .row_mark = ">",
    .col_mark = "v",
    .dot = "-",
    .focus_mark = ">",
};

const tui_glyphs *tui_glyphs_for(int utf8) { return utf8 ? &unicode : &ascii; }
