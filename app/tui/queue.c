#include "tui/queue.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtlab/error.h"

int tui_queue_init(tui_queue *q)
{
    memset(q, 0, sizeof *q);
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
        return mt_error("event queue: pipe: %s", strerror(errno));
    q->pipe_rd = fds[0];
    q->pipe_wr = fds[1];
    pthread_mutex_init(&q->lock, NULL);
    return 0;
}

void tui_queue_destroy(tui_queue *q)
{
    tui_event *ev = tui_queue_drain(q);
    while (ev) {
        tui_event *next = ev->next;
        tui_event_free(ev);
        ev = next;
    }
    close(q->pipe_rd);
    close(q->pipe_wr);
    pthread_mutex_destroy(&q->lock);
}

tui_event *tui_event_new(tui_event_kind kind, int pane_id, unsigned long request)
{
    tui_event *ev = mt_xcalloc(1, sizeof *ev);
    ev->kind = kind;
    ev->pane_id = pane_id;
    ev->request = request;
    ev->segment = -1;
    return ev;
}

void tui_event_free(tui_event *ev)
{
    if (!ev) return;
    free(ev->text);
    mt_labelled_probe_free(ev->probe);
    mt_labelled_attribution_free(ev->attr);
    free(ev);
}

void tui_queue_push(tui_queue *q, tui_event *ev)
{
    ev->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->tail) q->tail->next = ev;
    else q->head = ev;
    q->tail = ev;
    int wake = !q->signalled;
    q->signalled = 1;
    pthread_mutex_unlock(&q->lock);
    if (wake) {
        char byte = 1;
        /* a full pipe already wakes the reader, so a failed write loses nothing */
        ssize_t n = write(q->pipe_wr, &byte, 1);
        (void)n;
    }
}

int tui_queue_fd(const tui_queue *q) { return q->pipe_rd; }

tui_event *tui_queue_drain(tui_queue *q)
{
    char buf[64];
    pthread_mutex_lock(&q->lock);
    while (read(q->pipe_rd, buf, sizeof buf) > 0) {}
    tui_event *list = q->head;
    q->head = q->tail = NULL;
    q->signalled = 0;
    pthread_mutex_unlock(&q->lock);
    return list;
}
