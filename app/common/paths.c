#include "common/paths.h"
#include "mtlab/error.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { EXE_PARENT_LEVELS = 3 };

static int exists_at(const char *dir, const char *rel, char *out, size_t out_len)
{
    int n = dir ? snprintf(out, out_len, "%s/%s", dir, rel) : snprintf(out, out_len, "%s", rel);
    return n >= 0 && (size_t)n < out_len && access(out, F_OK) == 0;
}

int cli_find_resource(const char *rel, char *out, size_t out_len)
{
    if (exists_at(NULL, rel, out, out_len)) return 0;
    char exe_dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe_dir, sizeof exe_dir - 1);
    if (n <= 0)
        return mt_error("%s: not found in the current directory (and /proc/self/exe is unreadable)",
                        rel);
    exe_dir[n] = '\0';
    char *slash = strrchr(exe_dir, '/');
    if (slash) *slash = '\0';
    char searched[PATH_MAX];
    snprintf(searched, sizeof searched, "%s", exe_dir);
    for (int level = 0; level <= EXE_PARENT_LEVELS && exe_dir[0]; level++) {
        if (exists_at(exe_dir, rel, out, out_len)) return 0;
        slash = strrchr(exe_dir, '/');
        if (!slash) break;
        *slash = '\0';
    }
    return mt_error("%s: not found in the current directory, nor beside the executable (%s) or up "
                    "to %d levels above it",
                    rel, searched, EXE_PARENT_LEVELS);
}
