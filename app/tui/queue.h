/* Events from the model workers to the UI thread: a mutex-guarded FIFO plus a self-pipe. A
 * push appends the event and writes one byte to the pipe unless a byte is already pending, so
 * the UI's poll() wakes exactly when there is something to drain and the pipe never fills. */
#ifndef MTLAB_TUI_QUEUE_H
#define MTLAB_TUI_QUEUE_H

#include <pthread.h>
#include <stddef.h>

#include "mtlab/worker.h"
#include "tui/heatmap.h" /* tui_probe */

typedef enum {
    TUI_EV_LOADED, /* the bundle is loaded: info holds "arch, params, device" */
    TUI_EV_LOAD_FAILED, /* text: why */
    TUI_EV_PARTIAL, /* segment's hypothesis so far (text) */
    TUI_EV_SEGMENT, /* segment finished (text: its final translation) */
    TUI_EV_DONE, /* the request finished (or was cancelled): statistics */
    TUI_EV_FAILED, /* the request failed: text says why (segment: the input at fault or -1) */
    TUI_EV_PROBE, /* probe record for segment (probe owned by the event) */
    TUI_EV_PROBE_FAILED,
    TUI_EV_ATTRIBUTION, /* attribution of segment: attr, and probe its map's record */
    TUI_EV_ATTRIBUTION_FAILED,
    TUI_EV_COMET, /* a COMET score (no pane): text the triple's key, score (NaN: failed) */
    TUI_EV_COMET_FAILED, /* the COMET model did not load: text says why */
    TUI_EV_CONSOLE, /* the Lua console has output or a `ui` call waiting (no pane) */
} tui_event_kind;

typedef struct tui_event {
    tui_event_kind kind;
    int pane_id; /* the worker's pane */
    unsigned long request; /* the request it belongs to; stale requests are ignored */
    int segment;
    char *text; /* malloc'd or NULL */
    char info[160]; /* TUI_EV_LOADED: "mamba, 7.52M params, cpu" */
    char src_lang[36], tgt_lang[36]; /* TUI_EV_LOADED: the bundle's direction ("es", "en");
                                      * "" when its config.json records none */
    double seconds; /* TUI_EV_DONE: decoding wall time */
    size_t tokens; /* TUI_EV_DONE: generated tokens, <eos> included */
    size_t state_bytes; /* TUI_EV_DONE: the largest decoding state, working set included */
    size_t model_state_bytes; /* TUI_EV_DONE: the model's state of one sentence alone (KV
                               * cache, recurrent state; mt_decode_result) */
    int cancelled; /* TUI_EV_DONE */
    double score; /* TUI_EV_COMET */
    tui_probe *probe; /* TUI_EV_PROBE, TUI_EV_ATTRIBUTION */
    mt_labelled_attribution *attr; /* TUI_EV_ATTRIBUTION */
    struct tui_event *next;
} tui_event;

typedef struct {
    pthread_mutex_t lock;
    tui_event *head, *tail;
    int pipe_rd, pipe_wr;
    int signalled; /* a byte is in the pipe (guarded by lock) */
} tui_queue;

/* 0, or -1 (mt_last_error) when the pipe cannot be made. */
int tui_queue_init(tui_queue *q);
/* Frees any events left. */
void tui_queue_destroy(tui_queue *q);
/* A zeroed event with kind, pane and request set (malloc'd; text may be set by the caller). */
tui_event *tui_event_new(tui_event_kind kind, int pane_id, unsigned long request);
void tui_event_free(tui_event *ev);
/* Append (thread-safe); the queue owns ev afterwards. */
void tui_queue_push(tui_queue *q, tui_event *ev);
/* The fd to poll for reading. */
int tui_queue_fd(const tui_queue *q);
/* Take every queued event, oldest first (a NULL-terminated list through ->next), and empty
 * the pipe. */
tui_event *tui_queue_drain(tui_queue *q);

#endif
