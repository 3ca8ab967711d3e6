/* The editor's language and the panes it feeds: each pane knows its bundle's direction (when
 * config.json records it); the editor's text goes only to the panes that translate from the
 * language it is written in, so an en -> es pane is never fed Spanish. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tui/app.h"
#include "tui/format.h"
#include "tui/glyphs.h"

int tui_source_languages(const tui_app *a, const char **langs)
{
    int n = 0;
    for (int i = 0; i < a->n_panes; i++) {
        const tui_pane *p = a->panes[i];
        if (!p->loaded || !p->src_lang[0]) continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++) seen = !strcasecmp(langs[k], p->src_lang);
        if (!seen) langs[n++] = p->src_lang;
    }
    return n;
}

const char *tui_editor_language(const tui_app *a)
{
    const char *langs[TUI_MAX_PANES];
    int n = tui_source_languages(a, langs);
    for (int k = 0; k < n; k++)
        if (!strcasecmp(langs[k], a->ed_lang)) return langs[k];
    return n > 0 ? langs[0] : "";
}

int tui_pane_feeds(const tui_app *a, const tui_pane *p)
{
    const char *lang = tui_editor_language(a);
    return !p->src_lang[0] || !lang[0] || !strcasecmp(p->src_lang, lang);
}

void tui_other_language_message(const tui_app *a, const tui_pane *p, char *out, size_t len)
{
    char dir[96], key[32];
    tui_format_direction(dir, sizeof dir, p->src_lang, p->tgt_lang,
                         tui_glyphs_for(a->utf8 && !a->ascii)->arrow);
    tui_action_key(TUI_ACT_LANGUAGE, key, sizeof key);
    /* how many presses of the key bring the editor to the pane's language */
    const char *langs[TUI_MAX_PANES], *now = tui_editor_language(a);
    int n = tui_source_languages(a, langs), at = 0, want = 0;
    for (int k = 0; k < n; k++) {
        if (!strcasecmp(langs[k], now)) at = k;
        if (!strcasecmp(langs[k], p->src_lang)) want = k;
    }
    int presses = n > 0 ? (want - at + n) % n : 0;
    char times[32] = "";
    if (presses > 1) snprintf(times, sizeof times, " %d times", presses);
    snprintf(out, len, "this model translates %s; the editor is writing %s (%s%s: write %s)", dir,
             now, key, times, p->src_lang);
}
