/* The workbench's loop: poll the terminal and the workers' event pipe, apply keys and
 * events, send the text for translation when typing pauses, draw a frame when something
 * changed (and on a spinner tick while models work). */
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tui/console/console.h"
#include "mtlab/clock.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"
#include "tui/app.h"
#include "tui/terminal.h"
#include "tui/tui.h"
#include "common/columns.h"

#define SPINNER_TICK_S 0.1

/* The first bundle's entity lexicon tells names (also at the start of a sentence) and their
 * translations (docs/metrics.md §8). */
static void load_entity_lexicon(tui_app *a, const char *dir)
{
    char path[PATH_MAX];
    struct stat st;
    if (a->lexicon ||
        snprintf(path, sizeof path, "%s/entity_lexicon.tsv", dir) >= (int)sizeof path ||
        stat(path, &st) != 0)
        return;
    a->lexicon = mt_entity_lexicon_read(path);
    if (a->lexicon)
        tui_log_add(&a->log, TUI_LOG_INFO, "entity names and translations from %s", path);
    else tui_log_add(&a->log, TUI_LOG_WARN, "%s", mt_last_error());
}

/* Bytes of a bracketed paste, kept raw: tui_editor_insert cleans them in one edit. */
static void paste_append(tui_app *a, int byte)
{
    a->paste_total++;
    /* keep a little more than the editor can take, so the notice can say what was cut */
    if (a->paste_len + 1 > TUI_EDITOR_MAX_BYTES + 4) return;
    if (a->paste_len + 1 > a->paste_cap) {
        a->paste_cap = a->paste_cap ? 2 * a->paste_cap : 4096;
        a->paste = mt_xrealloc(a->paste, a->paste_cap);
    }
    a->paste[a->paste_len++] = (char)byte;
}

static void replaced_notice(tui_app *a, size_t replaced, const char *where)
{
    tui_notice(a,
               "%zu invalid byte%s in the %s replaced by U+FFFD (\xEF\xBF\xBD); the rest is kept",
               replaced, replaced == 1 ? "" : "s", where);
}

static void paste_finish(tui_app *a)
{
    size_t replaced;
    size_t dropped = tui_editor_insert(&a->ed, a->paste, a->paste_len, &replaced);
    dropped += a->paste_total - a->paste_len;
    if (dropped > 0)
        tui_notice(a, "paste capped: %zu of %zu bytes did not fit (the editor holds %d KiB)%s",
                   dropped, a->paste_total, TUI_EDITOR_MAX_BYTES / 1024,
                   replaced ? "; invalid bytes became U+FFFD" : "");
    else if (replaced > 0) replaced_notice(a, replaced, "paste");
    tui_log_add(&a->log, TUI_LOG_INFO, "pasted %zu bytes", a->paste_total);
    a->pasting = 0;
    a->paste_len = a->paste_total = 0;
    tui_focus(a, -1);
    a->edit_time = mt_now_s();
    a->dirty = 1;
}

/* Typed bytes become characters here, not in curses, so that an ill-formed byte is one
 * U+FFFD and never swallows what follows it. A character cut between two reads waits in
 * a->typed for its rest; flush (a key, or a read that brought nothing more) ends the wait. */
static void typed_bytes(tui_app *a, int flush, size_t *replaced)
{
    size_t used = 0;
    while (used < a->n_typed) {
        const char *s = a->typed + used;
        size_t n = a->n_typed - used;
        if (!flush && mt_utf8_incomplete(s, n)) break;
        uint32_t cp;
        int k = mt_utf8_next(s, n, &cp);
        if (k == 0) {
            k = mt_utf8_next_lossy(s, n, &cp);
            *replaced += (size_t)k;
        }
        used += (size_t)k;
        int control = cp < 32 || cp == 127;
        tui_handle_key(a, (int)cp, !control);
    }
    memmove(a->typed, a->typed + used, a->n_typed - used);
    a->n_typed -= used;
}

static void read_input(tui_app *a)
{
    int key, got = 0;
    size_t replaced = 0;
    while ((key = wgetch(stdscr)) != ERR) {
        got = 1;
        if (key < KEY_MIN && !a->pasting) {
            a->typed[a->n_typed++] = (char)key;
            if (a->n_typed == sizeof a->typed) typed_bytes(a, 1, &replaced);
            else typed_bytes(a, 0, &replaced);
            continue;
        }
        typed_bytes(a, 1, &replaced);
        if (key == TUI_KEY_PASTE_BEGIN) {
            a->pasting = 1;
            a->paste_len = a->paste_total = 0;
        } else if (key == TUI_KEY_PASTE_END) {
            if (a->pasting) paste_finish(a);
        } else if (a->pasting) {
            if (key < KEY_MIN) paste_append(a, key);
            else if (key == KEY_ENTER) paste_append(a, '\n');
        } else if (key == KEY_RESIZE) {
            a->relayout = 1;
        } else if (key == KEY_MOUSE) {
            tui_handle_mouse(a);
        } else {
            tui_handle_key(a, TUI_FKEY(key), 0);
        }
    }
    if (!got) typed_bytes(a, 1, &replaced);
    if (replaced > 0) replaced_notice(a, replaced, "typed text");
}

static int anything_moving(const tui_app *a)
{
    for (int i = 0; i < a->n_panes; i++) {
        const tui_pane *p = a->panes[i];
        if (p->busy || p->probe_pending || p->attr_pending || (!p->loaded && !p->load_error))
            return 1;
    }
    return 0;
}

/* Milliseconds poll may sleep: until the debounce ends, the next spinner frame or the notice
 * expires; -1 when nothing is pending. */
static int poll_timeout(const tui_app *a, double now)
{
    double t = -1;
    if (a->ed.version != a->sent_version) t = a->edit_time + TUI_DEBOUNCE_S - now;
    if (anything_moving(a) && (t < 0 || t > SPINNER_TICK_S)) t = SPINNER_TICK_S;
    if (a->notice[0] && a->notice_until > now && (t < 0 || t > a->notice_until - now))
        t = a->notice_until - now;
    /* the jobs view takes its watcher's snapshots about as often as they come */
    if (a->jobs && (t < 0 || t > TUI_JOBS_REFRESH_S / 4)) t = TUI_JOBS_REFRESH_S / 4;
    if (tui_console_interrupting(a) && (t < 0 || t > CONSOLE_REARM_S)) t = CONSOLE_REARM_S;
    if (t < 0 && a->ed.version != a->sent_version) t = 0;
    return t < 0 ? -1 : (int)(t * 1000) + 1;
}

static void loop(tui_app *a)
{
    struct pollfd fds[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                            {.fd = tui_queue_fd(&a->q), .events = POLLIN}};
    /* the signals the loop reacts to arrive only inside ppoll: one that comes while a frame
     * is drawn waits there, so it always interrupts the wait instead of being missed */
    sigset_t block, during_wait;
    sigemptyset(&block);
    int sigs[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&block, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &block, &during_wait);
    while (!a->quit && !tui_quit_signal) {
        double now = mt_now_s();
        if (a->notice[0] && now >= a->notice_until) a->notice[0] = '\0', a->dirty = 1;
        tui_jobs_tick(a);
        if (a->dirty || a->relayout || anything_moving(a)) tui_draw(a);
        int ms = poll_timeout(a, now);
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        ppoll(fds, 2, ms < 0 ? NULL : &ts, &during_wait);
        /* the terminal went away (its window closed, tmux killed) without a SIGHUP reaching us:
         * stdin now polls ready forever, so stop instead of spinning */
        if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) break;
        if (tui_resize_signal) {
            tui_term_resize();
            a->relayout = 1;
        }
        if (fds[1].revents & POLLIN) tui_handle_events(a);
        read_input(a);
        if (!a->pasting && a->ed.version != a->sent_version &&
            mt_now_s() >= a->edit_time + TUI_DEBOUNCE_S)
            tui_translate(a, NULL);
        /* the console's calls, and the waits of a script on what just happened */
        tui_console_pump(a);
    }
    pthread_sigmask(SIG_SETMASK, &during_wait, NULL);
}

/* The workbench's state before its options, themes and terminal: an empty editor, log, result
 * cache and event queue, no pane in focus, greedy search. NULL when the queue's pipe cannot be
 * made (mt_last_error). The tests drive the same state (test_tui_langs, test_tui_maps). */
tui_app *tui_app_new(void)
{
    tui_app *a = mt_xcalloc(1, sizeof *a);
    tui_editor_init(&a->ed, TUI_EDITOR_MAX_BYTES);
    tui_log_init(&a->log);
    tui_cache_init(&a->cache, TUI_CACHE_MAX_ENTRIES, TUI_CACHE_MAX_BYTES);
    a->focus = -1;
    a->zoomed = -1;
    a->default_beam = 1;
    a->spans_version = (unsigned long)-1;
    if (tui_queue_init(&a->q) != 0) {
        tui_cache_free(&a->cache);
        tui_log_free(&a->log);
        tui_editor_free(&a->ed);
        free(a);
        return NULL;
    }
    return a;
}

/* Everything tui_app_new and the session made: jobs, console, panes (their workers joined),
 * windows, picker, references, COMET, the queue with the events still in it. */
void tui_app_free(tui_app *a)
{
    if (!a) return;
    tui_jobs_close(a);
    tui_console_free(a);
    while (a->n_panes > 0) tui_pane_remove(a, a->n_panes - 1);
    tui_free_windows(a);
    tui_picker_free(a);
    tui_sent_free(&a->sent);
    mt_text_lines_free(&a->refs);
    free(a->refs_path);
    tui_comet_stop(a->comet);
    tui_queue_destroy(&a->q);
    free(a->ed_spans);
    free(a->paste);
    mt_entity_lexicon_free(a->lexicon);
    tui_editor_free(&a->ed);
    tui_log_free(&a->log);
    tui_cache_free(&a->cache);
    for (int i = 0; i < a->n_themes; i++) free(a->theme_names[i]);
    free(a->theme_names);
    free(a);
}

int tui_run(const tui_options *o)
{
    setlocale(LC_ALL, "");
    tui_app *a = tui_app_new();
    if (!a) {
        fprintf(stderr, "mtlab: %s\n", mt_last_error());
        return 1;
    }
    a->default_beam = o->beam > 0 ? o->beam : 1;
    a->default_device = o->device;
    a->default_precision = o->precision_flags;
    a->ascii = o->ascii;
    a->utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    a->empty_hint = o->empty_hint;
    a->models_root = o->models_root;
    a->known_dirs = (char **)o->dirs;
    a->n_known = o->n_dirs;
    tui_find_themes(a);
    int index;
    if (tui_choose_theme(a, o->theme, &index) != 0) {
        fprintf(stderr, "mtlab: %s\n", mt_last_error());
        tui_app_free(a);
        return 1;
    }
    a->theme_index = index < 0 ? 0 : index;
    if (o->refs && tui_refs_load(a, o->refs) != 0) {
        fprintf(stderr, "mtlab: --refs: %s\n", mt_last_error());
        tui_app_free(a);
        return 1;
    }
    if (o->comet && !(a->comet = tui_comet_start(o->comet, &a->q))) {
        fprintf(stderr, "mtlab: --comet: %s\n", mt_last_error());
        tui_app_free(a);
        return 1;
    }
    if (tui_term_start(o->no_mouse) != 0) {
        fprintf(stderr, "mtlab: %s\n", mt_last_error());
        tui_app_free(a);
        return 1;
    }
    tui_color_level level = tui_start_colors();
    tui_palette_build(&a->palette, &a->theme, level);
    tui_log_add(&a->log, TUI_LOG_INFO, "mtlab workbench: theme %s, %s, %s", a->theme.name,
                tui_color_level_name(level), a->utf8 && !a->ascii ? "UTF-8" : "ASCII glyphs");
    if (index < 0) tui_log_add(&a->log, TUI_LOG_WARN, "no themes/ directory found: plain look");
    if (o->warning) tui_log_add(&a->log, TUI_LOG_WARN, "%s", o->warning);
    for (int i = 0; i < o->n_dirs; i++) {
        load_entity_lexicon(a, o->dirs[i]);
        if (tui_pane_add(a, o->dirs[i], o->devices[i], o->precision[i]) != 0)
            tui_log_add(&a->log, TUI_LOG_ERROR, "%s", mt_last_error());
    }
    a->relayout = 1;
    if (o->script) tui_console_run_file(a, o->script);
    loop(a);
    tui_term_stop();
    tui_app_free(a);
    return 0;
}
