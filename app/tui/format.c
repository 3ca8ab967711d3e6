#include "tui/format.h"

#include <stdio.h>
#include <string.h>

/* v with three significant digits: 1.23, 12.3, 123 */
static void three_digits(char *out, size_t len, double v, const char *unit)
{
    int decimals = v < 10 ? 2 : v < 100 ? 1 : 0;
    snprintf(out, len, "%.*f%s", decimals, v, unit);
}

void tui_format_count(char *out, size_t len, size_t n)
{
    if (n < 1000) snprintf(out, len, "%zu", n);
    else if (n < 999500) three_digits(out, len, (double)n / 1e3, "K");
    else if (n < 999500000) three_digits(out, len, (double)n / 1e6, "M");
    else three_digits(out, len, (double)n / 1e9, "G");
}

void tui_format_bytes(char *out, size_t len, size_t bytes)
{
    static const char *const units[] = {" KiB", " MiB", " GiB", " TiB"};
    if (bytes < 1024) {
        snprintf(out, len, "%zu B", bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1023.5 && u < 3) v /= 1024.0, u++;
    three_digits(out, len, v, units[u]);
}

void tui_format_seconds(char *out, size_t len, double seconds)
{
    if (seconds < 10) snprintf(out, len, "%.0f ms", seconds * 1e3);
    else snprintf(out, len, "%.1f s", seconds);
}

