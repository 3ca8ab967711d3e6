/* glibc maps blocks of 128 KiB and more, but raises that threshold to the size of each mapped
 * block freed (up to 32 MiB), after which a decoding batch's state comes from the heap, between
 * the small results that outlive it: the freed state cannot go back to the system and the heap
 * grows with the number of batches (a Lua translate of 4,000 verses at beam 5 peaked at 73 to
 * 275 MB from run to run). A fixed threshold keeps every block of 1 MiB or more mapped and
 * unmapped, and turns the moving one off (docs/decoding.md §9.2). */
#include "common/allocator.h"

#include <malloc.h>
#include <stdlib.h>

void app_settle_allocator(void)
{
    if (!getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 1 << 20);
}
