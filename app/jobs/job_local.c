/* The local launcher: the trainer as a detached process of its own session (setsid, reparented
 * away from the launcher by a double fork), stdout and stderr appended to runs/NAME/train.log,
 * so it outlives the shell, script or workbench that started it. A job of N ranks runs them
 * under OpenMP's mpirun (oversubscribed: ranks may outnumber cores here); rank 0 then records
 * its own pid, so a stop reaches it and it tells the others at the next step. */
#include "jobs/job_internal.h"
#include "mtlab/error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int job_self_exe(char *out, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len <= 0)
        return mt_error("cannot find the mtlab binary (/proc/self/exe): %s", strerror(errno));
    out[len] = '\0';
    return 0;
}

/* In the grandchild: wait for the launcher's go (one byte; end of file means it gave up),
 * then become the trainer. Only async-signal-safe calls until exec. */
static void become_trainer(int go_fd, const job_info *j, const char *exe, int resume)
{
    char byte;
    if (read(go_fd, &byte, 1) != 1) _exit(125);
    close(go_fd);
    char log[800], config[800];
    snprintf(log, sizeof log, "%s/train.log", j->dir);
    snprintf(config, sizeof config, "%s/config.lua", j->dir);
    int null_fd = open("/dev/null", O_RDONLY);
    int log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0666);
    if (null_fd < 0 || log_fd < 0) _exit(126);
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    char *argv[] = {(char *)exe, "train", config, "--job", resume ? "--resume" : NULL, NULL};
    if (j->ranks <= 1) {
        execv(exe, argv);
        _exit(127);
    }
    char np[16];
    snprintf(np, sizeof np, "%d", j->ranks);
    char *mpirun[12];
    int n = 0;
    mpirun[n++] = "mpirun";
    mpirun[n++] = "--oversubscribe";
    /* mpirun refuses root unless told; a container's root is the usual case */
    if (geteuid() == 0) mpirun[n++] = "--allow-run-as-root";
    mpirun[n++] = "-np";
    mpirun[n++] = np;
    for (int i = 0; argv[i]; i++) mpirun[n++] = argv[i];
    mpirun[n] = NULL;
    execvp("mpirun", mpirun);
    static const char missing[] = "mtlab jobs: mpirun could not be run: install openmpi-bin\n";
    ssize_t w = write(2, missing, sizeof missing - 1);
    (void)w;
    _exit(127);
}

int job_local_launch(job_info *j, int resume)
{
    char exe[PATH_MAX];
    if (job_self_exe(exe, sizeof exe) != 0) return -1;
    int go[2], report[2];
    if (pipe2(go, O_CLOEXEC) != 0) return mt_error("pipe: %s", strerror(errno));
    if (pipe2(report, O_CLOEXEC) != 0) {
        close(go[0]);
        close(go[1]);
        return mt_error("pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t mid = fork();
    if (mid < 0) {
        close(go[0]), close(go[1]), close(report[0]), close(report[1]);
        return mt_error("fork: %s", strerror(errno));
    }
    if (mid == 0) {
        close(go[1]);
        close(report[0]);
        if (chdir(j->cwd) != 0 || setsid() < 0) _exit(124);
        /* a stop that arrives before the trainer set its handlers waits for them (cmd_train.c
         * unblocks these once they are set): the mask, unlike handlers, survives exec */
        sigset_t stop_signals;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        sigaddset(&stop_signals, SIGUSR1); /* a data-parallel job's stop (jobs.c) */
        sigprocmask(SIG_BLOCK, &stop_signals, NULL);
        pid_t pid = fork();
        if (pid == 0) {
            close(report[1]);
            become_trainer(go[0], j, exe, resume);
        }
        ssize_t w = write(report[1], &pid, sizeof pid);
        _exit(pid > 0 && w == (ssize_t)sizeof pid ? 0 : 1);
    }
    close(go[0]);
    close(report[1]);
    pid_t pid = -1;
    ssize_t r;
    do r = read(report[0], &pid, sizeof pid);
    while (r < 0 && errno == EINTR);
    close(report[0]);
    int status;
    while (waitpid(mid, &status, 0) < 0 && errno == EINTR) continue;
    if (r != (ssize_t)sizeof pid || pid <= 0) {
        close(go[1]);
        return mt_error("%s: could not start the trainer process", j->name);
    }
    j->launcher = JOB_LOCAL;
    j->pid = pid;
    j->pid_start = job_pid_start_time(pid);
    gethostname(j->host, sizeof j->host - 1);
    j->state = JOB_RUNNING;
    if (job_file_write(j) != 0) {
        close(go[1]); /* the child reads end of file and exits */
        return -1;
    }
    ssize_t w = write(go[1], "1", 1);
    close(go[1]);
    if (w != 1) return mt_error("%s: the trainer process did not wait for its start", j->name);
    return 0;
}
