/* Per-segment COMET in the workbench (`mtlab tui --comet DIR` with references loaded): a thread
 * that owns the COMET model (mtlab/comet.h) and scores (source, translation, reference) triples
 * off the UI thread, and the UI's table of the scores it reported. A pane asks for the score of
 * each finished segment as it shows it: known, it is drawn beside BLEU and chrF; unknown, it is
 * queued once and drawn when the thread reports it (TUI_EV_COMET). */
#ifndef MTLAB_TUI_COMET_WORKER_H
#define MTLAB_TUI_COMET_WORKER_H

#include "tui/queue.h"

typedef struct tui_comet tui_comet;

/* Start the thread, which loads the model in dir on the CPU (a failure is reported as
 * TUI_EV_COMET_FAILED with no key, and every score is then unavailable). NULL only when the
 * thread cannot be created (mt_last_error). */
tui_comet *tui_comet_start(const char *dir, tui_queue *q);
/* Wait for the thread and free everything; NULL is fine. */
void tui_comet_stop(tui_comet *c);

typedef enum { TUI_COMET_PENDING, TUI_COMET_KNOWN, TUI_COMET_FAILED } tui_comet_state;

/* The COMET of one segment (UI thread): KNOWN with *score set, PENDING (queued now if it was
 * not before), or FAILED (the model did not load, or this triple could not be scored). */
tui_comet_state tui_comet_get(tui_comet *c, const char *src, const char *hyp, const char *ref,
                              float *score);
/* Apply a TUI_EV_COMET or TUI_EV_COMET_FAILED event (UI thread). */
void tui_comet_take(tui_comet *c, const tui_event *ev);
/* Why the model could not be loaded, or NULL while it loads or once it has. */
const char *tui_comet_error(const tui_comet *c);

#endif
