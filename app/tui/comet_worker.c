#include "tui/comet_worker.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/comet.h"
#include "mtlab/error.h"

enum { BATCH = 8, MAX_ENTRIES = 1 << 16 };

typedef struct job {
    char *src, *hyp, *ref, *key;
    struct job *next;
} job;

typedef struct {
    char *key; /* NULL: an empty slot */
    tui_comet_state state;
    float score;
} entry;

struct tui_comet {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    job *head, *tail; /* queued triples (guarded by lock) */
    int stop; /* guarded by lock */
    char *dir;
    tui_queue *q;
    /* the UI thread's alone */
    entry *table; /* (cap) open addressing on the key's FNV-1a hash */
    size_t cap, n;
    char *error; /* the model did not load */
};

/* The triple as one string: the three texts joined by U+001F, which none of them holds (a
 * segment and a reference line are single lines of text without control characters). */
static char *triple_key(const char *src, const char *hyp, const char *ref)
{
    size_t a = strlen(src), b = strlen(hyp), c = strlen(ref);
    char *k = mt_xmalloc(a + b + c + 3);
    memcpy(k, src, a);
    k[a] = '\x1f';
    memcpy(k + a + 1, hyp, b);
    k[a + 1 + b] = '\x1f';
    memcpy(k + a + b + 2, ref, c + 1);
    return k;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The key's slot: the one holding it, else the empty one where it goes. */
static entry *slot(tui_comet *c, const char *key)
{
    size_t i = fnv1a(key) & (c->cap - 1);
    while (c->table[i].key && strcmp(c->table[i].key, key)) i = (i + 1) & (c->cap - 1);
    return &c->table[i];
}

static void table_clear(tui_comet *c)
{
    for (size_t i = 0; i < c->cap; i++) free(c->table[i].key);
    memset(c->table, 0, c->cap * sizeof *c->table);
    c->n = 0;
}

static void push(tui_comet *c, tui_event_kind kind, char *text, double score)
{
    tui_event *ev = tui_event_new(kind, 0, 0);
    ev->text = text;
    ev->score = score;
    tui_queue_push(c->q, ev);
}

static void job_free(job *j)
{
    free(j->src);
    free(j->hyp);
    free(j->ref);
    free(j->key);
    free(j);
}

/* Score a batch; a batch that fails (invalid UTF-8) is scored one by one, so only the triple at
 * fault has no score (NaN). */
static void score_batch(tui_comet *c, mt_comet *m, job **jobs, int n)
{
    const char *src[BATCH], *hyp[BATCH], *ref[BATCH];
    float scores[BATCH];
    for (int i = 0; i < n; i++) src[i] = jobs[i]->src, hyp[i] = jobs[i]->hyp, ref[i] = jobs[i]->ref;
    if (mt_comet_score(m, src, hyp, ref, (size_t)n, scores) != 0)
        for (int i = 0; i < n; i++)
            if (mt_comet_score(m, src + i, hyp + i, ref + i, 1, scores + i) != 0) scores[i] = NAN;
    for (int i = 0; i < n; i++) {
        push(c, TUI_EV_COMET, jobs[i]->key, scores[i]);
        jobs[i]->key = NULL;
        job_free(jobs[i]);
    }
}

static void *run(void *arg)
{
    tui_comet *c = arg;
    mt_comet *m = mt_comet_open(c->dir, mt_backend_cpu());
    if (!m) push(c, TUI_EV_COMET_FAILED, mt_xstrdup(mt_last_error()), 0);
    for (;;) {
        job *batch[BATCH];
        int n = 0;
        pthread_mutex_lock(&c->lock);
        while (!c->head && !c->stop) pthread_cond_wait(&c->wake, &c->lock);
        if (c->stop) {
            pthread_mutex_unlock(&c->lock);
            break;
        }
        while (c->head && n < BATCH) {
            batch[n++] = c->head;
            c->head = c->head->next;
        }
        if (!c->head) c->tail = NULL;
        pthread_mutex_unlock(&c->lock);
        if (m) score_batch(c, m, batch, n);
        else
            for (int i = 0; i < n; i++) job_free(batch[i]);
    }
    mt_comet_free(m);
    return NULL;
}

tui_comet *tui_comet_start(const char *dir, tui_queue *q)
{
    tui_comet *c = mt_xcalloc(1, sizeof *c);
    c->dir = mt_xstrdup(dir);
    c->q = q;
    c->cap = 1024;
    c->table = mt_xcalloc(c->cap, sizeof *c->table);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    if (pthread_create(&c->thread, NULL, run, c) != 0) {
        mt_error("cannot start the COMET thread");
        pthread_cond_destroy(&c->wake);
        pthread_mutex_destroy(&c->lock);
        free(c->table);
        free(c->dir);
        free(c);
        return NULL;
    }
    return c;
}

void tui_comet_stop(tui_comet *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    c->stop = 1;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    for (job *j = c->head, *nx; j; j = nx) {
        nx = j->next;
        job_free(j);
    }
    table_clear(c);
    free(c->table);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    free(c->error);
    free(c->dir);
    free(c);
}

/* Room for one more key: the table doubles at half full, up to MAX_ENTRIES, where it starts
 * afresh (the scores shown are asked for again). */
static void make_room(tui_comet *c)
{
    if (2 * (c->n + 1) <= c->cap) return;
    if (c->cap >= MAX_ENTRIES) {
        table_clear(c);
        return;
    }
    entry *old = c->table;
    size_t old_cap = c->cap;
    c->cap *= 2;
    c->table = mt_xcalloc(c->cap, sizeof *c->table);
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key) *slot(c, old[i].key) = old[i];
    free(old);
}

tui_comet_state tui_comet_get(tui_comet *c, const char *src, const char *hyp, const char *ref,
                              float *score)
{
    if (c->error) return TUI_COMET_FAILED;
    char *key = triple_key(src, hyp, ref);
    entry *e = slot(c, key);
    if (e->key) {
        free(key);
        *score = e->score;
        return e->state;
    }
    make_room(c);
    e = slot(c, key);
    e->key = key;
    e->state = TUI_COMET_PENDING;
    c->n++;
    job *j = mt_xcalloc(1, sizeof *j);
    j->src = mt_xstrdup(src);
    j->hyp = mt_xstrdup(hyp);
    j->ref = mt_xstrdup(ref);
    j->key = mt_xstrdup(key);
    pthread_mutex_lock(&c->lock);
    if (c->tail) c->tail->next = j;
    else c->head = j;
    c->tail = j;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    return TUI_COMET_PENDING;
}

void tui_comet_take(tui_comet *c, const tui_event *ev)
{
    if (ev->kind == TUI_EV_COMET_FAILED) {
        free(c->error);
        c->error = mt_xstrdup(ev->text ? ev->text : "the COMET model could not be loaded");
        return;
    }
    entry *e = slot(c, ev->text);
    if (!e->key) return; /* the table started afresh since it was asked for */
    e->score = (float)ev->score;
    e->state = isnan(ev->score) ? TUI_COMET_FAILED : TUI_COMET_KNOWN;
}

const char *tui_comet_error(const tui_comet *c) { return c->error; }
