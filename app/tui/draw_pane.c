/* A model pane: title (name, architecture, parameters, device, search), its state, the
 * streamed translation of every segment with the source names it copied, translated or
 * dropped marked and listed (marks.h), and its statistics (time, tokens/s, decoding-state memory)
 * in the bottom border. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"
#include "tui/app.h"
#include "tui/format.h"
#include "tui/glyphs.h"
#include "tui/marks.h"
#include "tui/refs.h"
#include "tui/styled.h"
#include "common/columns.h"

static const tui_glyphs *glyphs(const tui_app *a) { return tui_glyphs_for(a->utf8 && !a->ascii); }

/* "BLEU 34.1 · chrF2 56.2", then with --comet "· COMET 0.8123" (comet: the score or its state,
 * "" without a COMET model) */
static void add_scores(tui_app *a, tui_styled *st, const char *lead, const tui_ref_score *s,
                       const char *comet)
{
    char line[192];
    const char *dot = glyphs(a)->dot;
    snprintf(line, sizeof line, "%sBLEU %.1f %s chrF2 %.1f%s%s%s%s", lead, s->bleu, dot, s->chrf,
             comet[0] ? " " : "", comet[0] ? dot : "", comet[0] ? " COMET " : "", comet);
    tui_styled_addz(st, line, TUI_C_DIM);
}

/* The COMET of the pane's segments against the references, off the UI thread (comet_worker.h):
 * seg[i] each finished, referenced segment's score as shown ("0.8123", "…" while it is
 * computed, "n/a" when it cannot be), total the mean of the segments' scores ("…" until every
 * one is known); all "" without --comet. */
static void comet_scores(tui_app *a, tui_pane *p, int n, const tui_ref_score *ref_seg,
                         char (*seg)[16], char *total, size_t len)
{
    total[0] = '\0';
    for (int i = 0; i < n; i++) seg[i][0] = '\0';
    if (!a->comet) return;
    double sum = 0;
    int known = 0, pending = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        if (!ref_seg[i].scored) continue;
        float s;
        switch (tui_comet_get(a->comet, a->sent.texts[i], p->hyps[i], a->refs.lines[i], &s)) {
        case TUI_COMET_KNOWN:
            snprintf(seg[i], sizeof seg[i], "%.4f", s);
            sum += s, known++;
            break;
        case TUI_COMET_PENDING:
            snprintf(seg[i], sizeof seg[i], "%s", glyphs(a)->ellipsis);
            pending++;
            break;
        case TUI_COMET_FAILED:
            snprintf(seg[i], sizeof seg[i], "n/a");
            failed++;
            break;
        }
    }
    if (pending) snprintf(total, len, "%s", glyphs(a)->ellipsis);
    else if (known) snprintf(total, len, "%.4f%s", sum / known, failed ? " (scored ones)" : "");
    else if (failed) snprintf(total, len, "n/a");
}

/* The pane's translation as styled text; with references, each finished segment's scores
 * under it and the total first. */
static void build_text(tui_app *a, tui_pane *p, tui_styled *st)
{
    int n = p->n_hyps < a->sent.n ? p->n_hyps : a->sent.n;
    tui_ref_score *seg = NULL, total = {0};
    char(*comet)[16] = NULL, comet_total[48] = "";
    if (a->refs.n > 0 && n > 0) {
        seg = mt_xcalloc((size_t)n, sizeof *seg);
        if (tui_ref_scores((const char *const *)p->hyps, p->final, n, &a->refs, seg, &total) != 0) {
            free(seg);
            seg = NULL;
        } else {
            comet = mt_xcalloc((size_t)n, sizeof *comet);
            comet_scores(a, p, n, seg, comet, comet_total, sizeof comet_total);
            char lead[96];
            snprintf(lead, sizeof lead, "%d of %d segments vs references: ", total.scored, n);
            if (total.scored) add_scores(a, st, lead, &total, comet_total);
            else tui_styled_addz(st, "vs references: no finished segment yet", TUI_C_DIM);
            tui_styled_addz(st, "\n", TUI_C_TEXT);
        }
    }
    for (int i = 0; i < n; i++) {
        if (i > 0) tui_styled_addz(st, "\n", TUI_C_TEXT);
        if (p->n_hyps > 1) {
            char num[16];
            snprintf(num, sizeof num, "%d ", i + 1);
            tui_styled_addz(st, num, TUI_C_DIM);
        }
        const char *hyp = p->hyps[i] ? p->hyps[i] : "";
        size_t base = st->len;
        tui_styled_addz(st, hyp, TUI_C_TEXT);
        if (seg && seg[i].scored) {
            tui_styled_addz(st, "\n", TUI_C_TEXT);
            add_scores(a, st, "  ", &seg[i], comet[i]);
        }
        if (!p->final[i] || a->sent.n_spans[i] == 0) continue;
        tui_mark_entities(st, base, hyp, a->sent.texts[i], a->sent.spans[i], a->sent.n_spans[i],
                          a->lexicon);
        tui_styled_addz(st, "\n", TUI_C_TEXT);
        tui_entity_line(st, hyp, a->sent.texts[i], a->sent.spans[i], a->sent.n_spans[i], a->lexicon,
                        glyphs(a));
    }
    free(seg);
    free(comet);
}

static void draw_message(WINDOW *w, const tui_palette *pal, const char *msg, tui_meaning m)
{
    int width = getmaxx(w) - 2, h = getmaxy(w) - 2;
    tui_styled st;
    tui_styled_init(&st);
    tui_styled_addz(&st, msg, m);
    tui_vrow *rows;
    int n = tui_wrap(st.text, st.len, width, &rows);
    for (int i = 0; i < n && i < h; i++) tui_styled_draw_row(w, pal, &st, rows[i], 1 + i, 1, width);
    free(rows);
    tui_styled_free(&st);
}

static void draw_title(tui_app *a, tui_pane *p, WINDOW *w, int focused, int reserve);

static void draw_text(tui_app *a, tui_pane *p, WINDOW *w, int focused)
{
    int width = getmaxx(w) - 2, h = getmaxy(w) - 2;
    tui_styled st;
    tui_styled_init(&st);
    build_text(a, p, &st);
    tui_vrow *rows;
    int n = tui_wrap(st.text, st.len, width, &rows);
    if (p->scroll > n - h) p->scroll = n - h > 0 ? n - h : 0;
    for (int y = 0; y < h && p->scroll + y < n; y++)
        tui_styled_draw_row(w, &a->palette, &st, rows[p->scroll + y], 1 + y, 1, width);
    if (n > h) {
        char more[32];
        snprintf(more, sizeof more, " %d-%d/%d ", p->scroll + 1,
                 p->scroll + h < n ? p->scroll + h : n, n);
        /* the title again, fitted beside the position so that neither covers the other */
        tui_set_style(w, &a->palette, focused ? TUI_C_FOCUS : TUI_C_BORDER);
        mvwhline(w, 0, 1, ACS_HLINE, getmaxx(w) - 2);
        draw_title(a, p, w, focused, (int)strlen(more) + 1);
        tui_set_style(w, &a->palette, TUI_C_DIM);
        tui_put(w, 0, getmaxx(w) - 2 - (int)strlen(more), more, (int)strlen(more));
    }
    free(rows);
    tui_styled_free(&st);
}

/* The state at the right of the bottom border ("translating ⠋ 3/8", "done", "loading ⠋");
 * returns the column where it starts. */
static int draw_state(tui_app *a, tui_pane *p, WINDOW *w)
{
    const tui_glyphs *g = glyphs(a);
    const char *spin = g->spinner[(long)(mt_now_s() * 10) % g->n_spinner];
    char s[96];
    tui_meaning m = TUI_C_BUSY;
    if (p->load_error) snprintf(s, sizeof s, " not loaded "), m = TUI_C_ERROR;
    else if (!p->loaded) snprintf(s, sizeof s, " loading %s ", spin);
    else if (p->request_error) snprintf(s, sizeof s, " failed "), m = TUI_C_ERROR;
    else if (p->busy) {
        int done = 0;
        for (int i = 0; i < p->n_hyps; i++) done += p->final[i];
        snprintf(s, sizeof s, " translating %s %d/%d ", spin, done, p->n_hyps);
    } else if (p->have_stats) snprintf(s, sizeof s, " done "), m = TUI_C_DONE;
    else snprintf(s, sizeof s, " ready "), m = TUI_C_DIM;
    int len = tui_text_width_z(s);
    int x = getmaxx(w) - 2 - len;
    if (x < 2) return getmaxx(w) - 2;
    tui_set_style(w, &a->palette, m);
    tui_put(w, getmaxy(w) - 1, x, s, len);
    return x;
}

/* Whether the loaded panes run on more than one device: only then does a shortened title keep
 * the device, which tells them apart; on one device it would be the same word in every title
 * (and in some only, where it fits). */
static int devices_differ(const tui_app *a)
{
    const char *first = NULL;
    for (int i = 0; i < a->n_panes; i++) {
        const char *d = a->panes[i]->loaded ? strrchr(a->panes[i]->info, ',') : NULL;
        if (!d) continue;
        if (!first) first = d;
        else if (strcmp(first, d)) return 1;
    }
    return 0;
}

/* The title: name, direction ("es→en", when the bundle records it), architecture, parameters,
 * device and the search ("greedy", "beam 5"), in the top border less reserve columns at its
 * right (a scrolled pane's position); when that does not fit, the name, the direction, the
 * device (only where the panes run on more than one: a CPU and a GPU side by side are compared
 * by it) and the search; then the name, the direction and the search, the name cut short if it
 * must be, so the search shows unless the pane is too narrow for a name beside it (or did not
 * load). */
static void draw_title(tui_app *a, tui_pane *p, WINDOW *w, int focused, int reserve)
{
    const tui_glyphs *g = glyphs(a);
    char title[512], search[32], tail[160], name[96], dir[48], lead[64] = "";
    int room = getmaxx(w) - 6 - (focused ? 2 : 0) - reserve;
    /* a pane that did not load searches nothing: no greedy or beam in its title */
    if (p->load_error) search[0] = 0;
    else tui_format_search(search, sizeof search, p->beam);
    /* the direction follows the name and stays as long as the search does */
    tui_format_direction(dir, sizeof dir, p->src_lang, p->tgt_lang, g->arrow);
    if (dir[0]) snprintf(lead, sizeof lead, " %s %s", g->dot, dir);
    /* an int8 or bf16 pane says so next to its name, the part of the title never dropped */
    if (p->precision)
        snprintf(name, sizeof name, "%s %s %s", p->name, g->dot,
                 mt_precision_name(mt_runner_precision((unsigned)p->precision)));
    else snprintf(name, sizeof name, "%s", p->name);
    snprintf(title, sizeof title, "%s%s %s %s %s %s", name, lead, g->dot, p->info, g->dot, search);
    const char *device = strrchr(p->info, ','); /* info: "arch, N params, device" */
    if (p->loaded && tui_text_width_z(title) > room && device && search[0] && devices_differ(a)) {
        snprintf(title, sizeof title, "%s%s %s %s %s %s", name, lead, g->dot, device + 2, g->dot,
                 search);
        if (tui_text_width_z(title) <= room) {
            tui_put_title(w, &a->palette, title, focused, g->focus_mark);
            return;
        }
    }
    if (!p->loaded || tui_text_width_z(title) > room) {
        if (search[0]) snprintf(tail, sizeof tail, "%s %s %s", lead, g->dot, search);
        else snprintf(tail, sizeof tail, "%s", lead);
        int name_room = room - tui_text_width_z(tail);
        int cols;
        size_t n = tui_text_fit(name, strlen(name), name_room, &cols);
        if (n < strlen(name))
            n = tui_text_fit(name, strlen(name), name_room - tui_text_width_z(g->ellipsis), &cols);
        snprintf(title, sizeof title, "%.*s%s%s", (int)n, name, n < strlen(name) ? g->ellipsis : "",
                 tail);
        /* too narrow for both: the whole name, which tells the panes apart, and its direction
         * before the search ("transformer-small · es→en", not "transform… · es→en · greedy"),
         * else the whole name alone */
        if (n < strlen(name) && lead[0]) {
            snprintf(title, sizeof title, "%s%s", name, lead);
            if (tui_text_width_z(title) <= room) n = strlen(name);
        }
        if (n < strlen(name)) {
            n = tui_text_fit(name, strlen(name), room, &cols);
            if (n < strlen(name))
                n = tui_text_fit(name, strlen(name), room - tui_text_width_z(g->ellipsis), &cols);
            snprintf(title, sizeof title, "%.*s%s", (int)n, name,
                     n < strlen(name) ? g->ellipsis : "");
        }
    }
    tui_put_title(w, &a->palette, title, focused, g->focus_mark);
}

void tui_draw_pane(tui_app *a, int index, WINDOW *w)
{
    tui_pane *p = a->panes[index];
    int focused = a->focus == index && a->overlay == TUI_OVERLAY_NONE;
    const tui_glyphs *g = glyphs(a);
    werase(w);
    tui_set_style(w, &a->palette, focused ? TUI_C_FOCUS : TUI_C_BORDER);
    box(w, 0, 0);
    draw_title(a, p, w, focused, 0);
    int state_x = draw_state(a, p, w);
    if (p->have_stats && !p->busy) {
        char stats[160], sep[16];
        snprintf(sep, sizeof sep, " %s ", g->dot);
        tui_stats st = {p->seconds,  p->tokens,     p->model_state_bytes, p->n_hyps - p->n_cached,
                        p->n_cached, p->state_bytes};
        int cols = tui_format_stats(stats + 1, sizeof stats - 2, &st, sep, state_x - 4);
        if (cols > 0) {
            stats[0] = ' ';
            strcat(stats, " ");
            tui_set_style(w, &a->palette, TUI_C_DONE);
            tui_put(w, getmaxy(w) - 1, 2, stats, cols + 2);
        }
    }
    if (p->load_error) {
        draw_message(w, &a->palette, p->load_error, TUI_C_ERROR);
        return;
    }
    if (!p->loaded) {
        draw_message(w, &a->palette, "loading the bundle...", TUI_C_DIM);
        return;
    }
    if (p->request_error) {
        draw_message(w, &a->palette, p->request_error, TUI_C_ERROR);
        return;
    }
    if (!tui_pane_feeds(a, p)) {
        char msg[256];
        tui_other_language_message(a, p, msg, sizeof msg);
        draw_message(w, &a->palette, msg, TUI_C_DIM);
        return;
    }
    if (p->view == TUI_VIEW_HEATMAP) {
        tui_draw_heatmap(a, p, w, 1, 1, getmaxy(w) - 2, getmaxx(w) - 2);
        return;
    }
    if (p->n_hyps == 0) {
        draw_message(w, &a->palette, "waiting for text in the editor", TUI_C_DIM);
        return;
    }
    draw_text(a, p, w, focused);
}
