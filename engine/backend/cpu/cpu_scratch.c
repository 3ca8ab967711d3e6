/* Each thread's scratch buffers (cpu_ops.h cpu_scratch): one per use, grown when a call needs
 * more and otherwise kept for the thread's next call, so that a product called again and again
 * (every linear layer of every decoding step) allocates nothing after its first call. A fresh
 * allocation each call was a malloc and a free per buffer (two per int8 product, 75 a batch-16
 * step of transformer-small), and at the packed sgemm's sizes a fresh mmap with its page faults.
 * The buffers go when their thread ends (OpenMP's workers end with the thread that forked
 * them; a training rank is a thread of its own). */
#include "backend/cpu/cpu_ops.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mtlab/error.h"

typedef struct {
    void *raw[CPU_SCRATCH_USES];
    size_t have[CPU_SCRATCH_USES];
} thread_buffers;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void buffers_free(void *p)
{
    thread_buffers *t = p;
    for (int u = 0; u < CPU_SCRATCH_USES; u++) free(t->raw[u]);
    free(t);
}

/* as mt_xmalloc does when memory runs out: the operation cannot go on */
static void fail(const char *call)
{
    fprintf(stderr, "mtlab: %s failed for the CPU backend's scratch buffers\n", call);
    abort();
}

static void key_make(void)
{
    if (pthread_key_create(&key, buffers_free)) fail("pthread_key_create");
}

static thread_buffers *own_buffers(void)
{
    pthread_once(&key_once, key_make);
    thread_buffers *t = pthread_getspecific(key);
    if (!t) {
        t = mt_xcalloc(1, sizeof *t);
        if (pthread_setspecific(key, t)) fail("pthread_setspecific");
    }
    return t;
}

void *cpu_scratch(cpu_scratch_use use, size_t bytes)
{
    thread_buffers *t = own_buffers();
    if (t->have[use] < bytes || !t->raw[use]) {
        free(t->raw[use]);
        t->raw[use] = mt_xmalloc(bytes + 64);
        t->have[use] = bytes;
    }
    return (void *)(((uintptr_t)t->raw[use] + 63) & ~(uintptr_t)63);
}

size_t cpu_scratch_bytes(cpu_scratch_use use)
{
    thread_buffers *t = own_buffers();
    return t->raw[use] ? t->have[use] : 0;
}
