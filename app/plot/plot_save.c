/* Writing a plot to a file: the type from the name's extension, then the renderer that writes
 * it (plot_csv.c, or plot_cairo.c for SVG and PNG). Above plot.c and the renderers. */
#include "plot/plot_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mtlab/error.h"

int plot_save(const plot *p, const char *path, int width_px, int height_px)
{
    const char *base = strrchr(path, '/');
    const char *dot = strrchr(base ? base : path, '.');
    if (!dot || !dot[1]) return mt_error("%s: no file type (name it .svg, .png or .csv)", path);
    if (!strcasecmp(dot, ".csv")) {
        FILE *f = fopen(path, "w");
        if (!f) return mt_error("%s: cannot write: %s", path, strerror(errno));
        int rc = plot_csv_write(p, f);
        if (fclose(f) != 0 && rc == 0) rc = mt_error("%s: %s", path, strerror(errno));
        if (rc) {
            mt_error_context("%s", path);
            remove(path);
        }
        return rc;
    }
    int png = !strcasecmp(dot, ".png");
    if (!png && strcasecmp(dot, ".svg"))
        return mt_error("%s: unknown plot file type '%s' (use .svg, .png or .csv)", path, dot);
    char what[160];
    if (width_px < 64 || height_px < 48 || width_px > 16384 || height_px > 16384)
        return mt_error("%s: %d x %d pixels is not a usable image size (64x48 .. 16384x16384)",
                        plot_describe(p, what, sizeof what), width_px, height_px);
    return plot_cairo_save(p, path, png, width_px, height_px);
}
