/* run_dir/train.lock: one trainer per run directory (mtlab/train.h). The lock is flock(2) on the
 * file, not the file's existence, so nothing is left to clean up after a crash; the text in it
 * only names the holder for the message of whoever is refused, and may be stale when no one
 * holds the lock. */
#include "mtlab/error.h"
#include "train_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 10000 /* for a launcher, which holds the lock while it checks and starts a job */
#define POLL_MS 20

static const char *holder_verb(mt_run_holder who)
{
    return who == MT_RUN_TRAINER ? "trained" : "launched";
}

/* The holder the file names: 1 with *pid and verb set, 0 when it names no live process (empty:
 * the holder has not written it yet; a dead pid: text left by an earlier holder). */
static int read_holder(int fd, long *pid, char *verb, size_t n)
{
    char text[64];
    ssize_t len = pread(fd, text, sizeof text - 1, 0);
    if (len <= 0) return 0;
    text[len] = '\0';
    char word[16];
    if (sscanf(text, "%ld %15s", pid, word) != 2 || *pid <= 0) return 0;
    if (kill((pid_t)*pid, 0) != 0 && errno == ESRCH) return 0;
    snprintf(verb, n, "%s", word);
    return 1;
}

int mt_run_lock(const char *run_dir, mt_run_holder who)
{
    if (mkdir_p(run_dir) != 0) return -1;
    char path[700];
    snprintf(path, sizeof path, "%s/train.lock", run_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return mt_error("%s: %s", path, strerror(errno));
    for (int waited = 0;; waited += POLL_MS) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK) {
            int err = errno;
            close(fd);
            return mt_error("%s: cannot lock: %s", path, strerror(err));
        }
        long pid = 0;
        char verb[16] = "";
        int known = read_holder(fd, &pid, verb, sizeof verb);
        if (waited >= WAIT_MS || (known && strcmp(verb, holder_verb(MT_RUN_LAUNCHER)) != 0)) {
            close(fd);
            if (!known) return mt_error("run %s is locked by another process (%s)", run_dir, path);
            return mt_error("run %s is already being %s by pid %ld", run_dir, verb, pid);
        }
        struct timespec pause = {0, POLL_MS * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    char text[64];
    int len = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), holder_verb(who));
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len) {
        int err = errno;
        mt_run_unlock(fd);
        return mt_error("%s: cannot write: %s", path, strerror(err));
    }
    return fd;
}

void mt_run_unlock(int fd)
{
    if (fd < 0) return;
    flock(fd, LOCK_UN); /* a forked child's copy of the descriptor would otherwise keep it */
    close(fd);
}
