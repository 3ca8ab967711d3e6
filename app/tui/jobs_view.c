/* The jobs view's keys: open and close it, move the highlight, launch a config (the picker of
 * scripts/train/ *.lua or a typed path), stop, resume, open a run's best bundle in a pane. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/paths.h"
#include "common/train_config.h"
#include "mtlab/error.h"
#include "tui/app.h"
#include "tui/jobs_view.h"

static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        char full[PATH_MAX];
        snprintf(full, sizeof full, "%.*s/%s", (int)n, p, prog);
        if (n > 0 && access(full, X_OK) == 0) return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The training configs under scripts/train/ (of the current directory, else the installed
 * ones): the scripts that load as one (a table of settings), not the drivers and helpers
 * beside them (average.lua, a budget returning a function). */
static void find_configs(tui_jobs *v)
{
    char root[PATH_MAX];
    if (cli_find_resource("scripts/train", root, sizeof root) != 0) return;
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".lua")) continue;
        if (v->n_configs == cap) {
            cap = cap ? 2 * cap : 16;
            v->configs = mt_xrealloc(v->configs, (size_t)cap * sizeof *v->configs);
        }
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        mt_train_config cfg;
        if (train_config_load(&cfg, path) != 0) continue;
        v->configs[v->n_configs++] = mt_xstrdup(path);
    }
    closedir(d);
    if (v->n_configs) qsort(v->configs, (size_t)v->n_configs, sizeof *v->configs, cmp_str);
}

static void say(tui_app *a, int is_error, const char *msg)
{
    tui_jobs *v = a->jobs;
    snprintf(v->message, sizeof v->message, "%s", msg);
    v->message_is_error = is_error;
    tui_log_add(&a->log, is_error ? TUI_LOG_ERROR : TUI_LOG_INFO, "jobs: %s", msg);
}

void tui_jobs_close(tui_app *a)
{
    if (!a->jobs) return;
    tui_jobs_free(a->jobs);
    a->jobs = NULL;
    if (a->w_jobs) delwin(a->w_jobs);
    a->w_jobs = NULL;
    a->dirty = 1;
}

void tui_jobs_toggle(tui_app *a)
{
    if (a->jobs) {
        tui_jobs_close(a);
        return;
    }
    tui_jobs *v = mt_xcalloc(1, sizeof *v);
    v->have_sbatch = on_path("sbatch");
    if (tui_jobs_start(v) != 0) {
        free(v);
        tui_notice(a, "%s", mt_last_error());
        return;
    }
    a->jobs = v;
    a->dirty = 1;
}

/* The highlighted run, NULL when there is none. */
static tui_job_run *selected(tui_app *a)
{
    tui_jobs *v = a->jobs;
    return v->sel >= 0 && (size_t)v->sel < v->n_runs ? &v->runs[v->sel] : NULL;
}

int tui_jobs_tick(tui_app *a)
{
    if (!a->jobs) return 0;
    tui_jobs *v = a->jobs;
    /* the highlight stays on its run when runs come and go around it */
    char name[128] = "";
    if (selected(a)) snprintf(name, sizeof name, "%s", selected(a)->info.name);
    if (!tui_jobs_take(v)) return 0;
    for (size_t i = 0; name[0] && i < v->n_runs; i++)
        if (!strcmp(v->runs[i].info.name, name)) v->sel = (int)i;
    if (v->sel >= (int)v->n_runs) v->sel = (int)v->n_runs - 1;
    if (v->sel < 0) v->sel = 0;
    a->dirty = 1;
    return 1;
}

static void launch(tui_app *a)
{
    tui_jobs *v = a->jobs;
    const char *config = v->config_sel > 0 ? v->configs[v->config_sel - 1] : v->path;
    if (!config[0]) {
        say(a, 1, "type the path of a config (.lua) first");
        return;
    }
    job_start_opts o = {.launcher = v->launcher};
    job_info j;
    char msg[700];
    if (job_start(&j, config, &o) != 0) {
        snprintf(msg, sizeof msg, "%s (nothing launched)", mt_last_error());
        say(a, 1, msg);
        /* back on the path line, the config's path there to edit: what is typed next goes
         * into it, not to the keys of a listed config */
        if (v->config_sel > 0) snprintf(v->path, sizeof v->path, "%s", config);
        v->config_sel = 0;
        return;
    }
    snprintf(msg, sizeof msg, "launched %s (%s) from %s", j.name, job_launcher_name(j.launcher),
             config);
    say(a, 0, msg);
    v->picking = 0;
    v->path[0] = '\0';
    tui_jobs_poke(v);
}

static void stop_or_resume(tui_app *a, int stop)
{
    tui_job_run *r = selected(a);
    if (!r) return;
    job_info j = r->info;
    char msg[700];
    if ((stop ? job_stop(&j) : job_resume(&j)) != 0) {
        say(a, 1, mt_last_error());
        return;
    }
    snprintf(msg, sizeof msg,
             stop ? "asked %s to stop (it saves a checkpoint first)" : "resumed %s", j.name);
    say(a, 0, msg);
    tui_jobs_poke(a->jobs);
}

static void open_best(tui_app *a)
{
    tui_job_run *r = selected(a);
    if (!r) return;
    char dir[800], msg[900];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/best", r->info.dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(msg, sizeof msg, "%s has no best bundle yet (%s)", r->info.name, dir);
        say(a, 1, msg);
        return;
    }
    if (tui_pane_add(a, dir, a->default_device, a->default_precision) != 0) {
        say(a, 1, mt_last_error());
        return;
    }
    tui_jobs_close(a);
}

static void highlight(tui_app *a, int delta)
{
    tui_jobs *v = a->jobs;
    int n = v->picking ? v->n_configs + 1 : (int)v->n_runs;
    int *sel = v->picking ? &v->config_sel : &v->sel;
    if (n == 0) return;
    if (v->picking && (delta == 1 || delta == -1)) *sel = (*sel + delta + n) % n; /* round */
    else *sel += delta;
    if (*sel >= n) *sel = n - 1;
    if (*sel < 0) *sel = 0;
}

/* On the picker's path line (its first), printable keys are typed into the path. */
static int typing(const tui_jobs *v) { return v->picking && v->config_sel == 0; }

int tui_jobs_action(tui_app *a, tui_action act)
{
    tui_jobs *v = a->jobs;
    switch (act) {
    case TUI_ACT_JOBS: tui_jobs_close(a); break;
    case TUI_ACT_CLOSE:
        if (v->picking) v->picking = 0, v->path[0] = '\0';
        else tui_jobs_close(a);
        break;
    case TUI_ACT_SCROLL_UP: highlight(a, -1); break;
    case TUI_ACT_SCROLL_DOWN: highlight(a, 1); break;
    case TUI_ACT_PAGE_UP: highlight(a, -10); break;
    case TUI_ACT_PAGE_DOWN: highlight(a, 10); break;
    case TUI_ACT_CHOOSE:
        if (v->picking) launch(a);
        break;
    case TUI_ACT_BACKSPACE:
        if (typing(v) && v->path[0]) v->path[strlen(v->path) - 1] = '\0';
        break;
    case TUI_ACT_JOB_NEW:
        if (!v->picking) {
            v->picking = 1;
            if (!v->configs) find_configs(v);
            v->config_sel = 0;
            v->path[0] = '\0'; /* a fresh line: no path left from before */
            v->message[0] = '\0';
        }
        break;
    case TUI_ACT_JOB_STOP:
        if (!v->picking) stop_or_resume(a, 1);
        break;
    case TUI_ACT_JOB_RESUME:
        if (!v->picking) stop_or_resume(a, 0);
        break;
    case TUI_ACT_JOB_OPEN:
        if (!v->picking) open_best(a);
        break;
    case TUI_ACT_JOB_PLOTS: v->plot_all = !v->plot_all; break;
    case TUI_ACT_JOB_LAUNCHER:
        if (v->have_sbatch) v->launcher = v->launcher == JOB_LOCAL ? JOB_SLURM : JOB_LOCAL;
        else say(a, 1, "sbatch is not on PATH: jobs run locally");
        break;
    default: return 0;
    }
    a->dirty = 1;
    return 1;
}

void tui_jobs_char(tui_app *a, int ch)
{
    tui_jobs *v = a->jobs;
    if (typing(v)) {
        size_t n = strlen(v->path);
        if (ch >= 0x20 && ch < 0x7f && n + 1 < sizeof v->path)
            v->path[n] = (char)ch, v->path[n + 1] = '\0';
        a->dirty = 1;
        return;
    }
    tui_jobs_action(a, tui_key_action(ch, TUI_IN_JOBS));
}
