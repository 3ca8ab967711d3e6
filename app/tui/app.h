/* The workbench's state, owned by the UI thread: the editor, the model panes (each with its
 * worker), the overlays, the theme and the curses windows the layout gives. The files around
 * it each do one thing: tui_main.c (the loop), terminal.c (curses, signals, crash handler),
 * actions.c (what keys do), events.c (what workers report), requests.c (what gets translated),
 * theme_choice.c (which theme), notice.c (the message over the status line), picker.c,
 * result_cache.c (finished translations by model, mode and text), save.c (Ctrl-S's files),
 * jobs_view.c (the jobs view's keys; jobs_watch.c its watcher thread, jobs_format.c its pure
 * pieces), draw*.c (draw_jobs.c: the jobs view; draw_heatmap.c: a pane's heatmap, laid out
 * by heat_layout.c, its data and files from heat_export.c); the Lua console (Ctrl-O) is
 * app/tui/console/ (console.h). */
#ifndef MTLAB_TUI_APP_H
#define MTLAB_TUI_APP_H

#include <curses.h>

#include "mtlab/entities.h"
#include "mtlab/metrics.h"
#include "mtlab/probe.h"
#include "tui/comet_worker.h"
#include "tui/editor.h"
#include "tui/heat_layout.h"
#include "tui/heatmap.h"
#include "tui/jobs_view.h"
#include "tui/keys.h"
#include "tui/layout.h"
#include "tui/log.h"
#include "tui/pane_worker.h"
#include "tui/queue.h"
#include "tui/result_cache.h"
#include "common/theme.h"
#include "tui/theme_curses.h"
#include "tui/tui.h"

#define TUI_DEBOUNCE_S 0.5
#define TUI_DEFAULT_THEME "dark"
#define TUI_BEAM 5 /* the beam the toggle switches to (the paper's) */

typedef enum { TUI_VIEW_TEXT, TUI_VIEW_HEATMAP } tui_view;
typedef enum { TUI_OVERLAY_NONE, TUI_OVERLAY_HELP, TUI_OVERLAY_PICKER } tui_overlay;

typedef struct {
    int id; /* unique for the session: events name their pane by it */
    char *dir; /* the bundle directory */
    char name[64]; /* its last path component */
    int precision; /* its model's linear layers: runner flags (0: fp32, MT_RUNNER_INT8,
                    * MT_RUNNER_BF16; shown in the title unless fp32) */
    char info[160]; /* "mamba, 7.52M params, cpu" once loaded */
    char src_lang[36], tgt_lang[36]; /* its bundle's direction once loaded ("es", "en"); ""
                                      * when config.json records none (then it is fed any text) */
    tui_worker *worker;
    int loaded;
    char *load_error; /* the bundle could not be loaded: shown in the pane */
    int beam; /* 1: greedy */
    char *model_key; /* the weights, for the result cache (requests.c) */
    char mode[32]; /* the decoding mode of the request shown, for the result cache */

    unsigned long request; /* the request the pane shows; 0 before any */
    int busy;
    char **hyps; /* (n_hyps) each segment's hypothesis so far, malloc'd */
    unsigned char *final; /* (n_hyps) 1 when the segment is finished */
    int n_hyps;
    int *worker_seg; /* (n_worker) the segment of each text sent to the worker */
    int n_worker;
    int n_cached; /* segments of the request shown that came from the cache */
    char *request_error; /* the last request failed */
    double seconds; /* the last finished request's statistics */
    size_t tokens, state_bytes; /* state_bytes: decoding's working set, caches included */
    size_t model_state_bytes; /* the model's state of one sentence alone (KV cache, SSM state) */
    int have_stats;
    int scroll; /* first text row shown */

    tui_view view;
    tui_probe *probe; /* the heatmap's data, for probe_segment */
    int probe_segment; /* -1: none asked */
    unsigned long probe_request; /* the request whose text and output the probes are of */
    int probe_pending;
    char *probe_error;
    int heat_kind; /* mt_probe_kind shown or TUI_HEAT_ATTRIBUTION, -1 before a record
                    * arrives */
    int heat_nth; /* which map of that kind (layer order) */
    int heat_layer_asked; /* the model's layer (1-based) ui.heatmap asked for before the
                           * probes came, found in them when they come; 0: none */
    int heat_head; /* -1: the heads' average */
    tui_heat_norm heat_norm;
    int sel_row, sel_col; /* the heatmap's cursor (kept inside the map when drawn) */
    int heat_row0, heat_col0; /* first map row and column shown */
    tui_heat_geom heat_geom; /* the last frame's layout, for mouse clicks */
    int heat_y0, heat_x0; /* where in the pane it was drawn */

    /* the attribution map (heat_kind TUI_HEAT_ATTRIBUTION), keyed as the probes are by the
     * request and segment, and by the method and contrast it was computed with */
    int attr_method; /* mt_attr_method asked for (m steps through them) */
    char attr_contrast[64]; /* the contrast asked for ("" none): the piece of the column c
                             * picked, or a text typed (ui.heatmap), which the worker resolves
                             * (mt_tokenizer_find_token); the title shows the label of the
                             * token it found (attr_raw->contrast_shown) */
    tui_probe *attr; /* its map's record (tui_heat_attribution_record) */
    mt_labelled_attribution *attr_raw; /* the signed values and the columns' split */
    unsigned long attr_request;
    int attr_segment; /* -1: none asked */
    int attr_of_method; /* the method and contrast the record (or the one pending) is of */
    char attr_of_contrast[64];
    int attr_pending;
    char *attr_error;
} tui_pane;

/* What was last sent for translation: the editor's segments then, with their entities. */
typedef struct {
    char **texts; /* (n) */
    int *lines; /* (n) editor line of each */
    mt_text_span **spans; /* (n) source entities of each */
    size_t *n_spans;
    int n;
} tui_sent;

typedef struct tui_console tui_console;

typedef struct {
    tui_editor ed;
    int ed_scroll; /* first wrapped row shown */
    char ed_lang[36]; /* the source language Ctrl-F chose for the editor, "" none:
                       * tui_editor_language says which it writes */
    tui_pane *panes[TUI_MAX_PANES];
    int n_panes, next_pane_id;
    int focus; /* -1: the editor, else a pane index */
    int log_focus; /* the log has the focus (Tab past the last pane while shown) */
    tui_overlay overlay;
    int show_log;
    int log_scroll; /* lines the log view is scrolled back from its newest line */
    tui_log log;
    tui_queue q;
    tui_console *console; /* NULL until Ctrl-O first opens it */
    int zoom; /* z: the focused pane takes the whole screen */
    int zoomed; /* the pane the layout zoomed, -1 none */
    int console_rows; /* the console's height (ui.console), 0: the layout's default */
    int editor_lines; /* the editor's wrapped rows the layout was computed for */

    /* look */
    tui_theme theme;
    tui_palette palette;
    char **theme_names; /* themes/ *.theme found, sorted */
    int n_themes, theme_index;
    int utf8; /* the locale is UTF-8: box drawing, half blocks, symbols */
    int ascii; /* --ascii: ASCII glyphs even in a UTF-8 locale */

    /* translation bookkeeping */
    unsigned long next_request;
    unsigned long sent_version; /* the editor version last sent */
    double edit_time; /* when the text last changed */
    tui_sent sent;
    mt_text_lines refs; /* reference lines for the segments (refs.h); n = 0: none */
    char *refs_path;
    tui_comet *comet; /* --comet: per-segment COMET against refs (comet_worker.h); NULL */
    tui_result_cache cache; /* finished translations by (model, mode, text) */
    int default_beam;
    const char *default_device; /* for bundles opened from the picker (NULL: cpu) */
    int default_precision; /* and their precision (runner flags) */
    mt_text_span *ed_spans; /* entities of the whole editor text, for the underline */
    size_t n_ed_spans;
    unsigned long spans_version;
    mt_entity_lexicon *lexicon; /* a bundle's entity_lexicon.tsv, when one has it */

    /* overlays */
    int help_scroll;
    const char *models_root; /* the picker's bundle directory (NULL: models/) */
    char **known_dirs; /* bundles named on the command line */
    int n_known;
    char **picker_dirs; /* candidates: models/ bundles, -m bundles, open panes */
    int n_picker, picker_sel; /* picker_sel -1: the typed path's line */
    char picker_path[1024]; /* the path typed into the picker */

    /* typed bytes of a character not complete yet (tui_main.c) */
    char typed[8];
    size_t n_typed;

    /* paste in progress (bracketed paste) */
    int pasting;
    char *paste;
    size_t paste_len, paste_cap, paste_total;

    tui_jobs *jobs; /* the jobs view while it is open, else NULL */
    WINDOW *w_jobs;

    char notice[256]; /* a one-off message over the status line */
    double notice_until;
    const char *empty_hint; /* the empty-state message when there are no panes */

    /* screen */
    tui_layout L;
    WINDOW *w_editor, *w_panes[TUI_MAX_PANES], *w_empty, *w_log, *w_status, *w_overlay, *w_console;
    int dirty, relayout;
    int quit;
    int confirm_quit; /* a quit key asked "quit?": the next key answers */
    unsigned long saved_version; /* the editor version Ctrl-S last saved */
} tui_app;

/* The state before options, themes and the terminal (NULL: the event queue could not be made),
 * and everything a session adds to it freed (tui_main.c). */
tui_app *tui_app_new(void);
void tui_app_free(tui_app *a);

/* panes and requests (requests.c) */
int tui_pane_add(tui_app *a, const char *dir, const char *device, int precision);
/* The result cache's name for a pane's weights (malloc'd): the bundle's real path, the device,
 * the precision (MT_RUNNER_* flags) and the weights file's size and modification time. */
char *tui_pane_model_key(const char *dir, const char *device, int precision);
void tui_pane_remove(tui_app *a, int index);
tui_pane *tui_pane_by_id(tui_app *a, int id);
/* Send the editor's segments to every loaded pane (or one pane when only is not NULL): each
 * segment the result cache holds for the pane is shown at once, the others go to its worker. */
void tui_translate(tui_app *a, tui_pane *only);
/* Ask the pane for the probes of the segment under the editor's cursor, when it shows its
 * heatmap and does not have them; for the attribution map, its attribution with the pane's
 * method and contrast. */
void tui_request_probe(tui_app *a, tui_pane *p);
/* The segment (index into a->sent) whose line holds the editor's cursor, else 0. */
int tui_cursor_segment(const tui_app *a);
void tui_sent_free(tui_sent *s);
/* refs.c: read the reference lines of path (line i for segment i); 0, or -1 naming the file. */
int tui_refs_load(tui_app *a, const char *path);
/* The pane's segment that the worker's text number k is, -1 when none. */
int tui_pane_segment(const tui_pane *p, int k);
/* Recompute the editor's entity underline when the text changed. */
void tui_refresh_entities(tui_app *a);

/* the editor's language and the panes it feeds (languages.c) */
/* The source language the editor writes: the one Ctrl-F chose while an open pane translates
 * from it, else the first loaded pane's that records one (in pane order, so the same whichever
 * loads first); "" when no pane records its languages. */
const char *tui_editor_language(const tui_app *a);
/* 1 when the editor's text goes to the pane: it records no source language, or the editor
 * writes its source language. */
int tui_pane_feeds(const tui_app *a, const tui_pane *p);
/* What a pane that the editor does not feed says: "this model translates en→es; the editor is
 * writing es (Ctrl-F: write en)". */
void tui_other_language_message(const tui_app *a, const tui_pane *p, char *out, size_t len);
/* The distinct source languages of the loaded panes, in pane order, into langs[0..n). */
int tui_source_languages(const tui_app *a, const char **langs);

/* events (events.c) */
void tui_handle_events(tui_app *a);

/* where the keys go (focus.c) */
/* Where keys go now: TUI_IN_EDITOR, _PANE, _HEATMAP, _OVERLAY, _JOBS or _LOG. */
unsigned tui_focus_context(const tui_app *a);
/* A pane's context: TUI_IN_HEATMAP when it shows its heatmap, else TUI_IN_PANE. */
unsigned tui_pane_context(const tui_pane *p);
/* Focus the editor (-1) or a pane. */
void tui_focus(tui_app *a, int index);

/* keys and mouse (actions.c) */
void tui_handle_key(tui_app *a, int key, int is_char);
void tui_handle_mouse(tui_app *a);

/* the message over the status line (notice.c) */
void tui_notice(tui_app *a, const char *fmt, ...) MT_PRINTF(2, 3);

/* themes (theme_choice.c) */
/* Collect themes/ *.theme into a->theme_names, sorted by name. */
void tui_find_themes(tui_app *a);
/* The theme to start with: want is a name in themes/, a file path or NULL (the default);
 * *index receives its place in a->theme_names, -1 for the plain look. 0 or -1. */
int tui_choose_theme(tui_app *a, const char *want, int *index);
/* Start colours when the terminal has them (COLORS is known only after start_color). */
tui_color_level tui_start_colors(void);
/* Switch to theme index (a notice when its file no longer parses). 0 or -1. */
int tui_apply_theme(tui_app *a, int index);

/* the picker (picker.c) */
void tui_picker_open(tui_app *a);
void tui_picker_free(tui_app *a);
void tui_picker_choose(tui_app *a);
/* A character typed into the picker's path line ('\b': delete the last one). */
void tui_picker_type(tui_app *a, int ch);

/* the jobs view (jobs_view.c, draw_jobs.c) */
void tui_jobs_toggle(tui_app *a);
void tui_jobs_close(tui_app *a);
/* Apply an action in the view: 1 when it was the view's. */
int tui_jobs_action(tui_app *a, tui_action act);
/* A printable key: typed into the picker's path, else looked up in the key table. */
void tui_jobs_char(tui_app *a, int ch);
/* Take the watcher's latest snapshot (marks the frame dirty): 1 when there was one. */
int tui_jobs_tick(tui_app *a);
void tui_draw_jobs(tui_app *a);

/* drawing (draw*.c) */
void tui_build_windows(tui_app *a);
void tui_free_windows(tui_app *a);
void tui_draw(tui_app *a);
void tui_draw_editor(tui_app *a, WINDOW *w);
void tui_draw_pane(tui_app *a, int index, WINDOW *w);
void tui_draw_heatmap(tui_app *a, tui_pane *p, WINDOW *w, int y0, int x0, int h, int width);

/* the heatmap a pane shows (heat_export.c) */
/* 1 when its probes are of the text the pane shows now: the request shown, the segment under
 * the editor's cursor, and no edit since the text was sent; else the map is being recomputed. */
int tui_heat_current(const tui_app *a, const tui_pane *p);
/* The top of the raw and log scales: the largest value any pane's heatmap of the same class
 * (tui_heat_state_class) shows now. */
float tui_heat_shared_max(const tui_app *a, int kind);
/* Its slice (malloc'd; the map in *map) as tui_heat_pick gives it. */
float *tui_heat_pane_slice(const tui_pane *p, const mt_probe_map **map);
/* The record the heatmap shown is of: the attribution's for the attribution map, else the
 * probes' (NULL before it comes). */
const tui_probe *tui_heat_pane_probe(const tui_pane *p);
/* The boundary between source and translation on an axis of the map shown (an attribution's
 * columns: its source side, then the translation), as tui_heat_split. */
int tui_heat_pane_split(const tui_pane *p, mt_probe_axis axis);
/* What the map's axis is called ("source | translation" for an attribution's columns). */
const char *tui_heat_pane_axis_title(const tui_pane *p, mt_probe_axis axis);
/* 1 when the map's unit cannot see column col from row row (mt_probe_masked; for an
 * attribution, a translation token after the one the row is predicted from). */
int tui_heat_pane_masked(const tui_pane *p, const mt_probe_map *m, int row, int col);
/* The value a person reads at a cell: the attribution's signed value, else the map's. */
float tui_heat_pane_value(const tui_pane *p, const mt_probe_map *m, const float *v, int row,
                          int col);
/* Its header: "retention · L1 2/3 · mean of 4 heads · seg 1" (dot: the separator glyph), made
 * shorter to fit width columns when it can (width <= 0: the whole). */
void tui_heat_title(char *out, size_t len, const tui_pane *p, const mt_probe_map *m,
                    const char *dot, int width);
/* Write it as SVG, PNG (cairo) and CSV into the working directory, under names no file has
 * yet; the notice says where, or why not. */
void tui_heat_export(tui_app *a, tui_pane *p);
void tui_draw_overlay(tui_app *a, WINDOW *w);

#endif
