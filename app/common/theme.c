#include "common/theme.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "mtlab/files.h"

enum { THEME_MAX_BYTES = 64 * 1024 };

static const char *const meaning_names[TUI_N_MEANINGS] = {
    "text",       "dim",       "border",  "focus",   "title",   "status",   "key",
    "error",      "warning",   "busy",    "done",    "entity",  "recalled", "dropped",
    "translated", "selection", "series1", "series2", "series3", "series4",
};

/* Attributes that carry each meaning without colour (monochrome, NO_COLOR). */
static const unsigned plain_attrs[TUI_N_MEANINGS] = {
    [TUI_C_DIM] = TUI_A_DIM,
    [TUI_C_FOCUS] = TUI_A_BOLD,
    [TUI_C_TITLE] = TUI_A_BOLD,
    [TUI_C_STATUS] = TUI_A_REVERSE,
    [TUI_C_KEY] = TUI_A_BOLD,
    [TUI_C_ERROR] = TUI_A_BOLD,
    [TUI_C_WARNING] = TUI_A_BOLD,
    [TUI_C_ENTITY] = TUI_A_UNDERLINE,
    [TUI_C_RECALLED] = TUI_A_BOLD,
    [TUI_C_DROPPED] = TUI_A_BOLD | TUI_A_UNDERLINE,
    [TUI_C_TRANSLATED] = TUI_A_BOLD | TUI_A_ITALIC,
    [TUI_C_SELECTION] = TUI_A_REVERSE,
    [TUI_C_SERIES1] = TUI_A_BOLD,
    [TUI_C_SERIES3] = TUI_A_DIM,
    [TUI_C_SERIES4] = TUI_A_BOLD,
};

/* The 16 standard colours as xterm draws them, for nearest-colour matches. */
static const uint8_t rgb16[16][3] = {
    {0, 0, 0},     {205, 0, 0},     {0, 205, 0},     {205, 205, 0},   {0, 0, 238}, {205, 0, 205},
    {0, 205, 205}, {229, 229, 229}, {127, 127, 127}, {255, 0, 0},     {0, 255, 0}, {255, 255, 0},
    {92, 92, 255}, {255, 0, 255},   {0, 255, 255},   {255, 255, 255},
};
static const char *const names16[8] = {"black", "red",     "green", "yellow",
                                       "blue",  "magenta", "cyan",  "white"};

const char *tui_meaning_name(tui_meaning m) { return meaning_names[m]; }

static tui_color color_default(void) { return (tui_color){.is_default = 1, .c256 = -1, .c16 = -1}; }

void tui_theme_plain(tui_theme *t, const char *name)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    tui_color_parse(&t->term_fg, "#d0d0d0");
    tui_color_parse(&t->term_bg, "#000000");
    for (int i = 0; i < TUI_N_MEANINGS; i++)
        t->style[i] = (tui_style){color_default(), color_default(), plain_attrs[i]};
}

static int dist2(int r, int g, int b, int r2, int g2, int b2)
{
    return (r - r2) * (r - r2) + (g - g2) * (g - g2) + (b - b2) * (b - b2);
}

static const int cube_levels[6] = {0, 95, 135, 175, 215, 255};

static int cube_index(int v)
{
    int best = 0;
    for (int i = 1; i < 6; i++)
        if (abs(cube_levels[i] - v) < abs(cube_levels[best] - v)) best = i;
    return best;
}

int tui_rgb_to_256(int r, int g, int b)
{
    int ri = cube_index(r), gi = cube_index(g), bi = cube_index(b);
    int cube = 16 + 36 * ri + 6 * gi + bi;
    int cd = dist2(r, g, b, cube_levels[ri], cube_levels[gi], cube_levels[bi]);
    /* grey ramp 232..255: 8, 18, ..., 238 */
    int avg = (r + g + b) / 3;
    int gi2 = avg < 8 ? 0 : avg > 238 ? 23 : (avg - 8 + 5) / 10;
    int grey = 8 + 10 * gi2;
    int gd = dist2(r, g, b, grey, grey, grey);
    return gd < cd ? 232 + gi2 : cube;
}

int tui_rgb_to_16(int r, int g, int b)
{
    int best = 0, bd = -1;
    for (int i = 0; i < 16; i++) {
        int d = dist2(r, g, b, rgb16[i][0], rgb16[i][1], rgb16[i][2]);
        if (bd < 0 || d < bd) best = i, bd = d;
    }
    return best;
}

/* RGB of an xterm-256 index (the system colours use xterm's defaults). */
static void rgb_of_256(int i, uint8_t *r, uint8_t *g, uint8_t *b)
{
    if (i < 16) {
        *r = rgb16[i][0], *g = rgb16[i][1], *b = rgb16[i][2];
    } else if (i < 232) {
        i -= 16;
        *r = (uint8_t)cube_levels[i / 36], *g = (uint8_t)cube_levels[i / 6 % 6];
        *b = (uint8_t)cube_levels[i % 6];
    } else {
        *r = *g = *b = (uint8_t)(8 + 10 * (i - 232));
    }
}

static int name16(const char *s)
{
    int bright = 0;
    if (!strncmp(s, "bright-", 7)) bright = 8, s += 7;
    for (int i = 0; i < 8; i++)
        if (!strcmp(s, names16[i])) return i + bright;
    return -1;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int tui_color_parse(tui_color *c, const char *tok)
{
    *c = color_default();
    if (!strcmp(tok, "default") || !strcmp(tok, "-")) return 0;
    c->is_default = 0;
    int n16 = name16(tok), idx;
    if (n16 >= 0) {
        c->c16 = n16;
        rgb_of_256(n16, &c->r, &c->g, &c->b);
        c->c256 = n16;
        return 0;
    }
    if (tok[0] != '#') {
        if (parse_int(tok, 0, 255, &idx)) return -1;
        c->c256 = idx;
        rgb_of_256(idx, &c->r, &c->g, &c->b);
        c->c16 = idx < 16 ? idx : tui_rgb_to_16(c->r, c->g, c->b);
        return 0;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%s", tok + 1);
    char *f256 = strchr(buf, '/'), *f16 = NULL;
    if (f256) {
        *f256++ = '\0';
        f16 = strchr(f256, '/');
        if (f16) *f16++ = '\0';
    }
    if (strlen(buf) != 6 || strspn(buf, "0123456789abcdefABCDEF") != 6) return -1;
    unsigned long v = strtoul(buf, NULL, 16);
    c->r = (uint8_t)(v >> 16), c->g = (uint8_t)(v >> 8), c->b = (uint8_t)v;
    c->c256 = tui_rgb_to_256(c->r, c->g, c->b);
    c->c16 = tui_rgb_to_16(c->r, c->g, c->b);
    if (f256 && parse_int(f256, 0, 255, &c->c256)) return -1;
    if (f16 && (c->c16 = name16(f16)) < 0) return -1;
    return 0;
}

static int parse_attrs(const char *tok, unsigned *out)
{
    static const struct {
        const char *name;
        unsigned bit;
    } attrs[] = {{"bold", TUI_A_BOLD},
                 {"dim", TUI_A_DIM},
                 {"underline", TUI_A_UNDERLINE},
                 {"reverse", TUI_A_REVERSE},
                 {"italic", TUI_A_ITALIC}};
    *out = 0;
    if (!strcmp(tok, "none")) return 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", tok);
    for (char *save, *a = strtok_r(buf, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < sizeof attrs / sizeof attrs[0] && strcmp(attrs[i].name, a)) i++;
        if (i == sizeof attrs / sizeof attrs[0]) return -1;
        *out |= attrs[i].bit;
    }
    return 0;
}

enum { MAX_WORDS = TUI_HEAT_STOPS_MAX + 2 };

/* A comment starts with the first word of a line that begins with '#', or with a lone '#'
 * (elsewhere '#' begins a colour). */
static int starts_comment(const char *word, int first)
{
    return word[0] == '#' && (first || word[1] == '\0');
}

static int parse_line(tui_theme *t, char **w, int n, const char *path, int line)
{
    if (!strcmp(w[0], "heat")) {
        if (n - 1 < 2 || n - 1 > TUI_HEAT_STOPS_MAX)
            return mt_error("%s:%d: heat takes 2 to %d colours, got %d", path, line,
                            TUI_HEAT_STOPS_MAX, n - 1);
        for (int i = 1; i < n; i++)
            if (tui_color_parse(&t->heat[i - 1], w[i]) || t->heat[i - 1].is_default)
                return mt_error("%s:%d: heat colour '%s' is not a colour", path, line, w[i]);
        t->n_heat = n - 1;
        return 0;
    }
    if (!strcmp(w[0], "terminal")) {
        if (n != 3 || tui_color_parse(&t->term_fg, w[1]) || tui_color_parse(&t->term_bg, w[2]) ||
            t->term_fg.is_default || t->term_bg.is_default)
            return mt_error("%s:%d: terminal takes two colours (FG BG, not default)", path, line);
        return 0;
    }
    int m = 0;
    while (m < TUI_N_MEANINGS && strcmp(meaning_names[m], w[0])) m++;
    if (m == TUI_N_MEANINGS) {
        char known[256] = "";
        for (int i = 0; i < TUI_N_MEANINGS; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", meaning_names[i],
                     ", ");
        return mt_error("%s:%d: unknown meaning '%s' (known: %sheat, terminal)", path, line, w[0],
                        known);
    }
    if (n < 2 || n > 4)
        return mt_error("%s:%d: '%s' takes FG [BG [ATTRS]], got %d words", path, line, w[0], n - 1);
    tui_style *s = &t->style[m];
    if (tui_color_parse(&s->fg, w[1]))
        return mt_error("%s:%d: '%s' is not a colour (#rrggbb, 0..255, a name or default)", path,
                        line, w[1]);
    if (n > 2 && tui_color_parse(&s->bg, w[2]))
        return mt_error("%s:%d: '%s' is not a colour (#rrggbb, 0..255, a name or default)", path,
                        line, w[2]);
    if (n > 3 && parse_attrs(w[3], &s->attrs))
        return mt_error("%s:%d: '%s' is not a list of attributes (bold, dim, underline, "
                        "reverse, italic or none)",
                        path, line, w[3]);
    return 0;
}

int tui_theme_parse(tui_theme *t, const char *text, size_t len, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char name[64];
    snprintf(name, sizeof name, "%s", base);
    char *dot = strstr(name, ".theme");
    if (dot) *dot = '\0';
    tui_theme_plain(t, name);
    int line = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        line++;
        char buf[512];
        if (end - pos >= sizeof buf)
            return mt_error("%s:%d: line longer than %zu bytes", path, line, sizeof buf - 1);
        memcpy(buf, text + pos, end - pos);
        buf[end - pos] = '\0';
        pos = end + 1;
        char *w[MAX_WORDS];
        int n = 0;
        for (char *save, *tok = strtok_r(buf, " \t\r", &save); tok;
             tok = strtok_r(NULL, " \t\r", &save)) {
            if (starts_comment(tok, n == 0)) break;
            if (n == MAX_WORDS)
                return mt_error("%s:%d: too many words (at most %d)", path, line, MAX_WORDS);
            w[n++] = tok;
        }
        if (n && parse_line(t, w, n, path, line)) return -1;
    }
    return 0;
}

int tui_theme_load(tui_theme *t, const char *path)
{
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return -1;
    char *buf = mt_xmalloc(THEME_MAX_BYTES + 1);
    size_t n = fread(buf, 1, THEME_MAX_BYTES + 1, f);
    int err = ferror(f);
    fclose(f);
    int rc;
    if (err) rc = mt_error("%s: read error", path);
    else if (n > THEME_MAX_BYTES) rc = mt_error("%s: larger than %d bytes", path, THEME_MAX_BYTES);
    else if (memchr(buf, '\0', n)) rc = mt_error("%s: not a text file (NUL byte)", path);
    else rc = tui_theme_parse(t, buf, n, path);
    free(buf);
    return rc;
}

tui_color tui_heat_color(const tui_theme *t, double v)
{
    if (t->n_heat == 0) return color_default();
    if (!(v > 0)) v = 0;
    if (v > 1) v = 1;
    double x = v * (t->n_heat - 1);
    int i = (int)floor(x);
    if (i >= t->n_heat - 1) i = t->n_heat - 2;
    if (t->n_heat == 1) return t->heat[0];
    double f = x - i;
    const tui_color *a = &t->heat[i], *b = &t->heat[i + 1];
    tui_color c = {0};
    c.r = (uint8_t)lround(a->r + f * (b->r - a->r));
    c.g = (uint8_t)lround(a->g + f * (b->g - a->g));
    c.b = (uint8_t)lround(a->b + f * (b->b - a->b));
    c.c256 = tui_rgb_to_256(c.r, c.g, c.b);
    c.c16 = tui_rgb_to_16(c.r, c.g, c.b);
    return c;
}

tui_color_level tui_color_level_detect(int has_colors, int n_colors, int rgb_flag,
                                       const char *no_color)
{
    if (no_color && no_color[0]) return TUI_COLORS_NONE;
    if (!has_colors || n_colors < 8) return TUI_COLORS_NONE;
    if (rgb_flag > 0 && n_colors >= 0x1000000) return TUI_COLORS_DIRECT;
    if (n_colors >= 256) return TUI_COLORS_256;
    if (n_colors >= 16) return TUI_COLORS_16;
    return TUI_COLORS_8;
}

const char *tui_color_level_name(tui_color_level level)
{
    static const char *const names[] = {"no colour", "8 colours", "16 colours", "256 colours",
                                        "24-bit colour"};
    return names[level];
}

int tui_color_number(const tui_color *c, tui_color_level level, unsigned *bold_attr)
{
    if (c->is_default) return -1;
    switch (level) {
    case TUI_COLORS_DIRECT: return (int)c->r << 16 | (int)c->g << 8 | (int)c->b;
    case TUI_COLORS_256: return c->c256;
    case TUI_COLORS_16: return c->c16;
    case TUI_COLORS_8:
        if (c->c16 >= 8 && bold_attr) *bold_attr |= TUI_A_BOLD;
        return c->c16 & 7;
    default: return -1;
    }
}

/* The colour of the level nearest to c other than the number `avoid` (a 24-bit level picks
 * among the 256 colours, as an RGB value). */
static int nearest_other(const tui_color *c, tui_color_level level, int avoid)
{
    int lo = level == TUI_COLORS_8 || level == TUI_COLORS_16 ? 0 : 16;
    int hi = level == TUI_COLORS_8 ? 8 : level == TUI_COLORS_16 ? 16 : 256;
    int best = -1, bd = 0;
    for (int i = lo; i < hi; i++) {
        uint8_t r, g, b;
        rgb_of_256(i, &r, &g, &b);
        int number = level == TUI_COLORS_DIRECT ? (int)r << 16 | (int)g << 8 | (int)b : i;
        if (number == avoid) continue;
        int d = dist2(c->r, c->g, c->b, r, g, b);
        if (best < 0 || d < bd) best = number, bd = d;
    }
    return best;
}

tui_resolved_style tui_style_resolve(const tui_theme *t, tui_meaning m, tui_color_level level)
{
    const tui_style *s = &t->style[m], *text = &t->style[TUI_C_TEXT];
    tui_resolved_style r = {-1, -1, -1, -1, s->attrs};
    if (level == TUI_COLORS_NONE) return r;
    /* the colours as drawn, and as seen where the terminal's own colour is drawn */
    const tui_color *fg = s->fg.is_default ? &text->fg : &s->fg;
    const tui_color *bg = s->bg.is_default ? &text->bg : &s->bg;
    const tui_color *seen_fg = fg->is_default ? &t->term_fg : fg;
    const tui_color *seen_bg = bg->is_default ? &t->term_bg : bg;
    unsigned bold = 0;
    r.fg = tui_color_number(fg, level, &bold);
    r.bg = tui_color_number(bg, level, NULL);
    r.shown_fg = tui_color_number(seen_fg, level, NULL);
    r.shown_bg = tui_color_number(seen_bg, level, NULL);
    if (r.shown_fg == r.shown_bg) {
        if (!s->bg.is_default && m != TUI_C_TEXT) {
            r.bg = r.shown_bg = nearest_other(seen_bg, level, r.shown_fg);
        } else {
            r.fg = r.shown_fg = nearest_other(seen_fg, level, r.shown_bg);
            bold = 0;
        }
    }
    r.attrs |= bold;
    return r;
}
