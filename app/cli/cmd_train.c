/* `mtlab train CONFIG.lua [--resume] [--max-steps N] [--name N] [--job] [KEY=VALUE...]`: a plain
 * process that trains one model. SIGINT/SIGTERM (and SIGUSR1, which mpirun passes on to its
 * ranks) only set a flag; the trainer saves a checkpoint at the next step and exits. --job:
 * started by `mtlab jobs` (app/jobs/jobs.h), it records its start and end in
 * runs/NAME/job.json. Started by mpirun or srun as one of N ranks, it trains with the others
 * over MPI (docs/distributed.md); rank 0 alone writes the run's files and job.json, and a rank
 * that fails says its rank and host. */
#include "cli/commands.h"
#include "common/progress.h"
#include "jobs/jobs.h"
#include "common/train_config.h"
#include "mtlab/collective.h"
#include "mtlab/error.h"
#include "mtlab/train.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;
/* One of several ranks: SIGTERM comes from a launcher ending the job (srun or mpirun after a
 * rank died, a scancel): the others may never answer a collective again, so a graceful stop
 * would wait forever; the rank leaves at once, the last checkpoint stays. SIGUSR1 (and SIGINT)
 * stop gracefully: what `mtlab jobs stop` sends. */
static char terminated_msg[256];
static size_t terminated_len;

static void on_signal(int sig)
{
    if (sig == SIGTERM && terminated_len) {
        ssize_t w = write(2, terminated_msg, terminated_len);
        (void)w;
        _exit(128 + SIGTERM);
    }
    stop_requested = 1;
}

/* A progress bar on a terminal; one plain line per log interval otherwise (a log file). */
typedef struct {
    cli_progress bar;
} train_view;

static void show_progress(void *ud, const mt_train_progress *p)
{
    train_view *v = ud;
    if (p->is_validation) {
        cli_progress_clear(&v->bar);
        fprintf(stderr, "  valid  step %ld  loss %.4f", p->step, p->valid_loss);
        if (p->valid_bleu >= 0) fprintf(stderr, "  BLEU %.2f", p->valid_bleu);
        fputc('\n', stderr);
        return;
    }
    cli_progress_detail(&v->bar, "epoch %d  loss %.4f  lr %.2e  %.0f tok/s", p->epoch, p->loss,
                        p->lr, p->tokens_per_s);
    if (!v->bar.interactive)
        fprintf(stderr, "step %ld/%ld  %s  (%.0f s)\n", p->step, p->max_steps, v->bar.detail,
                p->elapsed_s);
    cli_progress_update(&v->bar, (size_t)p->step);
}

static void show_message(void *ud, const char *text)
{
    train_view *v = ud;
    cli_progress_clear(&v->bar);
    fprintf(stderr, "mtlab train: %s\n", text);
}

/* Ranks on CUDA devices: "cuda" alone means one GPU per rank of a node (the launcher's local
 * rank picks it), and the gradients are summed by NCCL in device memory. Without NCCL they go
 * through host memory over MPI, said once. */
static mt_collective *on_gpus(mt_collective *mpi, mt_train_config *cfg, const char *who)
{
    static const char *const local_rank[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                             "MPI_LOCALRANKID"};
    if (!strcmp(cfg->device, "cuda")) {
        int local = 0;
        for (size_t i = 0; i < sizeof local_rank / sizeof local_rank[0]; i++)
            if (getenv(local_rank[i])) {
                local = atoi(getenv(local_rank[i]));
                break;
            }
        snprintf(cfg->device, sizeof cfg->device, "cuda:%d", local);
    }
    int index = cfg->device[4] == ':' ? atoi(cfg->device + 5) : 0;
    mt_collective *nccl = mt_collective_nccl(mpi, index);
    if (nccl) return nccl;
    if (mpi->rank == 0)
        fprintf(stderr, "mtlab train: %s%s: the gradients go through host memory over MPI\n", who,
                mt_last_error());
    return mpi;
}

static int run_train(int argc, char **argv)
{
    const char *config = NULL;
    int resume = 0, job = 0, n_overrides = 0;
    long max_steps = 0;
    if (argc == 2 && !strcmp(argv[1], "--reference")) {
        train_config_reference(stdout);
        return 0;
    }
    const char **overrides = calloc((size_t)argc, sizeof *overrides);
    char name_override[160];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--resume")) resume = 1;
        else if (!strcmp(argv[i], "--job")) job = 1;
        else if (!strcmp(argv[i], "--max-steps") && i + 1 < argc) {
            if (cli_option_long("train", argv[i], argv[i + 1], 1, LONG_MAX, &max_steps)) {
                free(overrides);
                return 2;
            }
            i++;
        } else if (!strcmp(argv[i], "--name") && i + 1 < argc) {
            snprintf(name_override, sizeof name_override, "name=%s", argv[++i]);
            overrides[n_overrides++] = name_override;
        } else if (argv[i][0] == '-') config = NULL, i = argc;
        else if (strchr(argv[i], '=')) overrides[n_overrides++] = argv[i];
        else if (!config) config = argv[i];
        else config = NULL, i = argc;
    }
    mt_train_config cfg;
    int loaded =
        config ? train_config_load_with(&cfg, config, overrides, n_overrides, NULL, 0) : -1;
    free(overrides);
    if (!config) return cli_usage(&cmd_train);
    if (loaded != 0) return cli_fail("%s", mt_last_error());
    if (max_steps > 0) cfg.max_steps = max_steps;

    /* MPI first: its start may set handlers of its own, ours come after */
    mt_collective *coll = mt_collective_single();
    int ranks;
    if (mt_collective_launched(&ranks) && !(coll = mt_collective_mpi()))
        return cli_fail("train %s: started as one of %d ranks, but: %s", cfg.name, ranks,
                        mt_last_error());
    char who[128] = ""; /* "rank R on HOST: " when there are several */
    if (coll->size > 1) {
        char host[64] = "?";
        gethostname(host, sizeof host - 1);
        snprintf(who, sizeof who, "rank %d on %s: ", coll->rank, host);
        terminated_len =
            (size_t)snprintf(terminated_msg, sizeof terminated_msg,
                             "mtlab: train %s: %sterminated (SIGTERM): the launcher ends the job; "
                             "ranks stop with a checkpoint on SIGUSR1 (mtlab jobs stop)\n",
                             cfg.name, who);
        if (terminated_len >= sizeof terminated_msg) terminated_len = sizeof terminated_msg - 1;
        if (!strncmp(cfg.device, "cuda", 4)) coll = on_gpus(coll, &cfg, who);
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGUSR1);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigprocmask(SIG_UNBLOCK, &sa.sa_mask, NULL); /* a job's launcher blocks them (job_local.c) */
    /* past a file size limit (RLIMIT_FSIZE) a write fails with EFBIG and the run stops with that
     * message, instead of the process dying silently */
    signal(SIGXFSZ, SIG_IGN);
    /* A job's trainer locks its run before it writes job.json: one refused because another
     * process trains the run must leave that one's record alone. A plain run is locked by
     * mt_train_run. */
    int lead = coll->rank == 0, lock = -1;
    if (lead && job && (lock = mt_run_lock(cfg.run_dir, MT_RUN_TRAINER)) < 0) {
        coll->close(coll);
        return cli_fail("%s%s", who, mt_last_error());
    }
    /* "running" in job.json promises a stop request is heard: only now */
    if (lead && job && job_trainer_begin(cfg.run_dir) != 0) {
        mt_run_unlock(lock);
        coll->close(coll);
        return cli_fail("%s%s", who, mt_last_error());
    }

    train_view view;
    char label[160];
    snprintf(label, sizeof label, "train %s", cfg.name);
    cli_progress_start(&view.bar, label, (size_t)cfg.max_steps);
    mt_train_hooks hooks = {.progress = show_progress,
                            .message = show_message,
                            .ud = &view,
                            .stop = &stop_requested,
                            .run_locked = job,
                            .collective = coll};
    int rc = mt_train_run(&cfg, resume, &hooks);
    cli_progress_finish(&view.bar, NULL);
    char error[700];
    snprintf(error, sizeof error, "%s%s", who, rc != 0 ? mt_last_error() : "");
    if (lead && job &&
        job_trainer_end(cfg.run_dir, rc != 0, stop_requested, rc != 0 ? error : NULL) != 0)
        fprintf(stderr, "mtlab train: %s\n", mt_last_error());
    mt_run_unlock(lock);
    if (rc != 0 && coll->size > 1) {
        /* no MPI_Finalize: the launcher sees this rank fail and stops the others, which may wait
         * in a collective for this one */
        fprintf(stderr, "mtlab: train %s: %s\n", cfg.name, error);
        fflush(NULL);
        _exit(1);
    }
    coll->close(coll);
    if (rc != 0) return cli_fail("train %s: %s", cfg.name, error);
    return 0;
}

const struct mt_command cmd_train = {
    "train",
    "CONFIG.lua [--resume] [--max-steps N] [--name N] [--job] [KEY=VALUE...] | --reference",
    "train a model from a Lua config (KEY=VALUE: override a key, model.KEY a model key); "
    "runs/NAME/ "
    "gets log.jsonl and checkpoints; --reference prints every config key (docs/training-config.md)",
    run_train,
    .parallel = 1,
};
