/* runs/NAME/job.json: reading it, replacing it atomically, and the trainer's own updates. */
#include "jobs/job_internal.h"
#include "mtlab/error.h"
#include "mtlab/files.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static const char *const state_names[] = {"pending",   "running", "completed",
                                          "cancelled", "failed",  "broken"};

const char *job_state_name(job_state s) { return state_names[s]; }

const char *job_launcher_name(job_launcher l) { return l == JOB_SLURM ? "slurm" : "local"; }

int job_launcher_parse(const char *s, job_launcher *out)
{
    if (!strcmp(s, "local")) *out = JOB_LOCAL;
    else if (!strcmp(s, "slurm")) *out = JOB_SLURM;
    else return mt_error("launcher \"%s\" is not local or slurm", s);
    return 0;
}

double job_wall_time(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* Write text to path through a synced temporary file and a rename, then sync the directory. */
static int replace_file(const char *path, const char *text)
{
    char tmp[800];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return mt_error("%s: %s", tmp, strerror(errno));
    size_t len = strlen(text), done = 0;
    int err = 0;
    while (done < len && !err) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno != EINTR) err = errno;
        else if (w > 0) done += (size_t)w;
    }
    if (!err && fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return mt_error("%s: cannot write: %s", path, strerror(err));
    }
    char dir[800];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int job_file_write(const job_info *j)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:f, s:f, s:i, s:s, s:I}",
                          "name", j->name, "launcher", job_launcher_name(j->launcher), "state",
                          job_state_name(j->state), "cwd", j->cwd, "pid", (json_int_t)j->pid,
                          "host", j->host, "slurm_id", j->slurm_id, "error", j->error, "started_at",
                          j->started_at, "ended_at", j->ended_at, "exit_code", j->exit_code,
                          "config", "config.lua", "max_steps", (json_int_t)j->max_steps);
    /* start times of up to 2^64 ticks do not fit jansson's signed integers: a string */
    char start[32];
    snprintf(start, sizeof start, "%llu", j->pid_start);
    json_object_set_new(o, "pid_start", json_string(start));
    json_object_set_new(o, "ranks", json_integer(j->ranks > 1 ? j->ranks : 1));
    if (j->nodes) json_object_set_new(o, "nodes", json_integer(j->nodes));
    if (j->gpus_per_node) json_object_set_new(o, "gpus_per_node", json_integer(j->gpus_per_node));
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    char path[800];
    snprintf(path, sizeof path, "%s/job.json", j->dir);
    size_t len = strlen(text);
    char *line = mt_xmalloc(len + 2);
    memcpy(line, text, len);
    memcpy(line + len, "\n", 2);
    free(text);
    int rc = replace_file(path, line);
    free(line);
    return rc;
}

static void copy_str(char *dst, size_t n, json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(dst, n, "%s", s ? s : "");
}

int job_file_read(job_info *j, const char *dir)
{
    char path[800];
    snprintf(path, sizeof path, "%s/job.json", dir);
    json_error_t err;
    if (access(path, F_OK) != 0) return mt_error("%s: no such job (no job.json)", dir);
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return -1;
    json_t *o = json_loadf(f, 0, &err);
    fclose(f);
    if (!o) { return mt_error("%s:%d: %s", path, err.line, mt_error_oneline(err.text)); }
    const char *launcher = json_string_value(json_object_get(o, "launcher"));
    const char *state = json_string_value(json_object_get(o, "state"));
    int found = -1;
    for (int s = 0; state && s < JOB_BROKEN; s++) /* "broken" is what a reader says, never a file */
        if (!strcmp(state, state_names[s])) found = s;
    if (!launcher || job_launcher_parse(launcher, &j->launcher) != 0 || found < 0) {
        json_decref(o);
        return mt_error("%s: not a job state file (launcher and state are missing or unknown)",
                        path);
    }
    j->state = (job_state)found;
    if (dir != j->dir) snprintf(j->dir, sizeof j->dir, "%s", dir);
    copy_str(j->name, sizeof j->name, o, "name");
    copy_str(j->cwd, sizeof j->cwd, o, "cwd");
    copy_str(j->host, sizeof j->host, o, "host");
    copy_str(j->slurm_id, sizeof j->slurm_id, o, "slurm_id");
    copy_str(j->error, sizeof j->error, o, "error");
    j->pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
    const char *start = json_string_value(json_object_get(o, "pid_start"));
    j->pid_start = start ? strtoull(start, NULL, 10) : 0;
    j->started_at = json_number_value(json_object_get(o, "started_at"));
    j->ended_at = json_number_value(json_object_get(o, "ended_at"));
    j->exit_code = (int)json_integer_value(json_object_get(o, "exit_code"));
    j->max_steps = (long)json_integer_value(json_object_get(o, "max_steps"));
    /* absent in jobs made before data parallelism: one process */
    json_t *ranks = json_object_get(o, "ranks");
    j->ranks = ranks ? (int)json_integer_value(ranks) : 1;
    j->nodes = (int)json_integer_value(json_object_get(o, "nodes"));
    j->gpus_per_node = (int)json_integer_value(json_object_get(o, "gpus_per_node"));
    if (j->ranks < 1 || j->nodes < 0 || j->gpus_per_node < 0) {
        json_decref(o);
        return mt_error("%s: ranks must be >= 1, nodes and gpus_per_node >= 0", path);
    }
    json_decref(o);
    return 0;
}

unsigned long long job_pid_start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* fields after the command name (which may hold spaces and parentheses): 3 state ... 22
     * starttime */
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    char state = 0;
    unsigned long long start = 0;
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
        field++;
        if (field == 3) state = tok[0];
        if (field == 22) {
            start = strtoull(tok, NULL, 10);
            break;
        }
    }
    return state == 'Z' || state == 'X' ? 0 : start; /* a zombie has ended */
}

int job_pid_alive(pid_t pid, unsigned long long start)
{
    return pid > 0 && start != 0 && job_pid_start_time(pid) == start;
}

int job_trainer_begin(const char *run_dir)
{
    job_info j = {0};
    if (job_file_read(&j, run_dir) != 0) return -1;
    j.state = JOB_RUNNING;
    j.pid = getpid();
    j.pid_start = job_pid_start_time(j.pid);
    gethostname(j.host, sizeof j.host - 1);
    if (!j.started_at) j.started_at = job_wall_time();
    return job_file_write(&j);
}

int job_trainer_end(const char *run_dir, int status, int stopped, const char *error)
{
    job_info j = {0};
    if (job_file_read(&j, run_dir) != 0) return -1;
    j.state = status != 0 ? JOB_FAILED : stopped ? JOB_CANCELLED : JOB_COMPLETED;
    j.exit_code = status;
    j.ended_at = job_wall_time();
    snprintf(j.error, sizeof j.error, "%s", error ? error : "");
    return job_file_write(&j);
}
