/* app_settle_allocator: a block of 1 MiB or more goes back to the system when freed, even after
 * a larger block's free would have raised glibc's moving mmap threshold above it and a small
 * allocation made after it pins the heap (the pattern of decoding batch after batch). glibc's
 * own allocator only: under ASan the sanitizer's allocator is in charge and the test skips. */
#include "test_util.h"

#include "common/allocator.h"

#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#ifndef UNDER_ASAN
static long resident_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%ld %ld", &pages, &resident), 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A big block freed (raising the moving threshold), then a 3 MiB one written with a small one
 * after it; how much of the 3 MiB the free gives back. */
static long kib_returned_by_free(void)
{
    char *big = malloc(16 << 20);
    assert_non_null(big);
    memset(big, 1, 16 << 20);
    free(big);
    char *block = malloc(3 << 20);
    assert_non_null(block);
    memset(block, 1, 3 << 20);
    char *small = malloc(64);
    assert_non_null(small);
    memset(small, 1, 64);
    long before = resident_kib();
    free(block);
    long after = resident_kib();
    free(small);
    return before - after;
}
#endif

static void test_freed_blocks_go_back(void **state)
{
    (void)state;
#ifdef UNDER_ASAN
    skip();
#else
    if (getenv("MALLOC_MMAP_THRESHOLD_")) skip();
    app_settle_allocator();
    long returned = kib_returned_by_free();
    if (returned < 2048) fail_msg("freeing a 3 MiB block gave back %ld KiB", returned);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_freed_blocks_go_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
