/* GNU readline as the console's line editor, through its callback interface and kept away from
 * the terminal (curses owns it): keys come from the TUI as bytes through rl_getc_function, the
 * line is drawn by the console pane from rl_line_buffer and rl_point (rl_redisplay_function
 * only asks for a frame), terminal preparation and signal handling are off, and anything
 * readline would print goes to /dev/null. Emacs keys, Ctrl-R search and the history
 * ($XDG_STATE_HOME/mtlab/history) are readline's own; macros replay through the console's input
 * (own_macros); Tab completes Lua names (console_complete) against the console's state when the
 * Lua thread is idle. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "tui/console/console_internal.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"

#define HISTORY_KEEP 1000
/* readline's own default, set so that a user's inputrc cannot take C-J away (end_search) */
#define ISEARCH_TERMINATORS "\033\n"

static tui_console *rl_console;
static unsigned char input[1024];
static size_t input_head, input_len;
/* The keyboard macro (Ctrl-X ( ... Ctrl-X ), Ctrl-X e): the keys as the TUI gave them, kept
 * across consoles as readline keeps its own */
static unsigned char macro[256];
static size_t macro_len;
static int macro_recording;
static FILE *rl_null_in, *rl_null_out;
static char history_path[PATH_MAX];
static const char *prompt_now = "> ";

static int next_byte(FILE *f)
{
    (void)f;
    if (input_head == input_len) return EOF;
    return input[input_head++];
}

static int input_available(void) { return input_head < input_len; }

static void redisplay(void)
{
    if (rl_console) rl_console->app->dirty = 1;
}

static void prep_terminal_none(int meta) { (void)meta; }
static void deprep_terminal_none(void) {}

static void on_line(char *line)
{
    if (!line) {
        /* Ctrl-D on an empty line: readline's EOF; the console stays open */
        rl_callback_handler_install(prompt_now, on_line);
        return;
    }
    if (line[0]) {
        add_history(line);
        if (history_path[0]) append_history(1, history_path);
    }
    console_accept_line(rl_console, line);
    free(line);
    prompt_now = rl_console->pending ? ">> " : "> ";
    rl_set_prompt(prompt_now);
}

/* Several candidates: list them in the scrollback, as readline would below the prompt. */
static void show_matches(char **matches, int n, int longest)
{
    (void)longest;
    size_t len = 2;
    for (int i = 1; i <= n; i++) len += strlen(matches[i]) + 2;
    char *s = mt_xmalloc(len + 1);
    s[0] = '\0';
    for (int i = 1; i <= n; i++) {
        strcat(s, matches[i]);
        strcat(s, i < n ? "  " : "\n");
    }
    console_write(rl_console, CONSOLE_OUT, s, strlen(s));
    free(s);
}

static char **complete(const char *text, int start, int end)
{
    (void)start;
    (void)end;
    rl_attempted_completion_over = 1;
    rl_completion_append_character = '\0';
    rl_completion_suppress_append = 1;
    tui_console *c = rl_console;
    /* only while the Lua thread is idle: the state is its own while it runs */
    if (pthread_mutex_trylock(&c->state_lock) != 0) return NULL;
    if (!c->L) { /* no Lua state (it did not start, or has been closed): nothing to complete */
        pthread_mutex_unlock(&c->state_lock);
        return NULL;
    }
    char **cand;
    int n = console_complete(c->L, text, &cand);
    pthread_mutex_unlock(&c->state_lock);
    if (n == 0) {
        free(cand);
        return NULL;
    }
    /* readline's form: [0] the common prefix, then the candidates, NULL-terminated */
    char **out = mt_xmalloc((size_t)(n + 2) * sizeof *out);
    size_t common = strlen(cand[0]);
    for (int i = 1; i < n; i++) {
        size_t k = 0;
        while (k < common && cand[i][k] == cand[0][k]) k++;
        common = k;
    }
    out[0] = mt_xmalloc(common + 1);
    memcpy(out[0], cand[0], common);
    out[0][common] = '\0';
    if (n == 1) {
        free(out[0]);
        out[0] = cand[0];
        out[1] = NULL;
    } else {
        for (int i = 0; i < n; i++) out[i + 1] = cand[i];
        out[n + 1] = NULL;
    }
    free(cand);
    return out;
}

/* $XDG_STATE_HOME/mtlab/history (~/.local/state/mtlab/history), its directory made. */
static void find_history(void)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char dir[PATH_MAX];
    history_path[0] = '\0';
    if (state && state[0] == '/') snprintf(dir, sizeof dir, "%s/mtlab", state);
    else if (home && home[0]) snprintf(dir, sizeof dir, "%s/.local/state/mtlab", home);
    else return;
    /* make each missing level, as mkdir -p does */
    for (char *p = dir + 1;; p++) {
        if (*p == '/' || !*p) {
            char saved = *p;
            *p = '\0';
            if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
                console_write(rl_console, CONSOLE_ERROR, "console: no history: cannot make ", 33);
                console_write(rl_console, CONSOLE_ERROR, dir, strlen(dir));
                console_write(rl_console, CONSOLE_ERROR, "\n", 1);
                return;
            }
            *p = saved;
            if (!saved) break;
        }
    }
    snprintf(history_path, sizeof history_path, "%s/history", dir);
}

static void push(const char *bytes, size_t n)
{
    if (input_head == input_len) input_head = input_len = 0;
    if (input_len + n > sizeof input) return;
    memcpy(input + input_len, bytes, n);
    input_len += n;
    if (macro_recording) {
        if (macro_len + n > sizeof macro) { /* too long to replay: no macro, as after Ctrl-G */
            macro_recording = 0;
            macro_len = 0;
            rl_ding();
            return;
        }
        memcpy(macro + macro_len, bytes, n);
        macro_len += n;
    }
}

/* Macros are the console's, not readline's: readline replays a macro's keys from inside
 * rl_callback_read_char, where console_rl_key never sees them, so a macro holding a search and
 * a key sequence (Ctrl-X ( Ctrl-R Ctrl-X Ctrl-X [ Ctrl-X ), then Ctrl-X e: fuzz_console; or an
 * inputrc's "\C-t": "\C-r\C-x\C-x[") reached the search crash that end_search keeps typed keys
 * from. Here a keyboard macro is the keys the TUI gave while it was recorded, a string macro its
 * text, and running either puts the keys in front of the input, to be read as typed keys. */
static void replay(const unsigned char *keys, size_t n, int count)
{
    if (count < 1) count = 1;
    if (input_head == input_len) input_head = input_len = 0;
    size_t left = input_len - input_head;
    if (n == 0 || (size_t)count > sizeof input / n || left + (size_t)count * n > sizeof input) {
        rl_ding();
        return;
    }
    memmove(input + (size_t)count * n, input + input_head, left);
    for (int i = 0; i < count; i++) memcpy(input + (size_t)i * n, keys, n);
    input_head = 0;
    input_len = left + (size_t)count * n;
}

/* The keys that ran the command now running, which a recording has taken in too. */
static void unrecord_command_keys(void)
{
    size_t n = (size_t)(rl_key_sequence_length > 0 ? rl_key_sequence_length : 0);
    macro_len = n < macro_len ? macro_len - n : 0;
}

static int macro_start(int count, int key)
{
    (void)count;
    (void)key;
    macro_len = 0;
    if (macro_recording) { /* readline's answer to a second Ctrl-X ( */
        macro_recording = 0;
        rl_ding();
        return 1;
    }
    macro_recording = 1;
    return 0;
}

static int macro_end(int count, int key)
{
    (void)key;
    if (!macro_recording) {
        rl_ding();
        return 1;
    }
    unrecord_command_keys();
    macro_recording = 0;
    /* readline's: with an argument n, the macro then runs n - 1 times */
    if (count > 1) replay(macro, macro_len, count - 1);
    return 0;
}

static int macro_call(int count, int key)
{
    (void)key;
    if (macro_recording) { /* a macro calling itself: readline ignores the call, so do we */
        unrecord_command_keys();
        rl_ding();
        return 1;
    }
    replay(macro, macro_len, count);
    return 0;
}

/* The string macros taken over from readline's keymaps: the keys bound and the text. */
typedef struct {
    unsigned char keys[16];
    size_t n_keys;
    char *text;
} string_macro;
static string_macro *string_macros;
static size_t n_string_macros;

static int string_macro_run(int count, int key)
{
    (void)key;
    size_t n = (size_t)(rl_key_sequence_length > 0 ? rl_key_sequence_length : 0);
    for (size_t i = 0; i < n_string_macros; i++) {
        const string_macro *m = &string_macros[i];
        if (m->n_keys == n && memcmp(m->keys, rl_executing_keyseq, n) == 0) {
            replay((const unsigned char *)m->text, strlen(m->text), count);
            return 0;
        }
    }
    rl_ding();
    return 1;
}

/* Each string macro in MAP and the keymaps under it (keys: the sequence that leads to MAP)
 * becomes string_macro_run, its text kept in string_macros. */
static void own_string_macros(Keymap map, unsigned char *keys, size_t depth)
{
    for (int k = 0; k < KEYMAP_SIZE - 1; k++) {
        keys[depth] = (unsigned char)k;
        if (map[k].type == ISKMAP && map[k].function && depth + 1 < sizeof string_macros->keys) {
            own_string_macros((Keymap)map[k].function, keys, depth + 1);
        } else if (map[k].type == ISMACR && map[k].function) {
            string_macros =
                mt_xrealloc(string_macros, (n_string_macros + 1) * sizeof *string_macros);
            string_macro *m = &string_macros[n_string_macros++];
            memcpy(m->keys, keys, depth + 1);
            m->n_keys = depth + 1;
            m->text = (char *)map[k].function; /* readline's copy, the console's from now on */
            map[k].type = ISFUNC;
            map[k].function = string_macro_run;
        }
    }
}

/* Readline's non-incremental search (Meta-p, Meta-n) keeps the line it replaces in a saved
 * entry, which a search that finds a line frees without the line's undo records (search.c,
 * make_history_line_current), and one begun on an edited history line drops that line's
 * records: both leaked (fuzz_console, LeakSanitizer). So a search starts from the end of the
 * history, as Meta-> goes there (a history line's edits kept in its entry, the line saved on
 * entering the history back), and the line's undo records are freed first: the search saves a
 * line without any, and the line it was begun from can no longer be undone. */
static void give_up_undo_before_search(void)
{
    if (current_history()) rl_end_of_history(1, 0);
    rl_free_undo_list();
}

static int noninc_reverse_search(int count, int key)
{
    give_up_undo_before_search();
    return rl_noninc_reverse_search(count, key);
}

static int noninc_forward_search(int count, int key)
{
    give_up_undo_before_search();
    return rl_noninc_forward_search(count, key);
}

static int noninc_reverse_search_again(int count, int key)
{
    give_up_undo_before_search();
    return rl_noninc_reverse_search_again(count, key);
}

static int noninc_forward_search_again(int count, int key)
{
    give_up_undo_before_search();
    return rl_noninc_forward_search_again(count, key);
}

static void own_macros(void);

/* Ctrl-X Ctrl-R: an inputrc read again may bind macros and the search terminators anew. */
static int reread_init_file(int count, int key)
{
    int r = rl_re_read_init_file(count, key);
    own_macros();
    return r;
}

/* Readline's keyboard macro commands (Ctrl-X (, Ctrl-X ), Ctrl-X e unless an inputrc moved them),
 * its string macros in every keymap and its non-incremental searches become the console's, and
 * the incremental search ends on C-J. */
static void own_macros(void)
{
    static const struct {
        rl_command_func_t *readline_fn, *console_fn;
    } commands[] = {
        {rl_start_kbd_macro, macro_start},
        {rl_end_kbd_macro, macro_end},
        {rl_call_last_kbd_macro, macro_call},
        {rl_re_read_init_file, reread_init_file},
        {rl_noninc_reverse_search, noninc_reverse_search},
        {rl_noninc_forward_search, noninc_forward_search},
        {rl_noninc_reverse_search_again, noninc_reverse_search_again},
        {rl_noninc_forward_search_again, noninc_forward_search_again},
    };
    static const char *const keymaps[] = {"emacs", "vi-insert", "vi-command"};
    rl_variable_bind("isearch-terminators", "\\e\\C-J");
    for (size_t i = 0; i < sizeof keymaps / sizeof keymaps[0]; i++) {
        Keymap map = rl_get_keymap_by_name(keymaps[i]);
        if (!map) continue;
        for (size_t j = 0; j < sizeof commands / sizeof commands[0]; j++) {
            char **seqs = rl_invoking_keyseqs_in_map(commands[j].readline_fn, map);
            for (char **seq = seqs; seq && *seq; seq++) {
                rl_bind_keyseq_in_map(*seq, commands[j].console_fn, map);
                free(*seq);
            }
            free(seqs);
        }
        unsigned char keys[sizeof string_macros->keys];
        own_string_macros(map, keys, 0);
    }
}

int console_rl_start(tui_console *c)
{
    rl_console = c;
    input_head = input_len = 0;
    rl_null_in = fopen("/dev/null", "r");
    rl_null_out = fopen("/dev/null", "w");
    if (!rl_null_in || !rl_null_out) return mt_error("console: cannot open /dev/null");
    rl_instream = rl_null_in;
    rl_outstream = rl_null_out;
    rl_readline_name = "mtlab";
    rl_terminal_name = "dumb";
    rl_change_environment = 0; /* no LINES/COLUMNS for curses to trip over */
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_getc_function = next_byte;
    rl_input_available_hook = input_available;
    rl_redisplay_function = redisplay;
    rl_prep_term_function = prep_terminal_none;
    rl_deprep_term_function = deprep_terminal_none;
    rl_attempted_completion_function = complete;
    rl_completion_display_matches_hook = show_matches;
    rl_completer_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^~#[]";
    rl_editing_mode = 1; /* emacs */
    using_history();
    find_history();
    /* a first run makes the file, so that each line can be appended as it is entered */
    if (history_path[0] && read_history(history_path) == ENOENT) write_history(history_path);
    prompt_now = "> ";
    rl_callback_handler_install(prompt_now, on_line);
    rl_bind_keyseq("\\e[3~", rl_delete);
    rl_bind_keyseq("\\e[H", rl_beg_of_line);
    rl_bind_keyseq("\\e[F", rl_end_of_line);
    own_macros();
    macro_recording = 0;
    return 0;
}

static int pointer_order(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

/* The undo records of the line and of every history entry edited (clear_history leaves those),
 * each freed once, so that a closed console holds no memory of readline's: an edited history
 * line's records are also the line's, which rl_free_undo_list and rl_clear_history each freed
 * (fuzz_console: a double free after a history line was edited and a search aborted over it). */
static void free_undo_records(void)
{
    size_t n = 0, cap = 0;
    UNDO_LIST **all = NULL;
    HIST_ENTRY **h = history_list();
    for (int i = -1; i < history_length; i++) {
        UNDO_LIST *u = i < 0 ? rl_undo_list : (UNDO_LIST *)h[i]->data;
        for (; u; u = u->next) {
            if (n == cap) all = mt_xrealloc(all, (cap = cap ? 2 * cap : 64) * sizeof *all);
            all[n++] = u;
        }
        if (i >= 0) h[i]->data = NULL;
    }
    rl_undo_list = NULL;
    if (n) qsort(all, n, sizeof *all, pointer_order);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || all[i] != all[i - 1]) {
            free(all[i]->text);
            free(all[i]);
        }
    free(all);
}

void console_rl_stop(void)
{
    if (!rl_console) return;
    if (macro_recording) { /* a macro never ended is no macro, and Ctrl-G below is no key of it */
        macro_recording = 0;
        macro_len = 0;
    }
    /* a search, prefix or numeric argument left open would take the next console's keys, its
     * search terminators freed by that console's start: Ctrl-G ends each as a user would
     * (rl_callback_sigcleanup leaves the prompt a search saved) */
    for (int i = 0;
         i < 4 && RL_ISSTATE(RL_STATE_ISEARCH | RL_STATE_NSEARCH | RL_STATE_MULTIKEY |
                             RL_STATE_NUMERICARG | RL_STATE_CHARSEARCH | RL_STATE_VIMOTION);
         i++)
        console_rl_key('\a', 0);
    rl_callback_handler_remove();
    if (history_path[0]) {
        struct stat st;
        if (stat(history_path, &st) == 0) history_truncate_file(history_path, HISTORY_KEEP);
    }
    free_undo_records();
    rl_clear_history();
    /* rl_clear_history frees the entries but leaves them in the list, which history_list's
     * readers take as ending at a NULL: the next console's first search read the freed ones
     * (fuzz_console: a search in a console started after one that had history crashed) */
    HIST_ENTRY **left = history_list();
    if (left) left[0] = NULL;
    if (rl_null_in) fclose(rl_null_in);
    if (rl_null_out) fclose(rl_null_out);
    rl_instream = rl_outstream = rl_null_in = rl_null_out = NULL;
    rl_console = NULL;
}

/* A key that readline's incremental search would take as the start of a key sequence (Ctrl-X,
 * or Esc were it not a search terminator), or Ctrl-Space (NUL), which the search ends on and
 * hands back as the next key with rl_execute_next(0), where 0 means "none": the prompt the
 * search saved leaked (fuzz_console: Ctrl-S, Ctrl-Space). */
static int starts_key_sequence(unsigned char b)
{
    Keymap map = rl_get_keymap();
    return b == 0 || (map[b].type == ISKMAP && !strchr(ISEARCH_TERMINATORS, b));
}

/* Readline 8.2 ends a search that meets a key sequence (Ctrl-R, Ctrl-X, x) by pushing the
 * keys back and calling rl_callback_read_char within itself, which crashes in callback mode
 * (tests/unit/test_console_readline.c has the sequences). Ending the search first with C-J,
 * which keeps the line found and runs nothing, then giving it the sequence does the same
 * without that path. */
static void end_search(void)
{
    if (input_head == 0) {
        if (input_len == sizeof input) return;
        memmove(input + 1, input, input_len++);
        input_head = 1;
    }
    input[--input_head] = '\n';
    rl_callback_read_char();
}

/* A message (readline's "(arg: N) ") left shown when no numeric argument or search is under
 * way: Meta-- Meta-- ends the first argument on its Esc, and readline 8.2 runs the second '-'
 * as a key (an explicit argument came before it) then shows the argument anyway, saving the
 * prompt for a message nothing ends. The next save (a search, an argument) overwrote the saved
 * one, leaking the prompt (fuzz_console, LeakSanitizer: rl_expand_prompt's 8 and 3 bytes).
 * Ended after each key, as readline ends a message, the prompt restored. */
static void end_left_message(void)
{
    if (rl_display_prompt != rl_prompt &&
        !RL_ISSTATE(RL_STATE_ISEARCH | RL_STATE_NSEARCH | RL_STATE_NUMERICARG | RL_STATE_VIMOTION))
        rl_clear_message();
}

void console_rl_key(int key, int is_char)
{
    static const struct {
        int key;
        const char *seq;
    } keys[] = {
        {KEY_LEFT, "\033[D"}, {KEY_RIGHT, "\033[C"},   {KEY_UP, "\033[A"},
        {KEY_DOWN, "\033[B"}, {KEY_HOME, "\033[H"},    {KEY_END, "\033[F"},
        {KEY_DC, "\033[3~"},  {KEY_BACKSPACE, "\177"}, {KEY_ENTER, "\r"},
    };
    if (is_char) {
        char buf[4];
        push(buf, (size_t)mt_utf8_put((uint32_t)key, buf));
    } else if (TUI_IS_FKEY(key)) {
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (TUI_FKEY(keys[i].key) == key) push(keys[i].seq, strlen(keys[i].seq));
    } else if (key >= 0 && key < 128) {
        char b = (char)key;
        push(&b, 1);
    }
    while (input_available()) {
        if (RL_ISSTATE(RL_STATE_ISEARCH) && starts_key_sequence(input[input_head])) end_search();
        rl_callback_read_char();
        end_left_message();
    }
    /* readline's search can leave the point inside a character (a combining mark typed alone,
     * then a forward search: fuzz_console), where the next key would insert into its bytes:
     * back to the character's first byte */
    if (rl_line_buffer)
        while (rl_point > 0 && rl_point < rl_end &&
               ((unsigned char)rl_line_buffer[rl_point] & 0xC0) == 0x80)
            rl_point--;
}

const char *console_rl_prompt(void) { return rl_display_prompt ? rl_display_prompt : prompt_now; }

const char *console_rl_line(int *point)
{
    *point = rl_line_buffer ? rl_point : 0;
    return rl_line_buffer ? rl_line_buffer : "";
}

void console_rl_clear_line(void)
{
    rl_replace_line("", 0);
    rl_point = rl_end = 0;
    prompt_now = "> ";
    rl_set_prompt(prompt_now);
    rl_console->app->dirty = 1;
}
