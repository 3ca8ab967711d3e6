/* The panes' directions and the editor's language: the workbench's request and event code
 * (requests.c, events.c, actions.c) driven without curses on tiny bundles that record es -> en,
 * en -> es and no languages. A pane takes its direction from its bundle (none recorded: none
 * shown, never guessed); the editor's text goes only to the panes whose source language it is
 * written in (and to those that record none); Ctrl-F moves the editor to the next source
 * language of the open panes; a pane of another source language says so instead of
 * translating. */
#include "test_util.h"

#include <locale.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tiny_bundle.h"
#include "tui/app.h"
#include "tui/format.h"
#include "tui/glyphs.h"

static char dir[64], es_en[96], en_es[96], plain[96];

static int make_bundles(void **state)
{
    (void)state;
    if (!setlocale(LC_CTYPE, "C.UTF-8")) return -1;
    snprintf(dir, sizeof dir, "/tmp/mtlab-tui-langs-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    if (test_tiny_bundle_langs(dir, "es-en", "es", "en", es_en, sizeof es_en)) return -1;
    if (test_tiny_bundle_langs(dir, "en-es", "en", "es", en_es, sizeof en_es)) return -1;
    return test_tiny_bundle_langs(dir, "plain", NULL, NULL, plain, sizeof plain);
}

static int remove_bundles(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static tui_app *app_new(void)
{
    tui_app *a = tui_app_new();
    assert_non_null(a);
    a->utf8 = 1;
    return a;
}

static int all_loaded(const tui_app *a)
{
    for (int i = 0; i < a->n_panes; i++)
        if (!a->panes[i]->loaded && !a->panes[i]->load_error) return 0;
    return 1;
}

static int all_idle(const tui_app *a)
{
    for (int i = 0; i < a->n_panes; i++)
        if (a->panes[i]->busy) return 0;
    return 1;
}

/* Apply the workers' events until done(a) holds (at most 60 s: a sanitizer build on a busy
 * machine). */
static void pump_until(tui_app *a, int (*done)(const tui_app *))
{
    struct pollfd pfd = {.fd = tui_queue_fd(&a->q), .events = POLLIN};
    for (int round = 0; round < 600 && !done(a); round++)
        if (poll(&pfd, 1, 100) > 0) tui_handle_events(a);
    assert_true(done(a));
}

/* The pane translated every segment of the text sent. */
static int translated(const tui_app *a, const tui_pane *p)
{
    if (p->n_hyps != a->sent.n || a->sent.n == 0) return 0;
    for (int i = 0; i < p->n_hyps; i++)
        if (!p->final[i] || !p->hyps[i]) return 0;
    return 1;
}

static void test_direction_format(void **state)
{
    (void)state;
    char out[64];
    tui_format_direction(out, sizeof out, "es", "en", tui_glyphs_for(1)->arrow);
    assert_string_equal(out, "es→en");
    tui_format_direction(out, sizeof out, "de", "en", tui_glyphs_for(0)->arrow);
    assert_string_equal(out, "de->en");
    /* a bundle that records no languages: no direction, never the Bible's guessed es -> en */
    tui_format_direction(out, sizeof out, "", "", "→");
    assert_string_equal(out, "");
}

static void test_panes_take_their_bundles_direction(void **state)
{
    (void)state;
    tui_app *a = app_new();
    assert_int_equal(tui_pane_add(a, es_en, NULL, 0), 0);
    assert_int_equal(tui_pane_add(a, en_es, NULL, 0), 0);
    assert_int_equal(tui_pane_add(a, plain, NULL, 0), 0);
    pump_until(a, all_loaded);
    assert_string_equal(a->panes[0]->src_lang, "es");
    assert_string_equal(a->panes[0]->tgt_lang, "en");
    assert_string_equal(a->panes[1]->src_lang, "en");
    assert_string_equal(a->panes[1]->tgt_lang, "es");
    assert_string_equal(a->panes[2]->src_lang, "");
    assert_string_equal(a->panes[2]->tgt_lang, "");
    /* the editor writes the first pane's source language, whichever pane loaded first */
    assert_string_equal(tui_editor_language(a), "es");
    tui_app_free(a);
}

static void test_text_goes_to_the_panes_of_its_language(void **state)
{
    (void)state;
    tui_app *a = app_new();
    assert_int_equal(tui_pane_add(a, es_en, NULL, 0), 0);
    assert_int_equal(tui_pane_add(a, en_es, NULL, 0), 0);
    assert_int_equal(tui_pane_add(a, plain, NULL, 0), 0);
    pump_until(a, all_loaded);
    tui_pane *es = a->panes[0], *en = a->panes[1], *none = a->panes[2];

    tui_editor_set_text(
        &a->ed, "En el principio creó Dios los cielos y la tierra.\nY dijo Dios: Sea la luz.");
    tui_translate(a, NULL);
    pump_until(a, all_idle);
    /* Spanish text: the es -> en pane and the pane of no recorded language translate it; the
     * en -> es pane is not fed Spanish and says why */
    assert_true(tui_pane_feeds(a, es));
    assert_true(tui_pane_feeds(a, none));
    assert_false(tui_pane_feeds(a, en));
    assert_true(translated(a, es));
    assert_true(translated(a, none));
    assert_int_equal(en->n_hyps, 0);
    assert_false(en->busy);
    char msg[256];
    tui_other_language_message(a, en, msg, sizeof msg);
    assert_string_equal(msg,
                        "this model translates en→es; the editor is writing es (Ctrl-F: write en)");

    /* Ctrl-F from the editor: the editor writes en; the en -> es pane translates, the es -> en
     * pane says so, and the pane without languages still translates */
    tui_handle_key(a, TUI_CTRL('f'), 0);
    assert_string_equal(tui_editor_language(a), "en");
    pump_until(a, all_idle);
    assert_true(translated(a, en));
    assert_true(translated(a, none));
    assert_int_equal(es->n_hyps, 0);
    tui_other_language_message(a, es, msg, sizeof msg);
    assert_string_equal(msg,
                        "this model translates es→en; the editor is writing en (Ctrl-F: write es)");

    /* a key typed after the switch goes to the same panes; from a pane, Ctrl-F switches too */
    tui_editor_set_text(&a->ed, "In the beginning God created the heaven and the earth.");
    tui_translate(a, NULL);
    pump_until(a, all_idle);
    assert_true(translated(a, en));
    assert_int_equal(es->n_hyps, 0);
    tui_focus(a, 1);
    tui_handle_key(a, TUI_CTRL('f'), 0);
    assert_string_equal(tui_editor_language(a), "es");
    pump_until(a, all_idle);
    assert_true(translated(a, es));
    assert_int_equal(en->n_hyps, 0);

    /* the panes of the editor's language closed: it writes the first open pane's language */
    tui_pane_remove(a, 0);
    assert_string_equal(tui_editor_language(a), "en");
    pump_until(a, all_idle);
    assert_true(translated(a, a->panes[0]));
    tui_app_free(a);
}

/* A pane that stops being fed drops the maps it was computing: nothing stays pending (a pending
 * map keeps the workbench redrawing) and no map of the old text comes later. */
static void test_a_held_pane_drops_its_pending_maps(void **state)
{
    (void)state;
    tui_app *a = app_new();
    assert_int_equal(tui_pane_add(a, es_en, NULL, 0), 0);
    assert_int_equal(tui_pane_add(a, en_es, NULL, 0), 0);
    pump_until(a, all_loaded);
    tui_pane *es = a->panes[0];
    tui_editor_set_text(&a->ed, "Y dijo Dios: Sea la luz.");
    tui_translate(a, NULL);
    pump_until(a, all_idle);
    assert_true(translated(a, es));
    es->view = TUI_VIEW_HEATMAP;
    es->heat_kind = TUI_HEAT_ATTRIBUTION;
    tui_request_probe(a, es);
    assert_true(es->attr_pending);
    tui_handle_key(a, TUI_CTRL('f'), 0);
    assert_false(tui_pane_feeds(a, es));
    assert_false(es->attr_pending);
    assert_false(es->probe_pending);
    pump_until(a, all_idle);
    assert_null(es->attr);
    assert_false(es->attr_pending);
    tui_app_free(a);
}

/* One source language among the panes: everything goes everywhere, as before; the key says
 * there is nothing to switch to. */
static void test_one_language_changes_nothing(void **state)
{
    (void)state;
    tui_app *a = app_new();
    assert_int_equal(tui_pane_add(a, es_en, NULL, 0), 0);
    assert_int_equal(tui_pane_add(a, plain, NULL, 0), 0);
    pump_until(a, all_loaded);
    tui_editor_set_text(&a->ed, "Y vio Dios que la luz era buena.");
    tui_translate(a, NULL);
    pump_until(a, all_idle);
    assert_true(translated(a, a->panes[0]));
    assert_true(translated(a, a->panes[1]));
    tui_handle_key(a, TUI_CTRL('f'), 0);
    assert_string_equal(tui_editor_language(a), "es");
    assert_non_null(strstr(a->notice, "every open pane translates from es"));
    tui_app_free(a);

    /* no pane records a language: the editor names none */
    a = app_new();
    assert_int_equal(tui_pane_add(a, plain, NULL, 0), 0);
    pump_until(a, all_loaded);
    assert_string_equal(tui_editor_language(a), "");
    assert_true(tui_pane_feeds(a, a->panes[0]));
    tui_app_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direction_format),
        cmocka_unit_test(test_panes_take_their_bundles_direction),
        cmocka_unit_test(test_text_goes_to_the_panes_of_its_language),
        cmocka_unit_test(test_a_held_pane_drops_its_pending_maps),
        cmocka_unit_test(test_one_language_changes_nothing),
    };
    return cmocka_run_group_tests(tests, make_bundles, remove_bundles);
}
