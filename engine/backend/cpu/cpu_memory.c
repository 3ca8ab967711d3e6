/* Host memory for the CPU backends: 64-byte aligned (whole cache lines, AVX-512 loads),
 * zero-filled, and plain memcpy for every transfer.
 *
 * A block of 2 MiB and more (a model's parameters, the fp32 panels and int8 copies, caches)
 * is aligned to 2 MiB and asked for in huge pages (madvise MADV_HUGEPAGE; Linux's transparent
 * huge pages, whose usual setting, "madvise", gives them only where asked). A decoding step at
 * batch 1 streams every weight from memory once, and with 4 KiB pages one thread read less:
 * a TLB miss every 64 lines, and the hardware prefetchers stop at each page. On a 2-vCPU
 * Xeon (Sapphire Rapids class), a one-thread AVX-512 sum over 1 GiB read 13.5-14.0 GB/s on
 * 4 KiB pages and 15.3-15.6 on huge ones (19.2-19.5 with the lines asked for 1 KiB ahead:
 * docs/decoding.md §9.4). MTLAB_HUGE_PAGES=off keeps every block on 4 KiB pages. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* madvise */
#endif
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "mtlab/error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { CPU_ALIGN = 64, CPU_HUGE = 2 << 20 };

static int huge_pages = 1;
static pthread_once_t huge_once = PTHREAD_ONCE_INIT;

static void read_huge_env(void) { huge_pages = !cpu_env_off("MTLAB_HUGE_PAGES"); }

/* 1 when blocks of 2 MiB and more are asked for in huge pages: Linux, and MTLAB_HUGE_PAGES not
 * "off" or "0" */
static int cpu_huge_pages(void)
{
#ifdef MADV_HUGEPAGE
    pthread_once(&huge_once, read_huge_env);
    return huge_pages;
#else
    return 0;
#endif
}

void *cpu_alloc(size_t bytes)
{
    size_t rounded = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (rounded < bytes) {
        mt_error("cpu: allocation of %zu bytes overflows", bytes);
        return NULL;
    }
    if (rounded == 0) rounded = CPU_ALIGN; /* a real, freeable pointer even for empty buffers */
    int huge = rounded >= CPU_HUGE && rounded <= SIZE_MAX - CPU_HUGE && cpu_huge_pages();
    if (huge) rounded = (rounded + CPU_HUGE - 1) / CPU_HUGE * CPU_HUGE;
    void *p = aligned_alloc(huge ? CPU_HUGE : CPU_ALIGN, rounded);
    if (!p) {
        mt_error("cpu: out of memory allocating %zu bytes (%.1f MiB)", bytes,
                 (double)bytes / (1024.0 * 1024.0));
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    /* before the first touch, so that the pages are faulted in huge; a kernel without
     * transparent huge pages refuses, and the block stays on small ones */
    if (huge) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
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

/* A layer's gradient block (megabytes each training step) is zeroed in parts the pool's threads
 * share, each a memset of its span; on one thread it was 3-5% of a two-thread step of the
 * transformer and retention presets. Below ZERO_SHARE_MIN, or at one thread, one memset. */
#define ZERO_SHARE_MIN ((size_t)1 << 20)
#define ZERO_UNIT ((size_t)64 << 10)

typedef struct {
    char *p;
    size_t bytes, units;
    int parts;
} zero_job;

static void zero_part(void *ctx, int part)
{
    const zero_job *j = ctx;
    size_t u0, u1;
    cpu_pool_span(j->units, part, j->parts, &u0, &u1);
    size_t b0 = u0 * ZERO_UNIT, b1 = u1 * ZERO_UNIT < j->bytes ? u1 * ZERO_UNIT : j->bytes;
    if (b1 > b0) memset(j->p + b0, 0, b1 - b0);
}

void cpu_memzero(void *p, size_t bytes)
{
    if (!bytes) return;
    if (!cpu_fork(bytes, ZERO_SHARE_MIN)) {
        memset(p, 0, bytes);
        return;
    }
    zero_job j = {.p = p, .bytes = bytes, .units = (bytes + ZERO_UNIT - 1) / ZERO_UNIT};
    j.parts = cpu_pool_parts(j.units);
    cpu_pool_run(j.parts, zero_part, &j);
}

/* CPU operations finish before they return. */
void cpu_sync(void) {}
