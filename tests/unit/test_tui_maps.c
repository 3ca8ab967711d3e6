/* A pane's heatmap describes what the pane shows: the workbench's request and event code
 * (requests.c, events.c) driven without curses on a tiny bundle. After the text changes or the
 * search changes while the pane shows its translation, F3 brings a map of the new text and the
 * new output, never the one recorded before; while the text is edited and not yet sent, the
 * map says it is being recomputed (tui_heat_current). */
#include "test_util.h"

#include <math.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tiny_bundle.h"
#include "tui/app.h"
#include "tui/console/console_internal.h"

static char dir[64], bundle[96];

static int make_bundle(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/mtlab-tui-maps-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    return test_tiny_bundle(dir, bundle, sizeof bundle);
}

static int remove_bundle(void **state)
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
    return a;
}

typedef int (*settled)(const tui_pane *p);
static int is_loaded(const tui_pane *p) { return p->loaded; }
static int is_idle(const tui_pane *p) { return !p->busy; }
static int has_probe(const tui_pane *p) { return p->probe || p->probe_error; }

/* Apply the workers' events until done(p) holds (at most 60 s: a sanitizer build on a busy
 * machine). */
static void pump_until(tui_app *a, tui_pane *p, settled done)
{
    struct pollfd pfd = {.fd = tui_queue_fd(&a->q), .events = POLLIN};
    for (int round = 0; round < 600 && !done(p); round++)
        if (poll(&pfd, 1, 100) > 0) tui_handle_events(a);
    assert_true(done(p));
}

/* The text of pieces [from, to) of labels as the tokenizer decodes it: the word-start marks
 * as spaces, an unknown piece as " ⁇ ", trimmed. */
static void pieces_text(char *out, size_t len, char **labels, int from, int to)
{
    size_t k = 0;
    for (int i = from; i < to; i++)
        for (const char *s = strcmp(labels[i], "<unk>") ? labels[i] : "▁⁇▁"; *s && k + 1 < len;
             s++) {
            if (!strncmp(s, "\u2581", 3)) {
                if (k > 0) out[k++] = ' ';
                s += 2;
            } else {
                out[k++] = *s;
            }
        }
    while (k > 0 && out[k - 1] == ' ') k--;
    out[k] = '\0';
}

/* The map p shows is of segment seg's source as sent and of the translation the pane shows. */
static void assert_map_of_shown(tui_app *a, tui_pane *p, int seg)
{
    assert_non_null(p->probe);
    assert_null(p->probe_error);
    assert_true(tui_heat_current(a, p));
    const mt_labelled_probe *pr = p->probe;
    /* a decoder-only model: the prompt is `source <sep>`, then the translation */
    int n = pr->rec.n_prompt;
    assert_string_equal(pr->labels[n - 1], "<sep>");
    char src[512], hyp[512];
    pieces_text(src, sizeof src, pr->labels, 0, n - 1);
    assert_string_equal(src, a->sent.texts[seg]);
    int end = pr->rec.n_tokens;
    if (end > n && !strcmp(pr->labels[end - 1], "</s>")) end--;
    pieces_text(hyp, sizeof hyp, pr->labels, n, end);
    char shown[512];
    snprintf(shown, sizeof shown, "%s", p->hyps[seg]);
    for (size_t k = strlen(shown); k > 0 && shown[k - 1] == ' '; k--) shown[k - 1] = '\0';
    assert_string_equal(hyp, shown);
}

static void set_text(tui_app *a, const char *text)
{
    tui_editor_set_text(&a->ed, text);
    tui_translate(a, NULL);
}

static void test_map_follows_text_and_search(void **state)
{
    (void)state;
    tui_app *a = app_new();
    assert_int_equal(tui_pane_add(a, bundle, NULL, 0), 0);
    tui_pane *p = a->panes[0];
    pump_until(a, p, is_loaded);

    /* F3 on the first text: its map; a layer asked for before it came (ui.heatmap) that the
     * model does not have is said, not silently replaced */
    set_text(a, "En el principio creó Dios los cielos y la tierra.");
    pump_until(a, p, is_idle);
    p->view = TUI_VIEW_HEATMAP;
    p->heat_kind = MT_PROBE_IMPLICIT_ATTN;
    p->heat_layer_asked = 100;
    tui_request_probe(a, p);
    pump_until(a, p, has_probe);
    assert_map_of_shown(a, p, 0);
    assert_int_equal(p->heat_nth, 0);
    assert_non_null(strstr(a->notice, "implicit attention maps at layers 1, 2, not 100"));

    /* ui.heatmap asks for a head the map does not have: an error, the pane as it was */
    ui_call call = {.op = UI_HEATMAP,
                    .pane = 0,
                    .kind = MT_PROBE_IMPLICIT_ATTN,
                    .layer = 0,
                    .head = 99,
                    .scale = -1};
    ui_execute(a, &call);
    assert_string_equal(call.error, "mamba's implicit layer 1 has 1 head, not 100");
    assert_int_equal(p->heat_head, -1);
    /* its layer is the model's, as the title's L and model:probe's layer: with the maps of
     * layers 4 and 8 (a hybrid's attention), layer 8 is the second map and layer 1 none */
    mt_probe_record *rec = &p->probe->rec;
    for (int nth = 0; nth < 2; nth++)
        rec->maps[tui_heat_find(rec, MT_PROBE_IMPLICIT_ATTN, nth)].layer = 3 + 4 * nth;
    call = (ui_call){.op = UI_HEATMAP,
                     .pane = 0,
                     .kind = MT_PROBE_IMPLICIT_ATTN,
                     .layer = 7,
                     .head = -1,
                     .scale = -1};
    ui_execute(a, &call);
    assert_string_equal(call.error, "");
    assert_int_equal(p->heat_nth, 1);
    call.layer = 0;
    ui_execute(a, &call);
    assert_string_equal(call.error, "mamba has implicit maps at layers 4, 8, not 1");
    assert_int_equal(p->heat_nth, 1);

    /* back to the text, a new text, F3: the map of the new text, not the old one */
    p->view = TUI_VIEW_TEXT;
    set_text(a, "Y vio Dios que la luz era buena.");
    pump_until(a, p, is_idle);
    p->view = TUI_VIEW_HEATMAP;
    tui_request_probe(a, p);
    pump_until(a, p, has_probe);
    assert_map_of_shown(a, p, 0);

    /* back to the text, another search (F4), F3: the map of the new search's output */
    p->view = TUI_VIEW_TEXT;
    p->beam = 3;
    tui_translate(a, p);
    pump_until(a, p, is_idle);
    p->view = TUI_VIEW_HEATMAP;
    tui_request_probe(a, p);
    pump_until(a, p, has_probe);
    assert_map_of_shown(a, p, 0);

    /* `e` writes what the screen shows, named as the screen names it: layers from 1, the
     * axes by what they are, a size that fits the map */
    p->heat_kind = MT_PROBE_IMPLICIT_ATTN;
    p->heat_nth = 0;
    char cwd[512], out[96];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(out, sizeof out, "%s/export", dir);
    assert_int_equal(mkdir(out, 0755), 0);
    assert_int_equal(chdir(out), 0);
    tui_heat_export(a, p);
    assert_non_null(strstr(a->notice, "heatmap-mamba-implicit-attention-L1-seg1.svg"));
    size_t len;
    const char *base = "heatmap-mamba-implicit-attention-L1-seg1";
    char path[96];
    snprintf(path, sizeof path, "%s.csv", base);
    char *csv = test_read_file(path, &len);
    assert_non_null(csv);
    assert_memory_equal(csv, "source | translation,", 21);
    free(csv);
    snprintf(path, sizeof path, "%s.png", base);
    unsigned char *png = (unsigned char *)test_read_file(path, &len);
    assert_non_null(png);
    int n = p->probe->rec.n_tokens;
    unsigned w = (unsigned)png[16] << 24 | png[17] << 16 | png[18] << 8 | png[19];
    unsigned h = (unsigned)png[20] << 24 | png[21] << 16 | png[22] << 8 | png[23];
    /* cells shrink as the map grows: the whole stays about a slide's size */
    assert_true(n > 50);
    assert_true(h <= 1400 && w <= 1600);
    free(png);
    assert_int_equal(chdir(cwd), 0);

    /* the text edited and not sent yet: the map is no longer current */
    tui_editor_set_text(&a->ed, "Y dijo Dios: Sea la luz.");
    assert_false(tui_heat_current(a, p));
    tui_app_free(a);
}

static int has_attr(const tui_pane *p) { return (p->attr && !p->attr_pending) || p->attr_error; }

/* The attribution map: asked for as the other maps (the pane's request and segment), computed
 * on the pane's worker; m steps the method, c contrasts with the cursor column's token of the
 * translation; rows are the pane's translation, columns the source then the translation. */
static void test_attribution_map(void **state)
{
    (void)state;
    tui_app *a = app_new();
    assert_int_equal(tui_pane_add(a, bundle, NULL, 0), 0);
    tui_pane *p = a->panes[0];
    pump_until(a, p, is_loaded);
    set_text(a, "En el principio creó Dios los cielos y la tierra.");
    pump_until(a, p, is_idle);

    /* every model has it, after the probes' kinds (F6 reaches it) */
    assert_int_equal(tui_heat_next_kind(NULL, -1), TUI_HEAT_ATTRIBUTION);
    assert_int_equal(tui_key_action('m', TUI_IN_HEATMAP), TUI_ACT_HEAT_METHOD);
    assert_int_equal(tui_key_action('c', TUI_IN_HEATMAP), TUI_ACT_HEAT_CONTRAST);
    assert_int_equal(tui_key_action('m', TUI_IN_PANE), TUI_ACT_NONE);

    ui_call call = {.op = UI_HEATMAP,
                    .pane = 0,
                    .kind = TUI_HEAT_ATTRIBUTION,
                    .layer = -1,
                    .head = -1,
                    .scale = -1,
                    .method = MT_ATTR_SALIENCY};
    ui_execute(a, &call);
    assert_string_equal(call.error, "");
    assert_int_equal(p->heat_kind, TUI_HEAT_ATTRIBUTION);
    assert_null(p->attr);
    assert_true(p->attr_pending);
    pump_until(a, p, has_attr);
    assert_null(p->attr_error);
    assert_true(tui_heat_current(a, p));
    const mt_probe_map *m;
    float *v = tui_heat_pane_slice(p, &m);
    assert_non_null(v);
    const mt_attribution *at = &p->attr_raw->attr;
    assert_int_equal(at->method, MT_ATTR_SALIENCY);
    /* rows: the pane's translation, then </s>; columns: `source <sep>`, then the translation */
    char hyp[512], src[512], shown[512];
    pieces_text(hyp, sizeof hyp, p->attr->labels, 0, m->rows - 1);
    snprintf(shown, sizeof shown, "%s", p->hyps[0]);
    for (size_t k = strlen(shown); k > 0 && shown[k - 1] == ' '; k--) shown[k - 1] = '\0';
    assert_string_equal(hyp, shown);
    int split = tui_heat_pane_split(p, MT_PROBE_AXIS_SOURCE);
    assert_int_equal(split, at->n_src);
    assert_string_equal(p->attr->src_labels[split - 1], "<sep>");
    pieces_text(src, sizeof src, p->attr->src_labels, 0, split - 1);
    assert_string_equal(src, a->sent.texts[0]);
    assert_string_equal(tui_heat_pane_axis_title(p, MT_PROBE_AXIS_SOURCE), "source | translation");
    /* a translation column after the token its row is predicted from is masked, as the
     * causal maps' triangle (decoder-only: row i sees the translation's first i - 1 tokens) */
    assert_false(tui_heat_pane_masked(p, m, 0, split - 1));
    assert_true(tui_heat_pane_masked(p, m, 0, split));
    assert_false(tui_heat_pane_masked(p, m, 1, split));
    assert_true(tui_heat_pane_masked(p, m, 1, split + 1));
    assert_false(tui_heat_pane_masked(p, m, m->rows - 1, m->cols - 1));
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++)
            if (tui_heat_pane_masked(p, m, r, c))
                assert_true(at->values[(size_t)r * m->cols + c] == 0);
    /* cells are |a|; the readout reads the signed value */
    for (int i = 0; i < m->rows * m->cols; i++) assert_true(v[i] == fabsf(at->values[i]));
    assert_true(tui_heat_pane_value(p, m, v, 1, 0) == at->values[at->cols]);
    char title[256];
    tui_heat_title(title, sizeof title, p, m, "·", 0);
    assert_string_equal(title, "attribution · saliency · seg 1");
    free(v);

    /* m: the next method; the map says it is recomputed until it comes */
    tui_focus(a, 0);
    p->view = TUI_VIEW_HEATMAP;
    tui_handle_key(a, 'm', 1);
    assert_int_equal(p->attr_method, MT_ATTR_INPUT_X_GRADIENT);
    assert_false(tui_heat_current(a, p));
    pump_until(a, p, has_attr);
    assert_true(tui_heat_current(a, p));
    assert_int_equal(p->attr_raw->attr.method, MT_ATTR_INPUT_X_GRADIENT);

    /* c on a source column: refused, said; on a translation column: that token's contrast,
     * whose own row attributes log p(t) - log p(t) = 0 */
    p->sel_col = 0;
    tui_handle_key(a, 'c', 1);
    assert_string_equal(p->attr_contrast, "");
    assert_non_null(strstr(a->notice, "contrast is a token of the translation"));
    p->sel_col = split + 1; /* the translation's second token */
    char piece[64];
    snprintf(piece, sizeof piece, "%s", p->attr_raw->col_labels[split + 1]);
    char bare[64];
    tui_heat_axis_label(bare, sizeof bare, p->attr, MT_PROBE_AXIS_SOURCE, split + 1);
    tui_handle_key(a, 'c', 1);
    assert_string_equal(p->attr_contrast, piece);
    assert_false(tui_heat_current(a, p));
    pump_until(a, p, has_attr);
    assert_null(p->attr_error);
    assert_true(tui_heat_current(a, p));
    assert_string_equal(p->attr_raw->contrast, piece);
    v = tui_heat_pane_slice(p, &m);
    assert_non_null(v);
    tui_heat_title(title, sizeof title, p, m, "·", 0);
    char want[128];
    snprintf(want, sizeof want, "attribution · input x gradient · vs '%s' · seg 1", bare);
    assert_string_equal(title, want);
    for (int c = 0; c < m->cols; c++) assert_true(v[(size_t)1 * m->cols + c] == 0);
    free(v);
    /* c again on the same token: no contrast */
    tui_handle_key(a, 'c', 1);
    assert_string_equal(p->attr_contrast, "");

    /* a new text: the old attribution is never shown for it */
    pump_until(a, p, has_attr);
    set_text(a, "Y dijo Dios: Sea la luz.");
    assert_false(tui_heat_current(a, p));
    pump_until(a, p, is_idle);
    pump_until(a, p, has_attr);
    assert_true(tui_heat_current(a, p));
    pieces_text(src, sizeof src, p->attr->src_labels, 0,
                tui_heat_pane_split(p, MT_PROBE_AXIS_SOURCE) - 1);
    assert_string_equal(src, "Y dijo Dios: Sea la luz.");
    tui_app_free(a);
}

/* A byte-level BPE checkpoint (tests/fixtures/neox_hf/st, GPT-NeoX's tokenizer.json): the map's
 * axis shows what its tokens stand for ("her", "íos", "é"), not GPT-2's byte-to-character pieces
 * ("Ġher", "ÃŃos", "Ã©"), a word's leading space left out as sentencepiece's mark is. */
static void test_byte_level_labels(void **state)
{
    (void)state;
    tui_app *a = app_new();
    assert_int_equal(tui_pane_add(a, "tests/fixtures/neox_hf/st", NULL, 0), 0);
    tui_pane *p = a->panes[0];
    pump_until(a, p, is_loaded);
    set_text(a, "Amados hermanos míos, no erréis.");
    pump_until(a, p, is_idle);
    p->view = TUI_VIEW_HEATMAP;
    p->heat_kind = MT_PROBE_SELF_ATTN;
    tui_request_probe(a, p);
    pump_until(a, p, has_probe);
    assert_non_null(p->probe);
    const tui_probe *pr = tui_heat_pane_probe(p);
    int n = pr->rec.n_prompt;
    char label[64], joined[512] = "";
    for (int i = 0; i < n - 1; i++) {
        tui_heat_axis_label(label, sizeof label, pr, MT_PROBE_AXIS_TARGET, i);
        strncat(joined, label, sizeof joined - strlen(joined) - 1);
    }
    /* the prompt's labels spell the text without its spaces (the pieces: "AmadosĠhermanos") */
    assert_string_equal(joined, "Amadoshermanosm\u00edos,noerr\u00e9is.");
    tui_heat_axis_label(label, sizeof label, pr, MT_PROBE_AXIS_TARGET, 4);
    assert_string_equal(label, "her");
    tui_heat_axis_label(label, sizeof label, pr, MT_PROBE_AXIS_TARGET, n - 1);
    assert_string_equal(label, "<sep>");
    /* the pieces stay what they are (a contrast is chosen by its piece) */
    assert_string_equal(pr->labels[4], "\u0120her");

    /* the attribution map's columns and its contrast's title alike: the translation "All of"
     * is A, ll, Ġof */
    ui_call call = {.op = UI_HEATMAP,
                    .pane = 0,
                    .kind = TUI_HEAT_ATTRIBUTION,
                    .layer = -1,
                    .head = -1,
                    .scale = -1,
                    .method = MT_ATTR_SALIENCY};
    ui_execute(a, &call);
    assert_string_equal(call.error, "");
    pump_until(a, p, has_attr);
    assert_null(p->attr_error);
    int split = tui_heat_pane_split(p, MT_PROBE_AXIS_SOURCE);
    tui_heat_axis_label(label, sizeof label, p->attr, MT_PROBE_AXIS_SOURCE, 4);
    assert_string_equal(label, "her");
    tui_focus(a, 0);
    p->view = TUI_VIEW_HEATMAP;
    p->sel_col = split + 2;
    tui_handle_key(a, 'c', 1);
    assert_string_equal(p->attr_contrast, "\u0120of");
    pump_until(a, p, has_attr);
    assert_null(p->attr_error);
    const mt_probe_map *m;
    float *v = tui_heat_pane_slice(p, &m);
    assert_non_null(v);
    free(v);
    char title[256];
    tui_heat_title(title, sizeof title, p, m, "\u00b7", 0);
    assert_string_equal(title, "attribution \u00b7 saliency \u00b7 vs 'of' \u00b7 seg 1");

    /* a contrast typed as a reader reads it (ui.heatmap's contrast=): "of" is the word's token
     * "Ġof", its title the token's label; a text of several tokens: said, naming them */
    static const char *const typed[] = {"of", "\u0120of", "<0xC3>"};
    static const char *const titled[] = {"of", "of", "<0xC3>"};
    for (int t = 0; t < 3; t++) {
        call.text = (char *)typed[t];
        ui_execute(a, &call);
        assert_string_equal(call.error, "");
        pump_until(a, p, has_attr);
        if (p->attr_error) fail_msg("contrast '%s': %s", typed[t], p->attr_error);
        assert_true(tui_heat_current(a, p));
        v = tui_heat_pane_slice(p, &m);
        assert_non_null(v);
        free(v);
        tui_heat_title(title, sizeof title, p, m, "\u00b7", 0);
        char want[128];
        snprintf(want, sizeof want, "attribution \u00b7 saliency \u00b7 vs '%s' \u00b7 seg 1",
                 titled[t]);
        assert_string_equal(title, want);
    }
    call.text = "Zorvald";
    ui_execute(a, &call);
    pump_until(a, p, has_attr);
    assert_non_null(p->attr_error);
    assert_string_equal(p->attr_error, "contrast 'Zorvald' is 5 tokens (Z or v al d), not one "
                                       "token of this vocabulary");
    tui_app_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_follows_text_and_search),
        cmocka_unit_test(test_attribution_map),
        cmocka_unit_test(test_byte_level_labels),
    };
    return cmocka_run_group_tests(tests, make_bundle, remove_bundle);
}
