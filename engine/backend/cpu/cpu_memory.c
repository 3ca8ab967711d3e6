/* Host memory for the CPU backends: 64-byte aligned (whole cache lines, AVX-512 loads),
 * zero-filled, and plain memcpy for every transfer. */
#include "backend/cpu/cpu_ops.h"
#include "mtlab/error.h"

#include <stdlib.h>
#include <string.h>

enum { CPU_ALIGN = 64 };

void *cpu_alloc(size_t bytes)
{
    size_t rounded = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (rounded < bytes) {
        mt_error("cpu: allocation of %zu bytes overflows", bytes);
        return NULL;
    }
    if (rounded == 0) rounded = CPU_ALIGN; /* a real, freeable pointer even for empty buffers */
    void *p = aligned_alloc(CPU_ALIGN, rounded);
    if (!p) {
        mt_error("cpu: out of memory allocating %zu bytes (%.1f MiB)", bytes,
                 (double)bytes / (1024.0 * 1024.0));
        return NULL;
    }
    memset(p, 0, rounded);
    return p;
}

void cpu_free(void *p) { free(p); }

void cpu_upload(void *dst, const void *host_src, size_t bytes)
{
    if (bytes) memmove(dst, host_src, bytes);
}

void cpu_download(void *host_dst, const void *src, size_t bytes)
{
    if (bytes) memmove(host_dst, src, bytes);
}

void cpu_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes) memmove(dst, src, bytes);
}

void cpu_memzero(void *p, size_t bytes)
{
    if (bytes) memset(p, 0, bytes);
}

/* CPU operations finish before they return. */
void cpu_sync(void) {}
