/* A pane's model worker: the engine's worker (mtlab/worker.h) with its results turned into
 * events on the UI's queue, tagged with the pane. Submitting a request cancels the running one and
 * replaces any request still waiting, so the newest text always wins and the UI never blocks. */
#ifndef MTLAB_TUI_PANE_WORKER_H
#define MTLAB_TUI_PANE_WORKER_H

#include "tui/queue.h"

typedef struct tui_worker tui_worker;

/* Start a worker for the bundle directory on device ("cpu", "cuda", "cuda:N"; NULL: cpu); it
 * reports TUI_EV_LOADED or TUI_EV_LOAD_FAILED for pane_id (a device that cannot be opened, or
 * a model that does not fit in its memory, is a load failure with the reason, shown in the
 * pane). NULL only when the thread cannot be created (mt_last_error). */
tui_worker *tui_worker_start(int pane_id, const char *bundle_dir, const char *device,
                             unsigned runner_flags, tui_queue *q);

/* Translate texts[0..n) (UTF-8 segments; the worker takes the array and the strings) with
 * beam (1: greedy), on `threads` OpenMP threads (the UI shares the cores between the panes).
 * When probe_segment >= 0 the worker then records the probes of that segment's translation. */
void tui_worker_submit(tui_worker *w, unsigned long request, char **texts, int n, int beam,
                       int threads, int probe_segment);
/* Record the probes of a segment of the last finished request (reported under that request). */
void tui_worker_probe(tui_worker *w, int segment);
/* Attribute a segment of the last finished request (mtlab/attribution.h: method, contrast the
 * piece of a token or NULL) on the worker's thread; reported under that request as
 * TUI_EV_ATTRIBUTION with the map's record already built. */
void tui_worker_attribute(tui_worker *w, int segment, int method, const char *contrast);
/* Stop the running request (it reports TUI_EV_DONE with cancelled = 1) and drop a waiting one. */
void tui_worker_cancel(tui_worker *w);
/* Cancel, wait for the thread and free everything. */
void tui_worker_stop(tui_worker *w);

#endif
