/* libFuzzer target for the workbench's theme files (app/common/theme.c, themes/ *.theme): any text
 * gives a theme or one error line naming the file; an accepted theme resolves every meaning at
 * every colour level to legible colours (foreground shown differently from background), and its
 * heat scale answers for every value. The text is passed without a terminating NUL, as read.
 * Build and run: make fuzz (see the Makefile). */
#include "mtlab/error.h"
#include "common/theme.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

static const char NAME[] = "fuzz/x.theme";

static void check_color(const tui_color *c)
{
    if (c->is_default) return;
    CHECK(c->c256 >= 0 && c->c256 <= 255);
    CHECK(c->c16 >= 0 && c->c16 <= 15);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes: a read past the end is ASan's to see */
    char *text = malloc(size ? size : 1);
    memcpy(text, data, size);
    tui_theme t;
    mt_clear_error();
    int rc = tui_theme_parse(&t, text, size, NAME);
    free(text);
    if (rc != 0) {
        CHECK(rc == -1);
        CHECK(strncmp(mt_last_error(), NAME, strlen(NAME)) == 0);
        CHECK(strchr(mt_last_error(), '\n') == NULL);
        return 0;
    }
    CHECK(t.n_heat == 0 || (t.n_heat >= 2 && t.n_heat <= TUI_HEAT_STOPS_MAX));
    for (int m = 0; m < TUI_N_MEANINGS; m++) {
        check_color(&t.style[m].fg);
        check_color(&t.style[m].bg);
        for (int level = TUI_COLORS_NONE; level <= TUI_COLORS_DIRECT; level++) {
            tui_resolved_style s = tui_style_resolve(&t, (tui_meaning)m, (tui_color_level)level);
            if (level == TUI_COLORS_NONE) CHECK(s.fg == -1 && s.bg == -1);
            else CHECK(s.shown_fg != s.shown_bg);
        }
    }
    for (int i = 0; i < t.n_heat; i++) check_color(&t.heat[i]);
    if (t.n_heat)
        for (int i = -1; i <= 11; i++) check_color((tui_color[]){tui_heat_color(&t, i / 10.0)});
    check_color((tui_color[]){tui_heat_color(&t, NAN)});
    return 0;
}
