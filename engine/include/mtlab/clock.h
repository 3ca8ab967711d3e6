/* The one clock mtlab times things with: translation seconds, training throughput, benchmark
 * repeats, progress bars, the workbench's debounce and spinner. */
#ifndef MTLAB_CLOCK_H
#define MTLAB_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds on the monotonic clock (CLOCK_MONOTONIC): it never jumps with the wall clock, and
 * only differences between two readings mean anything. */
double mt_now_s(void);

#ifdef __cplusplus
}
#endif

#endif
