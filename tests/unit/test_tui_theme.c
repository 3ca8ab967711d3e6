/* Themes: the files in themes/ parse and give every meaning; colour tokens and their
 * 256/16-colour fallbacks; errors name the file and line; the heat scale; NO_COLOR and the
 * colour level; the heatmap normalisations. */
#include "test_util.h"

#include <glob.h>

#include "mtlab/error.h"
#include "tui/heatmap.h"
#include "common/theme.h"

static void test_shipped_themes_parse(void **state)
{
    (void)state;
    const char *names[] = {"dark", "light", "high-contrast", "monochrome"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "themes/%s.theme", names[i]);
        tui_theme t;
        if (tui_theme_load(&t, path) != 0) fail_msg("%s", mt_last_error());
        assert_string_equal(t.name, names[i]);
        if (!strcmp(names[i], "monochrome")) {
            /* attributes alone carry every meaning; heatmaps shade with glyphs */
            assert_int_equal(t.n_heat, 0);
            for (int m = 0; m < TUI_N_MEANINGS; m++) assert_true(t.style[m].fg.is_default);
            assert_true(t.style[TUI_C_DROPPED].attrs & TUI_A_UNDERLINE);
        } else {
            assert_true(t.n_heat >= 2);
            for (int m = 0; m < TUI_N_MEANINGS; m++)
                if (t.style[m].fg.is_default)
                    fail_msg("%s: meaning '%s' has no colour", path,
                             tui_meaning_name((tui_meaning)m));
        }
        /* recalled and dropped differ by more than colour */
        assert_true(t.style[TUI_C_RECALLED].attrs != 0 || t.style[TUI_C_DROPPED].attrs != 0);
        /* the jobs view's runs stay apart on 8 colours too (without colour, the plots dash) */
        for (int a = 0; a < TUI_N_SERIES && strcmp(names[i], "monochrome"); a++)
            for (int b = a + 1; b < TUI_N_SERIES; b++) {
                const tui_color *ca = &t.style[TUI_C_SERIES1 + a].fg,
                                *cb = &t.style[TUI_C_SERIES1 + b].fg;
                if (ca->c256 == cb->c256 || (ca->c16 & 7) == (cb->c16 & 7))
                    fail_msg("%s: series%d and series%d look alike", path, a + 1, b + 1);
            }
    }
}

static void test_color_tokens_and_fallbacks(void **state)
{
    (void)state;
    tui_color c;
    assert_int_equal(tui_color_parse(&c, "#ff0000"), 0);
    assert_false(c.is_default);
    assert_int_equal(c.r, 255);
    assert_int_equal(c.c256, 196);
    assert_int_equal(c.c16, 9); /* bright red */
    assert_int_equal(tui_color_parse(&c, "#808080"), 0);
    assert_int_equal(c.c256, 244); /* the grey ramp beats the cube */
    assert_int_equal(tui_color_parse(&c, "#123456/17/blue"), 0);
    assert_int_equal(c.c256, 17);
    assert_int_equal(c.c16, 4);
    assert_int_equal(tui_color_parse(&c, "bright-cyan"), 0);
    assert_int_equal(c.c16, 14);
    assert_int_equal(tui_color_parse(&c, "214"), 0);
    assert_int_equal(c.c256, 214);
    assert_int_equal(c.r, 255);
    assert_int_equal(c.g, 175);
    assert_int_equal(tui_color_parse(&c, "default"), 0);
    assert_true(c.is_default);
    assert_int_equal(tui_color_parse(&c, "#12345"), -1);
    assert_int_equal(tui_color_parse(&c, "#gg0000"), -1);
    assert_int_equal(tui_color_parse(&c, "256"), -1);
    assert_int_equal(tui_color_parse(&c, "#ff0000/300"), -1);
    assert_int_equal(tui_color_parse(&c, "#ff0000/9/pink"), -1);
    assert_int_equal(tui_rgb_to_256(0, 0, 0), 16);
    assert_int_equal(tui_rgb_to_256(255, 255, 255), 231);
    assert_int_equal(tui_rgb_to_16(0, 0, 200), 4);
}

static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    tui_theme t;
    const char *bad[][2] = {
        {"text #ffffff\ntxt #000000\n", "x.theme:2: unknown meaning 'txt'"},
        {"# comment\n\ntext #fffff\n", "x.theme:3: '#fffff' is not a colour"},
        {"focus #ffffff default blink\n", "x.theme:1: 'blink' is not a list of attributes"},
        {"heat #000000\n", "x.theme:1: heat takes 2 to 16 colours, got 1"},
        {"text\n", "x.theme:1: 'text' takes FG [BG [ATTRS]], got 0 words"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tui_theme_parse(&t, bad[i][0], strlen(bad[i][0]), "x.theme"), -1);
        if (strncmp(mt_last_error(), bad[i][1], strlen(bad[i][1])) != 0)
            fail_msg("got \"%s\", want \"%s...\"", mt_last_error(), bad[i][1]);
    }
    assert_int_equal(tui_theme_load(&t, "themes/no-such.theme"), -1);
    assert_non_null(strstr(mt_last_error(), "themes/no-such.theme"));
}

static void test_parse_fills_and_keeps_defaults(void **state)
{
    (void)state;
    const char *text = "# a theme\nborder #112233 #445566 bold,underline  # trailing comment\n"
                       "heat #000000 #ffffff\n";
    tui_theme t;
    assert_int_equal(tui_theme_parse(&t, text, strlen(text), "dir/mine.theme"), 0);
    assert_string_equal(t.name, "mine");
    assert_int_equal(t.style[TUI_C_BORDER].fg.r, 0x11);
    assert_int_equal(t.style[TUI_C_BORDER].bg.b, 0x66);
    assert_int_equal(t.style[TUI_C_BORDER].attrs, TUI_A_BOLD | TUI_A_UNDERLINE);
    /* a meaning the file leaves out keeps the plain look */
    assert_true(t.style[TUI_C_ENTITY].fg.is_default);
    assert_int_equal(t.style[TUI_C_ENTITY].attrs, TUI_A_UNDERLINE);
    tui_color mid = tui_heat_color(&t, 0.5);
    assert_int_equal(mid.r, 128);
    assert_int_equal(tui_heat_color(&t, 2.0).g, 255);
    assert_int_equal(tui_heat_color(&t, -1.0).b, 0);
}

static void test_color_level(void **state)
{
    (void)state;
    assert_int_equal(tui_color_level_detect(1, 256, 0, NULL), TUI_COLORS_256);
    assert_int_equal(tui_color_level_detect(1, 256, 0, ""), TUI_COLORS_256);
    assert_int_equal(tui_color_level_detect(1, 256, 0, "1"), TUI_COLORS_NONE);
    assert_int_equal(tui_color_level_detect(1, 0x1000000, 1, NULL), TUI_COLORS_DIRECT);
    assert_int_equal(tui_color_level_detect(1, 16, 0, NULL), TUI_COLORS_16);
    assert_int_equal(tui_color_level_detect(1, 8, 0, NULL), TUI_COLORS_8);
    assert_int_equal(tui_color_level_detect(0, 256, 0, NULL), TUI_COLORS_NONE);
}

static void test_heat_normalisations(void **state)
{
    (void)state;
    const float v[2][3] = {{0, 1, 2}, {0.5f, 0.25f, -1}};
    float out[6];
    tui_heat_normalise(out, &v[0][0], 2, 3, TUI_NORM_RAW, 4);
    assert_float_equal(out[2], 0.5f, 1e-6);
    assert_float_equal(out[5], 0.0f, 1e-6); /* negative counts as 0 */
    tui_heat_normalise(out, &v[0][0], 2, 3, TUI_NORM_ROW, 4);
    assert_float_equal(out[1], 0.5f, 1e-6);
    assert_float_equal(out[3], 1.0f, 1e-6);
    tui_heat_normalise(out, &v[0][0], 2, 3, TUI_NORM_LOG, 2);
    assert_float_equal(out[2], 1.0f, 1e-6); /* the max */
    assert_float_equal(out[1], (float)((log10(0.5) + 3) / 3), 1e-6);
    assert_float_equal(out[0], 0.0f, 1e-6);
    assert_int_equal(tui_heat_level(0.0f, 16), 0);
    assert_int_equal(tui_heat_level(1.0f, 16), 15);
    assert_int_equal(tui_heat_level(0.5f, 16), 8);
    /* shading: the lowest level is the lightest glyph, never the masked blank; the highest
     * the full block; in order between */
    assert_int_equal(tui_heat_shade(0, 8, 5), 1);
    assert_int_equal(tui_heat_shade(7, 8, 5), 4);
    for (int l = 1; l < 16; l++)
        assert_true(tui_heat_shade(l, 16, 5) >= tui_heat_shade(l - 1, 16, 5));
}

static void test_heat_slices_and_kinds(void **state)
{
    (void)state;
    float values[2 * 2 * 2] = {1, 2, 3, 4, 3, 2, 1, 0};
    mt_probe_map maps[3] = {
#define MAP(lay, enc, axis)      \
    {.kind = MT_PROBE_SELF_ATTN, \
     .layer = lay,               \
     .encoder = enc,             \
     .heads = 2,                 \
     .rows = 2,                  \
     .cols = 2,                  \
     .row_axis = axis,           \
     .col_axis = axis,           \
     .values = values}
        MAP(0, 0, MT_PROBE_AXIS_TARGET),
        MAP(0, 1, MT_PROBE_AXIS_SOURCE),
        MAP(1, 0, MT_PROBE_AXIS_TARGET),
#undef MAP
    };
    mt_probe_record r = {.maps = maps, .n_maps = 3};
    float out[4];
    tui_heat_slice(out, &maps[0], -1);
    for (int i = 0; i < 4; i++) assert_float_equal(out[i], 2.0f, 1e-6);
    tui_heat_slice(out, &maps[0], 1);
    assert_float_equal(out[0], 3.0f, 1e-6);
    assert_int_equal(tui_heat_count(&r, MT_PROBE_SELF_ATTN), 3);
    /* decoder maps first, then the encoder's */
    assert_int_equal(tui_heat_find(&r, MT_PROBE_SELF_ATTN, 1), 2);
    assert_int_equal(tui_heat_find(&r, MT_PROBE_SELF_ATTN, 2), 1);
    assert_int_equal(tui_heat_find(&r, MT_PROBE_CROSS_ATTN, 0), -1);
    assert_int_equal(tui_heat_next_kind(&r, -1), MT_PROBE_SELF_ATTN);
    /* then the attribution map, which every model has, then round again */
    assert_int_equal(tui_heat_next_kind(&r, MT_PROBE_SELF_ATTN), TUI_HEAT_ATTRIBUTION);
    assert_int_equal(tui_heat_next_kind(&r, TUI_HEAT_ATTRIBUTION), MT_PROBE_SELF_ATTN);
    /* the slice of the second decoder map, head 2 */
    const mt_probe_map *m;
    float *v = tui_heat_pick(&r, MT_PROBE_SELF_ATTN, 1, 1, &m);
    assert_ptr_equal(m, &maps[2]);
    assert_float_equal(v[3], 0.0f, 1e-6);
    free(v);
    assert_null(tui_heat_pick(&r, MT_PROBE_CROSS_ATTN, 0, -1, &m));
    assert_null(m);
    /* a decoder-only sequence `src <sep> hyp` splits after <sep>; an encoder-decoder's
     * decoder sequence does not */
    r.n_tokens = 7, r.n_prompt = 4;
    assert_int_equal(tui_heat_split(&r, MT_PROBE_AXIS_TARGET), 4);
    assert_int_equal(tui_heat_split(&r, MT_PROBE_AXIS_LAYER), 0);
    assert_string_equal(tui_heat_axis_title(&r, MT_PROBE_AXIS_TARGET), "source | translation");
    r.n_src = 5, r.n_prompt = 1;
    assert_int_equal(tui_heat_split(&r, MT_PROBE_AXIS_TARGET), 0);
    assert_int_equal(tui_heat_split(&r, MT_PROBE_AXIS_SOURCE), 0);
    assert_string_equal(tui_heat_axis_title(&r, MT_PROBE_AXIS_TARGET), "translation");
}

/* The legend's ends are numbers on every scale: per row, the max of the row read. */
static void test_heat_scale_numbers(void **state)
{
    (void)state;
    tui_heat_scale s;
    tui_heat_scale_describe(&s, TUI_NORM_ROW, MT_PROBE_CROSS_ATTN, 2.55f, 0.43f);
    assert_string_equal(s.lo, "0");
    assert_string_equal(s.hi, "0.43");
    assert_string_equal(s.what, "per row, top = this row's max");
    tui_heat_scale_describe(&s, TUI_NORM_RAW, MT_PROBE_CROSS_ATTN, 2.55f, 0.43f);
    assert_string_equal(s.hi, "2.55");
    assert_string_equal(s.what, "raw, shared by attention");
    tui_heat_scale_describe(&s, TUI_NORM_LOG, MT_PROBE_STATE_NORMS, 10.0f, 0.43f);
    assert_string_equal(s.lo, "0.01");
    assert_string_equal(s.hi, "10");
    assert_string_equal(s.what, "log, shared by state maps");
}

/* Axis labels: the engine's label of each token (mt_tokenizer_label), the piece where a record
 * has none, layers and groups numbered from 1, "?" past the end. */
static void test_heat_axis_labels(void **state)
{
    (void)state;
    char *labels[] = {"\u2581Dios", "s", "\u2581"}, *shown[] = {"Dios", "s", "\u2423"};
    mt_labelled_probe pr = {.rec = {.n_tokens = 3}, .labels = labels, .shown = shown};
    char out[64];
    tui_heat_axis_label(out, sizeof out, &pr, MT_PROBE_AXIS_TARGET, 0);
    assert_string_equal(out, "Dios");
    tui_heat_axis_label(out, sizeof out, &pr, MT_PROBE_AXIS_TARGET, 2);
    assert_string_equal(out, "\u2423");
    tui_heat_axis_label(out, sizeof out, &pr, MT_PROBE_AXIS_TARGET, 3);
    assert_string_equal(out, "?");
    pr.shown = NULL;
    tui_heat_axis_label(out, sizeof out, &pr, MT_PROBE_AXIS_TARGET, 0);
    assert_string_equal(out, "\u2581Dios");
    tui_heat_axis_label(out, sizeof out, &pr, MT_PROBE_AXIS_LAYER, 2);
    assert_string_equal(out, "L3"); /* numbered from 1 */
    tui_heat_axis_label(out, sizeof out, &pr, MT_PROBE_AXIS_GROUP, 0);
    assert_string_equal(out, "g1");
    assert_true(tui_heat_token_axis(MT_PROBE_AXIS_TARGET) &&
                tui_heat_token_axis(MT_PROBE_AXIS_SOURCE));
    /* the axes named for a class: what the rows and the columns are */
    mt_probe_record encdec = {.n_src = 4, .n_tokens = 3};
    tui_heat_axes_caption(out, sizeof out, &encdec, MT_PROBE_AXIS_TARGET, MT_PROBE_AXIS_SOURCE,
                          "\u2193", "\u2192");
    assert_string_equal(out, "translation \u2193  source \u2192");
    tui_heat_axes_caption(out, sizeof out, &pr.rec, MT_PROBE_AXIS_LAYER, MT_PROBE_AXIS_TARGET, "v",
                          "->");
    assert_string_equal(out, "layer v  source | translation ->");
    assert_false(tui_heat_token_axis(MT_PROBE_AXIS_LAYER) ||
                 tui_heat_token_axis(MT_PROBE_AXIS_GROUP));
}

/* Every theme in themes/ at every colour level: no meaning shows its foreground in its
 * background's colour once the fallbacks are applied (on 8 colours a grey falls to black). */
static void test_every_theme_legible_at_every_level(void **state)
{
    (void)state;
    glob_t g;
    assert_int_equal(glob("themes/*.theme", 0, NULL, &g), 0);
    assert_true(g.gl_pathc >= 4);
    const tui_color_level levels[] = {TUI_COLORS_8, TUI_COLORS_16, TUI_COLORS_256,
                                      TUI_COLORS_DIRECT};
    for (size_t i = 0; i < g.gl_pathc; i++) {
        tui_theme t;
        if (tui_theme_load(&t, g.gl_pathv[i]) != 0) fail_msg("%s", mt_last_error());
        for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++)
            for (int m = 0; m < TUI_N_MEANINGS; m++) {
                tui_resolved_style r = tui_style_resolve(&t, (tui_meaning)m, levels[l]);
                if (r.shown_fg == r.shown_bg)
                    fail_msg("%s, %s: '%s' shows colour %d on itself", g.gl_pathv[i],
                             tui_color_level_name(levels[l]), tui_meaning_name((tui_meaning)m),
                             r.shown_fg);
            }
        /* without colour the attributes alone set the focus and the titles apart */
        tui_resolved_style none = tui_style_resolve(&t, TUI_C_FOCUS, TUI_COLORS_NONE);
        assert_int_equal(none.fg, -1);
        assert_int_equal(none.bg, -1);
    }
    globfree(&g);
}

/* The repair itself: a grey border on a dark terminal becomes the nearest other colour on 8
 * colours instead of black; a highlight whose background falls onto its text moves its
 * background; the terminal line tells what `default` looks like. */
static void test_fallback_repair(void **state)
{
    (void)state;
    const char *text = "border #4e5d73 default\n"
                       "selection #1c1c1c #87afd7\n"
                       "title #8a8a8a\n";
    tui_theme t;
    assert_int_equal(tui_theme_parse(&t, text, strlen(text), "x.theme"), 0);
    tui_resolved_style r = tui_style_resolve(&t, TUI_C_BORDER, TUI_COLORS_8);
    assert_int_equal(r.bg, -1); /* drawn on the terminal's own background */
    assert_int_equal(r.shown_bg, 0); /* assumed black */
    assert_int_equal(r.fg, 6); /* cyan, the nearest of the other seven */
    assert_int_equal(r.attrs & TUI_A_BOLD, 0);
    /* at 16 colours the bright black stays: it is not black */
    assert_int_equal(tui_style_resolve(&t, TUI_C_BORDER, TUI_COLORS_16).fg, 8);
    r = tui_style_resolve(&t, TUI_C_SELECTION, TUI_COLORS_8);
    assert_int_equal(r.fg, 0);
    assert_int_equal(r.bg, 7); /* the highlight moves, the text stays black */
    /* a light terminal: grey on white stays grey */
    const char *light = "terminal #000000 #ffffff\ntitle #8a8a8a\n";
    assert_int_equal(tui_theme_parse(&t, light, strlen(light), "y.theme"), 0);
    r = tui_style_resolve(&t, TUI_C_TITLE, TUI_COLORS_16);
    assert_int_equal(r.shown_bg, 15);
    assert_int_equal(r.fg, 8);
    const char *bad = "terminal #000000\n";
    assert_int_equal(tui_theme_parse(&t, bad, strlen(bad), "z.theme"), -1);
    assert_non_null(strstr(mt_last_error(), "z.theme:1: terminal takes two colours"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_themes_parse),
        cmocka_unit_test(test_color_tokens_and_fallbacks),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_parse_fills_and_keeps_defaults),
        cmocka_unit_test(test_color_level),
        cmocka_unit_test(test_heat_normalisations),
        cmocka_unit_test(test_heat_slices_and_kinds),
        cmocka_unit_test(test_heat_axis_labels),
        cmocka_unit_test(test_heat_scale_numbers),
        cmocka_unit_test(test_every_theme_legible_at_every_level),
        cmocka_unit_test(test_fallback_repair),
    };
    return cmocka_run_group_tests_name("tui_theme", tests, NULL, NULL);
}
