/* `mtlab train CONFIG.lua [--resume] [--max-steps N]`: a plain process that trains one model.
 * SIGINT/SIGTERM only set a flag; the trainer saves a checkpoint at the next step and exits. */
#include "cli/commands.h"
#include "lua/train_config.h"
#include "mtlab/error.h"
#include "mtlab/train.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct {
    int tty;          /* stderr is a terminal: redraw one progress line in place */
    int line_pending; /* a progress line without its newline is on screen */
} train_view;

static void format_eta(char *out, size_t n, double seconds)
{
    long s = seconds > 0 ? (long)(seconds + 0.5) : 0;
    if (s >= 3600) snprintf(out, n, "%ldh%02ldm", s / 3600, s / 60 % 60);
    else snprintf(out, n, "%ldm%02lds", s / 60, s % 60);
}

static void show_progress(void *ud, const mt_train_progress *p)
{
    train_view *v = ud;
    char eta[32];
    double per_step = p->step ? p->elapsed_s / (double)p->step : 0;
    format_eta(eta, sizeof eta, per_step * (double)(p->max_steps - p->step));
    if (p->is_validation) {
        if (v->line_pending) fputc('\n', stderr);
        fprintf(stderr, "  valid  step %ld  loss %.4f", p->step, p->valid_loss);
        if (p->valid_bleu >= 0) fprintf(stderr, "  BLEU %.2f", p->valid_bleu);
        fputc('\n', stderr);
        v->line_pending = 0;
        return;
    }
    const int width = 24;
    int filled = (int)((double)width * (double)p->step / (double)p->max_steps);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "%s[%s] step %ld/%ld  epoch %d  loss %.4f  lr %.2e  %.0f tok/s  ETA %s%s",
            v->tty ? "\r" : "", bar, p->step, p->max_steps, p->epoch, p->loss, p->lr, p->tokens_per_s, eta,
            v->tty ? "\033[K" : "\n");
    v->line_pending = v->tty;
    fflush(stderr);
}

static void show_message(void *ud, const char *text)
{
    train_view *v = ud;
    if (v->line_pending) fputc('\n', stderr);
    v->line_pending = 0;
    fprintf(stderr, "mtlab train: %s\n", text);
}

static int run_train(int argc, char **argv)
{
    const char *config = NULL;
    int resume = 0;
    long max_steps = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--resume")) resume = 1;
        else if (!strcmp(argv[i], "--max-steps") && i + 1 < argc) max_steps = atol(argv[++i]);
        else if (argv[i][0] == '-') return cli_usage(&cmd_train);
        else if (!config) config = argv[i];
        else return cli_usage(&cmd_train);
    }
    if (!config) return cli_usage(&cmd_train);

    mt_train_config cfg;
    if (train_config_load(&cfg, config) != 0) return cli_fail("%s", mt_last_error());
    if (max_steps > 0) cfg.max_steps = max_steps;

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    train_view view = {.tty = isatty(STDERR_FILENO)};
    mt_train_hooks hooks = {.progress = show_progress, .message = show_message, .ud = &view,
                            .stop = &stop_requested};
    int rc = mt_train_run(&cfg, resume, &hooks);
    if (view.line_pending) fputc('\n', stderr);
    if (rc != 0) return cli_fail("train %s: %s", cfg.name, mt_last_error());
    return 0;
}

const struct mt_command cmd_train = {
    "train", "CONFIG.lua [--resume] [--max-steps N]",
    "train a model from a Lua config; runs/NAME/ gets log.jsonl and checkpoints", run_train,
};
