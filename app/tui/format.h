/* Numbers and names as the panes show them: "7.52M", "1.5 MiB", "830 ms", a bundle's name. */
#ifndef MTLAB_TUI_FORMAT_H
#define MTLAB_TUI_FORMAT_H

#include <stddef.h>

/* 812, 12.3K, 7.52M, 1.31G (three significant digits). */
void tui_format_count(char *out, size_t len, size_t n);
/* 512 B, 12.0 KiB, 1.50 MiB, 2.00 GiB. */
void tui_format_bytes(char *out, size_t len, size_t bytes);
/* 830 ms below 10 s, else 12.4 s. */
void tui_format_seconds(char *out, size_t len, double seconds);


#endif
