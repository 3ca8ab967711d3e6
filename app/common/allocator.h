/* The C library's allocator as mtlab's commands want it (app/main.c calls this first). */
#ifndef MTLAB_COMMON_ALLOCATOR_H
#define MTLAB_COMMON_ALLOCATOR_H

/* Blocks of 1 MiB and more mapped and unmapped on their own, whatever was freed before
 * (docs/decoding.md §9.2), unless MALLOC_MMAP_THRESHOLD_ is set. */
void app_settle_allocator(void);

#endif
