/* A model on a thread of its own. The worker opens its bundle (mtlab/runner.h) on its thread
 * (a CUDA backend is bound to the thread that opens it), then serves requests one at a time:
 * translate a list of texts, streaming each text's hypothesis as it grows, and record the
 * probes of one text of the last translation or attribute it (mtlab/attribution.h).
 * Submitting a request cancels the running one (through the decoder's cancel flag; an
 * attribution through mt_attr_opts' cancel flag, and is then dropped unreported) and
 * replaces any request still waiting, so the newest text always wins and the caller never
 * blocks on the model.
 *
 * Results go to an mt_worker_sink: plain callbacks, called on the worker's thread, that hand
 * them on (the workbench pushes them onto its event queue; a script may wait on them). The
 * worker thread blocks every signal except the crash signals, so signals reach the caller's
 * threads only; the OpenMP threads it starts inherit that. */
#ifndef MTLAB_WORKER_H
#define MTLAB_WORKER_H

#include "mtlab/attribution.h"
#include "mtlab/decode.h"
#include "mtlab/probe.h"
#include "mtlab/runner.h"

/* A probe record with the tokenizer's piece for each of its positions ("?" for an id the
 * tokenizer does not know) and what an axis shows for it (mt_tokenizer_label: "her" for
 * "Ġher", "Dios" for "▁Dios"). */
typedef struct {
    mt_probe_record rec;
    char **labels; /* (rec.n_tokens) pieces */
    char **src_labels; /* (rec.n_src) pieces */
    char **shown; /* (rec.n_tokens) labels; NULL: none made (the pieces show) */
    char **src_shown; /* (rec.n_src) labels; NULL: none made */
} mt_labelled_probe;

void mt_labelled_probe_free(mt_labelled_probe *p);

/* An attribution (mtlab/attribution.h) with the tokenizer's piece for each row and column. */
typedef struct {
    mt_attribution attr;
    char **row_labels; /* (attr.rows) pieces */
    char **col_labels; /* (attr.cols) pieces */
    char **row_shown; /* (attr.rows) labels (mt_tokenizer_label) */
    char **col_shown; /* (attr.cols) labels */
    char *contrast; /* the contrast as asked for (mt_worker_attribute), NULL when none */
    char *contrast_shown; /* the label (mt_tokenizer_label) of the token it named, NULL: none */
} mt_labelled_attribution;

void mt_labelled_attribution_free(mt_labelled_attribution *a);

/* Where a worker's results go. Every callback runs on the worker's thread and may be NULL;
 * strings and records are valid during the call only, except a probe, which the callback
 * owns. `request` is the id the request was submitted under; `text` a segment index. */
typedef struct {
    void *user;
    /* the bundle is open; r stays valid until the worker stops (use it on this thread only) */
    void (*loaded)(void *user, const mt_runner *r);
    void (*load_failed)(void *user, const char *why);
    /* the hypothesis of texts[text] so far (at most every partial_interval seconds), and then
     * its final translation */
    void (*partial)(void *user, unsigned long request, int text, const char *hyp);
    void (*final)(void *user, unsigned long request, int text, const char *hyp);
    /* the translation finished or was cancelled (res->cancelled); res->hyps are valid during
     * the call */
    void (*done)(void *user, unsigned long request, const mt_decode_result *res);
    /* the translation failed: text is the input at fault or -1 */
    void (*failed)(void *user, unsigned long request, int text, const char *why);
    void (*probe)(void *user, unsigned long request, int text, mt_labelled_probe *p);
    void (*probe_failed)(void *user, unsigned long request, int text, const char *why);
    /* the attribution of a text's translation (the callback owns it) */
    void (*attribution)(void *user, unsigned long request, int text, mt_labelled_attribution *a);
    void (*attribution_failed)(void *user, unsigned long request, int text, const char *why);
} mt_worker_sink;

typedef struct {
    unsigned long id; /* reported back with every result of the request */
    char **texts; /* (n) UTF-8 segments; the worker takes the array and the strings */
    int n;
    int beam; /* 1: greedy */
    int max_new_tokens; /* 0: the decoder's default */
    int threads; /* OpenMP threads for this request (0: leave the team size as it is) */
    int probe_text; /* >= 0: then record the probes of this text's translation */
} mt_worker_request;

typedef struct mt_worker mt_worker;

/* Start a worker for bundle dir on device with runner_flags (mt_runner_open's names and flags,
 * e.g. MT_RUNNER_INT8). It reports loaded or
 * load_failed first; after a failed load, requests are dropped. partial_interval: the least
 * seconds between two partial hypotheses of one text (0: every token). NULL only when the
 * thread cannot be created (mt_last_error). */
mt_worker *mt_worker_start(const char *dir, const char *device, unsigned runner_flags,
                           double partial_interval, const mt_worker_sink *sink);
/* Queue a translation (see the top of the file); the worker takes req->texts. */
void mt_worker_submit(mt_worker *w, const mt_worker_request *req);
/* Record the probes of text of the last finished translation (reported under its id); ignored
 * while a translation is waiting. */
void mt_worker_probe(mt_worker *w, int text);
/* Attribute text of the last finished translation (its hypothesis as the target) with o's
 * method and steps, contrasted with the token contrast names (mt_tokenizer_find_token: its
 * piece, or the text as a reader reads it; NULL: none; a text that is not one token fails
 * saying how it splits), reported under its id; ignored while a translation is waiting. An
 * attribution still running is cancelled (and dropped unreported): the newest one wins. */
void mt_worker_attribute(mt_worker *w, int text, const mt_attr_opts *o, const char *contrast);
/* Stop the running translation (it reports done with res->cancelled = 1) and drop a waiting
 * request. */
void mt_worker_cancel(mt_worker *w);
/* Cancel, wait for the thread and free everything. */
void mt_worker_stop(mt_worker *w);

#endif
