#include "eval/tsv_count.h"

#include <stdint.h>

int tsv_parse_count(const char *s, size_t *out)
{
    if (!*s) return -1;
    size_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        size_t d = (size_t)(*s - '0');
        if (v > (SIZE_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}
