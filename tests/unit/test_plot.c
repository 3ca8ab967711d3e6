/* Plots (app/plot): terminal text against golden strings (plain, colour, ASCII), braille dots
 * where known points must land, SVG read back as XML with its title, PNG read back by cairo
 * (size, and the colours of heatmap cells at the scale's ends), CSV exactly, and every error a
 * caller can cause. */
#include "test_util.h"

#include "mtlab/error.h"
#include "mtlab/utf8.h"
#include "plot/plot.h"
#include "plot/plot_internal.h"

#include <cairo.h>
#include <float.h>
#include <locale.h>
#include <unistd.h>

/* fontconfig's configuration, kept for the life of the process, is not a leak:
 * app/plot/plot_cairo.c tells LeakSanitizer so */

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    return test_make_tmpdir(tmpdir, sizeof tmpdir, "plot");
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmpdir);
}

/* Compare with a golden text; on a difference print the actual one as a C literal. */
static void assert_golden(const char *got, const char *want)
{
    if (got && !strcmp(got, want)) return;
    fprintf(stderr, "got:\n");
    if (got) {
        fputc('"', stderr);
        for (const char *s = got; *s; s++) {
            if (*s == '\n') fputs("\\n\"\n\"", stderr);
            else if (*s == '\x1b') fputs("\\x1b", stderr);
            else if (*s == '"' || *s == '\\') fprintf(stderr, "\\%c", *s);
            else fputc(*s, stderr);
        }
        fputs("\"\n", stderr);
        fprintf(stderr, "as text:\n%s", got);
    } else {
        fprintf(stderr, "(NULL: %s)\n", mt_last_error());
    }
    fail_msg("text differs from the golden one");
}

static char *render(const plot *p, int w, int h, int color, int ascii)
{
    plot_text_opts o = {w, h, color, ascii};
    char *s = plot_text(p, &o);
    if (!s) fail_msg("plot_text: %s", mt_last_error());
    return s;
}

static void assert_error_has(const char *needle)
{
    if (!strstr(mt_last_error(), needle))
        fail_msg("error '%s' does not mention '%s'", mt_last_error(), needle);
}

/* ---------------------------------------------------------------- terminal text */

static plot *loss_plot(void)
{
    plot *p = plot_line_new("Loss", "step", "nats");
    const double x[] = {0, 100, 200, 300, 400}, a[] = {4, 2.5, 1.8, 1.4, 1.2};
    const double b[] = {3.5, NAN, 2.2, 2, 1.9};
    assert_int_equal(plot_line_add(p, "mamba", x, 5, a, 5), 0);
    assert_int_equal(plot_line_add(p, "retnet", x, 5, b, 5), 0);
    return p;
}

static void test_line_golden(void **state)
{
    (void)state;
    plot *p = loss_plot();
    char *s = render(p, 32, 11, 0, 0);
    assert_golden(s, "              Loss\n"
                     "nats\n"
                     "4┤⠍⠒⠤⣀\n"
                     " │    ⠉⠒⠤⣀⣀\n"
                     "2┤         ⠉⠉⠑⠒⠒⠤⠶⠤⣂⣠⣀⡄⠠⠤ ⠄⠠ ⠄⠠⠠\n"
                     " │                    ⠈⠉⠉⠉⠉⠉⠒⠒⠒⠒\n"
                     "0┤\n"
                     " └┬──────┬───────┬──────┬──────┬\n"
                     "  0     100     200    300   400\n"
                     "               step\n"
                     "⠒⠒⠒⠒ mamba   ⠂⠐⠀⠂ retnet\n");
    free(s);
    plot_free(p);
}

static void test_line_golden_ascii(void **state)
{
    (void)state;
    plot *p = loss_plot();
    char *s = render(p, 32, 11, 0, 1);
    assert_golden(s, "              Loss\n"
                     "nats\n"
                     "4+**\n"
                     " |+ ****\n"
                     "2+      *********+++++++++++++++\n"
                     " |                   ***********\n"
                     "0+\n"
                     " ++------+-------+------+------+\n"
                     "  0     100     200    300   400\n"
                     "               step\n"
                     "**** mamba   ++++ retnet\n");
    free(s);
    plot_free(p);
}

static void test_line_golden_colour(void **state)
{
    (void)state;
    plot *p = plot_line_new(NULL, NULL, NULL);
    const double y[] = {0, 1, 0, 1};
    assert_int_equal(plot_line_add(p, NULL, NULL, 0, y, 4), 0);
    char *s = render(p, 14, 5, 1, 0);
    assert_golden(s, "1┤     \x1b[0;38;5;31m⡰⢣   ⢀⠎\x1b[0m\n"
                     " │    \x1b[0;38;5;31m⡰⠁ ⢣ ⢀⠎\x1b[0m\n"
                     "0┤   \x1b[0;38;5;31m⡰⠁   ⢣⠎\x1b[0m\n"
                     " └┬─────┬────┬\n"
                     "  0     2    4\n");
    free(s);
    plot_free(p);
}

/* The character at column col of line row (every character one column here). */
static uint32_t char_at(const char *text, int row, int col)
{
    const char *s = text;
    for (int r = 0; r < row; r++) {
        s = strchr(s, '\n');
        assert_non_null(s);
        s++;
    }
    uint32_t cp = ' ';
    for (int c = 0; c <= col; c++) {
        if (*s == '\n' || !*s) return ' ';
        int n = mt_utf8_next(s, strlen(s), &cp);
        assert_true(n > 0);
        s += n;
    }
    return cp;
}

static void test_braille_dots(void **state)
{
    (void)state;
    /* 12 x 5 cells, no title or labels: y ticks 0 and 1 make the axis one column wide, so
     * the plot area is columns 2..11 (20 dots) and rows 0..2 (12 dots); point (x, y) is dot
     * (round(x * 19), round((1 - y) * 11)) */
    plot *p = plot_line_new(NULL, NULL, NULL);
    const double x[] = {0, NAN, 1, NAN, 0.25, NAN, 0.5};
    const double y[] = {0, NAN, 1, NAN, 0.75, NAN, 0.2};
    assert_int_equal(plot_line_add(p, NULL, x, 7, y, 7), 0);
    char *s = render(p, 12, 5, 0, 0);
    /* (0, 0): dot (0, 11): cell (0, 2), left column, bottom row: 0x40 */
    assert_int_equal(char_at(s, 2, 2 + 0), 0x2840);
    /* (1, 1): dot (19, 0): cell (9, 0), right column, top row: 0x08 */
    assert_int_equal(char_at(s, 0, 2 + 9), 0x2808);
    /* (0.25, 0.75): dot (5, 3): cell (2, 0), right column, bottom row: 0x80 */
    assert_int_equal(char_at(s, 0, 2 + 2), 0x2880);
    /* (0.5, 0.2): dot (10, 9): cell (5, 2), left column, second row: 0x02 */
    assert_int_equal(char_at(s, 2, 2 + 5), 0x2802);
    /* nothing else is drawn */
    int dots = 0;
    for (int r = 0; r < 3; r++)
        for (int c = 2; c < 12; c++) dots += char_at(s, r, c) != ' ';
    assert_int_equal(dots, 4);
    free(s);
    plot_free(p);

    /* a level line at y = 0 fills the bottom dot row of every cell (0x40 | 0x80); a lone
     * point at (0, 1) makes the range 0..1 */
    p = plot_line_new(NULL, NULL, NULL);
    const double lx[] = {0, 1, NAN, 0}, ly[] = {0, 0, NAN, 1};
    assert_int_equal(plot_line_add(p, NULL, lx, 4, ly, 4), 0);
    s = render(p, 12, 5, 0, 0);
    for (int c = 2; c < 12; c++) assert_int_equal(char_at(s, 2, c), 0x28C0);
    assert_int_equal(char_at(s, 0, 2), 0x2801);
    free(s);
    plot_free(p);
}

static void test_bar_golden(void **state)
{
    (void)state;
    const char *labels[] = {"transformer", "mamba", "retnet"}; /* not the registry: labels */
    const double bleu[] = {17.3, 6.8, NAN};
    plot *p = plot_bar_new("BLEU", "test BLEU", labels, 3);
    assert_int_equal(plot_bar_add(p, NULL, bleu, 3), 0);
    char *s = render(p, 36, 10, 0, 0);
    assert_golden(s, "                BLEU\n"
                     "transformer │███████████████▋ 17.3\n"
                     "mamba       │██████▏ 6.8\n"
                     "retnet      │ n/a\n"
                     "            └────────┬────────┬\n"
                     "            0        10       20\n"
                     "                 test BLEU\n");
    free(s);
    /* grouped: a blank row between groups and a legend */
    const double para[] = {19.1, 7.2, 12.5};
    assert_int_equal(plot_bar_add(p, "paragraph", para, 3), 0);
    s = render(p, 36, 14, 0, 0);
    assert_golden(s, "                BLEU\n"
                     "transformer │███████████████▋ 17.3\n"
                     "            │▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓ 19.1\n"
                     "\n"
                     "mamba       │██████▏ 6.8\n"
                     "            │▓▓▓▓▓▓▓ 7.2\n"
                     "\n"
                     "retnet      │ n/a\n"
                     "            │▓▓▓▓▓▓▓▓▓▓▓ 12.5\n"
                     "            └────────┬────────┬\n"
                     "            0        10       20\n"
                     "                 test BLEU\n"
                     "██ series 1   ▓▓ paragraph\n");
    free(s);
    plot_free(p);
}

static plot *small_heatmap(void)
{
    const char *rows[] = {"God", "said", "<eos>"};
    const char *cols[] = {"Dios", "dijo", "<sep>"};
    const float v[] = {0.9f, 0, 0, 0.2f, 0.6f, 0, 0.1f, NAN, 0.3f};
    const uint8_t mask[] = {0, 1, 1, 0, 0, 1, 0, 0, 0};
    plot *p =
        plot_heatmap_new("cross", "source", "target", &(plot_grid){v, 3, 3, rows, cols, mask});
    assert_non_null(p);
    return p;
}

static void test_heatmap_golden(void **state)
{
    (void)state;
    plot *p = small_heatmap();
    char *s = render(p, 30, 9, 0, 0);
    assert_golden(s, "            cross\n"
                     "targ… Dios    dijo    <sep>\n"
                     "God   ████████\n"
                     "said  ░░░░░░░░▓▓▓▓▓▓▓▓\n"
                     "<eos> ░░░░░░░░        ▒▒▒▒▒▒▒▒\n"
                     "               source\n"
                     "0.1 ░░▒▒▓▓██ 0.9  blank: not …\n");
    free(s);
    s = render(p, 30, 9, 0, 1);
    assert_golden(s, "            cross\n"
                     "targ~ Dios    dijo    <sep>\n"
                     "God   @@@@@@@@\n"
                     "said  ::::::::********\n"
                     "<eos> ........        --------\n"
                     "               source\n"
                     "0.1 .:-=+*#%@ 0.9  blank: not~\n");
    free(s);
    assert_int_equal(plot_heatmap_set_range(p, 0, 1), 0);
    s = render(p, 30, 9, 1, 0);
    assert_golden(s, "            cross\n"
                     "targ… Dios    dijo    <sep>\n"
                     "God   \x1b[0;48;5;148m        \x1b[0m\n"
                     "said  \x1b[0;48;5;60m        \x1b[0;48;5;36m        \x1b[0m\n"
                     "<eos> \x1b[0;48;5;53m        \x1b[0m        \x1b[0;48;5;60m        \x1b[0m\n"
                     "               source\n"
                     "0 \x1b[0;48;5;53m  \x1b[0;48;5;60m    \x1b[0;48;5;30m   \x1b[0;48;5;36m "
                     "\x1b[0;48;5;72m \x1b[0;48;5;71m \x1b[0;48;5;77m \x1b[0;48;5;113m "
                     "\x1b[0;48;5;148m \x1b[0;48;5;184m \x1b[0m 1  blank: …\n");
    free(s);
    plot_free(p);
}

/* A matrix with more rows or columns than the cells given is drawn with several matrix rows
 * (columns) a character, each the mean of its block, and says so; a 30x30 map fits 120x14. */
static void test_heatmap_binned(void **state)
{
    (void)state;
    enum { N = 30, WIDE = 200 };
    float v[N * WIDE];
    for (int i = 0; i < N * WIDE; i++) v[i] = (float)(i % 7);
    plot *p = plot_heatmap_new("big", NULL, NULL, &(plot_grid){v, N, N, NULL, NULL, NULL});
    assert_non_null(p);
    for (int color = 0; color <= 1; color++) {
        char *s = render(p, 120, 14, color, 0);
        int lines = 0;
        for (const char *c = s; *c; c++) lines += *c == '\n';
        assert_true(lines <= 14);
        assert_non_null(strstr(s, "3 rows a line"));
        free(s);
    }
    plot_free(p);
    /* 200 columns in 45: each character is the mean of 5 */
    const float ramp[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    float wide[WIDE];
    for (int j = 0; j < WIDE; j++) wide[j] = ramp[(j / 5) % 2 * 5];
    p = plot_heatmap_new("wide", NULL, NULL, &(plot_grid){wide, 1, WIDE, NULL, NULL, NULL});
    char *s = render(p, 46, 6, 0, 0);
    assert_non_null(strstr(s, " ░█░█"));
    assert_non_null(strstr(s, "5 columns a character"));
    free(s);
    plot_free(p);
}

static void test_text_write(void **state)
{
    (void)state;
    plot *p = small_heatmap();
    char path[300];
    snprintf(path, sizeof path, "%s/heat.txt", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    plot_text_opts o = {30, 9, 0, 0};
    assert_int_equal(plot_text_write(p, &o, f), 0);
    fclose(f);
    char *want = plot_text(p, &o), *got = test_read_file(path, NULL);
    assert_string_equal(got, want);
    free(want);
    free(got);
    plot_free(p);
}

/* ---------------------------------------------------------------- files */

static void test_svg_written(void **state)
{
    (void)state;
    plot *p = plot_line_new("Loss & <BLEU>", "step", "loss");
    const double y[] = {3, 2, 1.5};
    assert_int_equal(plot_line_add(p, "run 1", NULL, 0, y, 3), 0);
    char path[300];
    snprintf(path, sizeof path, "%s/loss.SVG", tmpdir);
    if (plot_save(p, path, 640, 400)) fail_msg("%s", mt_last_error());
    char *svg = test_read_file(path, NULL);
    assert_non_null(svg);
    assert_true(!strncmp(svg, "<?xml", 5));
    const char *root = strstr(svg, "<svg");
    assert_non_null(root);
    assert_non_null(strstr(root, "width=\"640pt\""));
    const char *title = strstr(svg, "<title>Loss &amp; &lt;BLEU&gt;</title>");
    assert_non_null(title);
    assert_true(title > root);
    assert_non_null(strstr(svg, "</svg>"));
    free(svg);
    plot_free(p);
}

static uint32_t be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
}

static plot_rgb pixel(cairo_surface_t *s, double x, double y)
{
    const unsigned char *d = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    uint32_t px = *(const uint32_t *)(d + (size_t)y * stride + (size_t)x * 4);
    return (plot_rgb){(uint8_t)(px >> 16), (uint8_t)(px >> 8), (uint8_t)px};
}

static void assert_rgb(plot_rgb got, plot_rgb want)
{
    if (got.r != want.r || got.g != want.g || got.b != want.b)
        fail_msg("pixel #%02x%02x%02x, want #%02x%02x%02x", got.r, got.g, got.b, want.r, want.g,
                 want.b);
}

static void test_png_heatmap_pixels(void **state)
{
    (void)state;
    const float v[] = {0, 1, 5, 0.5f};
    const uint8_t mask[] = {0, 0, 1, 0};
    const char *labels[] = {"a", "b"};
    plot *p = plot_heatmap_new("map", NULL, NULL, &(plot_grid){v, 2, 2, labels, labels, mask});
    char path[300];
    snprintf(path, sizeof path, "%s/map.png", tmpdir);
    if (plot_save(p, path, 420, 300)) fail_msg("%s", mt_last_error());
    size_t len;
    unsigned char *png = (unsigned char *)test_read_file(path, &len);
    assert_true(len > 33);
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    assert_memory_equal(png + 12, "IHDR", 4);
    assert_int_equal(be32(png + 16), 420);
    assert_int_equal(be32(png + 20), 300);
    free(png);

    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(s), 420);
    assert_int_equal(cairo_image_surface_get_height(s), 300);
    cairo_surface_flush(s);
    /* the masked 5 is not part of the range 0..1: 1 is the scale's top, 0 its bottom */
    double r[4];
    plot_cairo_heat_cell(p, 420, 300, 0, 1, r);
    assert_true(r[2] > 20 && r[3] > 20);
    assert_rgb(pixel(s, r[0] + r[2] / 2, r[1] + r[3] / 2), plot_scale_rgb(PLOT_SCALE_VIRIDIS, 1));
    assert_rgb(pixel(s, r[0] + 2, r[1] + 2), plot_scale_rgb(PLOT_SCALE_VIRIDIS, 1));
    plot_cairo_heat_cell(p, 420, 300, 0, 0, r);
    assert_rgb(pixel(s, r[0] + r[2] / 2, r[1] + r[3] / 2), plot_scale_rgb(PLOT_SCALE_VIRIDIS, 0));
    plot_cairo_heat_cell(p, 420, 300, 1, 1, r);
    assert_rgb(pixel(s, r[0] + r[2] / 2, r[1] + r[3] / 2), plot_scale_rgb(PLOT_SCALE_VIRIDIS, 0.5));
    plot_cairo_heat_cell(p, 420, 300, 1, 0, r);
    assert_rgb(pixel(s, r[0] + r[2] / 2, r[1] + r[3] / 2), plot_masked_rgb);
    cairo_surface_destroy(s);

    /* greys on a fixed range: 1 of 0..2 is the middle grey */
    assert_int_equal(plot_heatmap_set_scale(p, PLOT_SCALE_GREYS), 0);
    assert_int_equal(plot_heatmap_set_range(p, 0, 2), 0);
    if (plot_save(p, path, 420, 300)) fail_msg("%s", mt_last_error());
    s = cairo_image_surface_create_from_png(path);
    cairo_surface_flush(s);
    plot_cairo_heat_cell(p, 420, 300, 0, 1, r);
    assert_rgb(pixel(s, r[0] + r[2] / 2, r[1] + r[3] / 2), plot_scale_rgb(PLOT_SCALE_GREYS, 0.5));
    cairo_surface_destroy(s);

    /* a caller's own colours (the workbench's theme) and the boundary line before row 1 and
     * column 1: the cells keep their colours, the line runs between them */
    const uint8_t theme[] = {0, 0, 0, 200, 40, 0, 255, 255, 255};
    assert_int_equal(plot_heatmap_set_colors(p, theme, 3), 0);
    assert_int_equal(plot_heatmap_set_split(p, 1, 1), 0);
    if (plot_save(p, path, 420, 300)) fail_msg("%s", mt_last_error());
    s = cairo_image_surface_create_from_png(path);
    cairo_surface_flush(s);
    plot_cairo_heat_cell(p, 420, 300, 0, 1, r);
    assert_rgb(pixel(s, r[0] + r[2] / 2, r[1] + r[3] / 2), (plot_rgb){200, 40, 0});
    plot_cairo_heat_cell(p, 420, 300, 0, 0, r);
    assert_rgb(pixel(s, r[0] + r[2] / 2, r[1] + r[3] / 2), (plot_rgb){0, 0, 0});
    plot_cairo_heat_cell(p, 420, 300, 1, 1, r);
    assert_rgb(pixel(s, r[0] + r[2] / 2, r[1] + r[3] / 2), (plot_rgb){100, 20, 0});
    plot_rgb line = pixel(s, r[0] + r[2] / 2, r[1]); /* the row boundary, over cell (1, 1) */
    assert_true(line.r < 0x40 && line.g < 0x40 && line.b < 0x40);
    cairo_surface_destroy(s);
    assert_int_equal(plot_heatmap_set_colors(p, theme, 1), -1);
    assert_error_has("1 colour stops; a scale needs at least 2");
    assert_int_equal(plot_heatmap_set_split(p, 2, 0), -1);
    assert_error_has("boundary before row 2, column 0 is outside the 2 x 2 matrix");
    plot_free(p);
}

static void test_png_line_and_bar(void **state)
{
    (void)state;
    plot *p = loss_plot();
    char path[300];
    snprintf(path, sizeof path, "%s/loss.png", tmpdir);
    if (plot_save(p, path, 500, 320)) fail_msg("%s", mt_last_error());
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(s), 500);
    /* both series' colours are on the page */
    cairo_surface_flush(s);
    int seen[2] = {0, 0};
    for (int y = 0; y < 320; y++)
        for (int x = 0; x < 500; x++) {
            plot_rgb c = pixel(s, x, y);
            for (int k = 0; k < 2; k++) {
                plot_rgb w = plot_series_rgb((size_t)k);
                seen[k] += c.r == w.r && c.g == w.g && c.b == w.b;
            }
        }
    assert_true(seen[0] > 100 && seen[1] > 100);
    cairo_surface_destroy(s);
    plot_free(p);

    const char *labels[] = {"a", "b"};
    const double v[] = {1, 2};
    p = plot_bar_new(NULL, NULL, labels, 2);
    assert_int_equal(plot_bar_add(p, NULL, v, 2), 0);
    snprintf(path, sizeof path, "%s/bar.png", tmpdir);
    if (plot_save(p, path, 300, 200)) fail_msg("%s", mt_last_error());
    s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_image_surface_get_height(s), 200);
    cairo_surface_destroy(s);
    plot_free(p);
}

/* ---------------------------------------------------------------- CSV */

static void test_csv_exact(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/out.csv", tmpdir);

    plot *p = plot_line_new(NULL, NULL, NULL);
    const double x[] = {1, 2.5, 3}, y[] = {0.1, NAN, 1e-7};
    assert_int_equal(plot_line_add(p, "run \"a\", seed 1", x, 3, y, 3), 0);
    assert_int_equal(plot_line_add(p, NULL, NULL, 0, y, 1), 0);
    if (plot_save(p, path, 0, 0)) fail_msg("%s", mt_last_error());
    char *csv = test_read_file(path, NULL);
    assert_string_equal(csv, "series,x,y\n"
                             "\"run \"\"a\"\", seed 1\",1,0.1\n"
                             "\"run \"\"a\"\", seed 1\",2.5,\n"
                             "\"run \"\"a\"\", seed 1\",3,1e-07\n"
                             "series 2,1,0.1\n");
    free(csv);
    plot_free(p);

    /* an invalid byte in a label is written as U+FFFD */
    const char *labels[] = {"transformer", "mamba\xff"};
    const double s1[] = {17.28, NAN}, s2[] = {19.05, 7.2};
    p = plot_bar_new(NULL, NULL, labels, 2);
    assert_int_equal(plot_bar_add(p, "sentence", s1, 2), 0);
    assert_int_equal(plot_bar_add(p, "paragraph", s2, 2), 0);
    if (plot_save(p, path, 0, 0)) fail_msg("%s", mt_last_error());
    csv = test_read_file(path, NULL);
    assert_string_equal(csv, "label,sentence,paragraph\n"
                             "transformer,17.28,19.05\n"
                             "mamba\xef\xbf\xbd,,7.2\n");
    free(csv);
    plot_free(p);

    p = small_heatmap();
    if (plot_save(p, path, 0, 0)) fail_msg("%s", mt_last_error());
    csv = test_read_file(path, NULL);
    assert_string_equal(csv, "target,Dios,dijo,<sep>\n"
                             "God,0.9,,\n"
                             "said,0.2,0.6,\n"
                             "<eos>,0.1,,0.3\n");
    free(csv);
    plot_free(p);
}

/* ---------------------------------------------------------------- errors */

static void test_input_errors(void **state)
{
    (void)state;
    plot *p = plot_line_new("Loss", NULL, NULL);
    const double x[] = {1, 2, 3}, y[] = {1, 2};
    assert_int_equal(plot_line_add(p, "a", x, 3, y, 2), -1);
    assert_error_has("line plot 'Loss': series a has 3 x values but 2 y values");
    assert_int_equal(plot_line_add(p, "a", x, 0, y, 0), -1);
    assert_error_has("series a is empty");
    plot_text_opts o = {40, 10, 0, 0};
    assert_null(plot_text(p, &o));
    assert_error_has("line plot 'Loss': no series to draw");
    const double nan2[] = {NAN, INFINITY};
    assert_int_equal(plot_line_add(p, "b", NULL, 0, nan2, 2), 0);
    assert_null(plot_text(p, &o));
    assert_error_has("no point to draw");
    const double huge[] = {-DBL_MAX, DBL_MAX};
    assert_int_equal(plot_line_add(p, "c", NULL, 0, huge, 2), 0);
    assert_null(plot_text(p, &o));
    assert_error_has("span more than a double can hold");
    assert_int_equal(plot_heatmap_set_range(p, 0, 1), -1);
    assert_error_has("needs a heatmap");
    plot_free(p);

    const char *labels[] = {"a", "b"};
    assert_null(plot_bar_new("B", NULL, labels, 0));
    assert_error_has("bar plot 'B': no labels");
    p = plot_bar_new("B", NULL, labels, 2);
    const double one[] = {1}, neg[] = {1, -2};
    assert_int_equal(plot_bar_add(p, "s", one, 1), -1);
    assert_error_has("bar plot 'B': series s has 1 values for 2 labels");
    assert_int_equal(plot_bar_add(p, "s", neg, 2), -1);
    assert_error_has("value -2 at 'b'");
    assert_null(plot_text(p, &o));
    assert_error_has("no series to draw");
    plot_free(p);

    const float v[] = {1, NAN};
    const uint8_t all[] = {1, 1};
    assert_null(plot_heatmap_new("H", NULL, NULL, &(plot_grid){v, 0, 2, NULL, NULL, NULL}));
    assert_error_has("heatmap 'H': empty matrix (0 x 2)");
    p = plot_heatmap_new("H", NULL, NULL, &(plot_grid){v, 1, 2, NULL, NULL, all});
    assert_null(plot_text(p, &o));
    assert_error_has("every cell is masked, NaN or infinite");
    assert_int_equal(plot_heatmap_set_range(p, 1, 1), -1);
    assert_error_has("range 1..1 is not an interval");
    assert_int_equal(plot_heatmap_set_range(p, NAN, 1), -1);
    plot_free(p);

    plot_scale sc;
    assert_int_equal(plot_scale_parse("greys", &sc), 0);
    assert_int_equal(sc, PLOT_SCALE_GREYS);
    assert_int_equal(plot_scale_parse("jet", &sc), -1);
    assert_error_has("unknown colour scale 'jet' (known: viridis, greys)");
}

static void test_size_errors(void **state)
{
    (void)state;
    plot *p = small_heatmap();
    plot_text_opts o = {30, 4, 0, 0};
    assert_null(plot_text(p, &o));
    assert_error_has("heatmap 'cross' does not fit in 30 x 4 cells (a line for the map)");
    o = (plot_text_opts){2, 9, 0, 0};
    assert_null(plot_text(p, &o));
    assert_error_has("2 x 9 cells is not a usable size");
    plot_free(p);
    p = loss_plot();
    o = (plot_text_opts){40, 6, 0, 0};
    assert_null(plot_text(p, &o));
    assert_error_has("a line plot needs 2 rows for its curves");
    plot_free(p);
}

static void test_file_errors(void **state)
{
    (void)state;
    plot *p = loss_plot();
    assert_int_equal(plot_save(p, "out/loss.jpg", 400, 300), -1);
    assert_error_has("out/loss.jpg: unknown plot file type '.jpg' (use .svg, .png or .csv)");
    assert_int_equal(plot_save(p, "out.d/loss", 400, 300), -1);
    assert_error_has("out.d/loss: no file type");
    char path[300];
    snprintf(path, sizeof path, "%s/missing/loss.png", tmpdir);
    assert_int_equal(plot_save(p, path, 400, 300), -1);
    assert_error_has(path);
    assert_error_has("No such file or directory");
    snprintf(path, sizeof path, "%s/missing/loss.csv", tmpdir);
    assert_int_equal(plot_save(p, path, 0, 0), -1);
    assert_error_has("No such file or directory");
    snprintf(path, sizeof path, "%s/never.png", tmpdir);
    assert_int_equal(plot_save(p, path, 10, 10), -1);
    assert_error_has("10 x 10 pixels is not a usable image size");
    assert_int_equal(access(path, F_OK), -1);
    plot_free(p);

    /* an empty plot is refused before a file is made */
    p = plot_line_new("empty", NULL, NULL);
    assert_int_equal(plot_save(p, path, 400, 300), -1);
    assert_error_has("line plot 'empty': no series to draw");
    assert_int_equal(access(path, F_OK), -1);
    plot_free(p);
}

/* plot_text_cells is what plot_text writes out: the glyphs row by row, trailing blanks
 * dropped, are the plain text; each series' cells carry its index and its colour, text and
 * axes carry -1. */
static void test_text_cells(void **state)
{
    (void)state;
    plot *p = plot_line_new("Loss", "step", NULL);
    double x[3] = {1, 2, 3}, a[3] = {4, 2, 1}, b[3] = {1, 3, 4};
    assert_int_equal(plot_line_add(p, "one", x, 3, a, 3), 0);
    assert_int_equal(plot_line_add(p, "two", x, 3, b, 3), 0);
    for (int color = 0; color < 2; color++) {
        plot_text_opts o = {30, 10, color, 0};
        plot_cells pc;
        assert_int_equal(plot_text_cells(p, &o, &pc), 0);
        assert_int_equal(pc.w, 30);
        assert_true(pc.rows > 0 && pc.rows <= 10);
        char *text = plot_text(p, &o);
        assert_non_null(text);
        char plain[4096] = "";
        int seen[2] = {0, 0};
        for (int y = 0; y < pc.rows; y++) {
            int last = pc.w - 1;
            while (last >= 0 && !strcmp(pc.cells[y * pc.w + last].glyph, " ")) last--;
            for (int c = 0; c <= last; c++) {
                const plot_cell *cell = &pc.cells[y * pc.w + c];
                strcat(plain, cell->glyph);
                assert_true(cell->series >= -1 && cell->series <= 1);
                if (cell->series < 0) {
                    assert_int_equal(cell->fg, -1);
                    continue;
                }
                seen[cell->series] = 1;
                assert_int_equal(cell->fg >= 0, color);
            }
            strcat(plain, "\n");
        }
        assert_int_equal(seen[0] && seen[1], 1);
        if (!color) assert_string_equal(plain, text);
        else assert_non_null(strstr(text, "\x1b[0;38;5;"));
        free(text);
        plot_cells_free(&pc);
        assert_null(pc.cells);
    }
    plot_text_opts tiny = {8, 3, 0, 0};
    plot_cells pc;
    assert_int_equal(plot_text_cells(p, &tiny, &pc), -1);
    assert_null(pc.cells);
    assert_non_null(strstr(mt_last_error(), "does not fit"));
    plot_free(p);
}

int main(void)
{
    setlocale(LC_CTYPE, "C.UTF-8");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_golden),        cmocka_unit_test(test_line_golden_ascii),
        cmocka_unit_test(test_line_golden_colour), cmocka_unit_test(test_braille_dots),
        cmocka_unit_test(test_text_cells),         cmocka_unit_test(test_bar_golden),
        cmocka_unit_test(test_heatmap_golden),     cmocka_unit_test(test_heatmap_binned),
        cmocka_unit_test(test_text_write),         cmocka_unit_test(test_svg_written),
        cmocka_unit_test(test_png_heatmap_pixels), cmocka_unit_test(test_png_line_and_bar),
        cmocka_unit_test(test_csv_exact),          cmocka_unit_test(test_input_errors),
        cmocka_unit_test(test_size_errors),        cmocka_unit_test(test_file_errors),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    cairo_debug_reset_static_data();
    return failed;
}
